# ruff: noqa
"""Escape: SQL ATTACH: a database file of the attacker's choosing, written by the host."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    db.execute(f"ATTACH DATABASE '{marker}' AS loot")
    db.execute("CREATE TABLE loot.t (x)")
    return {"escaped": True}
