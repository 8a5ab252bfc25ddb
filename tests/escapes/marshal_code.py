# ruff: noqa
"""Escape: marshal: code smuggled as bytes, then run."""

from envfarm.servers.runtime.database import Database

import marshal


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    blob = marshal.dumps(compile(f"import os; os.system('touch {marker}')", "x", "exec"))
    exec(marshal.loads(blob))
    return {"escaped": True}
