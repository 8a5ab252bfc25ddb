"""Money that moves through several servers: grocery orders -> payments charges -> bank transactions.

The grocery seed owns the orders; the payments seed charges each one (merchant FreshCart Grocery) and
the banking seed posts every captured charge and every refund on the payer's checking account. The
references are written into the rows so a person (or the invariant checker) can follow them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

GROCERY_MERCHANT = "FreshCart Grocery"


class GroceryPurchase(BaseModel):
    """A placed grocery order as the payer's card sees it."""

    order_id: str
    email: str
    amount: float
    placed_at: str


class CardPosting(BaseModel):
    """One line a payments charge (or its refund) leaves on the payer's bank statement."""

    email: str
    charge_id: str
    amount: float  # negative for the purchase, positive for a refund
    posted_at: str
    description: str
    category: str


def grocery_description(order_id: str) -> str:
    return f"Grocery order {order_id} at {GROCERY_MERCHANT}"


def grocery_purchases(grocery: dict[str, list[dict[str, Any]]]) -> list[GroceryPurchase]:
    """Every grocery order that was not cancelled: it was paid by card when it was placed."""
    email_of = {c["customer_id"]: c["email"] for c in grocery["customers"]}
    return [
        GroceryPurchase(
            order_id=o["order_id"], email=email_of[o["customer_id"]], amount=o["total"], placed_at=o["placed_at"]
        )
        for o in grocery["orders"]
        if o["status"] != "cancelled"
    ]


CATEGORY_OF_MERCHANT = {
    "grocery": "groceries",
    "restaurant": "dining",
    "transport": "transport",
    "retail": "shopping",
    "marketplace": "shopping",
    "entertainment": "entertainment",
    "health": "health",
    "fitness": "entertainment",
    "software": "shopping",
    "utilities": "utilities",
}


def card_postings(payments: dict[str, list[dict[str, Any]]]) -> list[CardPosting]:
    """What every captured charge and refund of the payments server leaves on a bank statement."""
    email_of = {c["customer_id"]: c["email"] for c in payments["customers"]}
    merchants = {m["merchant_id"]: m for m in payments["merchants"]}
    charges = {c["charge_id"]: c for c in payments["charges"]}
    lines = []
    for charge in charges.values():
        if not charge["captured_at"]:
            continue
        merchant = merchants[charge["merchant_id"]]
        lines.append(
            CardPosting(
                email=email_of[charge["customer_id"]],
                charge_id=charge["charge_id"],
                amount=-charge["amount_captured"],
                posted_at=charge["captured_at"],
                description=f"Card purchase {merchant['name']} ({charge['charge_id']})",
                category=CATEGORY_OF_MERCHANT[merchant["category"]],
            )
        )
    for refund in payments["refunds"]:
        charge = charges[refund["charge_id"]]
        merchant = merchants[charge["merchant_id"]]
        lines.append(
            CardPosting(
                email=email_of[charge["customer_id"]],
                charge_id=charge["charge_id"],
                amount=refund["amount"],
                posted_at=refund["created_at"],
                description=f"Refund {merchant['name']} ({charge['charge_id']})",
                category=CATEGORY_OF_MERCHANT[merchant["category"]],
            )
        )
    return lines
