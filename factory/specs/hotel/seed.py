"""Seed rows of the hotel group: 20 hotels (one per city), 3 room types and 8 rooms each, 60 guests (the
farm's shared cast), reservations from two months ago to six weeks ahead, and their folio charges.

Rates follow the same loyalty discount as `handlers.create_reservation`; room nights and city tax are
posted to the folio at check-out, extras while the guest is in house. Hotel htl_001 is laid out on
purpose so the spec's rule examples hit exactly one rule each (its rooms only hold past stays otherwise):
- room_0001: res_0001 (gst_0001) arrives today, room clean; room_0002: res_0004 is in house (occupied);
- room_0003: vacant_dirty, res_0006 arrives today; room_0004: out of order; room_0005: vacant_dirty, free;
- room_0006 (deluxe): res_0002 arrives in 5 days for 3 nights with 3 adults; room_0007 (deluxe): clean, free;
- res_0003 checked out last week; res_0005 was cancelled.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

BRANDS = ["Grand", "Harbor View", "Riverside", "Old Town", "Park", "Central", "Skyline", "Garden"]
ROOM_TYPES = [
    # (name, bed, max guests, rate factor)
    ("Standard Queen", "1 queen bed", 2, 1.0),
    ("Deluxe King", "1 king bed and a sofa bed", 3, 1.4),
    ("Junior Suite", "1 king bed and 2 sofa beds", 4, 2.1),
]
ROOM_LAYOUT = [0, 0, 0, 0, 1, 1, 1, 2]  # room type index of the 8 rooms of each hotel
EXTRAS = [
    ("restaurant", "Dinner at the restaurant", 35, 140),
    ("restaurant", "Breakfast buffet", 18, 45),
    ("bar", "Drinks at the lobby bar", 12, 70),
    ("minibar", "Minibar", 6, 40),
    ("spa", "Massage 60 minutes", 90, 160),
    ("parking", "Valet parking", 25, 45),
    ("laundry", "Laundry service", 15, 60),
    ("room_service", "Room service", 22, 85),
]
REQUESTS = [
    None,
    None,
    None,
    "Late arrival after 22:00",
    "High floor please",
    "Quiet room away from the elevator",
    "Extra pillows",
    "Celebrating an anniversary",
    "Baby cot needed",
]
DISCOUNT = {"none": 0.0, "silver": 0.05, "gold": 0.10, "platinum": 0.15}
CONFIRMATION_MULTIPLIER = 7919


def _iso(moment: datetime) -> str:
    return moment.replace(second=0, microsecond=0).isoformat().replace("+00:00", "Z")


def confirmation_code(number: int) -> str:
    """The same code as handlers.confirmation_code: unique per reservation number below 100000."""
    return f"HB{number * CONFIRMATION_MULTIPLIER % 100000:05d}"


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    hotels, room_types, rooms = [], [], []
    for i, city in enumerate(fakedata.CITIES, start=1):
        stars = rng.choice([3, 4, 4, 5])
        base = {3: 95, 4: 150, 5: 260}[stars] + rng.randrange(0, 40)
        hotels.append(
            {
                "hotel_id": f"htl_{i:03d}",
                "name": f"{BRANDS[i % len(BRANDS)]} {city}",
                "city": city,
                "address": fakedata.address(rng).rsplit(",", 1)[0] + f", {city}",
                "stars": stars,
                "check_in_time": "15:00",
                "check_out_time": "11:00",
                "city_tax_per_night": float(rng.choice([2, 3, 4, 5, 7])),
            }
        )
        types = []
        for name, bed, guests, factor in ROOM_TYPES:
            types.append(
                {
                    "type_id": f"rtp_{len(room_types) + 1:03d}",
                    "hotel_id": f"htl_{i:03d}",
                    "name": name,
                    "bed": bed,
                    "max_guests": guests,
                    "nightly_rate": float(round(base * factor)),
                }
            )
            room_types.append(types[-1])
        for n, kind in enumerate(ROOM_LAYOUT):
            floor = 1 + n // 3
            rooms.append(
                {
                    "room_id": f"room_{len(rooms) + 1:04d}",
                    "hotel_id": f"htl_{i:03d}",
                    "type_id": types[kind]["type_id"],
                    "number": f"{floor}{n % 3 + 1:02d}",
                    "floor": floor,
                    "housekeeping_status": "vacant_clean",
                }
            )
    type_of = {t["type_id"]: t for t in room_types}
    hotel_of = {h["hotel_id"]: h for h in hotels}
    people = community(60)
    guests = []
    for i, person in enumerate(people, start=1):
        tier = (
            "gold"
            if i == 1
            else ("none" if i == 2 else rng.choice(["none", "none", "none", "silver", "silver", "gold", "platinum"]))
        )
        guests.append(
            {
                "guest_id": f"gst_{i:04d}",
                "full_name": person["full_name"],
                "email": person["email"],
                "phone": person["phone"],
                "loyalty_tier": tier,
                "loyalty_number": None if tier == "none" else f"LY{rng.randrange(1000000, 10000000)}",
            }
        )

    stays: list[dict] = []
    charges: list[dict] = []

    def post(res_id: str, at: datetime, category: str, description: str, amount: float) -> None:
        charges.append(
            {
                "charge_id": f"chg_{len(charges) + 1:05d}",
                "res_id": res_id,
                "posted_at": _iso(at),
                "category": category,
                "description": description,
                "amount": round(amount, 2),
            }
        )

    def add(guest: dict, room: dict, arrival_in: int, nights: int, adults: int, status: str) -> dict:
        """One reservation arriving `arrival_in` days from today; in-house stays get extras, past ones a settled
        folio."""
        n = len(stays) + 1
        res_id = f"res_{n:04d}"
        arrival = today + timedelta(days=arrival_in)
        departure = arrival + timedelta(days=nights)
        rate = round(type_of[room["type_id"]]["nightly_rate"] * (1 - DISCOUNT[guest["loyalty_tier"]]), 2)
        booked_at = arrival - timedelta(days=rng.randrange(3, 60), hours=rng.randrange(0, 12))
        booked_at = min(booked_at, now - timedelta(hours=rng.randrange(2, 48)))
        checked_in_at = (
            arrival + timedelta(hours=rng.randrange(15, 21)) if status in ("checked_in", "checked_out") else None
        )
        checked_out_at = departure + timedelta(hours=rng.randrange(7, 11)) if status == "checked_out" else None
        cancelled_at = (
            booked_at + (min(arrival, now) - booked_at) * rng.uniform(0.2, 0.9) if status == "cancelled" else None
        )
        row = {
            "res_id": res_id,
            "confirmation_code": confirmation_code(n),
            "guest_id": guest["guest_id"],
            "hotel_id": room["hotel_id"],
            "room_id": room["room_id"],
            "arrival_date": arrival.date().isoformat(),
            "departure_date": departure.date().isoformat(),
            "adults": adults,
            "nightly_rate": rate,
            "status": status,
            "special_requests": rng.choice(REQUESTS),
            "booked_at": _iso(booked_at),
            "checked_in_at": _iso(checked_in_at) if checked_in_at else None,
            "checked_out_at": _iso(checked_out_at) if checked_out_at else None,
            "cancelled_at": _iso(cancelled_at) if cancelled_at else None,
            "cancel_reason": rng.choice(["change of plans", "found another hotel", "trip postponed"])
            if cancelled_at
            else None,
        }
        stays.append(row)
        if status in ("checked_in", "checked_out"):
            last = min(departure, now) if status == "checked_out" else now
            for _ in range(rng.randrange(0, 4)):
                category, description, low, high = rng.choice(EXTRAS)
                at = checked_in_at + (last - checked_in_at) * rng.uniform(0.05, 0.95)
                post(res_id, at, category, description, rng.uniform(low, high))
        if status == "checked_out":
            tax = hotel_of[room["hotel_id"]]["city_tax_per_night"]
            post(
                res_id, checked_out_at, "room", f"Room {room['number']}, {nights} night(s) at {rate:.2f}", nights * rate
            )
            post(res_id, checked_out_at, "city_tax", f"City tax, {nights} night(s)", nights * tax)
            balance = sum(c["amount"] for c in charges if c["res_id"] == res_id)
            post(res_id, checked_out_at, "payment", "Payment by card", -balance)
        if status == "no_show":
            fee = rate
            post(res_id, arrival + timedelta(days=1, hours=3), "no_show_fee", "No-show fee, first night", fee)
            post(res_id, arrival + timedelta(days=1, hours=3), "payment", "Card on file charged", -fee)
        return row

    room = {r["room_id"]: r for r in rooms}
    # The htl_001 scenario (see the module docstring).
    add(guests[0], room["room_0001"], 0, 2, 2, "confirmed")
    add(guests[3], room["room_0006"], 5, 3, 3, "confirmed")
    add(guests[4], room["room_0007"], -9, 3, 2, "checked_out")
    add(guests[5], room["room_0002"], -2, 5, 2, "checked_in")
    add(guests[6], room["room_0008"], 3, 2, 2, "cancelled")
    add(guests[7], room["room_0003"], 0, 1, 1, "confirmed")
    room["room_0002"]["housekeeping_status"] = "occupied"
    room["room_0003"]["housekeeping_status"] = "vacant_dirty"
    room["room_0004"]["housekeeping_status"] = "out_of_order"
    room["room_0005"]["housekeeping_status"] = "vacant_dirty"

    busy_rooms = [r for r in rooms if r["hotel_id"] != "htl_001"]
    rng.shuffle(busy_rooms)
    for r in busy_rooms[:36]:
        day = -rng.randrange(20, 50)
        while day < 40:
            nights = rng.choice([1, 2, 2, 3, 3, 4, 5, 7])
            guest = rng.choice(guests)
            adults = rng.randrange(1, type_of[r["type_id"]]["max_guests"] + 1)
            if day + nights <= 0:
                status = rng.choices(["checked_out", "no_show", "cancelled"], [90, 3, 7])[0]
            elif day < 0:
                status = "checked_in"
            else:
                status = rng.choices(["confirmed", "cancelled"], [88, 12])[0]
            add(guest, r, day, nights, adults, status)
            if status == "checked_in":
                r["housekeeping_status"] = "occupied"
            elif status == "checked_out" and day + nights == 0:
                r["housekeeping_status"] = "vacant_dirty"
            day += nights + rng.randrange(1, 12)
    for r in busy_rooms[36:]:
        roll = rng.random()
        r["housekeeping_status"] = (
            "out_of_order" if roll < 0.04 else ("vacant_dirty" if roll < 0.15 else "vacant_clean")
        )
    for r in [r for r in rooms if r["hotel_id"] == "htl_001"][:3]:  # older stays in the scenario hotel
        add(rng.choice(guests[10:]), r, -rng.randrange(25, 40), rng.choice([2, 3, 4]), 2, "checked_out")
    charges.sort(key=lambda c: (c["posted_at"], c["charge_id"]))
    for n, charge in enumerate(charges, start=1):
        charge["charge_id"] = f"chg_{n:05d}"
    return {
        "hotels": hotels,
        "room_types": room_types,
        "rooms": rooms,
        "guests": guests,
        "reservations": stays,
        "folio_charges": charges,
    }
