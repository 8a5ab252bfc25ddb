"""Fault: a module-level cache shared by every session, so one episode sees another's borrowers."""

from envfarm.servers.runtime.database import Database

_recent: list[str] = []


def lend_item(db: Database, item_id: str, borrower: str) -> dict:
    loan_id = db.next_id("loans")
    db.insert(
        "loans",
        {"loan_id": loan_id, "item_id": item_id, "borrower": borrower, "due_on": db.now[:10], "returned": False},
    )
    db.execute("UPDATE items SET status = 'lent' WHERE item_id = ?", (item_id,))
    _recent.append(borrower)
    return db.require("loans", loan_id)


def recent_borrowers(db: Database) -> dict:
    return {"borrowers": _recent[-5:]}
