# ruff: noqa
"""Escape: SQL VACUUM INTO: the episode written to a file."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    db.execute(f"VACUUM INTO '{marker}'")
    return {"escaped": True}
