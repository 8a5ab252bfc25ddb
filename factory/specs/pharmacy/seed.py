"""Seed rows of the pharmacy: 10 insurance plans, 45 patients (the farm's shared cast), 20 prescribers,
34 drugs, their stock lots, 70 prescriptions with their fills, claims and pickups, and counter sales.

Prices and copays follow the same rule as `handlers.price_fill`, so seeded fills look like real ones.
The first prescriptions are placed on purpose so the spec's rule examples hit exactly one rule each:
- rx_0001 (pat_0001, lisinopril) can be refilled today; rx_0002 is cancelled; rx_0003 has expired;
- rx_0004 has used every authorized fill; rx_0005 has a fill waiting for pickup (fill_0011);
- rx_0006 was filled 10 days ago (too early to refill); rx_0007 (methylphenidate) has no in-date stock;
- rx_0008 (alprazolam, schedule IV) has a fill waiting for pickup (fill_0014); rx_0009 is Humira on a
  plan without specialty coverage. pat_0002 is allergic to penicillin; prescriber prs_004 has no DEA number;
  plan_10 is no longer accepted.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

PLANS = [
    # (name, carrier, generic, brand, specialty copay, covers specialty, accepted)
    ("Bluepeak Silver PPO", "Bluepeak Health", 10.0, 35.0, 100.0, True, True),
    ("Bluepeak Bronze HMO", "Bluepeak Health", 15.0, 50.0, 0.0, False, True),
    ("Greenfield Gold", "Greenfield Mutual", 5.0, 25.0, 75.0, True, True),
    ("Greenfield Essential", "Greenfield Mutual", 12.0, 45.0, 0.0, False, True),
    ("Clearwater Choice", "Clearwater Insurance", 8.0, 30.0, 150.0, True, True),
    ("Clearwater Medicare Part D", "Clearwater Insurance", 4.0, 42.0, 120.0, True, True),
    ("Highland State Employees", "Highland Benefits", 7.0, 28.0, 60.0, True, True),
    ("Lakeshore Student Plan", "Lakeshore Health", 10.0, 40.0, 0.0, False, True),
    ("Northwind Family Plus", "Northwind Care", 6.0, 32.0, 90.0, True, True),
    ("Stonegate Basic", "Stonegate Assurance", 20.0, 60.0, 0.0, False, False),
]
DRUGS = [
    # (name, generic name, drug class, allergy group, schedule, tier, unit price, otc purchase limit or None
    #  for Rx-only, "otc" marker for over-the-counter without limit)
    ("Lisinopril 10 mg tablet", "lisinopril", "ACE inhibitor", None, "none", "generic", 0.12, "rx"),
    ("Atorvastatin 20 mg tablet", "atorvastatin", "statin", None, "none", "generic", 0.18, "rx"),
    ("Amoxicillin 500 mg capsule", "amoxicillin", "penicillin antibiotic", "penicillin", "none", "generic", 0.35, "rx"),
    ("Metformin 500 mg tablet", "metformin", "antidiabetic", None, "none", "generic", 0.09, "rx"),
    ("Sertraline 50 mg tablet", "sertraline", "SSRI antidepressant", None, "none", "generic", 0.20, "rx"),
    ("Omeprazole 20 mg capsule", "omeprazole", "proton pump inhibitor", None, "none", "generic", 0.25, "rx"),
    ("Methylphenidate 10 mg tablet", "methylphenidate", "CNS stimulant", None, "II", "generic", 1.20, "rx"),
    ("Alprazolam 0.5 mg tablet", "alprazolam", "benzodiazepine", None, "IV", "generic", 0.40, "rx"),
    ("Humira 40 mg pen", "adalimumab", "TNF blocker", None, "none", "specialty", 3200.0, "rx"),
    ("Levothyroxine 50 mcg tablet", "levothyroxine", "thyroid hormone", None, "none", "generic", 0.22, "rx"),
    ("Amlodipine 5 mg tablet", "amlodipine", "calcium channel blocker", None, "none", "generic", 0.10, "rx"),
    (
        "Sulfamethoxazole-Trimethoprim 800-160 mg tablet",
        "sulfamethoxazole/trimethoprim",
        "sulfonamide antibiotic",
        "sulfa",
        "none",
        "generic",
        0.30,
        "rx",
    ),
    ("Azithromycin 250 mg tablet", "azithromycin", "macrolide antibiotic", None, "none", "generic", 1.10, "rx"),
    ("Ibuprofen 800 mg tablet", "ibuprofen", "NSAID", "nsaid", "none", "generic", 0.15, "rx"),
    (
        "Hydrocodone-Acetaminophen 5-325 mg tablet",
        "hydrocodone/acetaminophen",
        "opioid analgesic",
        "opioid",
        "II",
        "generic",
        0.60,
        "rx",
    ),
    ("Oxycodone 5 mg tablet", "oxycodone", "opioid analgesic", "opioid", "II", "generic", 0.75, "rx"),
    ("Zolpidem 10 mg tablet", "zolpidem", "sedative-hypnotic", None, "IV", "generic", 0.50, "rx"),
    ("Tramadol 50 mg tablet", "tramadol", "opioid analgesic", "opioid", "IV", "generic", 0.30, "rx"),
    ("Lorazepam 1 mg tablet", "lorazepam", "benzodiazepine", None, "IV", "generic", 0.45, "rx"),
    (
        "Codeine-Guaifenesin 10-100 mg/5 mL syrup (per mL)",
        "codeine/guaifenesin",
        "opioid antitussive",
        "opioid",
        "V",
        "generic",
        0.08,
        "rx",
    ),
    ("Testosterone cypionate 200 mg/mL vial", "testosterone cypionate", "androgen", None, "III", "brand", 35.0, "rx"),
    ("Eliquis 5 mg tablet", "apixaban", "anticoagulant", None, "none", "brand", 8.50, "rx"),
    ("Januvia 100 mg tablet", "sitagliptin", "antidiabetic", None, "none", "brand", 17.0, "rx"),
    ("Symbicort 160-4.5 mcg inhaler", "budesonide/formoterol", "asthma inhaler", None, "none", "brand", 320.0, "rx"),
    ("Ozempic 1 mg pen", "semaglutide", "GLP-1 agonist", None, "none", "specialty", 935.0, "rx"),
    ("Enbrel 50 mg syringe", "etanercept", "TNF blocker", None, "none", "specialty", 1700.0, "rx"),
    ("Prednisone 20 mg tablet", "prednisone", "corticosteroid", None, "none", "generic", 0.15, "rx"),
    ("Montelukast 10 mg tablet", "montelukast", "leukotriene blocker", None, "none", "generic", 0.20, "rx"),
    ("Loratadine 10 mg tablet", "loratadine", "antihistamine", None, "none", "generic", 0.10, "otc"),
    ("Pseudoephedrine 30 mg tablet", "pseudoephedrine", "decongestant", None, "none", "generic", 0.18, 48),
    ("Acetaminophen 500 mg tablet", "acetaminophen", "analgesic", None, "none", "generic", 0.05, "otc"),
    ("Naloxone 4 mg nasal spray", "naloxone", "opioid antagonist", None, "none", "generic", 45.0, "otc"),
    ("Cetirizine 10 mg tablet", "cetirizine", "antihistamine", None, "none", "generic", 0.12, "otc"),
    (
        "Dextromethorphan 15 mg/5 mL syrup (per mL)",
        "dextromethorphan",
        "cough suppressant",
        None,
        "none",
        "generic",
        0.03,
        240,
    ),
]
DIRECTIONS = {
    30: "Take 1 tablet by mouth once daily",
    60: "Take 1 tablet by mouth twice daily",
    90: "Take 1 tablet by mouth three times daily",
}
PHARMACISTS = ["Ines Weber, PharmD", "Tariq Mensah, PharmD", "Keiko Rossi, PharmD", "Jonas Silva, PharmD"]
CLINICS = [
    "Harbor Family Practice",
    "Riverside Internal Medicine",
    "Maple Street Clinic",
    "Oakridge Pediatrics",
    "Station Square Psychiatry",
    "Lakeshore Rheumatology",
    "Hillcrest Urgent Care",
    "Millbrook Endocrinology",
]
ALLERGIES = ["none", "none", "none", "none", "penicillin", "sulfa", "nsaid", "latex", "penicillin, sulfa", "opioid"]
VALIDITY_DAYS = {"none": 365, "II": 90, "III": 180, "IV": 180, "V": 180}


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def price_fill(drug: dict, quantity: int, plan: dict | None) -> tuple[float, float, float, str | None]:
    """(total, copay, insurance pays, claim status): the same rule as handlers.price_fill."""
    total = round(drug["unit_price"] * quantity, 2)
    if plan is None or not plan["accepted"]:
        return total, total, 0.0, None
    if drug["tier"] == "specialty" and not plan["covers_specialty"]:
        return total, total, 0.0, "rejected"
    copay = min(total, plan[f"{drug['tier']}_copay"])
    return total, copay, round(total - copay, 2), "approved"


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    plans = [
        {
            "plan_id": f"plan_{i:02d}",
            "name": name,
            "carrier": carrier,
            "generic_copay": g,
            "brand_copay": b,
            "specialty_copay": s,
            "covers_specialty": cover,
            "accepted": accepted,
        }
        for i, (name, carrier, g, b, s, cover, accepted) in enumerate(PLANS, start=1)
    ]
    people = community(45)
    patients = []
    for i, person in enumerate(people, start=1):
        plan = None if i % 7 == 0 else plans[(i - 1) % 9]
        if i == 9:  # Humira patient: a plan without specialty coverage
            plan = plans[1]
        if i in (20, 33):
            plan = plans[9]  # a plan the pharmacy no longer accepts
        allergies = "none" if i in (1, 3, 5, 6, 8, 9) else ("penicillin" if i == 2 else rng.choice(ALLERGIES))
        patients.append(
            {
                "patient_id": f"pat_{i:04d}",
                "full_name": person["full_name"],
                "email": person["email"],
                "phone": person["phone"],
                "date_of_birth": fakedata.replaced(rng, lambda r: r.randrange(0, 365 * 64), person["date_of_birth"]),
                "allergies": allergies,
                "plan_id": plan["plan_id"] if plan else None,
                "member_number": f"{plan['carrier'][:2].upper()}-{rng.randrange(100000, 1000000)}" if plan else None,
            }
        )
    cast = {p["full_name"] for p in community(80)}
    doctor_names = [n for n in fakedata.unique_people(rng, 60) if n not in cast][:20]
    prescribers = [
        {
            "prescriber_id": f"prs_{i:03d}",
            "name": f"Dr. {name}",
            "clinic": CLINICS[(i - 1) % len(CLINICS)],
            "npi": f"1{rng.randrange(100000000, 1000000000)}",
            "dea_number": None if i % 4 == 0 else f"B{name.split()[1][0]}{rng.randrange(1000000, 10000000)}",
        }
        for i, name in enumerate(doctor_names, start=1)
    ]
    drugs = []
    for i, (name, generic, klass, allergy, schedule, tier, price, otc) in enumerate(DRUGS, start=1):
        drugs.append(
            {
                "drug_id": f"drg_{i:03d}",
                "name": name,
                "generic_name": generic,
                "drug_class": klass,
                "allergy_group": allergy,
                "schedule": schedule,
                "tier": tier,
                "unit_price": price,
                "requires_prescription": otc == "rx",
                "otc_purchase_limit": otc if isinstance(otc, int) else None,
            }
        )
    by_name = {d["generic_name"]: d for d in drugs}

    # Stock: an older lot (some expired by now) and a fresh lot per drug; methylphenidate and naloxone run low.
    lots = []
    for drug in drugs:
        code = drug["generic_name"][:3].upper()
        unit_lot = 40 if drug["unit_price"] > 100 else 2000
        older_expiry = rng.randrange(-40, 200)
        for received, expiry, quantity in (
            (-420, older_expiry, rng.randrange(unit_lot // 20, unit_lot // 4)),
            (-rng.randrange(20, 70), rng.randrange(300, 700), rng.randrange(unit_lot // 4, unit_lot)),
        ):
            if drug["generic_name"] == "methylphenidate":
                quantity = 20 if received > -400 else 200
                expiry = -5 if received == -420 else expiry
            if drug["generic_name"] == "naloxone":
                quantity = 1 if received > -400 else 0
            lots.append(
                {
                    "lot_id": f"lot_{len(lots) + 1:04d}",
                    "drug_id": drug["drug_id"],
                    "lot_number": f"{code}{rng.randrange(2300, 2700)}-{rng.randrange(100, 1000)}",
                    "expires_on": fakedata.day(today, expiry),
                    "quantity_on_hand": quantity,
                    "received_at": _iso(today + timedelta(days=received, hours=rng.randrange(8, 17))),
                }
            )
    lots_of = {d["drug_id"]: [lot for lot in lots if lot["drug_id"] == d["drug_id"]] for d in drugs}
    plan_of = {p["plan_id"]: p for p in plans}

    prescriptions: list[dict] = []
    fills: list[dict] = []
    claims: list[dict] = []
    pickups: list[dict] = []

    def add_rx(
        patient: dict,
        drug: dict,
        prescriber: dict,
        written_ago: int,
        quantity: int,
        days_supply: int,
        refills: int,
        fill_plan: list[tuple[int, str]],
        cancelled: bool = False,
    ) -> None:
        """One prescription and its fills; fill_plan is [(days ago, status)], oldest first."""
        n = len(prescriptions) + 1
        written = today - timedelta(days=written_ago)
        expires = written + timedelta(days=VALIDITY_DAYS[drug["schedule"]])
        status = "cancelled" if cancelled else ("expired" if expires < today else "active")
        counted = 0
        plan = plan_of.get(patient["plan_id"] or "")
        for days_ago, fill_status in fill_plan:
            filled_at = (
                today
                - timedelta(days=days_ago)
                + timedelta(hours=rng.randrange(9, 18), minutes=rng.choice([0, 15, 30, 45]))
            )
            older, fresh = lots_of[drug["drug_id"]]
            lot = fresh if fresh["received_at"] <= _iso(filled_at) else older
            total, copay, insurer, claim_status = price_fill(drug, quantity, plan)
            fill_id = f"fill_{len(fills) + 1:04d}"
            fills.append(
                {
                    "fill_id": fill_id,
                    "rx_id": f"rx_{n:04d}",
                    "fill_number": counted,
                    "filled_at": _iso(filled_at),
                    "quantity": quantity,
                    "lot_id": lot["lot_id"],
                    "pharmacist": rng.choice(PHARMACISTS),
                    "total_price": total,
                    "copay": copay,
                    "insurance_paid": insurer,
                    "status": fill_status,
                }
            )
            if fill_status != "returned_to_stock":
                counted += 1
            if claim_status is not None:
                claims.append(
                    {
                        "claim_id": f"clm_{len(claims) + 1:04d}",
                        "fill_id": fill_id,
                        "plan_id": plan["plan_id"],
                        "submitted_at": _iso(filled_at),
                        "billed_amount": total,
                        "paid_amount": insurer,
                        "copay": copay,
                        "status": "reversed" if fill_status == "returned_to_stock" else claim_status,
                        "reject_reason": "specialty drugs are not covered by this plan"
                        if claim_status == "rejected"
                        else None,
                    }
                )
            if fill_status == "picked_up":
                controlled = drug["schedule"] != "none"
                pickups.append(
                    {
                        "pickup_id": f"pku_{len(pickups) + 1:04d}",
                        "fill_id": fill_id,
                        "picked_up_at": _iso(
                            min(filled_at + timedelta(hours=rng.randrange(2, 60)), now - timedelta(hours=1))
                        ),
                        "picked_up_by": patient["full_name"] if rng.random() < 0.85 else "Family member",
                        "id_checked": controlled or rng.random() < 0.3,
                        "amount_paid": copay,
                        "payment_method": rng.choice(["card", "card", "cash", "hsa_card"]),
                    }
                )
        prescriptions.append(
            {
                "rx_id": f"rx_{n:04d}",
                "rx_number": str(610000 + n),
                "patient_id": patient["patient_id"],
                "drug_id": drug["drug_id"],
                "prescriber_id": prescriber["prescriber_id"],
                "written_on": written.date().isoformat(),
                "expires_on": expires.date().isoformat(),
                "quantity": quantity,
                "days_supply": days_supply,
                "refills_authorized": refills,
                "fills_used": counted,
                "directions": DIRECTIONS.get(quantity // max(1, days_supply // 30), "Use as directed"),
                "status": status,
                "cancel_reason": "therapy changed by prescriber" if cancelled else None,
            }
        )

    pat = patients
    dea = [p for p in prescribers if p["dea_number"]]
    # The scenario prescriptions the rule examples point at (see the module docstring).
    add_rx(
        pat[0],
        by_name["lisinopril"],
        prescribers[0],
        100,
        30,
        30,
        5,
        [(100, "picked_up"), (70, "picked_up"), (40, "picked_up")],
    )
    add_rx(pat[2], by_name["atorvastatin"], prescribers[1], 120, 30, 30, 5, [(120, "picked_up")], cancelled=True)
    add_rx(pat[4], by_name["amoxicillin"], prescribers[2], 400, 21, 7, 0, [(400, "picked_up")])
    add_rx(
        pat[5],
        by_name["metformin"],
        prescribers[4],
        200,
        60,
        30,
        2,
        [(200, "picked_up"), (170, "picked_up"), (140, "picked_up")],
    )
    add_rx(
        pat[7],
        by_name["sertraline"],
        prescribers[5],
        70,
        30,
        30,
        5,
        [(65, "picked_up"), (35, "picked_up"), (2, "ready_for_pickup")],
    )
    add_rx(pat[0], by_name["omeprazole"], prescribers[0], 90, 30, 30, 3, [(40, "picked_up"), (10, "picked_up")])
    add_rx(pat[2], by_name["methylphenidate"], dea[1], 3, 60, 30, 0, [])
    add_rx(pat[5], by_name["alprazolam"], dea[2], 30, 30, 30, 2, [(1, "ready_for_pickup")])
    add_rx(pat[8], by_name["adalimumab"], prescribers[5], 20, 2, 28, 5, [])

    rx_drugs = [d for d in drugs if d["requires_prescription"] and d["generic_name"] != "methylphenidate"]
    while len(prescriptions) < 70:
        patient = rng.choice(patients)
        drug = rng.choice(rx_drugs)
        allergic = drug["allergy_group"] and drug["allergy_group"] in patient["allergies"]
        if allergic:
            continue
        controlled = drug["schedule"] != "none"
        prescriber = rng.choice(dea if controlled else prescribers)
        validity = VALIDITY_DAYS[drug["schedule"]]
        written_ago = rng.randrange(2, validity + 120)
        if drug["tier"] == "specialty" or drug["unit_price"] > 30:
            quantity, days_supply = (1 if drug["unit_price"] > 100 else 10), 28
        else:
            quantity = rng.choice([30, 60, 90])
            days_supply = 30
        refills = 0 if drug["schedule"] == "II" else rng.randrange(0, 4 if controlled else 6)
        plan: list[tuple[int, str]] = []
        day = written_ago - rng.randrange(0, 3)
        while (
            day >= 1
            and written_ago - day <= validity
            and len([p for p in plan if p[1] != "returned_to_stock"]) < refills + 1
        ):
            if day <= 4:
                plan.append((day, "ready_for_pickup"))
            elif rng.random() < 0.06 and day < 60:
                plan.append((day, "returned_to_stock"))
            else:
                plan.append((day, "picked_up"))
            day -= days_supply + rng.randrange(-2, 6)
        if plan and plan[-1][1] == "returned_to_stock":
            plan[-1] = (plan[-1][0], "picked_up")
        cancelled = rng.random() < 0.06 and not any(s == "ready_for_pickup" for _, s in plan)
        add_rx(patient, drug, prescriber, written_ago, quantity, days_supply, refills, plan, cancelled)

    otc = [d for d in drugs if not d["requires_prescription"] and d["generic_name"] != "naloxone"]
    counter_sales = []
    for i in range(1, 25):
        drug = rng.choice(otc)
        limit = drug["otc_purchase_limit"]
        quantity = (
            rng.choice([24, 48])
            if limit and limit <= 48
            else (rng.choice([120, 240]) if limit else rng.choice([30, 60, 100]))
        )
        lot = lots_of[drug["drug_id"]][1]
        counter_sales.append(
            {
                "sale_id": f"sale_{i:04d}",
                "drug_id": drug["drug_id"],
                "patient_id": rng.choice(patients)["patient_id"] if limit else None,
                "quantity": quantity,
                "total": round(drug["unit_price"] * quantity, 2),
                "lot_id": lot["lot_id"],
                "sold_at": _iso(today - timedelta(days=rng.randrange(1, 15)) + timedelta(hours=rng.randrange(9, 19))),
            }
        )
    return {
        "insurance_plans": plans,
        "patients": patients,
        "prescribers": prescribers,
        "drugs": drugs,
        "inventory_lots": lots,
        "prescriptions": prescriptions,
        "fills": fills,
        "claims": claims,
        "pickups": pickups,
        "counter_sales": counter_sales,
    }
