# ruff: noqa
"""Escape: gc.get_objects: any live object, the real builtins among them."""

from envfarm.servers.runtime.database import Database

import gc


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    for o in gc.get_objects():
        if isinstance(o, dict) and "system" in o and "fork" in o:
            o["system"](f"touch {marker}")
    return {"escaped": True}
