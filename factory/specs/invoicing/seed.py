"""Seed rows of invoicing: 24 B2B clients (contacts from the farm's shared cast), 24 catalog items,
56 invoices with their lines, the payments received and a few credit notes.

Money adds up on every invoice: subtotal and tax are the sums of its lines, balance_due is total minus
payments minus credits, and the status follows (paid when nothing is due). The first invoices are placed
for the rule examples: inv_0001 a draft with lines, inv_0002 paid, inv_0003 sent and unpaid, inv_0004 void,
inv_0005 an empty draft, inv_0006 partially paid.
"""

import random
from datetime import date, datetime, timedelta
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

SUFFIXES = ["Logistics", "Studio", "Foods", "Labs", "Health", "Retail", "Capital", "Energy"]
CATALOG = [
    # (name, kind, unit, unit price, tax rate)
    ("Consulting hour", "service", "hour", 150.0, 0.2),
    ("Senior consulting hour", "service", "hour", 210.0, 0.2),
    ("Design day", "service", "day", 900.0, 0.2),
    ("Workshop day", "service", "day", 1800.0, 0.2),
    ("Training session", "service", "each", 650.0, 0.2),
    ("Onboarding package", "service", "each", 2500.0, 0.2),
    ("Data migration", "service", "each", 3200.0, 0.2),
    ("Security audit", "service", "each", 4800.0, 0.2),
    ("Support retainer", "subscription", "month", 1200.0, 0.2),
    ("Cloud hosting", "subscription", "month", 300.0, 0.2),
    ("Licence seat", "subscription", "month", 45.0, 0.2),
    ("Backup storage 1 TB", "subscription", "month", 60.0, 0.2),
    ("Managed email", "subscription", "month", 8.0, 0.2),
    ("Laptop 14-inch", "product", "each", 1400.0, 0.2),
    ("27-inch monitor", "product", "each", 320.0, 0.2),
    ("Docking station", "product", "each", 180.0, 0.2),
    ("Wireless headset", "product", "each", 95.0, 0.2),
    ("Ergonomic chair", "product", "each", 540.0, 0.2),
    ("Printed manuals", "product", "each", 12.0, 0.1),
    ("Technical book", "product", "each", 48.0, 0.0),
    ("Travel expenses", "service", "each", 1.0, 0.0),
    ("Project management hour", "service", "hour", 120.0, 0.2),
    ("Copywriting page", "service", "each", 85.0, 0.2),
    ("Photography day", "service", "day", 1100.0, 0.2),
]
LINE_COUNTS = [1, 2, 2, 3, 3, 4, 5]
METHODS = ["bank_transfer", "bank_transfer", "card", "check"]
CREDIT_REASONS = [
    "Discount agreed after delivery",
    "Hours billed twice",
    "Returned hardware",
    "Service outage compensation",
]


def _quantities(item: dict) -> list[int]:
    """Plausible quantities: hours in blocks, months of a subscription, few of the expensive items."""
    if item["unit"] == "hour":
        return [4, 8, 12, 20, 40]
    if item["unit"] == "month":
        return [1, 3, 6, 12]
    if item["unit"] == "day" or item["unit_price"] >= 1000 or item["name"] == "Travel expenses":
        return [1, 1, 2]
    return [1, 2, 3, 5, 10] if item["unit_price"] >= 100 else [5, 10, 20, 40]


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    today = now.date()
    people = community(24)
    clients: list[dict[str, Any]] = [
        {
            "client_id": f"cli_{i + 1:03d}",
            "company_name": f"{fakedata.COMPANIES[i % 16]} {SUFFIXES[(i * 3 + i // 16) % len(SUFFIXES)]}",
            "contact_name": p["full_name"],
            "contact_email": p["email"],
            "billing_city": rng.choice(fakedata.CITIES),
            "payment_terms_days": rng.choice([15, 30, 30, 45, 60]),
            "status": "archived" if i in (21, 22) else "active",
        }
        for i, p in enumerate(people)
    ]
    items: list[dict[str, Any]] = [
        {"item_id": f"itm_{i:03d}", "name": name, "kind": kind, "unit": unit, "unit_price": price, "tax_rate": tax}
        for i, (name, kind, unit, price, tax) in enumerate(CATALOG, start=1)
    ]

    invoices: list[dict] = []
    lines: list[dict] = []
    payments: list[dict] = []
    credits: list[dict] = []

    def new_invoice(client: dict, issued: date, status: str) -> dict:
        n = len(invoices) + 1
        invoice = {
            "invoice_id": f"inv_{n:04d}",
            "number": f"INV-{1000 + n}",
            "client_id": client["client_id"],
            "issued_on": issued.isoformat(),
            "due_on": (issued + timedelta(days=client["payment_terms_days"])).isoformat(),
            "status": status,
            "subtotal": 0.0,
            "tax_total": 0.0,
            "total": 0.0,
            "amount_paid": 0.0,
            "amount_credited": 0.0,
            "balance_due": 0.0,
            "notes": rng.choice([None, None, "PO 4471", "Thank you for your business", "Project Phoenix"]),
            "sent_at": None if status == "draft" else f"{issued.isoformat()}T{rng.randrange(9, 17):02d}:00:00Z",
            "void_reason": "Issued to the wrong client" if status == "void" else None,
        }
        invoices.append(invoice)
        return invoice

    def add_lines(invoice: dict, count: int) -> None:
        for item in rng.sample(items, count):
            quantity = float(rng.choice(_quantities(item)))
            unit_price = item["unit_price"] if item["name"] != "Travel expenses" else fakedata.money(rng, 80, 900)
            line_subtotal = round(quantity * unit_price, 2)
            line_tax = round(line_subtotal * item["tax_rate"], 2)
            lines.append(
                {
                    "line_id": f"iln_{len(lines) + 1:04d}",
                    "invoice_id": invoice["invoice_id"],
                    "item_id": item["item_id"],
                    "description": item["name"],
                    "quantity": quantity,
                    "unit_price": unit_price,
                    "tax_rate": item["tax_rate"],
                    "line_subtotal": line_subtotal,
                    "line_tax": line_tax,
                }
            )
            invoice["subtotal"] = round(invoice["subtotal"] + line_subtotal, 2)
            invoice["tax_total"] = round(invoice["tax_total"] + line_tax, 2)
        invoice["total"] = round(invoice["subtotal"] + invoice["tax_total"], 2)

    def pay(invoice: dict, amount: float, when: date) -> None:
        payments.append(
            {
                "payment_id": f"pmt_{len(payments) + 1:04d}",
                "invoice_id": invoice["invoice_id"],
                "amount": round(amount, 2),
                "method": rng.choice(METHODS),
                "reference": f"REF-{rng.randrange(100000, 999999)}",
                "received_on": when.isoformat(),
            }
        )
        invoice["amount_paid"] = round(invoice["amount_paid"] + amount, 2)

    def credit(invoice: dict, amount: float, when: date) -> None:
        credits.append(
            {
                "credit_note_id": f"crn_{len(credits) + 1:04d}",
                "invoice_id": invoice["invoice_id"],
                "amount": round(amount, 2),
                "reason": rng.choice(CREDIT_REASONS),
                "issued_at": f"{when.isoformat()}T10:00:00Z",
            }
        )
        invoice["amount_credited"] = round(invoice["amount_credited"] + amount, 2)

    def settle(invoice: dict, status: str) -> None:
        """Add the payments and credits the status implies, then derive the balance."""
        issued = date.fromisoformat(invoice["issued_on"])
        if status in ("paid", "partially_paid", "sent") and rng.random() < 0.2:
            credit(
                invoice,
                round(invoice["total"] * rng.choice([0.05, 0.1]), 2),
                issued + timedelta(days=rng.randrange(3, 10)),
            )
        remaining = round(invoice["total"] - invoice["amount_credited"], 2)
        paid_on = min(issued + timedelta(days=rng.randrange(5, 40)), today - timedelta(days=1))
        if status == "paid":
            if rng.random() < 0.3:
                first = round(remaining * 0.5, 2)
                pay(invoice, first, paid_on - timedelta(days=2) if paid_on - timedelta(days=2) > issued else paid_on)
                pay(invoice, round(remaining - first, 2), paid_on)
            else:
                pay(invoice, remaining, paid_on)
        elif status == "partially_paid":
            pay(invoice, round(remaining * rng.choice([0.25, 0.4, 0.5]), 2), paid_on)
        invoice["balance_due"] = round(invoice["total"] - invoice["amount_paid"] - invoice["amount_credited"], 2) + 0.0

    # The rule-example invoices first.
    for status, client_index, count in [
        ("draft", 0, 3),
        ("paid", 1, 2),
        ("sent", 2, 2),
        ("void", 3, 1),
        ("draft", 0, 0),
        ("partially_paid", 4, 3),
    ]:
        issued = today - timedelta(days=2 if status == "draft" else rng.randrange(12, 25))
        invoice = new_invoice(clients[client_index], issued, status)
        if count:
            add_lines(invoice, count)
        if status not in ("draft", "void"):
            settle(invoice, status)
    plan = ["draft"] * 6 + ["sent"] * 13 + ["partially_paid"] * 7 + ["paid"] * 20 + ["void"] * 4
    rng.shuffle(plan)
    for n, status in enumerate(plan):
        client = clients[n % 21] if status != "void" or n % 2 else clients[21 + n % 2]
        age = {
            "draft": rng.randrange(0, 5),
            "sent": rng.randrange(5, 80),
            "partially_paid": rng.randrange(15, 90),
            "paid": rng.randrange(20, 120),
            "void": rng.randrange(20, 100),
        }[status]
        invoice = new_invoice(client, today - timedelta(days=age), status)
        add_lines(invoice, rng.choice(LINE_COUNTS))
        if status not in ("draft", "void"):
            settle(invoice, status)
    for invoice in invoices:  # a draft is owed in full once sent; a void invoice is owed nothing
        if invoice["status"] == "draft":
            invoice["balance_due"] = invoice["total"]

    return {
        "clients": clients,
        "catalog_items": items,
        "invoices": invoices,
        "invoice_lines": lines,
        "payments": payments,
        "credit_notes": credits,
    }
