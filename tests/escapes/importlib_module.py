# ruff: noqa
"""Escape: importlib.import_module: a dynamic import by name."""

from envfarm.servers.runtime.database import Database

import importlib


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    importlib.import_module("os").system(f"touch {marker}")
    return {"escaped": True}
