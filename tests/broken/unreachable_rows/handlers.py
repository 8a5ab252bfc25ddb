"""Custom tools of the tool shed."""

from datetime import date, timedelta

from envfarm.servers.runtime.database import Database


def overdue_loans(db: Database) -> dict:
    """Open loans whose due date is before today (the frozen clock)."""
    rows = db.all("SELECT * FROM loans WHERE returned = 0 AND due_on < substr(?, 1, 10) ORDER BY due_on", (db.now,))
    return {"count": len(rows), "loans": rows}


def extend_loan(db: Database, loan_id: str, days: int) -> dict:
    """Move the due date `days` later."""
    loan = db.require("loans", loan_id)
    due = date.fromisoformat(loan["due_on"]) + timedelta(days=days)
    db.execute("UPDATE loans SET due_on = ? WHERE loan_id = ?", (due.isoformat(), loan_id))
    return db.require("loans", loan_id)
