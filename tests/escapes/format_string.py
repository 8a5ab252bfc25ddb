# ruff: noqa
"""Escape: a format string reaching dunders: '{0.__class__}'."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    return {"leak": "{0.__init__.__globals__}".format(db)}
