"""Seed rows of marketplace: 45 members (the farm's shared cast), 72 listings, their offers, 23 sales
with shipping labels, and a handful of disputes.

Statuses agree across tables: a sold listing has exactly one accepted offer and one sale; its other
offers were declined; a shipped, completed or disputed sale has a label; an open dispute marks its
sale disputed; a refunded sale has a dispute resolved with a refund.
"""

import random
from datetime import datetime, timedelta
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

ITEMS = {
    "electronics": [
        ("Noise-cancelling headphones", 180),
        ("Mirrorless camera body", 520),
        ("E-reader with case", 75),
        ("27-inch monitor", 140),
        ("Mechanical keyboard", 65),
        ("Portable speaker", 45),
    ],
    "furniture": [
        ("Oak dining table", 260),
        ("Mid-century armchair", 190),
        ("Bookshelf, 5 shelves", 70),
        ("Standing desk", 230),
        ("Rattan side table", 40),
    ],
    "books": [
        ("Box set of fantasy novels", 35),
        ("Vintage cookbook collection", 28),
        ("Graphic novel bundle", 30),
        ("Hardcover atlas", 22),
    ],
    "clothing": [
        ("Wool winter coat", 95),
        ("Leather ankle boots", 70),
        ("Denim jacket", 45),
        ("Rain shell jacket", 60),
    ],
    "sports": [
        ("Road bike, 56 cm frame", 450),
        ("Yoga mat and blocks", 25),
        ("Tennis racket", 55),
        ("Adjustable dumbbells", 120),
        ("Camping tent for 2", 85),
    ],
    "music": [("Acoustic guitar", 210), ("Digital piano", 380), ("Vinyl record lot", 60), ("Ukulele", 40)],
    "home": [("Espresso machine", 160), ("Cast iron pan set", 55), ("Stand mixer", 150), ("Robot vacuum", 130)],
    "toys": [("Wooden train set", 45), ("Building brick bundle", 70), ("Board game collection", 50)],
}
CONDITIONS = ["new", "like_new", "good", "good", "fair", "for_parts"]
CONDITION_FACTOR = {"new": 1.0, "like_new": 0.85, "good": 0.7, "fair": 0.5, "for_parts": 0.25}
MESSAGES = [None, "Can pick up this weekend.", "Would you take this?", "Is it still available?", "Cash ready, thanks!"]
# The same tariffs as handlers.py: (base price, price per kg) in USD; express costs 60% more.
TARIFFS = {"parcelpost": (4.5, 0.9), "swiftship": (5.9, 1.1), "greenlane": (3.9, 0.8)}
CARRIERS = list(TARIFFS)
DISPUTE_DETAILS = {
    "not_received": "Tracking has not moved for a week and nothing arrived.",
    "not_as_described": "The listing said like new but there are deep scratches.",
    "damaged": "The box arrived crushed and the item is broken.",
}


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    people = community(45)
    members: list[dict[str, Any]] = [
        {
            "member_id": f"mem_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "phone": p["phone"],
            "city": fakedata.replaced(rng, lambda r: r.choice(fakedata.CITIES), p["city"]),
            "joined_on": fakedata.day(now, -rng.randrange(30, 1500)),
            "rating": round(rng.uniform(3.6, 5.0), 1),
            "status": "suspended" if i in (44, 45) else "active",
        }
        for i, p in enumerate(people, start=1)
    ]
    active_members = [m for m in members if m["status"] == "active"]

    listings: list[dict] = []
    catalog = [(category, title, price) for category, items in ITEMS.items() for title, price in items]
    for n in range(72):
        category, title, base = catalog[n % len(catalog)] if n < len(catalog) else rng.choice(catalog)
        condition = rng.choice(CONDITIONS)
        asking = round(base * CONDITION_FACTOR[condition] * rng.uniform(0.9, 1.15))
        seller = members[43] if n == 69 else rng.choice(active_members)
        listings.append(
            {
                "listing_id": f"lst_{n + 1:04d}",
                "seller_id": seller["member_id"],
                "title": title,
                "category": category,
                "condition": condition,
                "asking_price": float(max(asking, 5)),
                "minimum_price": float(max(round(asking * rng.choice([0.7, 0.75, 0.8, 0.85, 0.9])), 4)),
                "city": seller["city"],
                "description": f"{title} in {condition.replace('_', ' ')} condition, from a smoke-free home.",
                "status": "active",
                "listed_at": fakedata.moment(now, -24 * rng.randrange(5, 70) - rng.randrange(0, 24)),
            }
        )
    # Every third listing from the fifth on is sold (23 of them); a few others are withdrawn.
    sold = [listing for k, listing in enumerate(listings) if k % 3 == 1 and k > 2]
    for listing in sold:
        listing["status"] = "sold"
    for k in (5, 20, 38, 56, 69):
        listings[k]["status"] = "withdrawn"

    offers: list[dict] = []

    def offer(listing: dict, buyer: dict, amount: float, status: str, created: datetime) -> dict:
        row = {
            "offer_id": f"off_{len(offers) + 1:04d}",
            "listing_id": listing["listing_id"],
            "buyer_id": buyer["member_id"],
            "amount": float(amount),
            "message": rng.choice(MESSAGES),
            "status": status,
            "created_at": _iso(created),
            "expires_at": _iso(created + timedelta(days=2)),
        }
        offers.append(row)
        return row

    def buyer_for(listing: dict, taken: set[str]) -> dict:
        return rng.choice(
            [m for m in active_members if m["member_id"] != listing["seller_id"] and m["member_id"] not in taken]
        )

    sales: list[dict] = []
    labels: list[dict] = []
    disputes: list[dict] = []
    sale_statuses = ["completed"] * 10 + ["shipped"] * 5 + ["awaiting_shipment"] * 4 + ["disputed"] * 3 + ["refunded"]
    for n, listing in enumerate(sold):
        listed = datetime.fromisoformat(listing["listed_at"])
        status = sale_statuses[n]
        age_days = {
            "completed": rng.randrange(12, 40),
            "shipped": rng.randrange(3, 8),
            "awaiting_shipment": rng.randrange(0, 2),
            "disputed": rng.randrange(8, 20),
            "refunded": 25,
        }[status]
        sold_at = min(now - timedelta(days=age_days, hours=rng.randrange(1, 10)), listed + timedelta(days=60))
        sold_at = max(sold_at, listed + timedelta(hours=6))
        taken: set[str] = set()
        for _ in range(rng.randrange(0, 3)):  # lower offers the seller turned down
            loser = buyer_for(listing, taken)
            taken.add(loser["member_id"])
            made = max(sold_at - timedelta(hours=rng.randrange(4, 30)), listed + timedelta(hours=1))
            offer(listing, loser, round(listing["minimum_price"] * rng.uniform(1.0, 1.05)), "declined", made)
        buyer = buyer_for(listing, taken)
        price = round(rng.uniform(listing["minimum_price"], listing["asking_price"]))
        accepted = offer(listing, buyer, price, "accepted", sold_at - timedelta(hours=rng.randrange(1, 3)))
        sale = {
            "sale_id": f"sal_{len(sales) + 1:04d}",
            "listing_id": listing["listing_id"],
            "offer_id": accepted["offer_id"],
            "buyer_id": buyer["member_id"],
            "seller_id": listing["seller_id"],
            "price": float(price),
            "sold_at": _iso(sold_at),
            "status": status,
        }
        sales.append(sale)
        if status != "awaiting_shipment":
            carrier = rng.choice(CARRIERS)
            service = rng.choice(["standard", "standard", "express"])
            weight = round(rng.uniform(0.3, 12.0), 1)
            base_fare, per_kg = TARIFFS[carrier]
            labels.append(
                {
                    "label_id": f"lbl_{len(labels) + 1:04d}",
                    "sale_id": sale["sale_id"],
                    "carrier": carrier,
                    "service": service,
                    "weight_kg": weight,
                    "cost": round((base_fare + per_kg * weight) * (1.6 if service == "express" else 1.0), 2),
                    "tracking_number": f"{carrier[:2].upper()}{7000100 + len(labels) * 37:09d}",
                    "created_at": _iso(sold_at + timedelta(hours=rng.randrange(6, 40))),
                    "status": "delivered" if status in ("completed", "refunded") else "in_transit",
                }
            )
        if status in ("disputed", "refunded") or n in (2, 7):
            reason = ["not_received", "not_as_described", "damaged"][len(disputes) % 3]
            dispute_status = {"disputed": "open", "refunded": "resolved_refund"}.get(
                status, "withdrawn" if n == 2 else "resolved_no_refund"
            )
            disputes.append(
                {
                    "dispute_id": f"dsp_{len(disputes) + 1:04d}",
                    "sale_id": sale["sale_id"],
                    "opened_by": buyer["member_id"],
                    "reason": reason,
                    "details": DISPUTE_DETAILS[reason],
                    "status": dispute_status,
                    "opened_at": _iso(sold_at + timedelta(days=4)),
                    "resolution_note": None
                    if dispute_status == "open"
                    else {
                        "resolved_refund": "Seller agreed to a full refund after the item was returned.",
                        "resolved_no_refund": "Photos show the item matched the listing.",
                        "withdrawn": "Parcel turned up at a neighbour's; buyer withdrew.",
                    }[dispute_status],
                }
            )

    # Open offers on active listings: mostly pending, a few expired unanswered or withdrawn by the buyer.
    for listing in listings:
        if listing["status"] != "active":
            continue
        bidders: set[str] = set()
        for _ in range(rng.randrange(0, 3)):
            buyer = buyer_for(listing, bidders)
            bidders.add(buyer["member_id"])
            created = now - timedelta(hours=rng.randrange(2, 40))
            amount = round(rng.uniform(listing["minimum_price"], listing["asking_price"]))
            status = rng.choice(["pending", "pending", "pending", "withdrawn"])
            offer(listing, buyer, amount, status, created)
    # Two pending offers whose 48 hours ran out before the seller answered.
    for listing in [x for x in listings if x["status"] == "active"][3:5]:
        buyer = buyer_for(listing, {o["buyer_id"] for o in offers if o["listing_id"] == listing["listing_id"]})
        offer(listing, buyer, listing["asking_price"], "pending", now - timedelta(days=3))

    return {
        "members": members,
        "listings": listings,
        "offers": offers,
        "sales": sales,
        "shipping_labels": labels,
        "disputes": disputes,
    }
