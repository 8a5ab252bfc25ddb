"""Seed rows of the fitness club: 6 membership plans, 45 members (the farm's shared cast), 20 trainers,
three weeks of classes (last week's done, this week's and next week's scheduled), their bookings,
personal training sessions and membership freezes. Club times are local time, written as UTC.

A few rows are placed on purpose so the spec's rule examples hit exactly one rule each:
- mem_0001 (Premium, active) has upcoming bookings; mem_0002 (Standard) is frozen; mem_0003 is cancelled;
  mem_0004 is on the Off-Peak plan; mem_0005 (Basic, 2 classes a week) has used this week's allowance;
  mem_0006 is booked on today's 09:15 class (check-in open) and today's 09:45 class (under 2 hours away);
  mem_0007 is on the Off-Peak plan, which cannot be frozen;
- the Tuesday 18:45 boxing class is full; trainer trn_004 does not offer personal training.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

PLANS = [
    # (name, monthly fee, classes per week (None: unlimited), off-peak only, can freeze, max freeze days, PT discount %)
    ("Premium", 89.0, None, False, True, 90, 20),
    ("Standard", 59.0, 4, False, True, 60, 10),
    ("Basic", 35.0, 2, False, True, 30, 0),
    ("Off-Peak", 29.0, 3, True, False, 0, 0),
    ("Student", 32.0, 3, False, True, 30, 0),
    ("Corporate", 65.0, None, False, True, 60, 15),
]
# Weekly timetable: (weekday 0=Mon, "HH:MM", title, category, studio, minutes, capacity, level, trainer slot)
TIMETABLE = [
    (0, "06:30", "Sunrise Spin", "spin", "Cycle Room", 45, 20, "all_levels", 0),
    (0, "09:15", "Morning Vinyasa Flow", "yoga", "Studio A", 60, 18, "all_levels", 1),
    (0, "09:45", "Total Body HIIT", "hiit", "Studio B", 45, 16, "intermediate", 2),
    (0, "12:15", "Lunchtime Pilates Reformer", "pilates", "Reformer Studio", 50, 10, "beginner", 3),
    (0, "17:30", "Strength Foundations", "strength", "Weights Floor", 60, 14, "beginner", 4),
    (0, "18:45", "Power Spin", "spin", "Cycle Room", 45, 20, "advanced", 0),
    (1, "07:00", "Aqua Fit", "aqua", "Pool", 45, 15, "all_levels", 5),
    (1, "10:30", "Gentle Hatha Yoga", "yoga", "Studio A", 60, 18, "beginner", 1),
    (1, "12:15", "Express HIIT", "hiit", "Studio B", 30, 16, "all_levels", 2),
    (1, "17:30", "Dance Cardio", "dance", "Studio A", 50, 25, "all_levels", 6),
    (1, "18:45", "Boxing Conditioning", "boxing", "Boxing Ring", 60, 12, "intermediate", 7),
    (2, "06:30", "Sunrise Spin", "spin", "Cycle Room", 45, 20, "all_levels", 0),
    (2, "11:00", "Pilates Mat", "pilates", "Studio B", 45, 15, "all_levels", 3),
    (2, "13:00", "Barbell Strength", "strength", "Weights Floor", 60, 14, "intermediate", 4),
    (2, "18:00", "Yin Yoga", "yoga", "Studio A", 75, 18, "all_levels", 8),
    (2, "19:15", "Kickboxing", "boxing", "Boxing Ring", 60, 12, "advanced", 7),
    (3, "07:00", "Aqua Fit", "aqua", "Pool", 45, 15, "all_levels", 5),
    (3, "10:30", "Core and Mobility", "strength", "Studio B", 45, 16, "all_levels", 9),
    (3, "12:15", "Lunchtime Pilates Reformer", "pilates", "Reformer Studio", 50, 10, "intermediate", 3),
    (3, "17:30", "Tabata HIIT", "hiit", "Studio B", 45, 16, "advanced", 2),
    (3, "18:45", "Zumba", "dance", "Studio A", 55, 25, "all_levels", 6),
    (4, "06:30", "Sunrise Spin", "spin", "Cycle Room", 45, 20, "all_levels", 0),
    (4, "12:15", "Power Yoga", "yoga", "Studio A", 60, 18, "intermediate", 1),
    (4, "14:00", "Senior Strength", "strength", "Weights Floor", 45, 14, "beginner", 9),
    (4, "17:30", "Friday Boxing", "boxing", "Boxing Ring", 60, 12, "all_levels", 7),
    (5, "09:00", "Weekend Spin", "spin", "Cycle Room", 50, 20, "all_levels", 0),
    (5, "10:30", "Aqua Intervals", "aqua", "Pool", 45, 15, "intermediate", 5),
    (5, "11:00", "Weekend HIIT", "hiit", "Studio B", 45, 16, "all_levels", 2),
    (6, "09:30", "Slow Flow Yoga", "yoga", "Studio A", 75, 18, "all_levels", 8),
    (6, "11:00", "Pilates Mat", "pilates", "Studio B", 45, 15, "beginner", 3),
]
SPECIALTIES = [
    "spin, hiit",
    "yoga, pilates",
    "hiit, strength",
    "pilates, yoga",
    "strength, mobility",
    "aqua, hiit",
    "dance, cardio",
    "boxing, strength",
    "yoga, meditation",
    "strength, mobility",
]
FOCUSES = [
    "weight loss",
    "strength building",
    "marathon preparation",
    "post-injury mobility",
    "technique review",
    "core stability",
    "boxing technique",
    "flexibility",
]
FREEZE_REASONS = ["travel", "injury recovery", "medical leave", "work assignment abroad", "parental leave", "surgery"]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _off_peak(start: datetime) -> bool:
    return start.weekday() < 5 and 10 <= start.hour < 16


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    monday = today - timedelta(days=today.weekday())
    plans = [
        {
            "plan_id": f"plan_{i:02d}",
            "name": name,
            "monthly_fee": fee,
            "classes_per_week": per_week,
            "off_peak_only": off_peak,
            "can_freeze": can_freeze,
            "max_freeze_days": max_days,
            "pt_discount_percent": discount,
        }
        for i, (name, fee, per_week, off_peak, can_freeze, max_days, discount) in enumerate(PLANS, start=1)
    ]
    plan_by_name = {p["name"]: p for p in plans}

    cast = {p["full_name"] for p in community(80)}
    trainer_names = [n for n in fakedata.unique_people(rng, 60) if n not in cast][:20]
    trainers = []
    for i, name in enumerate(trainer_names, start=1):
        trainers.append(
            {
                "trainer_id": f"trn_{i:03d}",
                "name": name,
                "specialties": SPECIALTIES[(i - 1) % len(SPECIALTIES)],
                "offers_personal_training": i % 4 != 0,
                "hourly_rate": float(rng.choice([55, 60, 65, 70, 80, 90])),
            }
        )

    # The trainer of a timetable slot alternates between two trainers week by week.
    def trainer_for(slot: int, week: int) -> dict:
        return trainers[slot + (10 if week % 2 else 0)]

    classes = []
    for week in (-1, 0, 1):
        for weekday, hhmm, title, category, studio, minutes, capacity, level, slot in TIMETABLE:
            hour, minute = map(int, hhmm.split(":"))
            start = monday + timedelta(days=7 * week + weekday, hours=hour, minutes=minute)
            ended = start + timedelta(minutes=minutes) <= now
            classes.append(
                {
                    "class_id": f"cls_{len(classes) + 1:04d}",
                    "title": title,
                    "category": category,
                    "trainer_id": trainer_for(slot, week)["trainer_id"],
                    "studio": studio,
                    "starts_at": _iso(start),
                    "duration_minutes": minutes,
                    "capacity": capacity,
                    "booked_count": 0,
                    "level": level,
                    "status": "completed" if ended else "scheduled",
                }
            )
    rng.choice([c for c in classes if c["status"] == "scheduled" and c["starts_at"] > _iso(now + timedelta(days=2))])[
        "status"
    ] = "cancelled"

    people = community(45)
    fixed_plans = {1: "Premium", 2: "Standard", 3: "Standard", 4: "Off-Peak", 5: "Basic", 6: "Student", 7: "Off-Peak"}
    fixed_status = {2: "frozen", 3: "cancelled", 19: "frozen", 27: "frozen", 35: "cancelled", 41: "frozen"}
    members = []
    for i, person in enumerate(people, start=1):
        plan = plan_by_name[
            fixed_plans.get(i)
            or rng.choice(["Premium", "Standard", "Standard", "Basic", "Student", "Corporate", "Off-Peak"])
        ]
        status = fixed_status.get(i, "active")
        if status == "frozen" and not plan["can_freeze"]:
            plan = plan_by_name["Standard"]
        joined = today - timedelta(days=rng.randrange(40, 1400))
        renews = joined
        while renews <= today:
            renews += timedelta(days=30)
        members.append(
            {
                "member_id": f"mem_{i:04d}",
                "full_name": person["full_name"],
                "email": person["email"],
                "phone": person["phone"],
                "plan_id": plan["plan_id"],
                "status": status,
                "joined_on": joined.date().isoformat(),
                "renews_on": renews.date().isoformat(),
            }
        )
    plan_of = {p["plan_id"]: p for p in plans}

    freezes = []
    for m in members:
        if m["status"] == "frozen":
            days = rng.choice([14, 21, 30])
            start = today - timedelta(days=rng.randrange(2, days - 3))
            freezes.append((m, start, start + timedelta(days=days - 1), "active"))
    for m in rng.sample([m for m in members if plan_of[m["plan_id"]]["can_freeze"] and m["status"] == "active"], 16):
        days = rng.choice([7, 14, 21, 30])
        start = today - timedelta(days=rng.randrange(60, 400))
        freezes.append((m, start, start + timedelta(days=days - 1), "ended"))
    freeze_rows = [
        {
            "freeze_id": f"frz_{n:04d}",
            "member_id": m["member_id"],
            "starts_on": start.date().isoformat(),
            "ends_on": end.date().isoformat(),
            "reason": rng.choice(FREEZE_REASONS),
            "status": status,
        }
        for n, (m, start, end, status) in enumerate(sorted(freezes, key=lambda f: (f[1], f[0]["member_id"])), start=1)
    ]

    bookings = []
    week_count: dict[tuple[str, str], int] = {}
    booked_on: set[tuple[str, str]] = set()

    def week_of(cls: dict) -> str:
        return datetime.fromisoformat(cls["starts_at"]).strftime("%Y-%W")

    def can_book(m: dict, cls: dict) -> bool:
        plan = plan_of[m["plan_id"]]
        start = datetime.fromisoformat(cls["starts_at"])
        if m["status"] != "active":
            return False
        if plan["off_peak_only"] and not _off_peak(start):
            return False
        limit = plan["classes_per_week"]
        return (m["member_id"], cls["class_id"]) not in booked_on and (
            limit is None or week_count.get((m["member_id"], week_of(cls)), 0) < limit
        )

    def book(m: dict, cls: dict, status: str) -> None:
        start = datetime.fromisoformat(cls["starts_at"])
        booked_at = start - timedelta(hours=rng.randrange(3, 120))
        booked_at = min(booked_at, now - timedelta(hours=1))
        cancelled_at = (
            _iso(booked_at + (min(start - timedelta(hours=3), now) - booked_at) / 2) if status == "cancelled" else None
        )
        bookings.append(
            {
                "booking_id": f"bkg_{len(bookings) + 1:04d}",
                "member_id": m["member_id"],
                "class_id": cls["class_id"],
                "status": status,
                "booked_at": _iso(booked_at),
                "cancelled_at": cancelled_at,
                "checked_in_at": _iso(start - timedelta(minutes=rng.randrange(2, 20)))
                if status == "attended"
                else None,
            }
        )
        if status != "cancelled":
            cls["booked_count"] += 1
            week_count[(m["member_id"], week_of(cls))] = week_count.get((m["member_id"], week_of(cls)), 0) + 1
        booked_on.add((m["member_id"], cls["class_id"]))

    by_slot = {(c["starts_at"][:10], c["starts_at"][11:16]): c for c in classes}

    def cls_at(day_offset: int, hhmm: str) -> dict:
        return by_slot[((monday + timedelta(days=day_offset)).date().isoformat(), hhmm)]

    mem = {m["member_id"]: m for m in members}
    # Scenario bookings (see the module docstring).
    book(mem["mem_0001"], cls_at(2, "18:00"), "booked")
    book(mem["mem_0001"], cls_at(3, "17:30"), "booked")
    book(mem["mem_0001"], cls_at(-7, "18:45"), "attended")
    book(mem["mem_0005"], cls_at(1, "07:00"), "booked")
    book(mem["mem_0005"], cls_at(3, "18:45"), "booked")
    book(mem["mem_0006"], cls_at(0, "09:15"), "booked")
    book(mem["mem_0006"], cls_at(0, "09:45"), "booked")
    scenario = {f"mem_{i:04d}" for i in range(1, 8)}
    ordinary = [m for m in members if m["member_id"] not in scenario]
    full = cls_at(1, "18:45")
    for m in rng.sample([m for m in ordinary if can_book(m, full)], full["capacity"]):
        book(m, full, "booked")
    for cls in classes:
        if cls["status"] == "cancelled" or cls is full:
            continue
        past = cls["status"] == "completed"
        target = int(cls["capacity"] * rng.uniform(0.3, 0.9))
        pool = [m for m in ordinary if can_book(m, cls)]
        rng.shuffle(pool)
        for m in pool[: max(0, target - cls["booked_count"])]:
            roll = rng.random()
            if past:
                book(m, cls, "no_show" if roll < 0.1 else ("cancelled" if roll < 0.18 else "attended"))
            else:
                book(m, cls, "cancelled" if roll < 0.1 else "booked")

    pt_sessions = []
    busy: dict[str, list[tuple[datetime, datetime]]] = {}
    for c in classes:
        start = datetime.fromisoformat(c["starts_at"])
        busy.setdefault(c["trainer_id"], []).append((start, start + timedelta(minutes=c["duration_minutes"])))

    def add_pt(m: dict, trainer: dict, start: datetime, minutes: int, status: str) -> bool:
        end = start + timedelta(minutes=minutes)
        if any(s < end and start < e for s, e in busy.get(trainer["trainer_id"], [])):
            return False
        busy.setdefault(trainer["trainer_id"], []).append((start, end))
        discount = plan_of[m["plan_id"]]["pt_discount_percent"]
        pt_sessions.append(
            {
                "session_id": f"pts_{len(pt_sessions) + 1:04d}",
                "member_id": m["member_id"],
                "trainer_id": trainer["trainer_id"],
                "starts_at": _iso(start),
                "duration_minutes": minutes,
                "focus": rng.choice(FOCUSES),
                "price": round(trainer["hourly_rate"] * minutes / 60 * (100 - discount) / 100, 2),
                "status": status,
            }
        )
        return True

    pt_trainers = [t for t in trainers if t["offers_personal_training"]]
    # Scenario sessions of mem_0001: tomorrow 08:00 (23 hours away), next week, and one done last week.
    add_pt(mem["mem_0001"], trainers[0], today + timedelta(days=1, hours=8), 60, "scheduled")
    add_pt(mem["mem_0001"], trainers[0], today + timedelta(days=9, hours=7), 60, "scheduled")
    add_pt(mem["mem_0001"], trainers[0], today - timedelta(days=5, hours=-7), 60, "completed")
    while len(pt_sessions) < 36:
        m = rng.choice([m for m in ordinary if m["status"] == "active"])
        day = rng.randrange(-14, 14)
        start = today + timedelta(days=day, hours=rng.choice([7, 9, 10, 11, 13, 15, 16, 19, 20]))
        status = (
            ("completed" if rng.random() < 0.9 else "cancelled")
            if start < now
            else ("scheduled" if rng.random() < 0.9 else "cancelled")
        )
        add_pt(m, rng.choice(pt_trainers), start, rng.choice([30, 60, 60, 90]), status)

    return {
        "membership_plans": plans,
        "members": members,
        "trainers": trainers,
        "classes": classes,
        "bookings": bookings,
        "pt_sessions": pt_sessions,
        "freezes": freeze_rows,
    }
