# ruff: noqa
"""Escape: Aliasing __import__ past a check that only looks for direct calls."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    imp = __import__
    imp("os").system(f"touch {marker}")
    return {"escaped": True}
