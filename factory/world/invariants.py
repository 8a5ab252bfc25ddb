"""Farm-level invariants over the published seeds (servers/*/seed.json): one world, checked.

A violation names the rule, and every server, table and row involved, so a broken fact can be found
from either side: the same person with two cities, a grocery order with no charge, a charge whose bank
line disagrees on the amount, a server on an undeclared clock, a meeting whose mail thread lists
other people.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from envfarm.factory.world import clock, commerce, logistics, work
from envfarm.factory.world.cast import build_cast
from envfarm.factory.world.invariants_base import RowRef, Violation

Seeds = dict[str, dict[str, list[dict[str, Any]]]]


class Farm(BaseModel):
    """What the checker reads of each published server: its clock and its seed rows."""

    clocks: dict[str, str]
    seeds: Seeds


def load_farm(servers_dir: Path) -> Farm:
    """Read servers/<name>/spec.json (the clock) and seed.json of every published server."""
    clocks: dict[str, str] = {}
    seeds: Seeds = {}
    for folder in sorted(p for p in servers_dir.iterdir() if (p / "seed.json").is_file()):
        seeds[folder.name] = json.loads((folder / "seed.json").read_text(encoding="utf-8"))
        spec_file = folder / "spec.json"
        if spec_file.is_file():
            clocks[folder.name] = str(json.loads(spec_file.read_text(encoding="utf-8"))["now"])
    return Farm(clocks=clocks, seeds=seeds)


def _city(row: dict[str, Any], column: str) -> str | None:
    value = row.get(column)
    return value.rsplit(",", 1)[-1].strip() if isinstance(value, str) else None


def _column(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: row.get(name)


def _lower(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: row[name].lower() if isinstance(row.get(name), str) else None


# server -> table -> (primary key, {attribute: how to read it}); every table keyed by a person's email.
PERSON_VIEWS: dict[str, dict[str, tuple[str, dict[str, Callable[[dict[str, Any]], Any]]]]] = {
    "banking": {"customers": ("customer_id", {"city": lambda r: _city(r, "address"), "address": _column("address")})},
    "grocery_delivery": {
        "customers": ("customer_id", {"city": lambda r: _city(r, "address"), "address": _column("address")})
    },
    "parcel_shipping": {
        "customers": ("customer_id", {"city": lambda r: _city(r, "address"), "address": _column("address")})
    },
    "marketplace": {"members": ("member_id", {"city": _column("city")})},
    "calendar": {"people": ("person_id", {"department": _lower("department"), "job_title": _column("job_title")})},
    "docs_drive": {"people": ("person_id", {"department": _lower("department")})},
    "expenses": {"employees": ("employee_id", {"department": _lower("department"), "job_title": _column("title")})},
    "project_tracker": {"people": ("person_id", {"job_title": _column("job_title")})},
    "team_chat": {"members": ("member_id", {"job_title": _column("title")})},
    "tour_booking": {"travellers": ("traveller_id", {"country": _column("home_country")})},
    "pharmacy": {"patients": ("patient_id", {"date_of_birth": _column("date_of_birth")})},
    "car_rental": {"drivers": ("driver_id", {"date_of_birth": _column("date_of_birth")})},
    "clinic": {"patients": ("patient_id", {"date_of_birth": _column("date_of_birth")})},
}
SHARED = {"full_name": _column("full_name"), "phone": _column("phone")}


def _person_rows(seeds: Seeds) -> Iterator[tuple[str, RowRef, dict[str, Any]]]:
    """(email, row, attributes) for every row of every seed table that describes a person by email."""
    for server, tables in sorted(seeds.items()):
        for table, rows in sorted(tables.items()):
            if not rows or "email" not in rows[0] or "full_name" not in rows[0]:
                continue
            key, readers = PERSON_VIEWS.get(server, {}).get(table, (next(iter(rows[0])), {}))
            for row in rows:
                if not isinstance(row.get("email"), str):
                    continue
                attributes = {name: read(row) for name, read in {**SHARED, **readers}.items()}
                yield row["email"], RowRef(server=server, table=table, key=str(row[key])), attributes


def check_people(seeds: Seeds) -> list[Violation]:
    """The same email is the same person everywhere: name, phone, home, job, department, birth date."""
    first: dict[tuple[str, str], tuple[Any, RowRef]] = {}
    found = []
    for email, ref, attributes in _person_rows(seeds):
        for name, value in attributes.items():
            if value is None:
                continue
            seen = first.setdefault((email, name), (value, ref))
            if seen[0] != value and seen[1].server != ref.server:
                found.append(
                    Violation(
                        rule="same person",
                        message=f"{email}: {name} {seen[0]!r} in {seen[1].server} but {value!r} in {ref.server}",
                        rows=[seen[1], ref],
                    )
                )
    return found


def check_clocks(clocks: dict[str, str]) -> list[Violation]:
    """Every server of the world runs on the farm clock or on the skew the world declares for it."""
    found = []
    for server, now in sorted(clocks.items()):
        if not clock.in_world(server):
            continue
        expected = clock.declared_clock(server)
        if clock.parse_instant(now) != expected:
            found.append(
                Violation(
                    rule="one clock",
                    message=f"{server} runs at {now}, the world declares {clock.iso(expected)}",
                    rows=[RowRef(server=server, table="spec", key="now")],
                )
            )
    return found


def check_commerce(seeds: Seeds) -> list[Violation]:
    """Grocery order -> payments charge -> bank line: same payer, amount and time at every hop."""
    grocery, payments, banking = (seeds.get(s) for s in ("grocery_delivery", "payments", "banking"))
    found: list[Violation] = []
    if grocery and payments:
        payer = {c["customer_id"]: c["email"] for c in payments["customers"]}
        by_description = {c["description"]: c for c in payments["charges"]}
        for order in commerce.grocery_purchases(grocery):
            order_ref = RowRef(server="grocery_delivery", table="orders", key=order.order_id)
            charge = by_description.get(commerce.grocery_description(order.order_id))
            if charge is None:
                found.append(Violation(rule="order charged", message="no payments charge", rows=[order_ref]))
                continue
            charge_ref = RowRef(server="payments", table="charges", key=charge["charge_id"])
            seen = (payer[charge["customer_id"]], charge["amount"], charge["created_at"])
            if seen != (order.email, order.amount, order.placed_at):
                found.append(
                    Violation(
                        rule="order charged",
                        message=f"order says {(order.email, order.amount, order.placed_at)}, charge says {seen}",
                        rows=[order_ref, charge_ref],
                    )
                )
    if payments and banking:
        owner = {a["account_id"]: a["customer_id"] for a in banking["accounts"]}
        email_of = {c["customer_id"]: c["email"] for c in banking["customers"]}
        posted = {(t["description"], t["posted_at"]): t for t in banking["transactions"]}
        for line in commerce.card_postings(payments):
            charge_ref = RowRef(server="payments", table="charges", key=line.charge_id)
            txn = posted.get((line.description, line.posted_at))
            if txn is None:
                found.append(
                    Violation(rule="charge posted", message=f"no bank line {line.description!r}", rows=[charge_ref])
                )
                continue
            txn_ref = RowRef(server="banking", table="transactions", key=txn["txn_id"])
            holder = email_of[owner[txn["account_id"]]]
            if (holder, txn["amount"]) != (line.email, line.amount):
                found.append(
                    Violation(
                        rule="charge posted",
                        message=f"charge says {(line.email, line.amount)}, bank says {(holder, txn['amount'])}",
                        rows=[charge_ref, txn_ref],
                    )
                )
    return found


def check_outbound(seeds: Seeds) -> list[Violation]:
    """Each shipped warehouse order is a delivered parcel from the warehouse's city to the store that
    ordered it, picked up at the time the warehouse says it shipped."""
    warehouse, carrier = seeds.get("warehouse"), seeds.get("parcel_shipping")
    if not warehouse or not carrier:
        return []
    customer = {c["customer_id"]: c for c in carrier["customers"]}
    parcel_of = {p["contents"].split(":")[0]: p for p in carrier["parcels"]}
    shipment_of = {s["parcel_id"]: s for s in carrier["shipments"]}
    pickup_of = {
        e["shipment_id"]: e["occurred_at"] for e in carrier["tracking_events"] if e["event_type"] == "picked_up"
    }
    order_id = {o["order_number"]: o["order_id"] for o in warehouse["orders"]}
    found = []
    for order in logistics.outbound_shipments(warehouse):
        order_ref = RowRef(server="warehouse", table="orders", key=order_id[order.order_number])
        parcel = parcel_of.get(f"Outbound order {order.order_number}")
        shipment = shipment_of.get(parcel["parcel_id"]) if parcel else None
        if parcel is None or shipment is None:
            found.append(Violation(rule="order shipped", message="no parcel shipment carries it", rows=[order_ref]))
            continue
        seen = (
            customer[parcel["sender_id"]]["address"].rsplit(", ", 1)[-1],
            customer[parcel["recipient_id"]]["full_name"],
            pickup_of.get(shipment["shipment_id"]),
        )
        if seen != (order.origin_city, order.store, order.shipped_at):
            found.append(
                Violation(
                    rule="order shipped",
                    message=f"warehouse says {(order.origin_city, order.store, order.shipped_at)}, carrier says {seen}",
                    rows=[order_ref, RowRef(server="parcel_shipping", table="shipments", key=shipment["shipment_id"])],
                )
            )
    return found


def check_salaries(seeds: Seeds) -> list[Violation]:
    """Salary lines in banking come from the person's employer in the world's cast."""
    banking = seeds.get("banking")
    if not banking:
        return []
    employer = {p.email: p.employer for p in build_cast()}
    holder = {a["account_id"]: a["customer_id"] for a in banking["accounts"]}
    email_of = {c["customer_id"]: c["email"] for c in banking["customers"]}
    found = []
    for txn in banking["transactions"]:
        if txn["category"] != "salary":
            continue
        email = email_of[holder[txn["account_id"]]]
        expected = f"Salary {employer.get(email)}"
        if txn["description"] != expected:
            found.append(
                Violation(
                    rule="one employer",
                    message=f"{email} is paid {txn['description']!r}, the cast says {expected!r}",
                    rows=[RowRef(server="banking", table="transactions", key=txn["txn_id"])],
                )
            )
    return found


def check_farm(farm: Farm) -> list[Violation]:
    """Every farm invariant; an empty list means the published servers describe one world."""
    return [
        *check_clocks(farm.clocks),
        *check_people(farm.seeds),
        *check_commerce(farm.seeds),
        *check_salaries(farm.seeds),
        *check_outbound(farm.seeds),
        *work.check_work(farm.seeds),
    ]


def farm_violations(servers_dir: Path) -> list[Violation]:
    """The hook `envfarm verify --all` calls: the invariants of the farm published in servers_dir."""
    return check_farm(load_farm(servers_dir))
