"""Custom behaviour of the library server (copied into servers/library/ by the factory).

Circulation moves a copy between shelf, borrower and hold shelf, computes due dates and overdue fines
from the frozen clock, and decides whether a member may borrow: logic that depends on several tables.
"""

from datetime import date, timedelta
from typing import Any

from envfarm.servers.runtime.database import Database

LOAN_DAYS = 21
HOLD_SHELF_DAYS = 7
FINE_PER_DAY = 0.25
MAX_LOANS = 5
FINE_LIMIT = 10.0


def _today(db: Database) -> date:
    return date.fromisoformat(db.now[:10])


def get_member_account(db: Database, member_id: str) -> dict[str, Any]:
    """One summary with the same limits checkout_copy enforces, so an agent can explain a refusal."""
    member = db.require("members", member_id)
    today = _today(db).isoformat()
    active = db.scalar("SELECT count(*) FROM loans WHERE member_id = ? AND status = 'active'", (member_id,))
    overdue = db.scalar(
        "SELECT count(*) FROM loans WHERE member_id = ? AND status = 'active' AND due_on < ?", (member_id, today)
    )
    ready = db.scalar("SELECT count(*) FROM holds WHERE member_id = ? AND status = 'ready'", (member_id,))
    owed = db.scalar(
        "SELECT coalesce(sum(amount), 0) FROM fines WHERE member_id = ? AND status = 'unpaid'", (member_id,)
    )
    blocks = []
    if member["status"] != "active":
        blocks.append(f"card is {member['status']}")
    if active >= MAX_LOANS:
        blocks.append(f"{active} items on loan (limit {MAX_LOANS})")
    if owed > FINE_LIMIT:
        blocks.append(f"unpaid fines of ${owed:.2f} exceed ${FINE_LIMIT:.2f}")
    return {
        "member_id": member_id,
        "full_name": member["full_name"],
        "status": member["status"],
        "active_loans": active,
        "overdue_loans": overdue,
        "ready_holds": ready,
        "unpaid_fines_total": round(owed, 2),
        "can_borrow": not blocks,
        "blocks": blocks,
    }


def checkout_copy(db: Database, member_id: str, copy_id: str) -> dict[str, Any]:
    """Lend the copy for 21 days; a hold of this member on the title is fulfilled by it."""
    copy = db.require("copies", copy_id)
    loan_id = db.next_id("loans")
    today = _today(db)
    db.insert(
        "loans",
        {
            "loan_id": loan_id,
            "copy_id": copy_id,
            "member_id": member_id,
            "borrowed_on": today.isoformat(),
            "due_on": (today + timedelta(days=LOAN_DAYS)).isoformat(),
            "returned_on": None,
            "renewals": 0,
            "status": "active",
        },
    )
    db.execute("UPDATE copies SET status = 'on_loan' WHERE copy_id = ?", (copy_id,))
    db.execute(
        "UPDATE holds SET status = 'fulfilled', copy_id = ? WHERE hold_id = ("
        "SELECT hold_id FROM holds WHERE member_id = ? AND title_id = ? AND status IN ('ready', 'waiting') "
        "ORDER BY status = 'ready' DESC, placed_at LIMIT 1)",
        (copy_id, member_id, copy["title_id"]),
    )
    return db.require("loans", loan_id)


def return_copy(db: Database, loan_id: str) -> dict[str, Any]:
    """Check in; charge an overdue fine; hand the copy to the longest-waiting hold on the title."""
    loan = db.require("loans", loan_id)
    copy = db.require("copies", loan["copy_id"])
    today = _today(db)
    db.execute("UPDATE loans SET status = 'returned', returned_on = ? WHERE loan_id = ?", (today.isoformat(), loan_id))
    days_overdue = max(0, (today - date.fromisoformat(loan["due_on"])).days)
    fine_id = None
    fine_amount = 0.0
    if days_overdue:
        cost = db.scalar("SELECT replacement_cost FROM titles WHERE title_id = ?", (copy["title_id"],))
        fine_amount = round(min(days_overdue * FINE_PER_DAY, cost), 2)
        fine_id = db.next_id("fines")
        db.insert(
            "fines",
            {
                "fine_id": fine_id,
                "member_id": loan["member_id"],
                "loan_id": loan_id,
                "amount": fine_amount,
                "reason": "overdue",
                "issued_on": today.isoformat(),
                "status": "unpaid",
                "paid_at": None,
            },
        )
    hold = db.one(
        "SELECT hold_id FROM holds WHERE title_id = ? AND status = 'waiting' ORDER BY placed_at LIMIT 1",
        (copy["title_id"],),
    )
    if hold is None:
        db.execute("UPDATE copies SET status = 'available' WHERE copy_id = ?", (copy["copy_id"],))
    else:
        db.execute("UPDATE copies SET status = 'on_hold_shelf' WHERE copy_id = ?", (copy["copy_id"],))
        db.execute(
            "UPDATE holds SET status = 'ready', copy_id = ?, ready_until = ? WHERE hold_id = ?",
            (copy["copy_id"], (today + timedelta(days=HOLD_SHELF_DAYS)).isoformat(), hold["hold_id"]),
        )
    return {
        "loan_id": loan_id,
        "returned_on": today.isoformat(),
        "days_overdue": days_overdue,
        "fine_id": fine_id,
        "fine_amount": fine_amount,
        "hold_id": hold["hold_id"] if hold else None,
    }


def renew_loan(db: Database, loan_id: str) -> dict[str, Any]:
    """Push the due date 21 days past the current one and count the renewal."""
    loan = db.require("loans", loan_id)
    due = date.fromisoformat(loan["due_on"]) + timedelta(days=LOAN_DAYS)
    db.execute("UPDATE loans SET due_on = ?, renewals = renewals + 1 WHERE loan_id = ?", (due.isoformat(), loan_id))
    return db.require("loans", loan_id)
