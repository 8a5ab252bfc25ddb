"""The farm clock: one frozen instant, and the clock each server is declared to run on.

The workplace servers share the farm clock. The others were written against their own dates; until
their specs move (their `now` lives in spec.yaml), each is declared here with its stated offset, so
an undeclared or changed clock is a violation and the table below is the list of specs to move.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

FARM_NOW = datetime.fromisoformat("2026-04-13T09:00:00+00:00")  # a Monday, 09:00 UTC

# The built-in servers already on the farm clock.
ON_FARM_CLOCK = ("calendar", "docs_drive", "mail", "newsletter", "project_tracker", "team_chat")
# Servers whose spec clock is not yet the farm clock: name -> their current `now`.
DECLARED_SKEWS: dict[str, str] = {
    "banking": "2026-03-06T09:30:00Z",
    "car_rental": "2026-06-15T09:00:00Z",
    "clinic": "2026-03-02T09:00:00Z",
    "course_registration": "2026-01-12T15:00:00Z",
    "expenses": "2026-03-09T09:00:00Z",
    "fitness_club": "2026-04-06T08:00:00Z",
    "fleet": "2026-09-14T06:00:00Z",
    "grocery_delivery": "2026-03-04T08:00:00Z",
    "hotel": "2026-05-12T14:00:00Z",
    "invoicing": "2026-03-10T09:00:00Z",
    "library": "2026-04-15T10:00:00Z",
    "marketplace": "2026-04-10T12:00:00Z",
    "parcel_shipping": "2026-06-10T12:00:00Z",
    "payments": "2026-03-05T10:00:00Z",
    "pharmacy": "2026-03-16T10:00:00Z",
    "tour_booking": "2026-07-20T09:00:00Z",
    "tutoring": "2026-05-04T08:00:00Z",
    "warehouse": "2026-02-16T07:00:00Z",
}


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


def offset(server: str) -> timedelta:
    return declared_clock(server) - FARM_NOW


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
