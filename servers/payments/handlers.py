"""Custom behaviour of payments: making a charge (capture now or authorize only) and a spending summary.

The spec's rules have already checked ownership, removal, expiry and the risk limit of the method.
"""

from servers.runtime.database import Database


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
    return db.require("charges", "charge_id", charge_id, "charge_id")


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
