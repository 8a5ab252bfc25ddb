"""Fault: busy-waits for a lent tool to come back, which cannot happen inside one call: it hangs."""

from envfarm.servers.runtime.database import Database


def reserve_item(db: Database, item_id: str) -> dict:
    item = db.require("items", item_id)
    while item["status"] != "available":
        item = db.require("items", item_id)
    db.execute("UPDATE items SET status = 'reserved' WHERE item_id = ?", (item_id,))
    return db.require("items", item_id)
