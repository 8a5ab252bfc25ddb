# ruff: noqa
"""Escape: posix: the C module under os."""

from envfarm.servers.runtime.database import Database

import posix


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    posix.system(f"touch {marker}")
    return {"escaped": True}
