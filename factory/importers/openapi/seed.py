"""Seed values: deterministic rows per seed number, drawn from the schemas' enums, formats, examples and names."""

from __future__ import annotations

import random
import re
import zlib
from datetime import datetime
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.importers.openapi.models import Column, Entity
from envfarm.factory.importers.openapi.words import NAME_KINDS, WRAPPERS, singular


def value_kind(value: Any) -> str:
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)


def looks_uuid(value: Any) -> bool:
    return isinstance(value, str) and bool(re.fullmatch(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", value))


def topological(entities: dict[str, Entity]) -> list[str]:
    """Tables ordered so each comes after the tables its foreign keys name (cycles: name order)."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(table: str) -> None:
        if table in order or table in visiting:
            return
        visiting.add(table)
        for column in entities[table].columns.values():
            if column.ref and (target := column.ref.split(".")[0]) in entities and target != table:
                visit(target)
        visiting.discard(table)
        order.append(table)

    for table in entities:
        visit(table)
    return order


def user_known_column(name: str, column: Column, entity: Entity) -> bool:
    if name == entity.primary_key or column.ref or column.json_text:
        return False
    return not (name.endswith(("_id", "_ids", "_key", "token", "password", "_url", "url")) or name == "id")


# Words a column name runs together (`fullname`, `usertype`, `zipcode`): read as two.
SUFFIXES = ("name", "type", "code", "number", "date", "time", "url", "email", "desc")


def name_words(name: str) -> set[str]:
    """The words of a column name, a run-together word split too: `billing_fullname` -> billing, fullname,
    full, name."""
    words = set(name.split("_"))
    for word in list(words):
        for suffix in SUFFIXES:
            if word.endswith(suffix) and len(word) > len(suffix) + 2:
                words |= {word[: -len(suffix)], suffix}
    return words


def pick(values: list[str], table: str, name: str, n: int) -> str:
    """The n-th of `values` from a place fixed per column, so a column's rows differ (one a row, while the
    vocabulary lasts) and two columns of one vocabulary do not move in step."""
    return values[(zlib.crc32(f"{table}.{name}".encode()) + n) % len(values)]


def noun_of(table: str) -> str:
    """What a table's rows are, said plainly: `profile_responses` -> profile."""
    words = [w for w in singular(table).split("_") if w not in fakedata.NOISE_NOUNS]
    return " ".join(words or singular(table).split("_"))


PERSON_TABLES = ("users", "people", "persons", "customers", "profiles", "contacts", "members", "employees")
PERSON_NAME_WORDS = {"full", "author", "contact", "holder", "owner", "customer", "recipient", "sender", "billing"}
PERSON_NAME_WORDS |= {"shipping", "card", "first", "last", "given", "family"}
ORGANISATION_WORDS = {"company", "organization", "organisation", "org", "business", "merchant", "vendor", "bank"}


def seed_value(
    column: Column, n: int, rng: random.Random, now: datetime, person: str, table: str, personal: bool = False
) -> Any:
    """A plausible value for one seed cell: the example first, then enums, then what the column's name means
    (a country code, a postal code, an order number, a note), never the column's name with a number. `personal`:
    the row is a person's (it has a first or last name), so its `name` is theirs."""
    name, kind = column.name, column.type
    example = column.example
    if n == 0 and example is not None and not column.json_text and _fits(column, example):
        return example
    if column.json_text:
        if column.json_text != "list":
            return ""
        item = column.model_copy(update={"name": singular(name), "json_text": None, "example": None, "enum": None})
        return ", ".join(str(seed_value(item, n + k, rng, now, person, table, personal)) for k in range(2))
    if column.enum:
        return column.enum[n % len(column.enum)]
    if kind == "boolean":
        return n % 2 == 0
    words = name_words(name)
    if kind == "integer":
        return _integer(column, words, rng)
    if kind == "number":
        return _number(column, words, rng)
    if kind == "date":
        return fakedata.day(now, rng.randint(-60, 60))
    if kind == "datetime":
        return fakedata.moment(now, rng.randint(-1440, 1440))
    return _string(column, words, n, rng, now, person, table, personal)


def _integer(column: Column, words: set[str], rng: random.Random) -> int:
    # A bound as wide as its type (AWS's TTL: 0 to 2147483647) is no value people use: drawn as if unbounded.
    wide = column.minimum is not None and column.maximum is not None and column.maximum - column.minimum > 100_000
    if column.minimum is None and column.maximum is None or wide:
        for meaning, (low, high) in INTEGER_RANGES.items():
            if words & set(meaning):
                low, high = max(low, int(column.minimum or low)), min(high, int(column.maximum or high))
                if low <= high:
                    return rng.randint(low, high)
    low = int(column.minimum) if column.minimum is not None else 1
    high = int(column.maximum) if column.maximum is not None and not wide else max(low + 1, 120)
    return rng.randint(low, max(low, high))


INTEGER_RANGES: dict[tuple[str, ...], tuple[int, int]] = {
    ("year",): (2015, 2026),
    ("month",): (1, 12),
    ("day",): (1, 28),
    ("hour", "hours"): (0, 23),
    ("minute", "minutes", "second", "seconds"): (0, 59),
    ("age",): (18, 80),
    ("percent", "percentage"): (0, 100),
    ("rating", "stars", "priority", "level"): (1, 5),
    ("count", "quantity", "qty", "size", "total"): (1, 40),
    ("ttl",): (60, 3600),
}


def _number(column: Column, words: set[str], rng: random.Random) -> float:
    if column.minimum is None and column.maximum is None:
        if words & {"latitude", "lat"}:
            return round(rng.uniform(-45.0, 60.0), 4)
        if words & {"longitude", "lon", "lng", "long"}:
            return round(rng.uniform(-120.0, 150.0), 4)
        if words & {"percent", "percentage"}:
            return round(rng.uniform(0.0, 100.0), 1)
    bottom = float(column.minimum) if column.minimum is not None else 5.0
    top = float(column.maximum) if column.maximum is not None else 500.0
    return fakedata.money(rng, bottom, max(bottom, top))


def _string(
    column: Column, words: set[str], n: int, rng: random.Random, now: datetime, person: str, table: str, personal: bool
) -> str:
    name, fmt = column.name, column.format or ""
    about = (column.description or "").lower()
    if fmt == "email" or "email" in words:
        return fakedata.email(person)
    if fmt == "uuid" or looks_uuid(column.example):
        return f"{n + 1:08d}-0000-4000-8000-{rng.randrange(16**12):012x}"
    if fmt in ("ipv4", "ip") or words & {"ip", "ipv4", "ipaddress"}:
        return f"203.0.113.{(zlib.crc32(name.encode()) + 37 * n) % 240 + 10}"
    if fmt == "hostname" or words & {"host", "hostname", "domain", "server"}:
        return f"{fakedata.slug(pick(fakedata.COMPANIES, table, name, n))}.example.com"
    if fmt in ("uri", "url") or words & {"url", "uri", "link", "image", "href", "website", "homepage"}:
        return f"https://example.com/{table}/{n + 1}"
    if "phone" in words or "mobile" in words:
        return fakedata.phone(rng)
    if "arn" in words:  # an AWS resource name, not 'Fox Hollow'
        resource = noun_of(table).replace(" ", "-")
        kind = "-".join(w for w in name.split("_") if w != "arn") or resource
        return f"arn:aws:{resource.split('-')[0]}:us-east-1:123456789012:{kind}/{resource}-{n + 1}"
    if words & {"password", "secret", "passphrase"}:
        return f"secret-{n + 1:03d}"
    if words & {"token", "nonce"}:
        return f"tok_{rng.randrange(16**12):012x}"
    if words & {"username", "login", "handle", "nickname"} or name in ("user", "owner"):
        return fakedata.slug(person).replace(".", "_")
    if words & {"file", "filename", "path", "attachment"}:
        return pick(fakedata.FILE_NAMES, table, name, n)
    if words & {"mime", "mimetype"} or {"content", "type"} <= words or {"media", "type"} <= words:
        return pick(fakedata.MIME_TYPES, table, name, n)
    if "name" in words:
        return _name(words, n, person, table, name, personal)
    if words & {"title", "subject", "summary", "headline", "caption"}:
        return f"{pick(TITLE_WORDS, table, name, n)} {pick(fakedata.NOUNS, table, name + '.noun', n)}"
    if words & {"description", "desc", "body", "bio", "note", "notes", "message", "comment", "text", "content"}:
        return pick(fakedata.NOTES, table, name, n)
    if words & {"remark", "remarks", "memo", "reason", "instructions"}:
        return pick(fakedata.NOTES, table, name, n)
    if "currency" in words:
        return pick(["USD", "EUR", "GBP", "JPY", "CAD", "CHF"], table, name, n)
    if "country" in words:
        coded = words & {"code", "iso"} or "iso" in about or "alpha-2" in about
        return pick(fakedata.COUNTRY_CODES if coded else fakedata.COUNTRIES, table, name, n)
    if "locale" in words:
        return pick(fakedata.LOCALES, table, name, n)
    if words & {"language", "lang"}:
        return pick(fakedata.LANGUAGES, table, name, n)
    if words & {"timezone", "tz"} or {"time", "zone"} <= words:
        return pick(fakedata.TIMEZONES, table, name, n)
    postal = words & {"address", "billing", "shipping", "invoice", "postal", "mailing"}
    if words & {"province", "county"} or (words & {"state", "region"} and postal):
        return pick(fakedata.PROVINCES, table, name, n)
    if words & {"region", "zone"}:
        return pick(fakedata.REGIONS, table, name, n)
    if words & {"zip", "zipcode", "postal", "postcode"}:
        return f"{rng.randrange(10000, 99999)}"
    if words & {"city", "town"}:
        return pick(fakedata.CITIES, table, name, n)
    if words & {"building", "house", "apartment", "floor", "suite"}:
        return str(rng.randint(1, 240))
    if words & {"address", "street", "line1", "line2"}:
        return fakedata.address(rng)
    if words & {"swift", "bic"}:
        return pick(["DEUTDEFF", "BNPAFRPP", "NWBKGB2L", "CHASUS33", "INGBNL2A", "BCOMPTPL"], table, name, n)
    if words & {"cvv", "cvc", "cvd", "cvn"}:
        return f"{rng.randrange(100, 1000)}"
    if {"card", "number"} <= words or "pan" in words:
        return f"4242 4242 4242 {rng.randrange(1000, 10000)}"
    if "month" in words:
        return f"{rng.randint(1, 12):02d}"
    if "year" in words:
        return str(rng.randint(2027, 2031))
    if words & {"date", "birthday", "dob", "day"}:
        return fakedata.day(now, rng.randint(-60, 60))
    if words & {"time", "timestamp"} or name.endswith("_at"):
        return fakedata.moment(now, rng.randint(-1440, 1440))
    if words & {"amount", "price", "total", "balance", "cost", "fee"}:
        return f"{fakedata.money(rng, 5.0, 500.0):.2f}"
    if words & {"version"}:
        return f"{1 + n // 3}.{rng.randrange(10)}.{n}"
    if words & {"color", "colour"}:
        return f"#{rng.randrange(16**6):06x}"
    if words & {"hash", "checksum", "md5", "sha", "sha256", "etag", "fingerprint"}:
        return f"{rng.randrange(16**32):032x}"
    if "sku" in words:
        return f"SKU-{rng.randrange(10000, 100000)}"
    if words & {"slug", "permalink"}:
        return fakedata.slug(pick(fakedata.THING_NAMES, table, name, n)).replace(".", "-")
    if words & {"number", "reference", "ref", "confirmation", "tracking"} or re.fullmatch(r"(.*_)?ref\d+", name):
        prefix = re.sub(r"[^a-z]", "", name.split("_")[0])[:3].upper() or "REF"
        return f"{prefix}-{rng.randrange(10000, 100000)}"
    if words & {"code"}:
        return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
    if words & {"id", "ids", "key", "identifier", "uid"}:
        prefix = re.sub(r"[^a-z]", "", name.split("_")[0])[:4] or "rec"
        return f"{prefix}_{rng.randrange(16**8):08x}"
    if words & {"q", "query", "search", "term", "terms", "phrase"}:
        return pick(fakedata.SEARCHES, table, name, n)
    if "season" in words:
        year = 2025 - (zlib.crc32(name.encode()) + n) % 6
        return f"{year}-{(year + 1) % 100:02d}"
    if words & {"rank", "range", "period", "games", "limit", "offset", "page", "count", "quantity", "index", "n"}:
        return str(rng.randint(1, 12))
    if words & {"tag", "tags", "category", "categories", "label", "labels", "keyword", "keywords", "topic", "group"}:
        return pick(fakedata.TAGS, table, name, n)
    if words & {"status", "state"}:
        return pick(fakedata.STATUSES, table, name, n)
    if words & {"author", "contact", "assignee", "creator", "reporter", "recipient"}:
        return person
    if {"payment", "method"} <= words:
        return pick(["card", "bank transfer", "cash", "direct debit"], table, name, n)
    if "role" in words:
        return pick(["admin", "member", "viewer", "editor"], table, name, n)
    if words & {"type", "kind", "class", "mode", "plan", "tier", "level"}:
        return pick(fakedata.KINDS, table, name, n)
    return pick(fakedata.THING_NAMES, table, name, n)


TITLE_WORDS = ["Annual", "Weekly", "Quarterly", "Draft", "Final", "Spring", "Team", "Client", "Launch", "Board"]


def _name(words: set[str], n: int, person: str, table: str, name: str, personal: bool) -> str:
    """A name column: a person's (or part of one) where the row or the column is a person's, a file's, a
    host's or an organisation's, else the thing the table keeps, named like a real one."""
    if "first" in words or "given" in words:
        return person.split()[0]
    if "last" in words or "family" in words or "surname" in words:
        return person.split()[-1]
    if words & {"host", "domain"}:
        return f"{fakedata.slug(pick(fakedata.COMPANIES, table, name, n))}.example.com"
    if words & {"street", "road"}:  # an address's `street_name`, not 'Oakridge transaction'
        return f"{pick(fakedata.STREETS, table, name, n)} Street"
    if words & {"city", "town"}:
        return pick(fakedata.CITIES, table, name, n)
    if "country" in words:
        return pick(fakedata.COUNTRIES, table, name, n)
    if words & {"file"}:
        return pick(fakedata.FILE_NAMES, table, name, n)
    if words & ORGANISATION_WORDS:
        suffix = "Bank" if "bank" in words else pick(["Ltd", "Inc", "GmbH", "SA"], table, name, n)
        return f"{pick(fakedata.COMPANIES, table, name, n)} {suffix}"
    if table in PERSON_TABLES or words & PERSON_NAME_WORDS or (personal and name == "name"):
        return person
    # the name of what the column says it names (`tax_entity_name`: 'Greenfield tax entity'), else of the row
    named = " ".join(w for w in name.split("_")[:-1] if w not in WRAPPERS | NAME_KINDS)
    # title case, as things are named ('Lakeshore Named Query'): in sentence case its first word reads as an
    # ordinary one ('the lakeshore named query')
    noun = named if name.endswith("_name") and named else noun_of(table)
    return f"{pick(fakedata.COMPANIES, table, name, n)} {noun.title()}"


def _fits(column: Column, value: Any) -> bool:
    if column.enum and str(value) not in column.enum:
        return False
    checks = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "date": isinstance(value, str) and bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)),
        "datetime": isinstance(value, str)
        and bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?", value)),
    }
    return checks.get(column.type, False)
