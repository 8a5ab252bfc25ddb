"""One cast for the whole farm: each person has one name, email, phone, home, employer and job.

The first 40 people are the staff of Northwind Analytics, the company the workplace servers (mail,
calendar, chat, drive, tracker, expenses) describe; the other 40 work elsewhere. Every attribute is
derived from the person's index with a fixed rng, so every seed builder sees the same person.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from envfarm.factory import fakedata

EMPLOYER = "Northwind Analytics"
STAFF = 40
CAST_SIZE = 80

# city -> (country code, IANA time zone)
CITIES: dict[str, tuple[str, str]] = {
    "Toronto": ("CA", "America/Toronto"),
    "Lisbon": ("PT", "Europe/Lisbon"),
    "Berlin": ("DE", "Europe/Berlin"),
    "Austin": ("US", "America/Chicago"),
    "Dublin": ("IE", "Europe/Dublin"),
    "Seattle": ("US", "America/Los_Angeles"),
    "Madrid": ("ES", "Europe/Madrid"),
    "Krakow": ("PL", "Europe/Warsaw"),
    "Osaka": ("JP", "Asia/Tokyo"),
    "Boston": ("US", "America/New_York"),
    "Vienna": ("AT", "Europe/Vienna"),
    "Porto": ("PT", "Europe/Lisbon"),
}
OFFICES = ["Lisbon", "Berlin", "Toronto", "Austin", "Dublin", "Seattle"]  # Northwind's offices; staff live near one
# The org chart: cost center (the expenses server's rows) -> department (the calendar's enum).
COST_CENTER_DEPARTMENT = {
    "Engineering": "engineering",
    "Sales": "sales",
    "Marketing": "marketing",
    "Customer Success": "sales",
    "Finance": "finance",
    "People": "operations",
    "Operations": "operations",
    "Research": "design",
}
COST_CENTERS = list(COST_CENTER_DEPARTMENT)
JOB_TITLES = {
    "Engineering": ["Software Engineer", "Senior Engineer", "SRE", "Data Engineer"],
    "Sales": ["Account Executive", "Sales Engineer"],
    "Marketing": ["Marketing Specialist", "Content Strategist", "Growth Analyst"],
    "Customer Success": ["Customer Success Manager", "Support Engineer"],
    "Finance": ["Financial Analyst", "Accountant"],
    "People": ["HR Partner", "Recruiter"],
    "Operations": ["Operations Analyst", "IT Administrator", "Office Coordinator"],
    "Research": ["UX Researcher", "Product Designer"],
}
OUTSIDE_JOBS = [
    "Teacher",
    "Nurse",
    "Architect",
    "Pharmacist",
    "Electrician",
    "Chef",
    "Lawyer",
    "Accountant",
    "Graphic Designer",
    "Civil Engineer",
    "Journalist",
    "Physiotherapist",
    "Store Manager",
    "Photographer",
]
OUTSIDE_EMPLOYERS = [
    "Bluepeak Systems",
    "Copperline Media",
    "Greenfield Partners",
    "Silverleaf Stores",
    "Brightside Health",
    "Ironbridge Construction",
    "Sunhaven Hotels",
    "Redwood Schools",
    "Clearwater Labs",
    "Stonegate Legal",
]
# Main characters whose job the planted scenarios rely on (index -> title).
TITLE_OVERRIDES = {18: "Technical Program Manager"}
# Two young people (the car rental's age rules need a 20- and a 23-year-old driver in June 2026).
BIRTH_OVERRIDES = {58: date(2005, 11, 2), 59: date(2003, 1, 14)}


class Person(BaseModel):
    """One member of the cast, as every server that knows them must show them."""

    model_config = ConfigDict(frozen=True)

    index: int
    full_name: str
    email: str
    phone: str
    street: str
    city: str
    country: str
    time_zone: str
    employer: str
    cost_center: str | None  # staff only: the expenses cost center
    department: str | None  # staff only: one of COST_CENTER_DEPARTMENT's values
    job_title: str
    manager_index: int | None
    date_of_birth: str
    monthly_salary: float

    @property
    def address(self) -> str:
        return f"{self.street}, {self.city}"

    @property
    def first_name(self) -> str:
        return self.full_name.split()[0]


def staff_cost_center(index: int) -> str:
    """Heads first (one per cost center), two finance controllers, then the rest round-robin."""
    if index < len(COST_CENTERS):
        return COST_CENTERS[index]
    if index in (8, 9):
        return "Finance"
    return COST_CENTERS[(index - 10) % len(COST_CENTERS)]


def _job(index: int, center: str, rng: random.Random) -> str:
    if index in TITLE_OVERRIDES:
        return TITLE_OVERRIDES[index]
    if index < len(COST_CENTERS):
        return f"Head of {center}"
    if index in (8, 9):
        return "Finance Controller"
    return rng.choice(JOB_TITLES[center])


def build_cast() -> list[Person]:
    """The 80 people, in the order `community` has always listed them."""
    base = fakedata.community_names(CAST_SIZE)
    rng = random.Random(4242)
    people = []
    for i, p in enumerate(base):
        staff = i < STAFF
        city = OFFICES[i % len(OFFICES)] if staff else rng.choice(sorted(CITIES))
        country, zone = CITIES[city]
        center = staff_cost_center(i) if staff else None
        job = _job(i, center, rng) if center else rng.choice(OUTSIDE_JOBS)
        senior = staff and i < 10  # department heads and controllers were born 1962-1984
        born = date(1962, 1, 1) + timedelta(days=rng.randrange(0, 365 * (22 if senior else 40)))
        people.append(
            Person(
                index=i,
                full_name=p["full_name"],
                email=p["email"],
                phone=p["phone"],
                street=f"{rng.randrange(1, 400)} {rng.choice(fakedata.STREETS)} Street",
                city=city,
                country=country,
                time_zone=zone,
                employer=EMPLOYER if staff else rng.choice(OUTSIDE_EMPLOYERS),
                cost_center=center,
                department=COST_CENTER_DEPARTMENT[center] if center else None,
                job_title=job,
                manager_index=COST_CENTERS.index(center) if center and i >= len(COST_CENTERS) else None,
                date_of_birth=BIRTH_OVERRIDES.get(i, born).isoformat(),
                monthly_salary=float(rng.choice([4200, 4800, 5400, 6100, 6900, 7800]) + (1500 if i < 10 else 0)),
            )
        )
    return people


def by_email(people: list[Person]) -> dict[str, Person]:
    return {p.email: p for p in people}


def community(count: int) -> list[dict[str, Any]]:
    """The farm's shared cast: the same people (name, email, phone, home address and city, time zone,
    employer, department, job, birth date) in every environment that uses it, so cross-server tasks can
    join on a person ("pay for my groceries", "email my doctor")."""
    people = build_cast()
    if count > len(people):
        raise ValueError(f"the shared cast has {len(people)} people, {count} asked")
    return [{**p.model_dump(), "address": p.address, "first_name": p.first_name} for p in people[:count]]
