# ruff: noqa
"""Escape: threads: work that outlives the call."""

from envfarm.servers.runtime.database import Database

import threading


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    threading.Thread(target=lambda: None).start()
    return {"escaped": True}
