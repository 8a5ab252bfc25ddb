"""Seed rows of the clinic: 40 patients, 12 doctors, 300 slots, 60 appointments, 45 invoices."""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

SPECIALTIES = ["general", "cardiology", "dermatology", "pediatrics", "orthopedics", "neurology"]
REASONS = ["annual checkup", "follow-up", "back pain", "skin rash", "blood pressure review", "headaches", "vaccination"]


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    names = fakedata.unique_people(rng, 52)
    # A patient who is in the farm's cast has the cast's birth date and phone; the rest are made up here.
    cast = {p["email"]: p for p in community(80)}
    patients = []
    for i, name in enumerate(names[:40], start=1):
        born = fakedata.day(datetime(1950, 1, 1), rng.randrange(0, 365 * 55))
        phone = fakedata.phone(rng)
        known = cast.get(fakedata.email(name))
        patients.append(
            {
                "patient_id": f"pat_{i:04d}",
                "full_name": name,
                "email": fakedata.email(name),
                "date_of_birth": known["date_of_birth"] if known else born,
                "phone": known["phone"] if known else phone,
            }
        )
    doctors = [
        {"doctor_id": f"doc_{i:03d}", "name": f"Dr. {name.split()[1]}", "specialty": SPECIALTIES[(i - 1) % 6]}
        for i, name in enumerate(names[40:], start=1)
    ]
    # Per doctor: one 10:00 slot on each weekday of last week, then 10:00 and 14:00 on the next ten weekdays.
    monday = now.replace(hour=0, minute=0, second=0, microsecond=0)
    times = [monday - timedelta(days=7 - d) + timedelta(hours=10) for d in range(5)]
    times += [monday + timedelta(days=week + d, hours=hour) for week in (0, 7) for d in range(5) for hour in (10, 14)]
    slots = []
    for doctor in doctors:
        for start in times:
            slots.append(
                {
                    "slot_id": f"slot_{len(slots) + 1:04d}",
                    "doctor_id": doctor["doctor_id"],
                    "starts_at": start.isoformat().replace("+00:00", "Z"),
                    "duration_minutes": rng.choice([20, 30, 30, 45]),
                    "is_free": True,
                }
            )
    by_doctor = [slots[i * 25 : (i + 1) * 25] for i in range(12)]
    appointments = []

    booked_days: set[tuple[str, str]] = set()  # (patient, day) of the appointments that stand

    def patient_for(slot: dict, status: str) -> str:
        """The drawn patient, or the next one in the list free that day: a patient has at most one appointment
        a day (the policy's rule, which book_appointment enforces), so the seed holds none with two. The draw is
        made either way, so the rows after it keep their values."""
        drawn = patients.index(rng.choice(patients))
        day = slot["starts_at"][:10]
        for k in range(len(patients)):
            patient_id = patients[(drawn + k) % len(patients)]["patient_id"]
            if status == "cancelled" or (patient_id, day) not in booked_days:
                if status != "cancelled":
                    booked_days.add((patient_id, day))
                return patient_id
        raise ValueError(f"every patient already has an appointment on {day}")

    def add(slot: dict, status: str) -> None:
        appointments.append(
            {
                "appointment_id": f"apt_{len(appointments) + 1:04d}",
                "patient_id": patient_for(slot, status),
                "slot_id": slot["slot_id"],
                "reason": rng.choice(REASONS),
                "status": status,
                "cancel_reason": "schedule conflict" if status == "cancelled" else None,
            }
        )
        if status != "cancelled":
            slot["is_free"] = False

    for k in range(20):  # last week's visits, done
        add(by_doctor[k % 12][0 if k < 12 else 2], "completed")
    future = [s for d in by_doctor for s in d[5:]]
    picks = rng.sample(future, 40)
    for slot in picks[:35]:
        add(slot, "booked")
    for slot in picks[35:]:
        add(slot, "cancelled")

    invoices = []
    for appointment in appointments[:45]:
        invoices.append(
            {
                "invoice_id": f"inv_{len(invoices) + 1:04d}",
                "appointment_id": appointment["appointment_id"],
                "amount": rng.choice([60.0, 80.0, 95.0, 120.0, 150.0]),
                "issued_on": fakedata.day(now, -rng.randrange(1, 10)),
                "status": "paid" if len(invoices) % 3 == 0 else "open",
            }
        )
    return {
        "patients": patients,
        "doctors": doctors,
        "slots": slots,
        "appointments": appointments,
        "invoices": invoices,
    }
