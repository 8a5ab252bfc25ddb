"""Fault: a leftover debug print (on stdio, stdout is the MCP stream)."""

from envfarm.servers.runtime.database import Database


def available_count(db: Database) -> dict:
    count = db.scalar("SELECT count(*) FROM items WHERE status = 'available'")
    print("debug: available =", count)
    return {"available": count}
