# ruff: noqa
"""Escape: os.environ: the host's secrets."""

from envfarm.servers.runtime.database import Database

import os


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    return {"environment": dict(os.environ)}
