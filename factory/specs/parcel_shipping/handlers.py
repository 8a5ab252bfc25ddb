"""Custom behaviour of the parcel_shipping server (copied into servers/parcel_shipping/ by the factory).

Creating a shipment prices it, numbers its label and opens its tracking history; redirecting one records
the change and a tracking event. Both touch several tables and derive values from other rows.
"""

import re
from datetime import date, timedelta
from typing import Any

from envfarm.servers.runtime.database import Database

TRACKING_BASE = 500_000_000
TRACKING_STEP = 7919
HS_CODE = re.compile(r"[0-9]{4}(\.[0-9]{2}){0,2}")
ADDRESS = re.compile(r"(?P<street>[^,]+),(?P<city>[^,]+)")
HOUSE_NUMBER = re.compile(r"[0-9]+[A-Za-z]? \S")


def _city(address: str) -> str:
    return address.split(", ")[-1]


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
    db: Database,
    parcel_id: str,
    service_id: str,
    destination_address: str | None = None,
    customs_contents_type: str | None = None,
    customs_description: str | None = None,
    hs_code: str | None = None,
) -> dict[str, Any]:
    """Label the parcel: price = base + per-kg x weight, delivery expected after the service's transit days;
    a label that crosses a customs border carries its customs declaration."""
    parcel = db.require("parcels", parcel_id)
    service = db.require("service_levels", service_id)
    sender = db.require("customers", parcel["sender_id"], "sender_id")
    recipient = db.require("customers", parcel["recipient_id"], "recipient_id")
    destination = destination_address or recipient["address"]
    origin, target = _served(db, sender["address"]), _served(db, destination)
    crossing = origin["customs_union"] != target["customs_union"]
    if crossing and customs_contents_type is None:
        db.reject(
            f"The shipment from {origin['city']} ({origin['country']}) to {target['city']} ({target['country']})"
            " crosses a customs border; give customs_contents_type (and optionally customs_description and hs_code)."
        )
    if hs_code is not None and not HS_CODE.fullmatch(hs_code):
        db.reject(f"hs_code {hs_code} is not a tariff code: write 4 digits, then up to two .NN groups (e.g. 4901.99).")
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
            "destination_address": destination,
            "status": "label_created",
            "price": round(service["base_price"] + service["price_per_kg"] * parcel["weight_kg"], 2),
            "created_at": db.now,
            "estimated_delivery": (today + timedelta(days=service["transit_days"])).isoformat(),
            "closed_at": None,
        },
    )
    _event(db, shipment_id, _city(sender["address"]), "label_created", None)
    if crossing:
        db.insert(
            "customs_declarations",
            {
                "declaration_id": db.next_id("customs_declarations"),
                "shipment_id": shipment_id,
                "contents_type": customs_contents_type,
                "description": customs_description or parcel["contents"],
                "hs_code": hs_code,
                "value": parcel["declared_value"],
                "origin_country": origin["country"],
                "destination_country": target["country"],
                "created_at": db.now,
            },
        )
    return db.require("shipments", shipment_id)


def change_delivery_address(db: Database, shipment_id: str, new_address: str) -> dict[str, Any]:
    """Record the redirection, point the shipment at the new address and log it in tracking."""
    shipment = db.require("shipments", shipment_id)
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
    return db.require("address_changes", change_id)


def _served(db: Database, address: str) -> dict[str, Any]:
    """The served city an address ends with, or a rejection naming it."""
    city = _city(" ".join(address.split())).strip().title()
    row = db.one("SELECT * FROM cities WHERE city = ?", (city,))
    if row is None:
        db.reject(f"Swiftline does not deliver to {city}; validate_address lists what is wrong with {address!r}.")
    return row


def validate_address(db: Database, address: str) -> dict[str, Any]:
    """An address is '<house number> <street>, <city>' in a served city; report every problem found."""
    text = " ".join(address.split())
    match = ADDRESS.fullmatch(text)
    if match is None:
        return {
            "address": text,
            "valid": False,
            "city": None,
            "country": None,
            "problems": ["Write the address as <house number> <street>, <city>"],
        }
    street, city = match["street"].strip(), match["city"].strip().title()
    problems = []
    if not HOUSE_NUMBER.match(street):
        problems.append(f"The street part needs a house number first, e.g. 88 {street}")
    served = db.one("SELECT country FROM cities WHERE city = ?", (city,))
    if served is None:
        problems.append(f"Swiftline does not deliver to {city}")
    return {
        "address": f"{street}, {city}",
        "valid": not problems,
        "city": city,
        "country": served["country"] if served else None,
        "problems": problems,
    }


def quote_rates(db: Database, parcel_id: str, destination_address: str | None = None) -> dict[str, Any]:
    """What create_shipment would charge and promise with each service that can carry the parcel today."""
    parcel = db.require("parcels", parcel_id)
    sender = db.require("customers", parcel["sender_id"], "sender_id")
    recipient = db.require("customers", parcel["recipient_id"], "recipient_id")
    destination = destination_address or recipient["address"]
    origin, target = _served(db, sender["address"]), _served(db, destination)
    services = db.all(
        "SELECT * FROM service_levels WHERE max_weight_kg >= ? ORDER BY base_price + price_per_kg * ?, service_id",
        (parcel["weight_kg"], parcel["weight_kg"]),
    )
    today = date.fromisoformat(db.now[:10])
    return {
        "parcel_id": parcel_id,
        "weight_kg": parcel["weight_kg"],
        "origin_city": origin["city"],
        "destination_address": destination,
        "international": origin["customs_union"] != target["customs_union"],
        "services": services,
        "prices": {
            s["service_id"]: round(s["base_price"] + s["price_per_kg"] * parcel["weight_kg"], 2) for s in services
        },
        "estimated_delivery": {
            s["service_id"]: (today + timedelta(days=s["transit_days"])).isoformat() for s in services
        },
    }
