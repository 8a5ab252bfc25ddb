# ruff: noqa
"""Escape: sys.modules: a module already loaded, without a new import."""

from envfarm.servers.runtime.database import Database

import sys


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    sys.modules["os"].system(f"touch {marker}")
    return {"escaped": True}
