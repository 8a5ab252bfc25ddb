"""Fault: a read-only tool that writes (it bumps a view counter)."""

from envfarm.servers.runtime.database import Database


def inspect_item(db: Database, item_id: str) -> dict:
    db.execute("UPDATE items SET views = views + 1 WHERE item_id = ?", (item_id,))
    return db.require("items", item_id)
