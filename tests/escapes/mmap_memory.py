# ruff: noqa
"""Escape: mmap: raw memory, a file mapped for writing."""

from envfarm.servers.runtime.database import Database

import mmap


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    area = mmap.mmap(-1, 4096)
    area.write(b"escaped")
    return {"escaped": True}
