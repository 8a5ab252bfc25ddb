"""Seed rows of the car rental company: 20 branches (airport and downtown in 10 cities), 7 vehicle
classes, 100 vehicles, 60 drivers (the farm's shared cast), rentals of half the fleet from six weeks
ago to a month ahead, their extras, and damage reports.

Totals of returned rentals follow `handlers.return_vehicle`. Branch br_001 (Lisbon Airport) is laid out on
purpose so the spec's rule examples hit exactly one rule each (random rentals never touch its cars or the
scenario drivers drv_0001..drv_0010):
- veh_0001 (economy) is free; veh_0002 (compact) is reserved 16-20 April by rnt_0001; veh_0003 is premium
  (drivers must be 25); veh_0004 (SUV) is in maintenance after severe damage dmg_0001 but reserved for
  today by rnt_0004; veh_0005 is out on active rental rnt_0002 (with GPS) until 15 April;
- rnt_0003 is returned, rnt_0005 (veh_0003) is picked up today, rnt_0006 is cancelled;
- br_002 (Lisbon Downtown) takes no one-way returns; drv_0002 is 20, drv_0003 is 23, drv_0004's licence
  expires on 19 April; veh_0010 is retired; dmg_0002 is repaired.
"""

import math
import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

YOUNG_DRIVERS = (58, 59)
CITIES = ["Lisbon", "Berlin", "Toronto", "Austin", "Dublin", "Seattle", "Madrid", "Vienna", "Boston", "Denver"]
NO_ONE_WAY = {"br_002", "br_008", "br_014", "br_018"}
CLASSES = [
    # (name, seats, daily rate, min driver age, deposit, models (make, model, fuel))
    (
        "Economy",
        4,
        32.0,
        21,
        200.0,
        [("Toyota", "Yaris", "hybrid"), ("Kia", "Picanto", "petrol"), ("Fiat", "Panda", "petrol")],
    ),
    (
        "Compact",
        5,
        41.0,
        21,
        250.0,
        [("Volkswagen", "Golf", "petrol"), ("Ford", "Focus", "diesel"), ("Honda", "Civic", "hybrid")],
    ),
    (
        "Midsize",
        5,
        52.0,
        21,
        300.0,
        [("Toyota", "Camry", "hybrid"), ("Skoda", "Octavia", "diesel"), ("Mazda", "6", "petrol")],
    ),
    (
        "SUV",
        5,
        68.0,
        21,
        400.0,
        [("Toyota", "RAV4", "hybrid"), ("Nissan", "Qashqai", "petrol"), ("Hyundai", "Tucson", "diesel")],
    ),
    ("Minivan", 7, 84.0, 23, 400.0, [("Chrysler", "Pacifica", "petrol"), ("Volkswagen", "Touran", "diesel")]),
    (
        "Premium",
        5,
        115.0,
        25,
        800.0,
        [("BMW", "5 Series", "diesel"), ("Mercedes-Benz", "E-Class", "petrol"), ("Audi", "A6", "diesel")],
    ),
    (
        "Electric",
        5,
        74.0,
        21,
        350.0,
        [("Tesla", "Model 3", "electric"), ("Hyundai", "Ioniq 5", "electric"), ("Polestar", "2", "electric")],
    ),
]
BRANCH_FLEET = [0, 1, 5, 3, 2]  # class index of the 5 cars of each branch (br_001's order serves the scenario)
EXTRAS = [
    # (name, daily price, most per rental)
    ("GPS navigation", 9.0, 1),
    ("Child seat", 11.0, 3),
    ("Additional driver", 13.0, 2),
    ("Full damage waiver", 24.0, 1),
    ("Snow chains", 7.0, 1),
    ("Toll pass", 6.0, 1),
]
DAMAGE = [
    ("minor", "Scratch on the rear bumper", 120, 300),
    ("minor", "Chipped windscreen", 90, 250),
    ("minor", "Scuffed alloy wheel", 80, 200),
    ("moderate", "Dent in the driver door", 400, 900),
    ("moderate", "Broken side mirror", 250, 600),
    ("severe", "Front-end collision damage", 2500, 6000),
    ("severe", "Flood damage to the interior", 3000, 7000),
]
ONE_WAY_FEE = 75.0
FUEL_CHARGE = 65.0
CONFIRMATION_MULTIPLIER = 3571


def _iso(moment: datetime) -> str:
    return moment.replace(second=0, microsecond=0).isoformat().replace("+00:00", "Z")


def confirmation_code(number: int) -> str:
    """The same code as handlers.confirmation_code."""
    return f"RA{number * CONFIRMATION_MULTIPLIER % 100000:05d}"


def rental_days(pickup: datetime, returned: datetime) -> int:
    """Started 24-hour periods, with 59 minutes of grace (the same rule as handlers.rental_days)."""
    hours = (returned - pickup).total_seconds() / 3600
    return max(1, math.ceil((hours - 59 / 60) / 24))


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    branches = []
    for city in CITIES:
        for kind in ("airport", "downtown"):
            branch_id = f"br_{len(branches) + 1:03d}"
            branches.append(
                {
                    "branch_id": branch_id,
                    "name": f"{city} {'Airport' if kind == 'airport' else 'Downtown'}",
                    "city": city,
                    "kind": kind,
                    "address": f"Terminal {rng.randrange(1, 4)} arrivals hall, {city}"
                    if kind == "airport"
                    else fakedata.address(rng).rsplit(",", 1)[0] + f", {city}",
                    "opening_hours": "05:00-24:00" if kind == "airport" else "07:30-20:00",
                    "allows_one_way_dropoff": branch_id not in NO_ONE_WAY,
                }
            )
    classes = [
        {
            "class_id": f"vc_{i:02d}",
            "name": name,
            "seats": seats,
            "daily_rate": rate,
            "min_driver_age": age,
            "deposit": deposit,
            "example_models": ", ".join(f"{make} {model}" for make, model, _ in models),
        }
        for i, (name, seats, rate, age, deposit, models) in enumerate(CLASSES, start=1)
    ]
    extras = [
        {"extra_id": f"ext_{i:02d}", "name": name, "daily_price": price, "max_per_rental": most}
        for i, (name, price, most) in enumerate(EXTRAS, start=1)
    ]
    vehicles = []
    plates: set[str] = set()
    for b_index, branch in enumerate(branches):
        for slot, kind in enumerate(BRANCH_FLEET):
            kind = kind if b_index == 0 else rng.randrange(len(CLASSES))
            make, model, fuel = rng.choice(CLASSES[kind][5])
            plate = ""
            while not plate or plate in plates:
                letters = "ABCDEFGHJKLMNPRSTUVWXYZ"
                first = rng.choice(letters) + rng.choice(letters)
                plate = f"{first}-{rng.randrange(100, 1000)}-{rng.choice(letters)}{rng.choice(letters)}"
            plates.add(plate)
            vehicles.append(
                {
                    "vehicle_id": f"veh_{len(vehicles) + 1:04d}",
                    "plate": plate,
                    "make": make,
                    "model": model,
                    "year": rng.choice([2022, 2023, 2024, 2025]),
                    "class_id": classes[kind]["class_id"],
                    "branch_id": branch["branch_id"],
                    "odometer_km": rng.randrange(4000, 60000),
                    "fuel_type": fuel,
                    "status": "available",
                }
            )
    cast = community(60)
    # drv_0002 and drv_0003 are the cast's two young drivers (20 and 23 on the clock), for the age rules.
    young = [p for p in cast if p["index"] in YOUNG_DRIVERS]
    people = [cast[0], *young, *(p for p in cast[1:] if p["index"] not in YOUNG_DRIVERS)]
    drivers = []
    for i, person in enumerate(people, start=1):
        # the two draws of the old made-up age: the rows after keep their values
        rng.randrange(21, 72) if i > 10 else rng.randrange(30, 60)
        rng.randrange(20, 300)
        birth = datetime.fromisoformat(person["date_of_birth"])
        expires = today + timedelta(days=6) if i == 4 else today + timedelta(days=rng.randrange(200, 3000))
        drivers.append(
            {
                "driver_id": f"drv_{i:04d}",
                "full_name": person["full_name"],
                "email": person["email"],
                "phone": person["phone"],
                "date_of_birth": birth.date().isoformat(),
                "license_number": f"{rng.choice('BDKLMPS')}{rng.randrange(10000000, 100000000)}",
                "license_country": rng.choice(["US", "CA", "PT", "DE", "IE", "ES", "AT"]),
                "license_expires_on": expires.date().isoformat(),
            }
        )
    class_of = {c["class_id"]: c for c in classes}
    rentals: list[dict] = []
    lines: list[dict] = []
    driver_busy: dict[str, list[tuple[datetime, datetime]]] = {}

    def add(
        driver: dict,
        vehicle: dict,
        pickup: datetime,
        due: datetime,
        status: str,
        dropoff: str | None = None,
        extra_ids: tuple[str, ...] = (),
    ) -> dict:
        n = len(rentals) + 1
        rate = class_of[vehicle["class_id"]]["daily_rate"]
        dropoff = dropoff or vehicle["branch_id"]
        row = {
            "rental_id": f"rnt_{n:04d}",
            "confirmation_code": confirmation_code(n),
            "driver_id": driver["driver_id"],
            "vehicle_id": vehicle["vehicle_id"],
            "pickup_branch_id": vehicle["branch_id"],
            "dropoff_branch_id": dropoff,
            "pickup_at": _iso(pickup),
            "return_due_at": _iso(due),
            "daily_rate": rate,
            "status": status,
            "odometer_out": None,
            "returned_at": None,
            "return_branch_id": None,
            "odometer_in": None,
            "total_charged": None,
        }
        days = rental_days(pickup, due)
        for extra_id in extra_ids:
            extra = next(e for e in extras if e["extra_id"] == extra_id)
            lines.append(
                {
                    "line_id": f"rex_{len(lines) + 1:04d}",
                    "rental_id": row["rental_id"],
                    "extra_id": extra_id,
                    "quantity": 1 if extra["max_per_rental"] == 1 else rng.randrange(1, extra["max_per_rental"] + 1),
                    "daily_price": extra["daily_price"],
                }
            )
        if status in ("active", "returned"):
            row["odometer_out"] = vehicle["odometer_km"]
        if status == "returned":
            returned = due + timedelta(minutes=rng.choice([-300, -120, -30, 0, 20, 45, 150]))
            driven = rng.randrange(60, 320) * days
            row.update(
                returned_at=_iso(returned), return_branch_id=dropoff, odometer_in=vehicle["odometer_km"] + driven
            )
            charged_days = rental_days(pickup, returned)
            extras_total = (
                sum(x["quantity"] * x["daily_price"] for x in lines if x["rental_id"] == row["rental_id"])
                * charged_days
            )
            fuel = 0.0 if rng.random() < 0.8 else FUEL_CHARGE
            one_way = ONE_WAY_FEE if dropoff != row["pickup_branch_id"] else 0.0
            row["total_charged"] = round(charged_days * rate + extras_total + fuel + one_way, 2)
            vehicle["odometer_km"] += driven
            vehicle["branch_id"] = dropoff
        if status == "active":
            vehicle["status"] = "rented"
        if status != "cancelled":
            driver_busy.setdefault(driver["driver_id"], []).append((pickup, due))
        rentals.append(row)
        return row

    veh = {v["vehicle_id"]: v for v in vehicles}
    drv = {d["driver_id"]: d for d in drivers}

    def at(day: int, hour: int) -> datetime:
        return today + timedelta(days=day, hours=hour)

    # The br_001 scenario (see the module docstring).
    add(drv["drv_0006"], veh["veh_0002"], at(3, 10), at(7, 10), "reserved")
    add(drv["drv_0007"], veh["veh_0005"], at(-3, 9), at(2, 9), "active", extra_ids=("ext_01",))
    add(drv["drv_0008"], veh["veh_0001"], at(-12, 8), at(-9, 8), "returned", extra_ids=("ext_04",))
    add(drv["drv_0009"], veh["veh_0004"], at(0, 12), at(4, 12), "reserved")
    add(drv["drv_0010"], veh["veh_0003"], at(0, 11), at(3, 11), "reserved")
    add(drv["drv_0005"], veh["veh_0001"], at(8, 9), at(10, 9), "cancelled")
    veh["veh_0010"]["status"] = "retired"

    one_way_ok = [b["branch_id"] for b in branches if b["allows_one_way_dropoff"]]
    customers = drivers[10:]
    in_service = [v for v in vehicles[5:] if v["status"] != "retired"]
    for vehicle in sorted(rng.sample(in_service, 50), key=lambda v: v["vehicle_id"]):
        day = -rng.randrange(30, 45)
        while day < 30:
            length = rng.choice([1, 2, 3, 3, 4, 5, 7, 10])
            pickup = at(day, rng.choice([8, 9, 10, 12, 14, 16]))
            due = pickup + timedelta(days=length)
            driver = rng.choice(customers)
            if any(s < due and pickup < e for s, e in driver_busy.get(driver["driver_id"], [])):
                day += 1
                continue
            if (
                class_of[vehicle["class_id"]]["min_driver_age"]
                > (pickup.date() - datetime.fromisoformat(driver["date_of_birth"]).date()).days // 365.25
            ):
                day += 1
                continue
            picked_extras = tuple(sorted(rng.sample([e["extra_id"] for e in extras], rng.choice([0, 0, 1, 1, 2]))))
            if due <= now:
                status = rng.choices(["returned", "cancelled"], [92, 8])[0]
                one_way = status == "returned" and rng.random() < 0.12 and vehicle["branch_id"] in one_way_ok
                dropoff = rng.choice([b for b in one_way_ok if b != vehicle["branch_id"]]) if one_way else None
                add(driver, vehicle, pickup, due, status, dropoff, picked_extras)
            elif pickup <= now:
                add(driver, vehicle, pickup, due, "active", None, picked_extras)
            else:
                add(
                    driver,
                    vehicle,
                    pickup,
                    due,
                    rng.choices(["reserved", "cancelled"], [88, 12])[0],
                    None,
                    picked_extras,
                )
            day += length + rng.randrange(2, 15)

    damage = []

    def report(vehicle: dict, rental: dict | None, when: datetime, pick: tuple, status: str) -> None:
        severity, description, low, high = pick
        damage.append(
            {
                "report_id": f"dmg_{len(damage) + 1:04d}",
                "vehicle_id": vehicle["vehicle_id"],
                "rental_id": rental["rental_id"] if rental else None,
                "reported_at": _iso(when),
                "severity": severity,
                "description": description,
                "estimated_cost": float(rng.randrange(low, high)),
                "status": status,
            }
        )

    first_returned = rentals[2]
    report(veh["veh_0004"], None, at(-1, 17), DAMAGE[5], "open")
    report(
        veh["veh_0001"], first_returned, datetime.fromisoformat(first_returned["returned_at"]), DAMAGE[0], "repaired"
    )
    veh["veh_0004"]["status"] = "maintenance"
    returned = [r for r in rentals[6:] if r["status"] == "returned"]
    for rental in rng.sample(returned, 22):
        vehicle = veh[rental["vehicle_id"]]
        pick = rng.choice(DAMAGE[:5])
        recent = rental["returned_at"] > _iso(now - timedelta(days=10))
        report(
            vehicle,
            rental,
            datetime.fromisoformat(rental["returned_at"]) + timedelta(minutes=10),
            pick,
            "open" if recent else "repaired",
        )
    return {
        "branches": branches,
        "vehicle_classes": classes,
        "vehicles": vehicles,
        "drivers": drivers,
        "extras": extras,
        "rentals": rentals,
        "rental_extras": lines,
        "damage_reports": damage,
    }
