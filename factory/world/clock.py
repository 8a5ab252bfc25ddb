"""The farm clock: one frozen instant, and the clock each server is declared to run on.

Every built-in server runs on the farm clock (its spec's `now`), so a task may mix any of them. A server
that must keep another clock is declared in DECLARED_SKEWS with its `now`; an undeclared or changed clock
is a violation.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

FARM_NOW = datetime.fromisoformat("2026-04-13T09:00:00+00:00")  # a Monday, 09:00 UTC

# The built-in servers on the farm clock: all of them.
ON_FARM_CLOCK = (
    "banking",
    "calendar",
    "car_rental",
    "clinic",
    "course_registration",
    "docs_drive",
    "expenses",
    "fitness_club",
    "fleet",
    "grocery_delivery",
    "hotel",
    "invoicing",
    "library",
    "mail",
    "marketplace",
    "newsletter",
    "parcel_shipping",
    "payments",
    "pharmacy",
    "project_tracker",
    "team_chat",
    "tour_booking",
    "tutoring",
    "warehouse",
)
# Servers whose spec clock is not the farm clock: name -> their `now`. None today.
DECLARED_SKEWS: dict[str, str] = {}


def parse_instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def in_world(server: str) -> bool:
    """Whether `server` is one of the built-in servers the world describes (a farm may hold others)."""
    return server in ON_FARM_CLOCK or server in DECLARED_SKEWS


def declared_clock(server: str) -> datetime:
    """The clock `server` is expected to run on: its declared skew, else the farm clock."""
    skew = DECLARED_SKEWS.get(server)
    return parse_instant(skew) if skew else FARM_NOW


def business_hours(moment: datetime, zone: str, rng: random.Random) -> datetime:
    """`moment`, or if it falls outside 09:00-17:30 on a weekday in `zone`, early in the next working day."""
    local = moment.astimezone(ZoneInfo(zone))
    opening = local.replace(hour=9, minute=0, second=0, microsecond=0)
    if local.weekday() < 5 and opening <= local <= local.replace(hour=17, minute=30):
        return moment
    day = local if local < opening else local + timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    start = day.replace(hour=9, minute=0, second=0, microsecond=0) + timedelta(minutes=rng.randrange(0, 120))
    return start.astimezone(UTC)


def working_time_before(moment: datetime, zone: str, rng: random.Random) -> datetime:
    """`moment`, or if it falls outside 09:00-17:30 on a weekday in `zone`, late in the working day before."""
    local = moment.astimezone(ZoneInfo(zone))
    if local.weekday() < 5 and local.replace(hour=9, minute=0) <= local <= local.replace(hour=17, minute=30):
        return moment
    day = local if local.hour >= 9 else local - timedelta(days=1)
    while day.weekday() >= 5:
        day -= timedelta(days=1)
    close = day.replace(hour=17, minute=30, second=0, microsecond=0) - timedelta(minutes=rng.randrange(0, 420))
    return close.astimezone(UTC)
