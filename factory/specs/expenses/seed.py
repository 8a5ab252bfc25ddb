"""Seed rows of expenses: 8 cost centers, 40 employees (the farm's shared cast), 10 expense categories
with receipt thresholds, 50 expense reports with their lines, receipts, and the approval history.

Statuses agree: every line of a report past draft that is above its category's threshold has a receipt;
decided reports have an approval by the employee's manager (finance decides managers' reports); a cost
center's `spent` is the total of its approved and reimbursed reports. Rows placed for the rule examples:
- rep_0001 (emp_0011) is a draft: lin_0001 carries receipt rcp_0001, lin_0002 is lodging above the threshold
  with no receipt; rep_0003 is an empty draft;
- rep_0002 is submitted, by an employee of cost center cc_01, waiting for their manager emp_0001;
- cost center cc_07 has almost no budget left and submitted report rep_0004 would overrun it.
"""

import random
from datetime import datetime, timedelta
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

COST_CENTERS = [
    ("CC-ENG", "Engineering", 24000.0),
    ("CC-SAL", "Sales", 30000.0),
    ("CC-MKT", "Marketing", 18000.0),
    ("CC-CSX", "Customer Success", 12000.0),
    ("CC-FIN", "Finance", 6000.0),
    ("CC-PPL", "People", 8000.0),
    ("CC-OPS", "Operations", 9000.0),
    ("CC-RND", "Research", 15000.0),
]
# (category, receipt threshold in USD, typical amount range, merchants)
CATEGORIES = [
    ("meals", 75.0, (12, 140), ["Copperline Cafe", "Harbor Noodle Bar", "Sunhaven Bakery"]),
    ("lodging", 250.0, (120, 620), ["Hotel Lisbon Centro", "Harborview Inn", "Parkside Suites"]),
    ("air_travel", 0.0, (140, 900), ["SkyLink Air", "Northjet"]),
    ("ground_transport", 40.0, (8, 95), ["CityRide Transit", "Metro Cabs", "Stonegate Parking"]),
    ("mileage", 100.0, (15, 160), ["Personal car"]),
    ("office_supplies", 50.0, (6, 120), ["Ironbridge Hardware", "Paper & Co"]),
    ("software", 100.0, (9, 300), ["Northwind Software", "Highland Streaming"]),
    ("training", 150.0, (40, 900), ["Learnwell Academy", "DevConf Europe"]),
    ("client_entertainment", 100.0, (40, 480), ["Redwood Cinema", "Harbor Noodle Bar", "The Oak Room"]),
    ("phone_internet", 60.0, (20, 95), ["Northwind Telecom"]),
]
TRIPS = [
    ("Client visit", "Quarterly business review with a key client"),
    ("Conference trip", "Talk and booth at an industry conference"),
    ("Team offsite", "Planning offsite with the team"),
    ("Customer onboarding", "On-site onboarding of a new customer"),
    ("Monthly expenses", "Recurring costs for the month"),
    ("Training course", "External training course"),
]


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    cost_centers: list[dict[str, Any]] = [
        {"cost_center_id": f"cc_{i:02d}", "code": code, "name": name, "annual_budget": budget, "spent": 0.0}
        for i, (code, name, budget) in enumerate(COST_CENTERS, start=1)
    ]
    people = community(40)
    employees: list[dict] = []
    managers: dict[str, dict] = {}
    for i, center in enumerate(cost_centers):  # one manager per cost center, first so they can be referenced
        p = people[i]
        row = {
            "employee_id": f"emp_{i + 1:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "title": p["job_title"],
            "department": p["department"].capitalize(),
            "cost_center_id": center["cost_center_id"],
            "manager_id": None,
            "role": "manager",
        }
        employees.append(row)
        managers[center["cost_center_id"]] = row
    for i, p in enumerate(people[8:], start=8):
        center = cost_centers[4] if i in (8, 9) else cost_centers[(i - 10) % 8]
        employees.append(
            {
                "employee_id": f"emp_{i + 1:04d}",
                "full_name": p["full_name"],
                "email": p["email"],
                "title": p["job_title"],
                "department": p["department"].capitalize(),
                "cost_center_id": center["cost_center_id"],
                "manager_id": managers[center["cost_center_id"]]["employee_id"],
                "role": "finance" if i in (8, 9) else "employee",
            }
        )
    categories = [
        {"category_id": f"cat_{i:02d}", "name": name, "receipt_required_over": threshold}
        for i, (name, threshold, _, _) in enumerate(CATEGORIES, start=1)
    ]
    staff = employees[10:]
    finance = employees[8]

    reports: list[dict] = []
    lines: list[dict] = []
    receipts: list[dict] = []
    approvals: list[dict] = []

    def receipt_for(employee: dict, merchant: str, amount: float, spent_on: str) -> str:
        receipt_id = f"rcp_{len(receipts) + 1:04d}"
        receipts.append(
            {
                "receipt_id": receipt_id,
                "employee_id": employee["employee_id"],
                "merchant": merchant,
                "amount": amount,
                "issued_on": spent_on,
                "file_name": f"{spent_on.replace('-', '')}_{fakedata.slug(merchant).replace('.', '_')}.pdf",
                "uploaded_at": f"{spent_on}T{rng.randrange(8, 20):02d}:15:00Z",
            }
        )
        return receipt_id

    def add_line(report: dict, employee: dict, k: int | None, spent_on: str, over: bool, with_receipt: bool) -> None:
        index = k if k is not None else rng.randrange(len(CATEGORIES))
        name, threshold, (low, high), merchants = CATEGORIES[index]
        amount = (
            fakedata.money(rng, max(low, threshold + 5), high + threshold)
            if over
            else fakedata.money(rng, low, max(low + 1, min(high, threshold or high)))
        )
        merchant = rng.choice(merchants)
        needs = amount > threshold
        receipt_id = (
            receipt_for(employee, merchant, amount, spent_on)
            if (with_receipt or (needs and report["status"] != "draft"))
            else None
        )
        lines.append(
            {
                "line_id": f"lin_{len(lines) + 1:04d}",
                "report_id": report["report_id"],
                "category_id": categories[index]["category_id"],
                "spent_on": spent_on,
                "merchant": merchant,
                "description": f"{name.replace('_', ' ').capitalize()} - {report['title'].lower()}",
                "amount": amount,
                "receipt_id": receipt_id,
            }
        )
        report["total"] = round(report["total"] + amount, 2)

    def new_report(employee: dict, status: str, age_days: int) -> dict:
        title, purpose = rng.choice(TRIPS)
        created = now - timedelta(days=age_days, hours=rng.randrange(0, 8))
        report = {
            "report_id": f"rep_{len(reports) + 1:04d}",
            "employee_id": employee["employee_id"],
            "title": title,
            "purpose": purpose,
            "cost_center_id": employee["cost_center_id"],
            "status": status,
            "total": 0.0,
            "created_at": created.isoformat().replace("+00:00", "Z"),
            "submitted_at": None,
            "decided_at": None,
            "decided_by": None,
            "decision_note": None,
        }
        reports.append(report)
        return report

    def lines_for(report: dict, employee: dict, count: int, age_days: int) -> None:
        for _ in range(count):
            spent_on = fakedata.day(now, -age_days - rng.randrange(1, 10))
            add_line(report, employee, None, spent_on, over=rng.random() < 0.3, with_receipt=rng.random() < 0.4)

    def decide(report: dict, approver: dict, decision: str, age_days: int) -> None:
        submitted = now - timedelta(days=age_days)
        decided = submitted + timedelta(days=rng.randrange(1, 3), hours=rng.randrange(1, 6))
        report["submitted_at"] = submitted.isoformat().replace("+00:00", "Z")
        if decision == "submitted":
            return
        note = "Looks good." if decision == "approved" else "Please split personal costs out and resubmit."
        report["decided_at"] = decided.isoformat().replace("+00:00", "Z")
        report["decided_by"] = approver["employee_id"]
        report["decision_note"] = note
        approvals.append(
            {
                "approval_id": f"apr_{len(approvals) + 1:04d}",
                "report_id": report["report_id"],
                "approver_id": approver["employee_id"],
                "decision": "approved" if decision != "rejected" else "rejected",
                "note": note,
                "decided_at": report["decided_at"],
            }
        )

    # The rule-example reports first.
    first = staff[0]  # emp_0011, cost center cc_01
    r1 = new_report(first, "draft", 3)
    add_line(r1, first, 0, fakedata.day(now, -5), over=False, with_receipt=True)  # rcp_0001 on lin_0001
    add_line(r1, first, 1, fakedata.day(now, -5), over=True, with_receipt=False)  # lodging above 250, no receipt
    second = staff[8]  # emp_0019, also cost center cc_01
    r2 = new_report(second, "submitted", 4)
    lines_for(r2, second, 3, 4)
    decide(r2, managers["cc_01"], "submitted", 2)
    new_report(first, "draft", 1)  # rep_0003: empty draft
    ops = next(e for e in staff if e["cost_center_id"] == "cc_07")
    r4 = new_report(ops, "submitted", 6)
    add_line(r4, ops, 7, fakedata.day(now, -9), over=True, with_receipt=True)  # training course
    add_line(r4, ops, 1, fakedata.day(now, -9), over=True, with_receipt=True)
    decide(r4, managers["cc_07"], "submitted", 5)

    plan = ["draft"] * 9 + ["submitted"] * 9 + ["approved"] * 10 + ["rejected"] * 4 + ["reimbursed"] * 10
    rng.shuffle(plan)
    for n, status in enumerate(plan):
        employee = staff[(n * 7) % len(staff)] if n % 5 else rng.choice(employees[:10])  # managers file reports too
        age = {
            "draft": rng.randrange(0, 6),
            "submitted": rng.randrange(2, 9),
            "approved": rng.randrange(8, 30),
            "rejected": rng.randrange(6, 20),
            "reimbursed": rng.randrange(25, 65),
        }[status]
        report = new_report(employee, status, age)
        lines_for(report, employee, rng.randrange(1, 6), age)
        if status != "draft":
            # Managers' reports go to finance; a controller's own report goes to the other controller.
            approver = (
                managers[employee["cost_center_id"]]
                if employee["role"] == "employee"
                else (employees[9] if employee is finance else finance)
            )
            decide(report, approver, status if status != "reimbursed" else "approved", max(age - 1, 1))
    # cc_07 is ten dollars short of covering rep_0004.
    for report in reports:
        if report["status"] in ("approved", "reimbursed"):
            center = next(c for c in cost_centers if c["cost_center_id"] == report["cost_center_id"])
            center["spent"] = round(center["spent"] + report["total"], 2)
    ops_center = cost_centers[6]
    ops_center["annual_budget"] = round(ops_center["spent"] + r4["total"] - 10.0, 2)

    # Receipts uploaded but not attached yet (a phone snap waiting for its report line).
    for employee in [first, second, *rng.sample(staff, 8)]:
        category = rng.choice(CATEGORIES)
        receipt_for(
            employee,
            rng.choice(category[3]),
            fakedata.money(rng, *category[2]),
            fakedata.day(now, -rng.randrange(1, 12)),
        )

    return {
        "cost_centers": cost_centers,
        "employees": employees,
        "categories": categories,
        "expense_reports": reports,
        "receipts": receipts,
        "expense_lines": lines,
        "approvals": approvals,
    }
