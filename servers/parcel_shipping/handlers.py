"""Custom behaviour of the parcel_shipping server (copied into servers/parcel_shipping/ by the factory).

Creating a shipment prices it, numbers its label and opens its tracking history; redirecting one records
the change and a tracking event. Both touch several tables and derive values from other rows.
"""

from datetime import date, timedelta
from typing import Any

from servers.runtime.database import Database

TRACKING_BASE = 500_000_000
TRACKING_STEP = 7919


def _city(address: str) -> str:
    return address.rsplit(", ", 1)[-1]


def _event(db: Database, shipment_id: str, location: str, kind: str, note: str | None) -> None:
    db.insert(
        "tracking_events",
        {
            "event_id": db.next_id("tracking_events"),
            "shipment_id": shipment_id,
            "occurred_at": db.now,
            "location": location,
            "event_type": kind,
            "note": note,
        },
    )


def create_shipment(
    db: Database, parcel_id: str, service_id: str, destination_address: str | None = None
) -> dict[str, Any]:
    """Label the parcel: price = base + per-kg x weight, delivery expected after the service's transit days."""
    parcel = db.require("parcels", "parcel_id", parcel_id, "parcel_id")
    service = db.require("service_levels", "service_id", service_id, "service_id")
    sender = db.require("customers", "customer_id", parcel["sender_id"], "sender_id")
    recipient = db.require("customers", "customer_id", parcel["recipient_id"], "recipient_id")
    shipment_id = db.next_id("shipments")
    sequence = db.id_number("shipments")
    today = date.fromisoformat(db.now[:10])
    db.insert(
        "shipments",
        {
            "shipment_id": shipment_id,
            "parcel_id": parcel_id,
            "tracking_number": f"SL{TRACKING_BASE + sequence * TRACKING_STEP:09d}",
            "service_id": service_id,
            "destination_address": destination_address or recipient["address"],
            "status": "label_created",
            "price": round(service["base_price"] + service["price_per_kg"] * parcel["weight_kg"], 2),
            "created_at": db.now,
            "estimated_delivery": (today + timedelta(days=service["transit_days"])).isoformat(),
            "closed_at": None,
        },
    )
    _event(db, shipment_id, _city(sender["address"]), "label_created", None)
    return db.require("shipments", "shipment_id", shipment_id, "shipment_id")


def change_delivery_address(db: Database, shipment_id: str, new_address: str) -> dict[str, Any]:
    """Record the redirection, point the shipment at the new address and log it in tracking."""
    shipment = db.require("shipments", "shipment_id", shipment_id, "shipment_id")
    change_id = db.next_id("address_changes")
    db.insert(
        "address_changes",
        {
            "change_id": change_id,
            "shipment_id": shipment_id,
            "old_address": shipment["destination_address"],
            "new_address": new_address,
            "requested_at": db.now,
        },
    )
    db.execute("UPDATE shipments SET destination_address = ? WHERE shipment_id = ?", (new_address, shipment_id))
    last = db.one(
        "SELECT location FROM tracking_events WHERE shipment_id = ? ORDER BY occurred_at DESC, event_id DESC LIMIT 1",
        (shipment_id,),
    )
    _event(
        db,
        shipment_id,
        last["location"] if last else _city(new_address),
        "address_changed",
        f"Redirected to {new_address}",
    )
    return db.require("address_changes", "change_id", change_id, "change_id")
