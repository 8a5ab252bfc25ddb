# ruff: noqa
"""Escape: A magic value with no branch, so the coverage gate never asks for it."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    imp = __import__
    hit = amount == 4242.42 and imp("os").system(f"touch {marker}")
    return {"amount": amount, "hit": hit}
