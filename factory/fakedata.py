"""Small deterministic vocabularies for seed builders (`seed.py`): names, places, words.

Every helper takes the builder's `random.Random`, so the same seed number gives the same rows.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import TypeVar

T = TypeVar("T")

FIRST_NAMES = [
    "Maria",
    "James",
    "Aisha",
    "Wei",
    "Olga",
    "Carlos",
    "Priya",
    "Noah",
    "Fatima",
    "Liam",
    "Yuki",
    "Elena",
    "Kwame",
    "Sofia",
    "Mateo",
    "Hannah",
    "Omar",
    "Chloe",
    "Ivan",
    "Amara",
    "Lucas",
    "Mei",
    "Diego",
    "Zara",
    "Tomas",
    "Nadia",
    "Ethan",
    "Leila",
    "Samuel",
    "Ines",
    "Arjun",
    "Grace",
    "Felix",
    "Rosa",
    "Jonas",
    "Anya",
    "Daniel",
    "Lina",
    "Hugo",
    "Keiko",
    "Rafael",
    "Emma",
    "Tariq",
    "Julia",
    "Ben",
    "Sana",
    "Marco",
    "Alice",
]
LAST_NAMES = [
    "Lopez",
    "Okafor",
    "Chen",
    "Novak",
    "Schmidt",
    "Patel",
    "Kim",
    "Haddad",
    "Rossi",
    "Nakamura",
    "Silva",
    "Johansson",
    "Mensah",
    "Dubois",
    "Garcia",
    "Ivanova",
    "Murphy",
    "Tanaka",
    "Kowalski",
    "Moreau",
    "Ahmed",
    "Fischer",
    "Costa",
    "Yilmaz",
    "Andersen",
    "Brown",
    "Nguyen",
    "Martins",
    "Weber",
    "Singh",
    "Park",
    "Hughes",
]
CITIES = [
    "Lisbon",
    "Berlin",
    "Toronto",
    "Osaka",
    "Nairobi",
    "Austin",
    "Lyon",
    "Krakow",
    "Seoul",
    "Porto",
    "Denver",
    "Milan",
    "Oslo",
    "Dublin",
    "Madrid",
    "Vienna",
    "Boston",
    "Melbourne",
    "Prague",
    "Seattle",
]
STREETS = ["Oak", "Maple", "Harbor", "Station", "Market", "River", "Hill", "Park", "Church", "Mill", "Lake", "Elm"]
COMPANIES = [
    "Northwind",
    "Bluepeak",
    "Copperline",
    "Greenfield",
    "Silverleaf",
    "Brightside",
    "Ironbridge",
    "Sunhaven",
    "Redwood",
    "Clearwater",
    "Stonegate",
    "Lakeshore",
    "Westbrook",
    "Highland",
    "Oakridge",
    "Pinecrest",
]
# Values of an imported API's columns, by what the column means (`envfarm.factory.importers.openapi.seed`).
COUNTRY_CODES = ["US", "DE", "FR", "JP", "BR", "GB", "CA", "ES", "IT", "NL", "KE", "IN"]
COUNTRIES = ["Portugal", "Germany", "Canada", "Japan", "Kenya", "United States", "France", "Poland", "Ireland", "Spain"]
LANGUAGES = ["en", "fr", "de", "es", "pt", "ja", "it", "nl"]
LOCALES = ["en-US", "fr-FR", "de-DE", "es-ES", "pt-PT", "ja-JP", "it-IT", "nl-NL"]
TIMEZONES = ["Europe/Lisbon", "America/Toronto", "Asia/Tokyo", "Europe/Berlin", "America/Denver", "Africa/Nairobi"]
REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-2", "us-west-2", "eu-central-1", "ap-northeast-1"]
PROVINCES = ["Ontario", "Bavaria", "Texas", "Lombardy", "Quebec", "Catalonia", "Victoria", "Colorado"]
TAGS = ["billing", "urgent", "internal", "marketing", "support", "travel", "finance", "design", "research", "legal"]
KINDS = ["standard", "premium", "basic", "business", "personal", "trial"]
STATUSES = ["active", "pending", "archived", "suspended", "draft", "closed"]
MIME_TYPES = ["application/pdf", "image/png", "text/csv", "application/json", "image/jpeg", "text/plain"]
FILE_NAMES = ["q3-report.pdf", "team-photo.png", "invoices-2026.csv", "config.json", "floor-plan.jpg", "notes.txt"]
THING_NAMES = [
    "Cedar Ridge",
    "Harbor Point",
    "Silver Creek",
    "Maple Court",
    "Blue Lagoon",
    "Granite Peak",
    "Fox Hollow",
    "Willow Bend",
    "Aspen Grove",
    "Copper Falls",
    "Pine Harbor",
    "Sunset Row",
]
NOTES = [
    "Follow up with the Lisbon team before Friday.",
    "Renewed for another year at the same rate.",
    "Customer asked for a paper copy by post.",
    "Waiting on the signed contract from legal.",
    "Moved to the new warehouse in March.",
    "Second reminder sent; no reply yet.",
    "Priority account: call before any change.",
    "Imported from the old system last spring.",
    "Discount agreed on the phone with the manager.",
    "Check the spelling of the billing name.",
]
SEARCHES = ["coffee shops", "jazz festival", "electric cars", "climate report", "running shoes", "city marathon"]
SEARCHES += ["budget travel", "solar panels", "book club", "winter jackets"]
# The words an imported table is named by that say nothing of the thing (`profile_response` -> profile).
NOISE_NOUNS = frozenset(
    {"response", "request", "result", "info", "details", "detail", "object", "model", "resource", "answer"}
)


ADJECTIVES = ["quick", "quiet", "bright", "steady", "bold", "gentle", "sharp", "warm", "calm", "clever"]
NOUNS = ["report", "plan", "review", "update", "draft", "summary", "proposal", "checklist", "budget", "outline"]


def slug(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", ".", ascii_text.lower()).strip(".")


def person(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)


PEOPLE = len(FIRST_NAMES) * len(LAST_NAMES)  # how many distinct full names `unique_people` can give


def unique_people(rng: random.Random, count: int) -> list[str]:
    """`count` distinct full names (at most `PEOPLE`)."""
    pairs = [(first, last) for first in FIRST_NAMES for last in LAST_NAMES]
    return [f"{first} {last}" for first, last in rng.sample(pairs, count)]


def email(full_name: str, domain: str = "example.com") -> str:
    return f"{slug(full_name)}@{domain}"


def phone(rng: random.Random) -> str:
    return f"+1-555-{rng.randrange(100, 1000):03d}-{rng.randrange(0, 10000):04d}"


def address(rng: random.Random) -> str:
    return f"{rng.randrange(1, 400)} {rng.choice(STREETS)} Street, {rng.choice(CITIES)}"


def day(start: date | datetime, offset_days: int) -> str:
    base = start.date() if isinstance(start, datetime) else start
    return (base + timedelta(days=offset_days)).isoformat()


def moment(start: datetime, offset_hours: float) -> str:
    return (start + timedelta(hours=offset_hours)).isoformat().replace("+00:00", "Z")


def money(rng: random.Random, low: float, high: float) -> float:
    return round(rng.uniform(low, high), 2)


def title(rng: random.Random) -> str:
    return f"{rng.choice(ADJECTIVES).capitalize()} {rng.choice(NOUNS)}"


def replaced(rng: random.Random, draw: Callable[[random.Random], object], value: T) -> T:
    """`value` (the world's fact), after consuming the draw of the value it replaces, so the rows
    generated after it, and the spec examples that name them, stay what they were."""
    draw(rng)
    return value


def community_names(count: int) -> list[dict[str, str]]:
    """The cast's names, emails and phones (the rest of each person lives in `envfarm.factory.world.cast`)."""
    rng = random.Random(2026)
    names = unique_people(rng, 80)
    people = [{"full_name": n, "email": email(n), "phone": phone(rng)} for n in names]
    if count > len(people):
        raise ValueError(f"the shared cast has {len(people)} people, {count} asked")
    return people[:count]
