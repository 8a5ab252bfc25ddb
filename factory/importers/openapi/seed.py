"""Seed values: deterministic rows per seed number, drawn from the schemas' enums, formats, examples and names."""

from __future__ import annotations

import random
import re
from datetime import datetime
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.importers.openapi.models import Column, Entity
from envfarm.factory.importers.openapi.words import singular


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


WORDS = ["alpha", "harbor", "summit", "orchid", "meadow", "copper", "falcon", "willow", "cedar", "aurora"]


def seed_value(column: Column, n: int, rng: random.Random, now: datetime, person: str, table: str) -> Any:
    """A plausible value for one seed cell: the example first, then enums, formats and names."""
    name, kind = column.name, column.type
    example = column.example
    if n == 0 and example is not None and not column.json_text and _fits(column, example):
        return example
    if column.json_text:
        return ", ".join(WORDS[(n + k) % len(WORDS)] for k in range(2)) if column.json_text == "list" else ""
    if column.enum:
        return column.enum[n % len(column.enum)]
    if kind == "boolean":
        return n % 2 == 0
    if kind == "integer":
        low = int(column.minimum) if column.minimum is not None else 1
        high = int(column.maximum) if column.maximum is not None else max(low + 1, 120)
        return rng.randint(low, max(low, high))
    if kind == "number":
        bottom = float(column.minimum) if column.minimum is not None else 5.0
        top = float(column.maximum) if column.maximum is not None else 500.0
        return fakedata.money(rng, bottom, max(bottom, top))
    if kind == "date":
        return fakedata.day(now, rng.randint(-60, 60))
    if kind == "datetime":
        return fakedata.moment(now, rng.randint(-1440, 1440))
    fmt = column.format or ""
    words = set(name.split("_"))
    if fmt == "email" or "email" in words:
        return fakedata.email(person)
    if fmt == "uuid" or looks_uuid(example):
        return f"{n + 1:08d}-0000-4000-8000-{rng.randrange(16**12):012x}"
    if fmt in ("uri", "url") or words & {"url", "uri", "link", "image", "href", "website"}:
        return f"https://example.com/{table}/{n + 1}"
    if "phone" in words:
        return fakedata.phone(rng)
    if "password" in words:
        return f"secret-{n + 1:03d}"
    if words & {"username", "login", "handle"} or name in ("user", "owner"):
        return fakedata.slug(person).replace(".", "_")
    if words & {"name", "first", "last", "author", "contact", "full"}:
        if "first" in words:
            return person.split()[0]
        if "last" in words:
            return person.split()[-1]
        return (
            person
            if table in ("users", "people", "persons", "customers", "profiles", "contacts", "members", "employees")
            or words & {"full", "author", "contact"}
            else f"{WORDS[n % len(WORDS)].title()} {singular(table).replace('_', ' ')}"
        )
    if words & {"title", "subject", "summary", "headline"}:
        return f"{fakedata.title(rng)} {n + 1}"
    if words & {"description", "body", "bio", "note", "notes", "message", "comment", "text", "content"}:
        return f"{fakedata.title(rng)} for the {WORDS[n % len(WORDS)]} {singular(table).replace('_', ' ')}."
    if words & {"currency"}:
        return ["USD", "EUR", "GBP"][n % 3]
    if words & {"code"}:
        return f"{name[:3].upper()}-{n + 1:03d}"
    if words & {"slug"}:
        return f"{WORDS[n % len(WORDS)]}-{singular(table).replace('_', '-')}-{n + 1}"
    if words & {"address", "street"}:
        return fakedata.address(rng)
    if words & {"city"}:
        return rng.choice(fakedata.CITIES)
    if words & {"tag", "tags", "category", "type", "kind", "status", "state"}:
        return WORDS[n % 3]
    return f"{name.replace('_', ' ')} {n + 1}"


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
