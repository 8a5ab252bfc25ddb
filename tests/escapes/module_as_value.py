# ruff: noqa
"""Escape: an allowed module passed as a value, so its attributes escape an alias check."""

from envfarm.servers.runtime.database import Database

import typing


def _reach(module, name):
    return module.sys.modules[name]


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    _reach(typing, "os").system(f"touch {marker}")
    return {"escaped": True}
