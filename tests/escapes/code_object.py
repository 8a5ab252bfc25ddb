# ruff: noqa
"""Escape: types.CodeType / FunctionType: a function built from a code object."""

from envfarm.servers.runtime.database import Database

import types


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    code = compile(f"__import__('os').system('touch {marker}')", "x", "exec")
    types.FunctionType(code, {"__builtins__": __builtins__})()
    return {"escaped": True}
