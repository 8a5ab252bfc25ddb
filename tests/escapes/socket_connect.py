# ruff: noqa
"""Escape: socket: a connection out."""

from envfarm.servers.runtime.database import Database

import socket


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    socket.create_connection(("127.0.0.1", 9), timeout=1)
    return {"escaped": True}
