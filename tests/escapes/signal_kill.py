# ruff: noqa
"""Escape: signals: os.kill on the serving process (signal 0 only probes it)."""

from envfarm.servers.runtime.database import Database

import os
import signal


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    signal.alarm(0)
    os.kill(os.getppid(), 0)
    return {"escaped": True}
