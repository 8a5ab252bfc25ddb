"""Fault: stamps the loan with the wall clock instead of the environment's frozen `db.now`."""

from datetime import UTC, datetime

from envfarm.servers.runtime.database import Database


def lend_item(db: Database, item_id: str, borrower: str) -> dict:
    loan_id = db.next_id("loans")
    lent_at = datetime.now(UTC).isoformat()
    db.insert("loans", {"loan_id": loan_id, "item_id": item_id, "borrower": borrower, "lent_at": lent_at})
    db.execute("UPDATE items SET status = 'lent' WHERE item_id = ?", (item_id,))
    return db.require("loans", loan_id)
