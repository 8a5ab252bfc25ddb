"""Seed rows of banking: 40 customers (the farm's shared cast), their checking and savings accounts,
debit cards, payees, a month of transactions, transfers and scheduled payments.

Money adds up: every transfer has its ledger lines (a debit, and a credit when the money stays in the
bank), each account's transactions run in time order and `balance_after` of the last one is the
account's balance. A few rows are placed on purpose for the rule examples:
- cst_0001 (limit 2,000 USD) already sent 1,800 USD to other people today;
- cst_0002's checking account acc_0003 is frozen; cst_0003's savings account acc_0006 is closed;
- cst_0004's checking account acc_0007 holds less than 100 USD.
"""

import random
from datetime import datetime, timedelta
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.world import commerce
from envfarm.factory.world.cast import community
from envfarm.factory.world.sources import built_seed

MERCHANT_SPEND = [
    ("groceries", ["FreshCart", "Market Hall", "Corner Grocer"], (15, 140)),
    ("dining", ["Copperline Cafe", "Harbor Noodle Bar", "Sunhaven Bakery"], (6, 70)),
    ("transport", ["CityRide Transit", "Stonegate Parking", "Fuel Stop"], (3, 60)),
    ("shopping", ["Silverleaf Books", "Ironbridge Hardware", "Westbrook Florist"], (10, 180)),
    ("entertainment", ["Redwood Cinema", "Highland Streaming"], (8, 40)),
    ("health", ["Brightside Pharmacy", "Oakridge Vet Clinic"], (10, 120)),
]
BILL_PAYEES = [
    ("Maple Properties", "rent"),
    ("Greenfield Energy", "utilities"),
    ("Clearwater Water Co", "utilities"),
    ("Bluepeak Fitness", "entertainment"),
    ("Northwind Telecom", "utilities"),
]
OTHER_BANKS = ["First Harbor Bank", "Lakeshore Credit Union", "Metro Savings", "Pinecrest Bank"]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    people = community(40)
    customers: list[dict[str, Any]] = [
        {
            "customer_id": f"cst_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "phone": p["phone"],
            "address": fakedata.replaced(rng, fakedata.address, p["address"]),
            "daily_transfer_limit": 2000.0 if i == 1 else rng.choice([2500.0, 5000.0, 5000.0, 10000.0]),
            "joined_on": fakedata.day(now, -rng.randrange(200, 4000)),
        }
        for i, p in enumerate(people, start=1)
    ]

    accounts: list[dict] = []
    checking: dict[str, dict] = {}
    for n, customer in enumerate(customers):
        kinds = ["checking", "savings"] if n < 6 or rng.random() < 0.6 else ["checking"]
        for kind in kinds:
            account = {
                "account_id": f"acc_{len(accounts) + 1:04d}",
                "customer_id": customer["customer_id"],
                "type": kind,
                "nickname": "Everyday checking"
                if kind == "checking"
                else rng.choice(["Rainy day fund", "Holiday savings", "Savings"]),
                "account_number": f"4410-{rng.randrange(1000, 10000)}-{len(accounts) + 1:04d}",
                "balance": 0.0,
                "status": "active",
                "opened_on": customer["joined_on"],
            }
            accounts.append(account)
            if kind == "checking":
                checking[customer["customer_id"]] = account
    accounts[2]["status"] = "frozen"  # cst_0002 checking
    accounts[5]["status"] = "closed"  # cst_0003 savings

    payees: list[dict] = []
    for n, customer in enumerate(customers):
        bill_name, _ = BILL_PAYEES[n % len(BILL_PAYEES)]
        friend_name = people[(n + 7) % len(people)]["full_name"]
        for name in [bill_name, friend_name] if n % 3 else [bill_name]:
            payees.append(
                {
                    "payee_id": f"pay_{len(payees) + 1:04d}",
                    "customer_id": customer["customer_id"],
                    "name": name,
                    "bank_name": rng.choice(OTHER_BANKS),
                    "account_number": f"{rng.randrange(10, 99)}-{rng.randrange(100000, 999999)}",
                    "nickname": "Rent"
                    if name == "Maple Properties"
                    else (None if name != friend_name else name.split()[0]),
                    "created_at": fakedata.moment(now, -24 * rng.randrange(40, 400)),
                }
            )
    payees_of: dict[str, list[dict]] = {}
    for payee in payees:
        payees_of.setdefault(payee["customer_id"], []).append(payee)
    # What each customer pays their first payee every month (rent or a utility bill).
    monthly_bill = {
        c["customer_id"]: float(rng.choice([950, 1200, 1450]))
        if payees_of[c["customer_id"]][0]["name"] == "Maple Properties"
        else fakedata.money(rng, 40, 160)
        for c in customers
    }

    # Ledger movements: (account, when, amount, description, category, transfer_id), in any order for now.
    movements: list[tuple[dict, datetime, float, str, str, str | None]] = []
    transfers: list[dict] = []
    start = now - timedelta(days=30)

    def transfer(
        source: dict, when: datetime, amount: float, memo: str, target: dict | None = None, payee: dict | None = None
    ) -> None:
        scope = (
            "external"
            if payee
            else ("own" if target and target["customer_id"] == source["customer_id"] else "internal")
        )
        transfer_id = f"trf_{len(transfers) + 1:04d}"
        transfers.append(
            {
                "transfer_id": transfer_id,
                "from_account_id": source["account_id"],
                "to_account_id": target["account_id"] if target else None,
                "payee_id": payee["payee_id"] if payee else None,
                "amount": amount,
                "memo": memo,
                "scope": scope,
                "status": "completed",
                "created_at": _iso(when),
            }
        )
        if payee is not None:
            to_name = payee["name"]
        else:
            assert target is not None
            to_name = f"account {target['account_number']}"
        movements.append((source, when, -amount, f"Transfer to {to_name}", "transfer", transfer_id))
        if target:
            movements.append(
                (target, when, amount, f"Transfer from account {source['account_number']}", "transfer", transfer_id)
            )

    for n, customer in enumerate(customers):
        account = checking[customer["customer_id"]]
        if account["status"] == "frozen":
            continue
        person = people[n]
        rng.choice([2800, 3400, 4100, 5200, 6300])  # the draw the old salary took: later rows keep their values
        for payday in (start + timedelta(days=1, hours=6), start + timedelta(days=15, hours=6)):
            rng.choice(fakedata.COMPANIES)
            movements.append(
                (account, payday, person["monthly_salary"] / 2, f"Salary {person['employer']}", "salary", None)
            )
        for _ in range(rng.randrange(4, 9)):
            category, shops, (low, high) = rng.choice(MERCHANT_SPEND)
            when = start + timedelta(hours=rng.randrange(30, 29 * 24))
            movements.append(
                (account, when, -fakedata.money(rng, low, high), f"Card purchase {rng.choice(shops)}", category, None)
            )
        bill = payees_of[customer["customer_id"]][0]
        memo = "Monthly rent" if bill["name"] == "Maple Properties" else "Monthly bill"
        transfer(account, start + timedelta(days=2, hours=9), monthly_bill[customer["customer_id"]], memo, payee=bill)
        savings = next(
            (a for a in accounts if a["customer_id"] == customer["customer_id"] and a["type"] == "savings"), None
        )
        if savings is not None and savings["status"] == "active" and n != 3:
            transfer(
                account,
                start + timedelta(days=16, hours=8),
                float(rng.choice([200, 300, 500])),
                "Monthly savings",
                target=savings,
            )
        if n % 4 == 1:
            friend = checking[customers[(n + 5) % len(customers)]["customer_id"]]
            if friend["status"] == "active":
                transfer(
                    account,
                    start + timedelta(days=rng.randrange(3, 28), hours=19),
                    fakedata.money(rng, 20, 120),
                    "Dinner split",
                    target=friend,
                )
    # Every card charge captured (and refunded) on the payments server, on the payer's checking account.
    checking_of = {c["email"]: checking[c["customer_id"]] for c in customers}
    for line in commerce.card_postings(built_seed("payments")):
        account = checking_of[line.email]
        when = datetime.fromisoformat(line.posted_at)
        movements.append((account, when, line.amount, line.description, line.category, None))
    # cst_0001 sent 1,800 USD to other people this morning (limit 2,000).
    first = checking["cst_0001"]
    transfer(first, now - timedelta(hours=2), 1200.0, "Car deposit", target=checking["cst_0009"])
    transfer(first, now - timedelta(hours=1), 600.0, "Birthday gift", payee=payees_of["cst_0001"][0])
    # cst_0004's checking account was nearly emptied by a big purchase.
    drained = checking["cst_0004"]

    opening: dict[str, float] = {}
    for account in accounts:
        if account["status"] == "closed":
            opening[account["account_id"]] = 0.0
        elif account["type"] == "savings":
            opening[account["account_id"]] = float(rng.randrange(1500, 30000))
        else:
            opening[account["account_id"]] = float(rng.randrange(800, 6000))
    opening["acc_0001"] = 6500.0
    movements.sort(key=lambda m: (m[1], m[0]["account_id"], m[2]))
    # Raise the opening balance of any account that would dip below zero.
    running = dict(opening)
    lowest = dict(opening)
    for account, _, amount, *_ in movements:
        running[account["account_id"]] = round(running[account["account_id"]] + amount, 2)
        lowest[account["account_id"]] = min(lowest[account["account_id"]], running[account["account_id"]])
    for account_id, least in lowest.items():
        if least < 0:
            opening[account_id] = round(opening[account_id] - least + 150, 2)
    # Leave cst_0004's checking with 72.40 USD: one large purchase yesterday takes the rest.
    spend_before = sum(m[2] for m in movements if m[0] is drained)
    movements.append(
        (
            drained,
            now - timedelta(hours=20),
            -round(opening[drained["account_id"]] + spend_before - 72.40, 2),
            "Card purchase Ironbridge Hardware",
            "shopping",
            None,
        )
    )
    movements.sort(key=lambda m: (m[1], m[0]["account_id"], m[2]))

    transactions: list[dict] = []
    balance = dict(opening)
    for account, when, amount, description, category, transfer_id in movements:
        balance[account["account_id"]] = round(balance[account["account_id"]] + amount, 2)
        transactions.append(
            {
                "txn_id": f"txn_{len(transactions) + 1:05d}",
                "account_id": account["account_id"],
                "posted_at": _iso(when),
                "amount": round(amount, 2),
                "description": description,
                "category": category,
                "balance_after": balance[account["account_id"]],
                "transfer_id": transfer_id,
            }
        )
    for account in accounts:
        account["balance"] = balance[account["account_id"]]

    cards: list[dict] = []
    for n, customer in enumerate(customers):
        account = checking[customer["customer_id"]]
        statuses = ["active"]
        if n % 9 == 4:
            statuses = ["cancelled", "active"]  # a lost card and its replacement
        if n % 8 == 5:
            statuses = ["frozen"]
        for status in statuses:
            cards.append(
                {
                    "card_id": f"crd_{len(cards) + 1:04d}",
                    "account_id": account["account_id"],
                    "last4": f"{rng.randrange(0, 10000):04d}",
                    "network": rng.choice(["visa", "mastercard"]),
                    "expires": f"{rng.randrange(2027, 2031)}-{rng.randrange(1, 13):02d}"
                    if status != "cancelled"
                    else "2026-01",
                    "status": status,
                    "freeze_reason": "Card misplaced at home" if status == "frozen" else None,
                }
            )

    schedules: list[dict] = []
    for n, customer in enumerate(customers):
        account = checking[customer["customer_id"]]
        for k, payee in enumerate(payees_of[customer["customer_id"]]):
            if k == 1 and n % 2:
                continue
            status = "cancelled" if n % 10 == 7 else ("paused" if n % 10 == 3 else "active")
            rent = payee["name"] == "Maple Properties"
            schedules.append(
                {
                    "schedule_id": f"sch_{len(schedules) + 1:04d}",
                    "account_id": account["account_id"],
                    "payee_id": payee["payee_id"],
                    "amount": monthly_bill[customer["customer_id"]] if k == 0 else fakedata.money(rng, 25, 160),
                    "frequency": "monthly" if k == 0 else rng.choice(["weekly", "once"]),
                    "next_run_on": fakedata.day(now, rng.randrange(1, 28)),
                    "status": status,
                    "memo": "Monthly rent" if rent else ("Monthly bill" if k == 0 else "Pocket money"),
                }
            )

    return {
        "customers": customers,
        "accounts": accounts,
        "cards": cards,
        "payees": payees,
        "transfers": transfers,
        "transactions": transactions,
        "scheduled_payments": schedules,
    }
