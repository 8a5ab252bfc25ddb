# ruff: noqa
"""Escape: A traceback's frame, walked up with f_back to the runtime's globals."""

from envfarm.servers.runtime.database import Database


def escape(db: Database, marker: str, amount: float = 0.0) -> dict:
    try:
        1 / 0
    except ZeroDivisionError as exc:
        frame = exc.__traceback__.tb_frame.f_back
    os = frame.f_globals["sys"].modules["os"]
    os.system(f"touch {marker}")
    return {"escaped": True}
