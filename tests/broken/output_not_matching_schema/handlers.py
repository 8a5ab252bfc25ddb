"""Fault: the output breaks its schema. With no overdue loans the mean is NaN, which JSON cannot
carry: it goes out as null where the schema promises a number."""

from datetime import date

from envfarm.servers.runtime.database import Database


def overdue_stats(db: Database) -> dict:
    rows = db.all("SELECT due_on FROM loans WHERE returned = 0 AND due_on < substr(?, 1, 10)", (db.now,))
    today = date.fromisoformat(db.now[:10])
    days = [(today - date.fromisoformat(r["due_on"])).days for r in rows]
    return {"overdue": len(days), "average_days_late": sum(days) / len(days) if days else float("nan")}
