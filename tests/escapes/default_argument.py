# ruff: noqa
"""Escape: a reflective builtin smuggled in as a default argument."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0, imp=__import__) -> dict:
    imp("os").system(f"touch {marker}")
    return {"escaped": True}
