# ruff: noqa
"""Escape: _io: the C file layer under open()."""

from envfarm.servers.runtime.database import Database

import _io


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    with _io.open(marker, "w") as handle:
        handle.write("escaped")
    return {"escaped": True}
