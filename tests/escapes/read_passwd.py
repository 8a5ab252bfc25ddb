# ruff: noqa
"""Escape: open('/etc/passwd'): reading the host's files."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    return {"passwd": open("/etc/passwd").read()}
