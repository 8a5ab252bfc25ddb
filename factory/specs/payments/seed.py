"""Seed rows of payments: 40 customers (the farm's shared cast, same emails as the shop and grocery
servers), 20 merchants, ~80 payment methods, 110 charges, their refunds, and merchant payouts.

Amounts agree across tables: a charge's amount_refunded is the sum of its refunds and its status follows
(captured, partially_refunded, refunded); authorized and voided charges captured nothing; a merchant's
pending balance is what was captured in the last two days net of refunds.
"""

import random
from datetime import datetime, timedelta
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.world import commerce
from envfarm.factory.world.cast import community
from envfarm.factory.world.sources import built_seed

MERCHANTS = [
    ("FreshCart Grocery", "grocery"),
    ("Secondhand Market", "marketplace"),
    ("Northwind Software", "software"),
    ("Bluepeak Fitness", "fitness"),
    ("Copperline Cafe", "restaurant"),
    ("CityRide Transit", "transport"),
    ("Greenfield Energy", "utilities"),
    ("Silverleaf Books", "retail"),
    ("Brightside Pharmacy", "health"),
    ("Ironbridge Hardware", "retail"),
    ("Sunhaven Bakery", "restaurant"),
    ("Redwood Cinema", "entertainment"),
    ("Clearwater Water Co", "utilities"),
    ("Stonegate Parking", "transport"),
    ("Lakeshore Yoga", "fitness"),
    ("Westbrook Florist", "retail"),
    ("Highland Streaming", "entertainment"),
    ("Oakridge Vet Clinic", "health"),
    ("Pinecrest Coworking", "software"),
    ("Harbor Noodle Bar", "restaurant"),
]
TYPICAL_AMOUNT = {
    "grocery": (18, 140),
    "marketplace": (15, 400),
    "software": (9, 60),
    "fitness": (25, 90),
    "restaurant": (8, 65),
    "transport": (3, 40),
    "utilities": (40, 180),
    "retail": (12, 220),
    "health": (10, 160),
    "entertainment": (7, 45),
}
DESCRIPTIONS = {
    "grocery": "In-store purchase",
    "marketplace": "Marketplace purchase",
    "software": "Monthly subscription",
    "fitness": "Membership fee",
    "restaurant": "Dine-in bill",
    "transport": "Ride fare",
    "utilities": "Monthly bill",
    "retail": "In-store purchase",
    "health": "Visit and medication",
    "entertainment": "Tickets",
}
BRANDS = ["visa", "visa", "mastercard", "mastercard", "amex"]
BANKS = ["First Harbor Bank", "Lakeshore Credit Union", "Metro Savings"]
REFUND_REASONS = ["requested_by_customer", "duplicate", "product_not_received", "fraudulent"]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    people = community(40)
    customers: list[dict[str, Any]] = [
        {
            "customer_id": f"cus_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "phone": p["phone"],
            "created_at": fakedata.moment(now, -24 * rng.randrange(60, 900)),
        }
        for i, p in enumerate(people, start=1)
    ]
    merchants: list[dict[str, Any]] = [
        {
            "merchant_id": f"mer_{i:03d}",
            "name": name,
            "category": category,
            "support_email": f"billing@{fakedata.slug(name).replace('.', '')}.example.com",
            "payout_schedule": rng.choice(["daily", "weekly"]),
            "status": "restricted" if i in (7, 18) else "active",
            "available_balance": 0.0,
            "pending_balance": 0.0,
        }
        for i, (name, category) in enumerate(MERCHANTS, start=1)
    ]

    methods: list[dict] = []
    usable: dict[str, list[dict]] = {}
    for n, customer in enumerate(customers):
        count = 1 + (n % 3 != 0) + (n % 5 == 0)
        for k in range(count):
            is_card = k < 2 or rng.random() < 0.5
            expired = is_card and (n % 7 == 3 and k == 0)  # an old card left on file
            removed = (not expired) and k == 2 and n % 2 == 0
            row = {
                "method_id": f"pm_{len(methods) + 1:04d}",
                "customer_id": customer["customer_id"],
                "type": "card" if is_card else "bank_account",
                "brand": rng.choice(BRANDS) if is_card else None,
                "bank_name": None if is_card else rng.choice(BANKS),
                "last4": f"{rng.randrange(0, 10000):04d}",
                "exp_month": rng.randrange(1, 13) if is_card else None,
                "exp_year": (2025 if expired else rng.randrange(2026, 2031)) if is_card else None,
                "label": None,
                "is_default": False,
                "status": "removed" if removed else "active",
            }
            if is_card and row["exp_year"] == 2026:
                row["exp_month"] = rng.randrange(4, 13)  # still valid on the frozen clock (April 2026)
            row["label"] = f"{(row['brand'] or 'bank').capitalize()} ending {row['last4']}"
            methods.append(row)
            if row["status"] == "active" and not expired:
                usable.setdefault(customer["customer_id"], []).append(row)
        owned = usable.get(customer["customer_id"], [])
        if owned:
            owned[0]["is_default"] = True

    charges: list[dict] = []
    refunds: list[dict] = []
    statuses = (
        ["captured"] * 62 + ["authorized"] * 14 + ["voided"] * 9 + ["partially_refunded"] * 12 + ["refunded"] * 13
    )
    rng.shuffle(statuses)
    # The first charges are placed on purpose for the rule examples: authorized, then captured.
    statuses[:4] = ["authorized", "captured", "voided", "refunded"]
    for n, status in enumerate(statuses):
        customer = customers[n % len(customers)] if n < 40 else rng.choice(customers)
        if customer["customer_id"] not in usable:  # their only card expired: charge the first customer instead
            customer = customers[0]
        owned = usable[customer["customer_id"]]
        method = rng.choice(owned)
        merchant = merchants[n % len(merchants)] if n < 20 else rng.choice(merchants)
        low, high = TYPICAL_AMOUNT[merchant["category"]]
        amount = fakedata.money(rng, low, high)
        age_hours = {
            "authorized": rng.randrange(2, 96),
            "partially_refunded": rng.randrange(72, 24 * 30),
            "refunded": rng.randrange(72, 24 * 30),
        }.get(status, rng.randrange(2, 24 * 30))
        created = now - timedelta(hours=age_hours)
        captured = status not in ("authorized", "voided")
        row = {
            "charge_id": f"ch_{n + 1:04d}",
            "customer_id": customer["customer_id"],
            "merchant_id": merchant["merchant_id"],
            "method_id": method["method_id"],
            "amount": amount,
            "description": f"{DESCRIPTIONS[merchant['category']]} at {merchant['name']}",
            "status": status,
            "amount_captured": amount if captured else 0.0,
            "amount_refunded": 0.0,
            "created_at": _iso(created),
            "captured_at": _iso(created + timedelta(minutes=5)) if captured else None,
        }
        charges.append(row)
        if status in ("partially_refunded", "refunded"):
            parts = [amount] if status == "refunded" and rng.random() < 0.6 else None
            if parts is None:
                first = round(amount * rng.uniform(0.2, 0.6), 2)
                parts = [first, round(amount - first, 2)] if status == "refunded" else [first]
            for k, part in enumerate(parts):
                refunds.append(
                    {
                        "refund_id": f"re_{len(refunds) + 1:04d}",
                        "charge_id": row["charge_id"],
                        "amount": part,
                        "reason": rng.choice(REFUND_REASONS),
                        "status": "succeeded",
                        "created_at": _iso(created + timedelta(hours=6 + 20 * k + rng.randrange(0, 20))),
                    }
                )
            row["amount_refunded"] = round(sum(parts), 2)
        if captured:
            net = round(row["amount_captured"] - row["amount_refunded"], 2)
            balance = "pending_balance" if age_hours < 48 else "available_balance"
            merchant[balance] = round(merchant[balance] + net, 2)

    # Every grocery order placed on the grocery server is charged here, by FreshCart Grocery.
    grocer = next(m for m in merchants if m["name"] == commerce.GROCERY_MERCHANT)
    customer_of = {c["email"]: c for c in customers}
    for purchase in commerce.grocery_purchases(built_seed("grocery_delivery")):
        customer = customer_of[purchase.email]
        on_file = [m for m in methods if m["customer_id"] == customer["customer_id"]]
        method = next((m for m in usable.get(customer["customer_id"], []) if m["is_default"]), on_file[0])
        created = datetime.fromisoformat(purchase.placed_at)
        charges.append(
            {
                "charge_id": f"ch_{len(charges) + 1:04d}",
                "customer_id": customer["customer_id"],
                "merchant_id": grocer["merchant_id"],
                "method_id": method["method_id"],
                "amount": purchase.amount,
                "description": commerce.grocery_description(purchase.order_id),
                "status": "captured",
                "amount_captured": purchase.amount,
                "amount_refunded": 0.0,
                "created_at": purchase.placed_at,
                "captured_at": _iso(created + timedelta(minutes=5)),
            }
        )
        balance = "pending_balance" if now - created < timedelta(hours=48) else "available_balance"
        grocer[balance] = round(grocer[balance] + purchase.amount, 2)

    payouts: list[dict] = []
    for merchant in merchants:
        for k in range(rng.randrange(1, 4)):
            created = now - timedelta(days=3 + 7 * k + rng.randrange(0, 3))
            payouts.append(
                {
                    "payout_id": f"po_{len(payouts) + 1:04d}",
                    "merchant_id": merchant["merchant_id"],
                    "amount": fakedata.money(rng, 150, 1800),
                    "status": "paid",
                    "created_at": _iso(created),
                    "arrival_date": fakedata.day(created, 2),
                }
            )
        # Payouts already sent came out of earlier balances; keep a float besides the recent captures.
        merchant["available_balance"] = round(merchant["available_balance"] + fakedata.money(rng, 200, 2500), 2)
    for merchant in merchants[:6]:
        amount = round(merchant["available_balance"] * 0.4, 2)
        merchant["available_balance"] = round(merchant["available_balance"] - amount, 2)
        payouts.append(
            {
                "payout_id": f"po_{len(payouts) + 1:04d}",
                "merchant_id": merchant["merchant_id"],
                "amount": amount,
                "status": "in_transit",
                "created_at": _iso(now - timedelta(hours=20)),
                "arrival_date": fakedata.day(now, 1),
            }
        )

    return {
        "customers": customers,
        "merchants": merchants,
        "payment_methods": methods,
        "charges": charges,
        "refunds": refunds,
        "payouts": payouts,
        "subscriptions": _subscriptions(charges, merchants, methods, now),
        "disputes": _disputes(charges, now),
    }


RECURRING = {"software": "Pro plan", "fitness": "Monthly membership", "entertainment": "Premium streaming"}
DISPUTE_FEE = 15.0
DISPUTE_STATES = ["needs_response", "under_review", "won", "lost", "needs_response", "under_review"]
DISPUTE_REASONS = [
    "product_not_received",
    "fraudulent",
    "product_unacceptable",
    "duplicate",
    "fraudulent",
    "product_not_received",
]


def _subscriptions(charges: list[dict], merchants: list[dict], methods: list[dict], now: datetime) -> list[dict]:
    """The plans behind the recurring charges: a customer's latest captured charge at a software, fitness or
    streaming merchant is the current period's payment; a few plans are paused or cancelled since."""
    category = {m["merchant_id"]: m["category"] for m in merchants}
    active_method = {m["method_id"] for m in methods if m["status"] == "active"}
    latest: dict[tuple[str, str], dict] = {}
    for charge in charges:
        if category[charge["merchant_id"]] in RECURRING and charge["status"] in ("captured", "partially_refunded"):
            latest[(charge["customer_id"], charge["merchant_id"])] = charge
    rows = []
    for (_customer, merchant), charge in sorted(latest.items(), key=lambda item: item[1]["created_at"]):
        n = len(rows) + 1
        started = datetime.fromisoformat(charge["created_at"])
        period_end = (started + timedelta(days=30)).date()
        cancelled = charge["method_id"] not in active_method or n % 7 == 0
        status = "canceled" if cancelled else "paused" if n % 5 == 0 else "active"
        rows.append(
            {
                "subscription_id": f"sub_{n:04d}",
                "customer_id": charge["customer_id"],
                "merchant_id": merchant,
                "method_id": charge["method_id"],
                "plan_name": RECURRING[category[merchant]],
                "amount": charge["amount_captured"],
                "interval": "month",
                "status": status,
                "current_period_end": period_end.isoformat(),
                "cancel_at_period_end": False,
                "latest_charge_id": charge["charge_id"],
                "created_at": _iso(started - timedelta(days=30 * (1 + n % 6))),
                "canceled_at": _iso(min(started + timedelta(days=3), now)) if cancelled else None,
            }
        )
    return rows


def _disputes(charges: list[dict], now: datetime) -> list[dict]:
    """Six cardholder disputes on captured charges of other customers than the first two, in every state."""
    disputable = [
        c
        for c in charges
        if c["status"] == "captured" and c["customer_id"] not in ("cus_0001", "cus_0002") and c["amount"] >= 20
    ]
    rows = []
    for n, charge in enumerate(disputable[3:9], start=1):
        opened = datetime.fromisoformat(charge["captured_at"]) + timedelta(days=2)
        opened = min(opened, now - timedelta(days=1))
        status = DISPUTE_STATES[n - 1]
        if status == "needs_response":  # the first is within its 7 days to answer, the second left unanswered
            opened = now - timedelta(days=2 if n == 1 else 10, hours=3)
        rows.append(
            {
                "dispute_id": f"dp_{n:04d}",
                "charge_id": charge["charge_id"],
                "customer_id": charge["customer_id"],
                "merchant_id": charge["merchant_id"],
                "amount": charge["amount_captured"],
                "fee": DISPUTE_FEE,
                "reason": DISPUTE_REASONS[n - 1],
                "status": status,
                "evidence": None if status == "needs_response" else "Signed delivery receipt and order log attached.",
                "created_at": _iso(opened),
                "evidence_due_by": (opened + timedelta(days=7)).date().isoformat(),
                "closed_at": _iso(min(opened + timedelta(days=5), now)) if status in ("won", "lost") else None,
            }
        )
    return rows
