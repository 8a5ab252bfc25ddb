"""Custom behaviour of the pharmacy server: prescription intake, copay pricing and dispensing.

The spec's rules have already rejected invalid calls (expired, no refills, no stock...) when these run.
"""

from typing import Any

from envfarm.servers.runtime.database import Database

VALIDITY_DAYS = {"none": 365, "II": 90, "III": 180, "IV": 180, "V": 180}
RX_NUMBER_BASE = 610000


def price_fill(db: Database, rx: dict[str, Any]) -> dict[str, Any]:
    """Full price, copay and insurer share of one fill of `rx` under the patient's plan on file.

    No plan, or a plan the pharmacy no longer accepts, means cash. A specialty drug on a plan without
    specialty coverage is billed and rejected, so the patient pays the full price.
    """
    drug = db.require("drugs", rx["drug_id"])
    plan = db.one(
        "SELECT i.* FROM patients p JOIN insurance_plans i ON i.plan_id = p.plan_id WHERE p.patient_id = ?",
        (rx["patient_id"],),
    )
    total = round(drug["unit_price"] * rx["quantity"], 2)
    quote: dict[str, Any] = {"drug": drug, "plan": plan, "total": total, "copay": total, "insurer": 0.0}
    if plan is None:
        quote.update(claim=None, note="No insurance on file: the patient pays the cash price.")
    elif not plan["accepted"]:
        quote.update(claim=None, note=f"{plan['name']} is no longer accepted: the patient pays the cash price.")
    elif drug["tier"] == "specialty" and not plan["covers_specialty"]:
        quote.update(
            claim="rejected", note=f"{plan['name']} does not cover specialty drugs: the patient pays the full price."
        )
    else:
        copay = min(total, plan[f"{drug['tier']}_copay"])
        quote.update(
            copay=copay,
            insurer=round(total - copay, 2),
            claim="approved",
            note=f"{drug['tier'].capitalize()} copay of {plan['name']}.",
        )
    return quote


def quote_copay(db: Database, rx_id: str) -> dict[str, Any]:
    """What the next fill would cost, without dispensing anything."""
    rx = db.require("prescriptions", rx_id)
    quote = price_fill(db, rx)
    return {
        "rx_id": rx_id,
        "drug_name": quote["drug"]["name"],
        "quantity": rx["quantity"],
        "total_price": quote["total"],
        "copay": quote["copay"],
        "insurance_pays": quote["insurer"],
        "plan_name": quote["plan"]["name"] if quote["claim"] else None,
        "coverage_note": quote["note"],
    }


def fill_prescription(db: Database, rx_id: str) -> dict[str, Any]:
    """Dispense from the earliest-expiring in-date lot that holds a whole fill, and bill the plan. The fill is
    signed by the staff member acting ('Pharmacist: Dr. Helen Cho' signs 'Dr. Helen Cho'): who verifies it is
    who is at the counter, never a name the customer would be asked for."""
    rx = db.require("prescriptions", rx_id)
    acting = str(db.principal or "")
    pharmacist = acting.partition(": ")[2] or acting
    lot_id = db.scalar(
        "SELECT lot_id FROM inventory_lots WHERE drug_id = ? AND expires_on >= date(?) AND quantity_on_hand >= ?"
        " ORDER BY expires_on, lot_id LIMIT 1",
        (rx["drug_id"], db.now, rx["quantity"]),
    )
    quote = price_fill(db, rx)
    fill_id = db.next_id("fills")
    db.insert(
        "fills",
        {
            "fill_id": fill_id,
            "rx_id": rx_id,
            "fill_number": rx["fills_used"],
            "filled_at": db.now,
            "quantity": rx["quantity"],
            "lot_id": lot_id,
            "pharmacist": pharmacist,
            "total_price": quote["total"],
            "copay": quote["copay"],
            "insurance_paid": quote["insurer"],
            "status": "ready_for_pickup",
        },
    )
    db.execute(
        "UPDATE inventory_lots SET quantity_on_hand = quantity_on_hand - ? WHERE lot_id = ?", (rx["quantity"], lot_id)
    )
    db.execute("UPDATE prescriptions SET fills_used = fills_used + 1 WHERE rx_id = ?", (rx_id,))
    if quote["claim"] is not None:
        db.insert(
            "claims",
            {
                "claim_id": db.next_id("claims"),
                "fill_id": fill_id,
                "plan_id": quote["plan"]["plan_id"],
                "submitted_at": db.now,
                "billed_amount": quote["total"],
                "paid_amount": quote["insurer"],
                "copay": quote["copay"],
                "status": quote["claim"],
                "reject_reason": "specialty drugs are not covered by this plan"
                if quote["claim"] == "rejected"
                else None,
            },
        )
    return db.require("fills", fill_id)


def add_prescription(
    db: Database,
    patient_id: str,
    drug_id: str,
    prescriber_id: str,
    written_on: str,
    quantity: int,
    days_supply: int,
    refills_authorized: int,
    directions: str,
) -> dict[str, Any]:
    """File a new prescription; its expiry follows the drug's schedule and its Rx number the new id."""
    drug = db.require("drugs", drug_id)
    rx_id = db.next_id("prescriptions")
    expires_on = db.scalar("SELECT date(?, ?)", (written_on, f"+{VALIDITY_DAYS[drug['schedule']]} days"))
    db.insert(
        "prescriptions",
        {
            "rx_id": rx_id,
            "rx_number": str(RX_NUMBER_BASE + db.id_number("prescriptions")),
            "patient_id": patient_id,
            "drug_id": drug_id,
            "prescriber_id": prescriber_id,
            "written_on": written_on,
            "expires_on": expires_on,
            "quantity": quantity,
            "days_supply": days_supply,
            "refills_authorized": refills_authorized,
            "fills_used": 0,
            "directions": directions,
            "status": "active",
            "cancel_reason": None,
        },
    )
    return db.require("prescriptions", rx_id)
