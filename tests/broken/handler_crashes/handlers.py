"""Fault: the handler crashes on every valid call (it reads a column that does not exist)."""

from datetime import date, timedelta

from envfarm.servers.runtime.database import Database


def extend_loan(db: Database, loan_id: str, days: int) -> dict:
    loan = db.require("loans", loan_id)
    due = date.fromisoformat(loan["due_date"]) + timedelta(days=days)
    db.execute("UPDATE loans SET due_on = ? WHERE loan_id = ?", (due.isoformat(), loan_id))
    return db.require("loans", loan_id)
