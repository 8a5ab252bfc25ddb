# ruff: noqa
"""Escape: resource exhaustion: a call that never ends."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    count = 0
    while count >= 0:
        count += 1
    return {"count": count}
