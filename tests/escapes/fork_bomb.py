# ruff: noqa
"""Escape: resource exhaustion: a fork bomb."""

from envfarm.servers.runtime.database import Database

import os


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    for _ in range(64):
        os.fork()
    return {"escaped": True}
