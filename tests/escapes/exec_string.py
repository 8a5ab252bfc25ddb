# ruff: noqa
"""Escape: exec of a string."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    exec(f"import os; os.system('touch {marker}')")
    return {"escaped": True}
