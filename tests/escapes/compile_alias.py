# ruff: noqa
"""Escape: compile, aliased, and run through a builtin found by name."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    build = compile
    run = (
        [v for k, v in vars(__builtins__).items() if k == "ex" + "ec"]
        if not isinstance(__builtins__, dict)
        else [__builtins__["ex" + "ec"]]
    )
    run[0](build(f"import os; os.system('touch {marker}')", "x", "exec"))
    return {"escaped": True}
