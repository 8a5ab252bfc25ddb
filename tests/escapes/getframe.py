# ruff: noqa
"""Escape: sys._getframe: the caller's frame and its real globals."""

from envfarm.servers.runtime.database import Database

import sys


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    frame = sys._getframe(1)
    frame.f_globals["__builtins__"]["__import__"]("os").system(f"touch {marker}")
    return {"escaped": True}
