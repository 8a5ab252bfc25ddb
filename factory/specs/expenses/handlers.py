"""Custom behaviour of expenses: the pre-submission policy check and the approval decision.

decide_report runs after the spec's rules (report submitted, approver allowed, budget left), so it only
records the decision, updates the report and, on approval, charges the cost center.
"""

from envfarm.servers.runtime.database import Database

_MISSING_RECEIPTS = (
    "SELECT l.* FROM expense_lines l JOIN categories c ON c.category_id = l.category_id"
    " WHERE l.report_id = ? AND l.amount > c.receipt_required_over AND l.receipt_id IS NULL ORDER BY l.rowid"
)


def check_report_policy(db: Database, report_id: str) -> dict:
    """What submit_report would say, without changing anything: lines, total and missing receipts."""
    report = db.require("expense_reports", report_id)
    line_count = db.scalar("SELECT count(*) FROM expense_lines WHERE report_id = ?", (report_id,))
    missing = db.all(_MISSING_RECEIPTS, (report_id,))
    return {
        "report_id": report_id,
        "status": report["status"],
        "total": report["total"],
        "line_count": line_count,
        "missing_receipts": missing,
        "ready_to_submit": report["status"] in ("draft", "rejected") and line_count > 0 and not missing,
    }


def decide_report(db: Database, report_id: str, decision: str, note: str | None = None) -> dict:
    """Log the signed-in approver's decision, set the report's status, and charge the cost center when approved."""
    report = db.require("expense_reports", report_id)
    approver_id = db.scalar("SELECT employee_id FROM employees WHERE email = ?", (db.principal,))
    db.insert(
        "approvals",
        {
            "approval_id": db.next_id("approvals"),
            "report_id": report_id,
            "approver_id": approver_id,
            "decision": decision,
            "note": note,
            "decided_at": db.now,
        },
    )
    db.execute(
        "UPDATE expense_reports SET status = ?, decided_at = ?, decided_by = ?, decision_note = ? WHERE report_id = ?",
        (decision, db.now, approver_id, note, report_id),
    )
    if decision == "approved":
        db.execute(
            "UPDATE cost_centers SET spent = round(spent + ?, 2) WHERE cost_center_id = ?",
            (report["total"], report["cost_center_id"]),
        )
    return db.require("expense_reports", report_id)
