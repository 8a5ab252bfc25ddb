"""Seed rows of fleet: 26 vehicles, 28 drivers (the farm's shared cast), 20 routes across Iberia, three
weeks of trip history plus ten days of planned trips, maintenance orders, fuel logs and inspections.

Everything is dispatched by the spec's own rules: a driver's licence covers the vehicle, no driver or
vehicle has overlapping trips, vehicles in maintenance (each with an open order) get no new trips (except
veh_019, whose later trips were planned before it broke down: start_trip refuses them),
odometer readings only go up (trip by trip, with fuel stops at the trip's end reading), and every trip
that departed had a passed pre-trip inspection shortly before. The clock is Monday 2026-04-13 09:00 UTC,
just as the morning departures begin.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

CITIES_KM = {
    ("Lisbon", "Porto"): 313,
    ("Lisbon", "Madrid"): 625,
    ("Lisbon", "Seville"): 460,
    ("Lisbon", "Faro"): 278,
    ("Lisbon", "Coimbra"): 205,
    ("Porto", "Madrid"): 561,
    ("Porto", "Salamanca"): 370,
    ("Porto", "Bilbao"): 720,
    ("Madrid", "Barcelona"): 621,
    ("Madrid", "Valencia"): 357,
    ("Madrid", "Seville"): 531,
    ("Madrid", "Bilbao"): 395,
    ("Madrid", "Zaragoza"): 314,
    ("Seville", "Malaga"): 206,
    ("Seville", "Faro"): 198,
    ("Valencia", "Barcelona"): 349,
    ("Zaragoza", "Barcelona"): 306,
    ("Bilbao", "Zaragoza"): 303,
    ("Malaga", "Valencia"): 628,
    ("Coimbra", "Salamanca"): 320,
}
MODELS = {
    "van": (["Mercedes Sprinter 316", "Ford Transit 350", "Renault Master"], "B", 80.0, 0.11),
    "pickup": (["Toyota Hilux", "Ford Ranger"], "B", 80.0, 0.10),
    "box_truck": (["Isuzu NQR", "MAN TGL 12.250", "Iveco Eurocargo"], "C", 200.0, 0.22),
    "tractor_unit": (["Volvo FH 460", "Scania R450", "DAF XF 480"], "CE", 600.0, 0.32),
}
TYPES = ["van", "box_truck", "tractor_unit", "van", "pickup", "box_truck", "tractor_unit"]
DEPOTS = ["Lisbon", "Porto", "Madrid", "Seville"]
CARGO = [
    "18 pallets of bottled water",
    "12 pallets of ceramic tiles",
    "Refrigerated produce",
    "Parcels for the regional hub",
    "Furniture for a retail store",
    "Auto parts",
    "Building insulation",
    "Paper rolls",
    "Electronics in cages",
    "Wine cases",
    "Empty pallets return",
    "Textiles in cartons",
]
STATIONS = [
    "Galp Carregado",
    "Repsol Aranjuez",
    "Cepsa Merida",
    "BP Coimbra Norte",
    "Galp Alverca",
    "Repsol Zaragoza Sur",
]
SERVICE_NOTES = {
    "oil_change": "Scheduled oil and filter change",
    "brakes": "Brake pads worn on the front axle",
    "tires": "Replace two rear tyres",
    "engine": "Engine warning light, loss of power uphill",
    "electrical": "Tail lights flicker",
    "bodywork": "Dent on the loading door after a dock bump",
    "annual_service": "Yearly service and roadworthiness check",
}
RANK = {"B": 1, "C": 2, "CE": 3}


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    routes = []
    for (a, b), km in CITIES_KM.items():
        routes.append(
            {
                "route_id": f"rte_{len(routes) + 1:03d}",
                "name": f"{a} - {b}",
                "origin": a,
                "destination": b,
                "distance_km": km,
                "duration_minutes": int(km / 70 * 60) + 45 * (km // 270),
            }
        )

    def letter() -> str:
        return chr(65 + rng.randrange(26))

    vehicles = []
    for i in range(1, 27):
        kind = TYPES[(i - 1) % len(TYPES)]
        models, license_class, tank, _ = MODELS[kind]
        vehicles.append(
            {
                "vehicle_id": f"veh_{i:03d}",
                "plate": f"{rng.randrange(10, 99)}-{letter()}{letter()}-{rng.randrange(10, 99)}",
                "make_model": rng.choice(models),
                "vehicle_type": kind,
                "required_license": license_class,
                "depot": DEPOTS[(i - 1) % 4],
                "odometer_km": rng.randrange(20_000, 600_000),
                "tank_liters": tank,
                "status": "retired" if i == 2 else "maintenance" if i in (3, 11, 19) else "available",
            }
        )
    drivers = [
        {
            "driver_id": f"drv_{i:03d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "phone": p["phone"],
            "license_class": ["CE", "C", "B"][i % 3],
            "license_expires_on": fakedata.day(now, 6) if i == 5 else fakedata.day(now, rng.randrange(200, 3000)),
            "status": "on_leave" if i in (2, 17) else "terminated" if i == 26 else "active",
        }
        for i, p in enumerate(community(28), start=1)
    ]

    # Maintenance: open orders put three vehicles in the workshop a few days ago; older orders are done.
    orders = []
    in_workshop_since: dict[str, datetime] = {}
    for vehicle in vehicles:
        vid = vehicle["vehicle_id"]
        if vehicle["status"] == "maintenance":
            opened = now - timedelta(days=rng.randrange(1, 5), hours=rng.randrange(0, 10))
            in_workshop_since[vid] = opened
            service = rng.choice(["brakes", "engine", "tires"])
            orders.append((vid, service, "in_progress" if vid == "veh_011" else "open", opened, None, None))
        for _ in range(rng.choice([0, 1, 1, 2])):
            opened = now - timedelta(days=rng.randrange(25, 200))
            service = rng.choice(list(SERVICE_NOTES))
            status = "cancelled" if rng.random() < 0.08 else "completed"
            cost = round(rng.uniform(90, 2400), 2) if status == "completed" else None
            orders.append((vid, service, status, opened, opened + timedelta(days=rng.randrange(1, 4)), cost))
    orders.sort(key=lambda o: o[3])
    maintenance_orders = [
        {
            "order_id": f"mnt_{n:04d}",
            "vehicle_id": vid,
            "service_type": service,
            "description": SERVICE_NOTES[service],
            "status": status,
            "opened_at": iso(opened),
            "closed_at": iso(closed) if closed else None,
            "cost": cost,
        }
        for n, (vid, service, status, opened, closed, cost) in enumerate(orders, start=1)
    ]

    # Trips: each day a share of the vehicles leaves between 05:00 and 09:00 with a licensed, free driver.
    busy: dict[str, list[tuple[datetime, datetime]]] = {}
    trips = []
    # Departures run from an hour before the clock's hour to three hours after it, every day.
    hour = now.replace(minute=0, second=0, microsecond=0)
    for day in range(-21, 11):
        for vehicle in vehicles:
            vid = vehicle["vehicle_id"]
            if vehicle["status"] == "retired" or rng.random() > 0.32:
                continue
            start = hour + timedelta(days=day, hours=rng.randrange(-1, 4))
            # No trips around a workshop visit, except veh_019's later trips planned before it broke down.
            planned_before = vid == "veh_019" and start > now + timedelta(days=2)
            if vid in in_workshop_since and start + timedelta(days=1) > in_workshop_since[vid] and not planned_before:
                continue
            route = rng.choice([r for r in routes if vehicle["depot"] in (r["origin"], r["destination"])] or routes)
            end = start + timedelta(minutes=route["duration_minutes"])
            if any(s < end + timedelta(hours=1) and start < e + timedelta(hours=1) for s, e in busy.get(vid, [])):
                continue
            candidates = [
                d
                for d in drivers
                if RANK[d["license_class"]] >= RANK[vehicle["required_license"]]
                # drivers now on leave drove until a week ago, the one who left until two weeks ago
                and (d["status"] == "active" or (d["status"] == "on_leave" and day < -7) or day < -14)
                and d["license_expires_on"] > end.date().isoformat()
                and not any(
                    s < end + timedelta(hours=10) and start < e + timedelta(hours=10)
                    for s, e in busy.get(d["driver_id"], [])
                )
            ]
            if not candidates:
                continue
            driver = rng.choice(candidates)
            busy.setdefault(vid, []).append((start, end))
            busy.setdefault(driver["driver_id"], []).append((start, end))
            if end <= now:
                status = "cancelled" if rng.random() < 0.05 else "completed"
            elif start <= now:
                status = "in_progress"
            else:
                status = "cancelled" if rng.random() < 0.05 else "scheduled"
            trips.append(
                {
                    "trip_id": "",
                    "route_id": route["route_id"],
                    "vehicle_id": vid,
                    "driver_id": driver["driver_id"],
                    "cargo": rng.choice(CARGO),
                    "scheduled_start": iso(start),
                    "scheduled_end": iso(end),
                    "status": status,
                    "actual_start": None,
                    "actual_end": None,
                    "start_odometer_km": None,
                    "end_odometer_km": None,
                    "_distance": route["distance_km"],
                }
            )
    # Upcoming trips first (low ids are the ones dispatch works on), then the history, newest first.
    upcoming = [t for t in trips if t["status"] in ("scheduled", "in_progress")]
    history = sorted(
        (t for t in trips if t["status"] not in ("scheduled", "in_progress")),
        key=lambda t: t["scheduled_start"],
        reverse=True,
    )
    trips = upcoming + history
    for n, trip in enumerate(trips, start=1):
        trip["trip_id"] = f"trp_{n:04d}"

    # Drive the history in time order: odometers, fuel stops and inspections.
    inspections: list[tuple] = []
    fuel: list[tuple] = []
    odometer = {v["vehicle_id"]: v["odometer_km"] for v in vehicles}
    consumption = {v["vehicle_id"]: MODELS[v["vehicle_type"]][3] for v in vehicles}
    tank = {v["vehicle_id"]: v["tank_liters"] for v in vehicles}
    for trip in sorted(trips, key=lambda t: t["scheduled_start"]):
        vid, did = trip["vehicle_id"], trip["driver_id"]
        start = datetime.fromisoformat(trip["scheduled_start"])
        distance = trip.pop("_distance")
        if trip["status"] in ("completed", "in_progress"):
            checked = start - timedelta(minutes=rng.randrange(20, 50))
            if rng.random() < 0.05:
                inspections.append((vid, did, "pre_trip", "fail", "Brake light out", checked - timedelta(minutes=40)))
                inspections.append(
                    (vid, did, "pre_trip", "pass", "Brake light bulb replaced; all checks fine", checked)
                )
            else:
                inspections.append((vid, did, "pre_trip", "pass", "Tyres, lights, brakes and fluids fine", checked))
            actual_start = min(start + timedelta(minutes=rng.randrange(0, 20)), now)
            trip["actual_start"] = iso(actual_start)
            trip["start_odometer_km"] = odometer[vid]
        if trip["status"] == "completed":
            driven = distance + rng.randrange(0, 15)
            end = actual_start + timedelta(minutes=int(distance / 70 * 60) + rng.randrange(20, 90))
            trip["actual_end"] = iso(end)
            odometer[vid] += driven
            trip["end_odometer_km"] = odometer[vid]
            if rng.random() < 0.6:
                liters = round(min(driven * consumption[vid] * rng.uniform(0.9, 1.2), tank[vid] * 0.95), 1)
                fuel.append(
                    (
                        vid,
                        did,
                        end + timedelta(minutes=15),
                        liters,
                        round(liters * rng.uniform(1.55, 1.72), 2),
                        odometer[vid],
                        rng.choice(STATIONS),
                    )
                )
            if rng.random() < 0.4:
                inspections.append((vid, did, "post_trip", "pass", "No new damage", end + timedelta(minutes=10)))
        elif trip["status"] == "scheduled" and start - now < timedelta(hours=4) and rng.random() < 0.6:
            inspections.append(
                (
                    vid,
                    did,
                    "pre_trip",
                    "pass",
                    "Tyres, lights, brakes and fluids fine",
                    now - timedelta(minutes=rng.randrange(10, 50)),
                )
            )
    for vehicle in vehicles:
        vehicle["odometer_km"] = odometer[vehicle["vehicle_id"]]
        if vehicle["status"] != "retired":
            mechanic = rng.choice([d for d in drivers if d["status"] == "active"])
            inspections.append(
                (
                    vehicle["vehicle_id"],
                    mechanic["driver_id"],
                    "annual",
                    "pass",
                    "Roadworthiness certificate renewed",
                    now - timedelta(days=rng.randrange(30, 330)),
                )
            )
    inspections.sort(key=lambda x: x[5])
    fuel.sort(key=lambda x: x[2])
    return {
        "vehicles": vehicles,
        "drivers": drivers,
        "routes": routes,
        "trips": trips,
        "maintenance_orders": maintenance_orders,
        "fuel_logs": [
            {
                "fuel_log_id": f"ful_{n:04d}",
                "vehicle_id": vid,
                "driver_id": did,
                "filled_at": iso(when),
                "liters": liters,
                "cost": cost,
                "odometer_km": km,
                "station": station,
            }
            for n, (vid, did, when, liters, cost, km, station) in enumerate(fuel, start=1)
        ],
        "inspections": [
            {
                "inspection_id": f"ins_{n:04d}",
                "vehicle_id": vid,
                "driver_id": did,
                "kind": kind,
                "result": result,
                "notes": notes,
                "inspected_at": iso(when),
            }
            for n, (vid, did, kind, result, notes, when) in enumerate(inspections, start=1)
        ],
    }
