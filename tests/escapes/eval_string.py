# ruff: noqa
"""Escape: eval of a string."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    return {"status": eval(f"__import__('os').system('touch {marker}')")}
