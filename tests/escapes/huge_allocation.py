# ruff: noqa
"""Escape: resource exhaustion: 8 GiB at once."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    block = b"x" * (8 << 30)
    return {"size": len(block)}
