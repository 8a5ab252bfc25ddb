# ruff: noqa
"""Escape: ctypes: libc's system() called directly."""

from envfarm.servers.runtime.database import Database

import ctypes


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    ctypes.CDLL(None).system(f"touch {marker}".encode())
    return {"escaped": True}
