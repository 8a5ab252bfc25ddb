"""Seed rows of parcel_shipping: 50 customers (the farm's shared cast), 6 service levels, 90 parcels,
about 85 shipments over the last 60 days with consistent tracking histories, pickups, address changes
and claims.

Every shipment's events follow its status (label -> pickup -> hubs -> out for delivery -> delivered,
or lost / returned / cancelled), closed_at is the time of the closing event, claims exist only for
delivered or lost shipments, and parcels fit the weight limit of their service. A few parcels are
registered but not shipped yet.
"""

import random
from collections.abc import Callable
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world import logistics
from envfarm.factory.world.cast import CITIES, community
from envfarm.factory.world.sources import built_seed

# name, max kg, base price, price per kg, transit days
SERVICES = [
    ("Document Flat", 1.0, 4.0, 0.0, 3),
    ("Economy Ground", 30.0, 6.5, 0.6, 6),
    ("Standard", 30.0, 8.9, 0.85, 4),
    ("Express", 20.0, 15.0, 1.4, 2),
    ("Overnight", 10.0, 29.0, 2.2, 1),
    ("Heavy Freight", 150.0, 45.0, 1.1, 5),
]
CONTENTS = [
    ("documents", 0.3, 30),
    ("books", 3.0, 60),
    ("clothing", 1.5, 120),
    ("ceramic vase", 4.0, 90),
    ("laptop", 2.5, 1200),
    ("shoes", 1.8, 140),
    ("coffee beans", 2.0, 45),
    ("board games", 3.5, 80),
    ("camera lens", 1.2, 650),
    ("kitchen mixer", 7.5, 320),
    ("bicycle parts", 12.0, 260),
    ("wine glasses", 3.0, 110),
    ("vinyl records", 4.5, 200),
    ("office chair", 18.0, 240),
    ("garden tools", 22.0, 180),
    ("treadmill motor", 45.0, 600),
    ("handmade soap", 1.0, 35),
]
HUBS = ["Lisbon hub", "Berlin hub", "Toronto hub", "Austin hub", "Dublin hub", "Seattle hub", "Lyon hub", "Osaka hub"]
# Parcels are sorted at the hub of the sender's region (not at a random hub on another continent).
REGION_HUB = {
    "Lisbon": "Lisbon hub",
    "Porto": "Lisbon hub",
    "Madrid": "Lisbon hub",
    "Berlin": "Berlin hub",
    "Vienna": "Berlin hub",
    "Krakow": "Berlin hub",
    "Toronto": "Toronto hub",
    "Boston": "Toronto hub",
    "Austin": "Austin hub",
    "Denver": "Austin hub",
    "Dublin": "Dublin hub",
    "Seattle": "Seattle hub",
    "Osaka": "Osaka hub",
}
TRACKING_BASE = 500_000_000
TRACKING_STEP = 7919


def tracking_number(sequence: int) -> str:
    """The label number for the n-th shipment; handlers.py uses the same formula for new shipments."""
    return f"SL{TRACKING_BASE + sequence * TRACKING_STEP:09d}"


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def city(address: str) -> str:
    return address.rsplit(", ", 1)[-1]


def warehouse_seed() -> dict[str, list[dict]]:
    return built_seed("warehouse")


def _outbound(
    warehouse: dict,
    customers: list[dict],
    parcels: list[dict],
    shipments: list[dict],
    services: list[dict],
    event: Callable[..., None],
) -> None:
    """The warehouse's shipped outbound orders, carried from its city to the store's dock and delivered:
    appended after the rows the spec examples name, with the dispatch desks and stores as customers."""
    by_email = {c["email"]: c for c in customers}

    def account(name: str, email: str, address: str) -> dict:
        if email not in by_email:
            by_email[email] = {
                "customer_id": f"cus_{len(customers) + 1:04d}",
                "full_name": name,
                "email": email,
                "phone": f"+1-555-010-{len(customers):04d}",
                "address": address,
            }
            customers.append(by_email[email])
        return by_email[email]

    codes = {w["name"]: w["code"] for w in warehouse["warehouses"]}
    for n, order in enumerate(logistics.outbound_shipments(warehouse)):
        rng = random.Random(f"outbound/{order.order_number}")
        sender = account(
            order.warehouse,
            logistics.dispatch_email(codes[order.warehouse]),
            f"{10 + n % 7} Logistics Way, {order.origin_city}",
        )
        store = account(
            order.store,
            logistics.store_email(order.store),
            f"{rng.randrange(2, 300)} Market Street, {order.destination_city}",
        )
        picked = datetime.fromisoformat(order.shipped_at)
        created = picked - timedelta(hours=1)
        parcel = {
            "parcel_id": f"prc_{len(parcels) + 1:04d}",
            "sender_id": sender["customer_id"],
            "recipient_id": store["customer_id"],
            "weight_kg": order.weight_kg,
            "length_cm": 60,
            "width_cm": 40,
            "height_cm": 40 * order.cartons,
            "contents": logistics.contents_of(order.order_number, order.cartons),
            "declared_value": float(round(order.weight_kg * 40)),
            "created_at": iso(created - timedelta(hours=2)),
        }
        parcels.append(parcel)
        service = next(s for s in services if s["name"] == ("Standard" if order.weight_kg <= 30 else "Heavy Freight"))
        transit = timedelta(days=int(service["transit_days"]))
        out = (picked + transit).replace(hour=7, minute=0, second=0)
        delivered = out + timedelta(hours=rng.randrange(2, 8))
        shipment = {
            "shipment_id": f"shp_{len(shipments) + 1:04d}",
            "parcel_id": parcel["parcel_id"],
            "tracking_number": tracking_number(len(shipments) + 1),
            "service_id": service["service_id"],
            "destination_address": store["address"],
            "status": "delivered",
            "price": round(service["base_price"] + service["price_per_kg"] * order.weight_kg, 2),
            "created_at": iso(created),
            "estimated_delivery": (created + transit).date().isoformat(),
            "closed_at": iso(delivered),
        }
        shipments.append(shipment)
        hub = f"{order.origin_city} hub" if f"{order.origin_city} hub" in HUBS else rng.choice(HUBS)
        event(shipment, created, order.origin_city, "label_created")
        event(shipment, picked, order.origin_city, "picked_up")
        event(shipment, picked + transit * 0.3, hub, "arrived_at_hub")
        event(shipment, picked + transit * 0.5, hub, "departed_hub")
        event(shipment, out, order.destination_city, "out_for_delivery")
        event(shipment, delivered, order.destination_city, "delivered", "Signed by recipient")


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    customers = [
        {
            "customer_id": f"cus_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "phone": p["phone"],
            "address": fakedata.replaced(rng, fakedata.address, p["address"]),
        }
        for i, p in enumerate(community(50), start=1)
    ]
    address_of = {c["customer_id"]: c["address"] for c in customers}
    services = [
        {
            "service_id": f"svc_{i:02d}",
            "name": name,
            "max_weight_kg": max_kg,
            "base_price": base,
            "price_per_kg": per_kg,
            "transit_days": days,
        }
        for i, (name, max_kg, base, per_kg, days) in enumerate(SERVICES, start=1)
    ]

    parcels = []
    for n in range(90):
        sender, recipient = rng.sample(customers, 2)
        contents, weight, value = rng.choice(CONTENTS)
        size = max(10, int(20 + weight * 4))
        parcels.append(
            {
                "parcel_id": f"prc_{n + 1:04d}",
                "sender_id": sender["customer_id"],
                "recipient_id": recipient["customer_id"],
                "weight_kg": round(weight * rng.uniform(0.7, 1.4), 2),
                "length_cm": size + rng.randrange(0, 20),
                "width_cm": max(5, size // 2 + rng.randrange(0, 10)),
                "height_cm": max(3, size // 3 + rng.randrange(0, 10)),
                "contents": contents,
                "declared_value": float(round(value * rng.uniform(0.8, 1.3))),
                "created_at": "",
            }
        )

    shipments: list[dict] = []
    events: list[dict] = []
    pickups: list[dict] = []

    def event(shipment: dict, moment: datetime, location: str, kind: str, note: str | None = None) -> None:
        events.append(
            {
                "event_id": "",
                "shipment_id": shipment["shipment_id"],
                "occurred_at": iso(moment),
                "location": location,
                "event_type": kind,
                "note": note,
            }
        )

    def pickup(shipment: dict, day: datetime, status: str, sender_address: str) -> None:
        pickups.append(
            {
                "pickup_id": "",
                "shipment_id": shipment["shipment_id"],
                "pickup_date": day.date().isoformat(),
                "time_window": rng.choice(["morning", "afternoon"]),
                "address": sender_address,
                "status": status,
            }
        )

    # The first parcels are shipped most recently, so low ids are the open, still-changeable shipments.
    shipped = parcels[:84]
    for n, parcel in enumerate(shipped):
        # A third of the shipments are from the last five days (still moving), the rest up to two months old.
        age_days = 0.1 + n * 0.17 + rng.uniform(0, 0.1) if n < 30 else 5 + (n - 30) + rng.uniform(0, 0.8)
        created = (now - timedelta(days=age_days)).replace(minute=0, second=0, microsecond=0)
        parcel["created_at"] = iso(created - timedelta(hours=rng.randrange(1, 30)))
        fitting = [s for s in services if s["max_weight_kg"] >= parcel["weight_kg"]]
        service = rng.choice(fitting[-3:] if parcel["weight_kg"] > 1 else fitting)
        sender_address = address_of[parcel["sender_id"]]
        destination = address_of[parcel["recipient_id"]]
        shipment = {
            "shipment_id": f"shp_{n + 1:04d}",
            "parcel_id": parcel["parcel_id"],
            "tracking_number": tracking_number(n + 1),
            "service_id": service["service_id"],
            "destination_address": destination,
            "status": "label_created",
            "price": round(service["base_price"] + service["price_per_kg"] * parcel["weight_kg"], 2),
            "created_at": iso(created),
            "estimated_delivery": (created + timedelta(days=service["transit_days"])).date().isoformat(),
            "closed_at": None,
        }
        shipments.append(shipment)
        event(shipment, created, city(sender_address), "label_created")
        if n % 23 == 7:  # cancelled before pickup
            shipment["status"] = "cancelled"
            shipment["closed_at"] = iso(created + timedelta(hours=5))
            event(shipment, created + timedelta(hours=5), city(sender_address), "cancelled", "Cancelled by sender")
            continue
        picked = created + timedelta(hours=rng.randrange(4, 20))
        if picked >= now or (n < 10 and n % 3 != 1):  # still waiting for the courier
            if rng.random() < 0.7:
                day = now + timedelta(days=1 + (now.weekday() == 5))
                pickup(shipment, day, "scheduled", sender_address)
            continue
        if rng.random() < 0.5 and picked.weekday() != 6:
            pickup(shipment, picked, "completed", sender_address)
        shipment["status"] = "picked_up"
        event(shipment, picked, city(sender_address), "picked_up")
        transit = timedelta(days=int(service["transit_days"]))
        hub = fakedata.replaced(rng, lambda r: r.choice(HUBS), REGION_HUB.get(city(sender_address), "Berlin hub"))
        at_hub = picked + transit * 0.3
        if at_hub >= now:
            continue
        shipment["status"] = "in_transit"
        event(shipment, at_hub, hub, "arrived_at_hub")
        left_hub = at_hub + transit * 0.2
        if left_hub >= now:
            continue
        event(shipment, left_hub, hub, "departed_hub")
        if n % 17 == 11:  # vanished between hubs
            lost_at = left_hub + timedelta(days=7)
            if lost_at < now:
                shipment["status"] = "lost"
                shipment["closed_at"] = iso(lost_at)
                event(shipment, lost_at, hub, "reported_lost", "No scan for 7 days; declared lost")
            continue
        if n in (3, 6) or rng.random() < 0.1:  # redirected by the recipient while in transit
            new_address = fakedata.address(rng)
            changed = left_hub + timedelta(hours=2)
            if changed < now:
                shipment["_change"] = (destination, new_address, changed)
                shipment["destination_address"] = new_address
                destination = new_address
                event(shipment, changed, hub, "address_changed", f"Redirected to {new_address}")
        out = max(left_hub + timedelta(hours=6), picked + transit).replace(hour=7, minute=0)
        if out <= left_hub:
            out += timedelta(days=1)
        if out >= now:
            continue
        shipment["status"] = "out_for_delivery"
        event(shipment, out, city(destination), "out_for_delivery")
        delivered = out + timedelta(hours=rng.randrange(2, 9))
        if delivered >= now or out.date() == now.date():  # today's round is still on the road
            continue
        if n % 13 == 5:  # nobody home twice, back to the sender
            event(shipment, delivered, city(destination), "delivery_attempted", "Recipient not at home")
            returned = delivered + timedelta(days=3)
            if returned < now:
                shipment["status"] = "returned_to_sender"
                shipment["closed_at"] = iso(returned)
                event(shipment, returned, city(sender_address), "returned_to_sender")
            continue
        shipment["status"] = "delivered"
        shipment["closed_at"] = iso(delivered)
        event(
            shipment,
            delivered,
            city(destination),
            "delivered",
            rng.choice(["Left at front door", "Signed by recipient", "Handed to neighbour"]),
        )
    for parcel in parcels[84:]:
        parcel["created_at"] = iso(now - timedelta(hours=rng.randrange(1, 48)))

    changes = []
    for shipment in shipments:
        if "_change" in shipment:
            old, new, when = shipment.pop("_change")
            changes.append(
                {
                    "change_id": f"adc_{len(changes) + 1:04d}",
                    "shipment_id": shipment["shipment_id"],
                    "old_address": old,
                    "new_address": new,
                    "requested_at": iso(when),
                }
            )

    claims = []
    value_of = {p["parcel_id"]: p["declared_value"] for p in parcels}
    descriptions = {
        "damaged": ["Box crushed, contents broken", "Water damage on arrival", "Screen cracked inside the package"],
        "missing_items": ["One of three items missing", "Package arrived opened and half empty"],
        "lost": ["Never arrived", "Tracking stopped at the hub"],
    }
    for shipment in shipments:
        if shipment["status"] not in ("delivered", "lost") or rng.random() > (
            0.9 if shipment["status"] == "lost" else 0.5
        ):
            continue
        closed = datetime.fromisoformat(shipment["closed_at"])
        kind = "lost" if shipment["status"] == "lost" else rng.choice(["damaged", "damaged", "missing_items"])
        filed = min(closed + timedelta(days=rng.randrange(1, 20)), now - timedelta(hours=2))
        age = (now - filed).days
        status = (
            "submitted"
            if age < 5
            else "under_review"
            if age < 12
            else rng.choice(["approved", "rejected", "paid", "paid"])
        )
        claims.append(
            {
                "claim_id": f"clm_{len(claims) + 1:04d}",
                "shipment_id": shipment["shipment_id"],
                "claim_type": kind,
                "amount": round(
                    value_of[shipment["parcel_id"]] * (1.0 if kind == "lost" else rng.uniform(0.2, 0.9)), 2
                ),
                "description": rng.choice(descriptions[kind]),
                "filed_at": iso(filed),
                "status": status,
            }
        )

    _outbound(warehouse_seed(), customers, parcels, shipments, services, event)
    events.sort(key=lambda e: (e["occurred_at"], e["shipment_id"]))
    for n, row in enumerate(events, start=1):
        row["event_id"] = f"evt_{n:05d}"
    pickups.sort(key=lambda p: (p["pickup_date"], p["shipment_id"]), reverse=True)
    for n, row in enumerate(pickups, start=1):
        row["pickup_id"] = f"pck_{n:04d}"
    cities = _cities()
    return {
        "customers": customers,
        "service_levels": services,
        "parcels": parcels,
        "shipments": shipments,
        "tracking_events": events,
        "pickups": pickups,
        "address_changes": changes,
        "claims": claims,
        "cities": cities,
        "customs_declarations": _declarations(cities, customers, parcels, shipments),
    }


# Cities served beyond the cast's home cities (warehouse customers), with their ISO country codes.
MORE_CITIES = {"Denver": "US", "Lyon": "FR", "Prague": "CZ"}
EU = {"AT", "CZ", "DE", "ES", "FR", "IE", "PL", "PT"}  # one customs union: no declaration between them
CUSTOMS_KINDS = {"documents": "documents", "books": "merchandise", "clothing": "gift", "shoes": "gift"}


def _cities() -> list[dict]:
    """Every city the carrier serves, with the customs union a border crossing is judged by."""
    countries = {city: country for city, (country, _zone) in CITIES.items()} | MORE_CITIES
    return [
        {"city": city, "country": country, "customs_union": "EU" if country in EU else country}
        for city, country in sorted(countries.items())
    ]


def _city_of(address: str) -> str:
    return address.rsplit(", ", 1)[-1]


def _declarations(cities: list[dict], customers: list[dict], parcels: list[dict], shipments: list[dict]) -> list[dict]:
    """A customs declaration for every shipment whose label crossed a customs border, made with its label."""
    union = {c["city"]: c["customs_union"] for c in cities}
    country = {c["city"]: c["country"] for c in cities}
    address = {c["customer_id"]: c["address"] for c in customers}
    parcel_of = {p["parcel_id"]: p for p in parcels}
    rows = []
    for shipment in sorted(shipments, key=lambda s: s["shipment_id"]):
        parcel = parcel_of[shipment["parcel_id"]]
        origin, destination = _city_of(address[parcel["sender_id"]]), _city_of(shipment["destination_address"])
        if union[origin] == union[destination]:
            continue
        rows.append(
            {
                "declaration_id": f"cdc_{len(rows) + 1:04d}",
                "shipment_id": shipment["shipment_id"],
                "contents_type": CUSTOMS_KINDS.get(parcel["contents"], "merchandise"),
                "description": parcel["contents"],
                "hs_code": None,
                "value": parcel["declared_value"],
                "origin_country": country[origin],
                "destination_country": country[destination],
                "created_at": shipment["created_at"],
            }
        )
    return rows
