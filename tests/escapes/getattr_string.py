# ruff: noqa
"""Escape: getattr with a name built from strings: getattr(x, 'sys' + 'tem')."""

from envfarm.servers.runtime.database import Database

import typing


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    os = getattr(typing, "sy" + "s").modules["o" + "s"]
    getattr(os, "sys" + "tem")(f"touch {marker}")
    return {"escaped": True}
