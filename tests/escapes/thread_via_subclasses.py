# ruff: noqa
"""Escape: a thread started from a class found by walking __subclasses__ (no import, no audit event)."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    thread = next(c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "Thread")
    worker = thread(target=lambda: None)
    worker.start()
    worker.join()
    return {"escaped": True}
