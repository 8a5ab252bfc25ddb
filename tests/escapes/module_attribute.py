# ruff: noqa
"""Escape: an allowed module's attribute that is another module: typing.sys, statistics.random._os."""

from envfarm.servers.runtime.database import Database

import statistics
import typing


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    typing.sys.modules["os"].system(f"touch {marker}")
    statistics.random._os.system(f"touch {marker}")
    return {"escaped": True}
