"""Custom behaviour of payments: making a charge (capture now or authorize only) and a spending summary.

The spec's rules have already checked ownership, removal, expiry and the risk limit of the method.
"""

from envfarm.servers.runtime.database import Database


def create_charge(
    db: Database,
    customer_id: str,
    merchant_id: str,
    method_id: str,
    amount: float,
    description: str,
    capture: bool = True,
) -> dict:
    """Insert the charge; a captured one credits the merchant's pending balance at once."""
    charge_id = db.next_id("charges")
    amount = round(amount, 2)
    db.insert(
        "charges",
        {
            "charge_id": charge_id,
            "customer_id": customer_id,
            "merchant_id": merchant_id,
            "method_id": method_id,
            "amount": amount,
            "description": description,
            "status": "captured" if capture else "authorized",
            "amount_captured": amount if capture else 0.0,
            "amount_refunded": 0.0,
            "created_at": db.now,
            "captured_at": db.now if capture else None,
        },
    )
    if capture:
        db.execute(
            "UPDATE merchants SET pending_balance = round(pending_balance + ?, 2) WHERE merchant_id = ?",
            (amount, merchant_id),
        )
    return db.require("charges", charge_id)


def customer_spending_summary(db: Database, customer_id: str) -> dict:
    """Aggregate the customer's charges; amounts are rounded to cents."""
    row = db.one(
        "SELECT count(*) AS charge_count, COALESCE(sum(amount_captured), 0) AS total_captured,"
        " COALESCE(sum(amount_refunded), 0) AS total_refunded,"
        " COALESCE(sum(CASE WHEN status = 'authorized' THEN amount ELSE 0 END), 0) AS on_hold"
        " FROM charges WHERE customer_id = ?",
        (customer_id,),
    )
    assert row is not None
    return {
        "customer_id": customer_id,
        "charge_count": row["charge_count"],
        "total_captured": round(row["total_captured"], 2),
        "total_refunded": round(row["total_refunded"], 2),
        "net_spent": round(row["total_captured"] - row["total_refunded"], 2),
        "on_hold": round(row["on_hold"], 2),
    }


DISPUTE_FEE = 15.0  # USD charged to the merchant for every dispute, won or lost (policy.md)
EVIDENCE_DAYS = 7
PERIOD = {"month": "+1 month", "year": "+1 year"}


def _credit(db: Database, merchant_id: str, amount: float) -> None:
    db.execute(
        "UPDATE merchants SET available_balance = round(available_balance + ?, 2) WHERE merchant_id = ?",
        (amount, merchant_id),
    )


def open_dispute(db: Database, charge_id: str, reason: str, amount: float | None = None) -> dict:
    """Record the cardholder's dispute; the disputed amount and the fee leave the merchant's available
    balance at once (it may go negative), as card networks pull the funds when a dispute opens."""
    charge = db.require("charges", charge_id)
    remaining = round(charge["amount_captured"] - charge["amount_refunded"], 2)
    disputed = remaining if amount is None else round(amount, 2)
    dispute_id = db.next_id("disputes")
    db.insert(
        "disputes",
        {
            "dispute_id": dispute_id,
            "charge_id": charge_id,
            "customer_id": charge["customer_id"],
            "merchant_id": charge["merchant_id"],
            "amount": disputed,
            "fee": DISPUTE_FEE,
            "reason": reason,
            "status": "needs_response",
            "evidence": None,
            "created_at": db.now,
            "evidence_due_by": db.scalar("SELECT date(?, ?)", (db.now, f"+{EVIDENCE_DAYS} days")),
            "closed_at": None,
        },
    )
    _credit(db, charge["merchant_id"], -(disputed + DISPUTE_FEE))
    return db.require("disputes", dispute_id)


def close_dispute(db: Database, dispute_id: str, decision: str) -> dict:
    """The card network's decision: a won dispute returns the amount to the merchant (not the fee); a lost
    one leaves it with the cardholder."""
    dispute = db.require("disputes", dispute_id)
    if decision == "won":
        _credit(db, dispute["merchant_id"], dispute["amount"])
    db.execute("UPDATE disputes SET status = ?, closed_at = ? WHERE dispute_id = ?", (decision, db.now, dispute_id))
    return db.require("disputes", dispute_id)


def create_subscription(
    db: Database,
    customer_id: str,
    merchant_id: str,
    method_id: str,
    plan_name: str,
    amount: float,
    interval: str = "month",
) -> dict:
    """Start the plan: the first period is charged (captured) at once and paid until one interval later."""
    merchant = db.require("merchants", merchant_id)
    charge = create_charge(
        db, customer_id, merchant_id, method_id, amount, f"{plan_name} subscription at {merchant['name']}"
    )
    subscription_id = db.next_id("subscriptions")
    db.insert(
        "subscriptions",
        {
            "subscription_id": subscription_id,
            "customer_id": customer_id,
            "merchant_id": merchant_id,
            "method_id": method_id,
            "plan_name": plan_name,
            "amount": charge["amount"],
            "interval": interval,
            "status": "active",
            "current_period_end": db.scalar("SELECT date(?, ?)", (db.now, PERIOD[interval])),
            "cancel_at_period_end": False,
            "latest_charge_id": charge["charge_id"],
            "created_at": db.now,
            "canceled_at": None,
        },
    )
    return db.require("subscriptions", subscription_id)


def cancel_subscription(db: Database, subscription_id: str, at_period_end: bool = True) -> dict:
    """At the period's end (default) the plan stays usable until then and never renews; now, it ends at once
    (nothing is refunded: refund_charge does that)."""
    if at_period_end:
        db.execute("UPDATE subscriptions SET cancel_at_period_end = 1 WHERE subscription_id = ?", (subscription_id,))
    else:
        db.execute(
            "UPDATE subscriptions SET status = 'canceled', canceled_at = ?, cancel_at_period_end = 0"
            " WHERE subscription_id = ?",
            (db.now, subscription_id),
        )
    return db.require("subscriptions", subscription_id)
