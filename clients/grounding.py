"""Grounding: run a sampled chain on fresh episodes and record what really happened.

Values a user would know come from the seed (the control plane's rows, or for a server without one,
what its parameterless read tools list), preferring rows that belong to the task's persona; ids come
from earlier outputs. The gold calls, their outputs and which earlier call fed each argument are
recorded, with each server's final state hash and diff. A chain that fails is dropped with a reason.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any, Literal

from pydantic import BaseModel, Field

from envfarm.clients.connect import Connections, Episode
from envfarm.clients.graph import Param, ToolSpec, is_id_like, output_of, words
from envfarm.clients.sampling import PERSONAL_PRICE, Catalog, Chain, Step
from envfarm.clients.tasks import ExpectedState, GoldCall
from envfarm.servers.runtime.control import ControlError
from envfarm.servers.runtime.intents import slots

PERSON_NAME = re.compile(r"^[A-Z][\w'-]+( [A-Z][\w'.-]+)+$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.IGNORECASE)
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
ATTEMPTS = 1
INTENT_ATTEMPTS = 4
STEP_TRIES = 3
GOAL_TRIES = 8  # a goal the server rejects for one of the persona's rows (a past stay) may fit another of them
FREE_TEXT = ("plans changed", "as discussed", "no longer needed", "see the note from last week", "thanks for checking")
# The last word of a column that is one record's own and no other's (a username, a login): a new record under it
# would be a second one. A name may repeat (a payee "Greenfield Energy" of two customers, a bank's name), and so
# may a reason, an address, an emoji or a title.
NAME_WORDS = frozenset({"username", "login", "handle"})
MAX_NAME_WORDS = 4  # a name, a username or a label; a longer text says something and is no name to remake
MIN_READING_GROUPS = 3  # parents whose readings must all rise before a column counts as a reading
Row = dict[str, Any]
ArgSource = Literal["output", "persona", "seed", "free"]


class ServerWorld(BaseModel):
    """What the driver knows of a server's data before a task: rows per table and each table's key."""

    server: str
    controlled: bool
    tables: dict[str, list[Row]]
    keys: dict[str, str] = Field(default_factory=dict, description="table -> primary-key column")
    user_known: dict[str, list[str]] = Field(default_factory=dict, description="table -> columns a user knows")


class PersonaRecord(BaseModel):
    """A person of the cast: their name, email and the rows that are theirs on each server."""

    name: str
    email: str
    facts: dict[str, Any] = Field(default_factory=dict)


def _key_of(table: str, rows: list[Row], specs: Sequence[ToolSpec]) -> str:
    for spec in specs:
        for field in spec.outputs:
            if field.ref == f"{table}.{field.name}":
                return field.name
    columns = list(rows[0]) if rows else []
    return next((c for c in columns if is_id_like(c)), columns[0] if columns else "")


def _known_columns(table: str, key: str, rows: list[Row], specs: Sequence[ToolSpec]) -> list[str]:
    """Columns a user knows: from a row model that carries the table's key (our servers), else not ids."""
    columns = list(rows[0]) if rows else []
    for spec in specs:
        fields = [f for f in spec.outputs if f.entity]
        for entity in {f.entity for f in fields}:
            members = [f for f in fields if f.entity == entity]
            if any(f.ref == f"{table}.{key}" and f.name == key for f in members):
                return [f.name for f in members if f.user_known and f.name in columns]
    return [c for c in columns if not is_id_like(c)]


def _rows_in(value: Any, label: str) -> Iterator[tuple[str, Row]]:
    if isinstance(value, list):
        for item in value:
            yield from _rows_in(item, label)
    elif isinstance(value, dict):
        scalars = {k: v for k, v in value.items() if not isinstance(v, (dict, list))}
        if len(scalars) >= 2:
            yield label, scalars
        for key, inner in value.items():
            if isinstance(inner, (dict, list)):
                yield from _rows_in(inner, key)


async def observe(connections: Connections, server: str, specs: Sequence[ToolSpec]) -> ServerWorld:
    """The seed of a server: its rows through the control plane, or what its parameterless reads list."""
    async with connections.episode(server, f"observe-{server}") as episode:
        state = await episode.state(rows=True)
        if state is not None and state.state is not None:
            tables = dict(state.state)
            controlled = True
        else:
            tables = {}
            for spec in specs:
                if spec.read_only and not any(p.required for p in spec.params):
                    try:
                        result = await episode.call_tool(spec.name, {})
                    except ControlError:  # a server that broke or hangs: what it listed so far is its world
                        break
                    if not result.is_error:
                        for label, row in _rows_in(output_of(result), " ".join(words(spec.name)[1:]) or spec.name):
                            if row not in tables.setdefault(label, []):
                                tables[label].append(row)
            controlled = False
    keys = {t: _key_of(t, rows, specs) for t, rows in tables.items()}
    known = {t: _known_columns(t, keys[t], rows, specs) for t, rows in tables.items()}
    return ServerWorld(server=server, controlled=controlled, tables=tables, keys=keys, user_known=known)


def people(world: ServerWorld) -> dict[str, PersonaRecord]:
    """People of one server by email: rows with an email and a name, with their user-known facts."""
    found: dict[str, PersonaRecord] = {}
    for table, rows in world.tables.items():
        for row in rows:
            emails = [k for k, v in row.items() if isinstance(v, str) and EMAIL.match(v)]
            names = [k for k in row if "name" in words(k) and isinstance(row[k], str)]
            if len(emails) != 1:
                continue
            email = row[emails[0]]
            named = [k for k in names if PERSON_NAME.match(row[k])]
            # The row is the person (`email` beside a name) or one they answer for (`contact_email` beside
            # `contact_name`: a client company's contact), not a row that merely carries their email (a project's
            # `owner_email`, a message's `sender_email`): only such a row's columns are things they know.
            is_person = words(emails[0]) == ["email"] and bool(named)
            answers_for = any(words(k)[:-1] == words(emails[0])[:-1] for k in named)
            if is_person:
                name = row[min(named, key=lambda k: len(words(k)) != 2)]  # prefer full_name over name
            else:  # ana.silva@example.com -> Ana Silva
                name = " ".join(p.capitalize() for p in re.split(r"[._-]+", email.split("@")[0]) if p)
            record = found.setdefault(email, PersonaRecord(name=name, email=email))
            if not (is_person or answers_for):
                continue
            for column in world.user_known.get(table, []):
                if row.get(column) is not None:
                    record.facts.setdefault(column, row[column])
    return found


def value_index(world: ServerWorld) -> dict[str, list[tuple[str, int]]]:
    """Every string value of the seed -> the (table, row number) pairs holding it."""
    index: dict[str, list[tuple[str, int]]] = {}
    for table, rows in world.tables.items():
        for number, row in enumerate(rows):
            for value in {v for v in row.values() if isinstance(v, str)}:
                index.setdefault(value, []).append((table, number))
    return index


def persona_rows(
    world: ServerWorld, persona: PersonaRecord, hops: int = 2, index: dict[str, list[tuple[str, int]]] | None = None
) -> dict[str, list[Row]]:
    """Rows that are the persona's: those naming their email, then rows pointing at those, `hops` times."""
    index = index if index is not None else value_index(world)
    found: set[tuple[str, int]] = set(index.get(persona.email, [])) if persona.email else set()
    frontier = set(found)
    for _ in range(hops):
        keys = {world.tables[t][n].get(world.keys.get(t, "")) for t, n in frontier}
        grown = {hit for key in keys if isinstance(key, str) for hit in index.get(key, [])} - found
        if not grown:
            break
        found |= grown
        frontier = grown
    related: dict[str, list[Row]] = {}
    for table, number in sorted(found):
        related.setdefault(table, []).append(world.tables[table][number])
    return related


class EpisodePool:
    """Fresh episodes, reused while they stay at the seed: a chain that wrote nothing leaves its
    episodes clean for the next one (a reset costs more than the calls of a short chain)."""

    def __init__(self, connections: Connections) -> None:
        self.connections = connections
        self.idle: dict[tuple[str, str | None], list[tuple[Episode, AsyncExitStack]]] = {}
        self.asked: dict[int, str | None] = {}  # id(episode) -> the principal it was asked to act for
        self.opened = 0

    async def take(self, server: str, principal: str | None = None) -> tuple[Episode, AsyncExitStack]:
        """An episode acting for `principal` (the persona) where the server knows them."""
        if self.idle.get((server, principal)):
            return self.idle[server, principal].pop()
        stack = AsyncExitStack()
        self.opened += 1
        try:
            opened = self.connections.episode(server, f"ground-{self.opened}", principal=principal)
            episode = await stack.enter_async_context(opened)
            self.asked[id(episode)] = principal
        except ControlError as exc:
            await stack.aclose()
            raise Drop("server unavailable", str(exc), server) from exc
        return episode, stack

    async def give(self, server: str, held: tuple[Episode, AsyncExitStack], clean: bool) -> None:
        """Back to the pool; an episode with writes goes back to the seed first (or is closed, when the
        server has no control plane: then the next episode is a fresh process)."""
        principal = self.asked.get(id(held[0]))
        if not clean and held[0].controlled:
            try:
                await held[0].episode.reset(principal=held[0].principal)
                clean = True
            except ControlError:
                clean = False
        if clean:
            self.idle.setdefault((server, principal), []).append(held)
        else:
            await held[1].aclose()

    async def aclose(self) -> None:
        for held in [h for hs in self.idle.values() for h in hs]:
            await held[1].aclose()
        self.idle.clear()


class Drop(Exception):
    """A chain that could not be grounded, and why (a short, countable reason)."""

    def __init__(self, reason: str, detail: str = "", server: str | None = None) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.server = server  # the server to blame, where one is (it stopped answering)


class IdentityValue(BaseModel):
    """One value a server's policy identifies the customer by, as this task's persona holds it: the column, the
    rule's words for it ('the last four digits of a card on file') and whether it is on the persona's own row."""

    server: str
    table: str
    column: str
    phrase: str
    value: Any
    own: bool = Field(description="on the row that is the persona (their name, email), not one hop away (a card)")
    chosen: bool = Field(
        default=True, description="of the alternative the task holds back; False: another the agent may use instead"
    )


class Grounded(BaseModel):
    chain: Chain
    persona: PersonaRecord
    calls: list[GoldCall]
    sources: list[dict[str, ArgSource]] = Field(description="per call: where each argument came from")
    targets: list[Row | None] = Field(description="per call: the output row an id argument came from, if any")
    expected: dict[str, ExpectedState]
    principal: str | None = Field(
        None,
        description="whom the episodes acted for: the persona where a server knew them, else the one all acted for",
    )
    identification: list[IdentityValue] = Field(
        default_factory=list, description="what each server's policy identifies the persona by, with their values"
    )


def _coerce(value: Any, param: Param) -> Any:
    if value is None:
        return None
    if param.type == "boolean":
        return bool(value)
    if param.type == "integer" and isinstance(value, (int, float)):
        return int(value)
    if param.type == "number" and isinstance(value, (int, float)):
        return float(value)
    if param.type == "string":
        value = value if isinstance(value, str) else str(value)
        if param.pattern and not re.search(param.pattern, value):
            # a date where a time is wanted, or the other way round
            for variant in (value[:10], f"{value[:10]}T09:00:00Z"):
                if re.search(param.pattern, variant):
                    return variant
    return value


def _within(value: float, param: Param) -> bool:
    """Whether a number is inside the parameter's schema bounds."""
    return (param.minimum is None or value >= param.minimum) and (param.maximum is None or value <= param.maximum)


def _fresh(value: Any) -> Any:
    """A new value of the same kind as `value`, for a change that must change something: an email at another
    domain, a phone number with its last digits turned; None for anything else (no sensible new value)."""
    if not isinstance(value, str):
        return None
    if ISO_DATE.match(value):  # a week later (both ends of a stay move alike)
        try:
            moved = datetime.fromisoformat(value[:10]) + timedelta(days=7)
        except ValueError:
            return None
        return moved.date().isoformat() + value[10:]
    if EMAIL.match(value):
        local, _, domain = value.partition("@")
        return f"{local}@{'example.net' if domain != 'example.net' else 'example.org'}"
    if re.fullmatch(r"\+?[\d\s().-]{7,}", value) and value[-2:].isdigit():
        return value[:-2] + f"{(int(value[-2:]) + 37) % 100:02d}"
    return None


def _column_values(rows: Sequence[Row], column: str) -> set[Any]:
    """The plain values a column holds in a table's rows (none where the table has no such column)."""
    return {r[column] for r in rows if isinstance(r.get(column), str | int | float) and not isinstance(r[column], bool)}


def _found(output: Any, fields: Sequence[str]) -> list[tuple[Any, Row]]:
    """(value, row) for every field named in `fields` anywhere in an output."""
    hits: list[tuple[Any, Row]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, (dict, list)):
                    walk(value)
                elif key in fields and value is not None:
                    hits.append((value, node))

    walk(output)
    return hits


def _when(row: Row) -> str | None:
    """The row's time: the first of its columns that holds an ISO date (a log's date, an event's start)."""
    return next((v for v in row.values() if isinstance(v, str) and ISO_DATE.match(v)), None)


def latest_reading(rows: Sequence[Row], column: str, parent: str, value: Any) -> tuple[float, float] | None:
    """(latest value, typical rise) of `column` for the rows whose `parent` is `value`, when the data shows the
    column is a reading that only rises with time within each parent (an odometer per vehicle, a meter per
    flat): in every parent with two or more dated rows it never falls, and somewhere it rises. A new row of
    such a table must read beyond the latest one; a reading copied from a sibling row repeats or goes back.
    None when the column is no such reading, or the parent has no rows."""
    groups: dict[Any, list[tuple[str, float]]] = {}
    for row in rows:
        when, reading = _when(row), row.get(column)
        if when is None or isinstance(reading, bool) or row.get(parent) is None:
            continue
        if isinstance(reading, int | float):
            groups.setdefault(row[parent], []).append((when, float(reading)))
    rises: list[float] = []
    compared = 0
    for group in groups.values():
        readings = [r for _, r in sorted(group)]
        steps = [b - a for a, b in pairwise(readings)]
        if any(s < 0 for s in steps):
            return None
        compared += len(steps) >= 2
        rises += [s for s in steps if s > 0]
    # evidence, not chance: three parents with three or more dated readings each, rising by more than a flag
    if compared < MIN_READING_GROUPS or not rises or max(rises) <= 1 or value not in groups:
        return None
    rises.sort()
    return max(r for _, r in groups[value]), rises[len(rises) // 2]


def beyond_readings(
    rng: random.Random, tables: dict[str, list[Row]], args: dict[str, Any], source: dict[str, ArgSource]
) -> None:
    """Set a number a write takes for a reading that only rises within its parent (a fuel log's odometer for
    the vehicle the write names) beyond the parent's latest reading, by about a typical rise: a value drawn
    from the seed, the persona's rows or a lookup would repeat a reading or go back (`latest_reading`)."""
    for name, value in list(args.items()):
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        for rows in tables.values():
            if not rows or name not in rows[0]:
                continue
            for parent, key in args.items():
                if parent == name or parent not in rows[0] or not is_id_like(parent):
                    continue
                found = latest_reading(rows, name, parent, key)
                if found is None or value > found[0]:
                    continue
                latest, rise = found
                moved = latest + max(1.0, round(rise * rng.uniform(0.5, 1.5)))
                value = args[name] = int(moved) if isinstance(value, int) else round(moved, 1)
                source[name] = "free"


READING_WORDS = {"odometer", "reading", "meter", "mileage", "counter"}
DRAWN_SOURCES = ("seed", "free")


def acted_rows(world: ServerWorld, args: dict[str, Any]) -> list[Row]:
    """The seed rows a write's id arguments key (the rental it returns), and the rows those point at by a
    reference column (the rental's vehicle): the rows whose current values the write's numbers follow on."""
    keyed = {key: table for table, key in world.keys.items() if key}
    rows: list[Row] = []
    for name, value in args.items():
        table = keyed.get(name)
        if table is None or not isinstance(value, str):
            continue
        rows += [r for r in world.tables.get(table, []) if r.get(name) == value]
    pointed: list[Row] = []
    for row in rows:
        for column, value in row.items():
            table = keyed.get(column)
            if table is not None and isinstance(value, str):
                pointed += [r for r in world.tables.get(table, []) if r.get(column) == value and r is not row]
    return rows + [r for r in pointed if all(r is not x for x in rows)]


def _tail(value: Any) -> str | None:
    """The last comma-separated part of a text (the city of '14 Harbor Street, Seattle'), if it has one."""
    if not isinstance(value, str) or ", " not in value:
        return None
    return value.rsplit(", ", 1)[1].strip() or None


def same_place(rng: random.Random, world: ServerWorld, args: dict[str, Any], source: dict[str, ArgSource]) -> None:
    """A drawn value that replaces a row's text ending in a place (an order's delivery address in Seattle) is
    one in the same place: another customer's Lisbon address is no new address for a Seattle order from the
    Seattle store. Taken from the seed's values of that column with the row's ending; kept when there is none."""
    rows = acted_rows(world, args)
    for name, value in list(args.items()):
        if source.get(name) not in DRAWN_SOURCES or _tail(value) is None:
            continue
        current = [r[name] for r in rows if _tail(r.get(name)) is not None]
        if not current or any(_tail(c) == _tail(value) for c in current):
            continue
        place = _tail(current[0])
        options = sorted(
            {v for rs in world.tables.values() for v in _column_values(rs, name) if _tail(v) == place} - set(current)
        )
        if options:
            args[name] = rng.choice(options)


def pointed_rows(world: ServerWorld, rows_by_table: dict[str, list[Row]]) -> dict[str, list[Row]]:
    """The rows of other tables that `rows_by_table` (a persona's rows) point at by a reference column (the
    stores of their carts, the hotels of their stays), by table."""
    keyed = {key: table for table, key in world.keys.items() if key}
    wanted: dict[str, set[str]] = {}
    for table, rows in rows_by_table.items():
        for row in rows:
            for column, value in row.items():
                target = keyed.get(column)
                if target is not None and target != table and isinstance(value, str):
                    wanted.setdefault(target, set()).add(value)
    found: dict[str, list[Row]] = {}
    for table, values in sorted(wanted.items()):
        key = world.keys[table]
        hits = [
            r for r in world.tables.get(table, []) if r.get(key) in values and r not in rows_by_table.get(table, [])
        ]
        if hits:
            found[table] = hits
    return found


def past_current_reading(
    rng: random.Random, world: ServerWorld, spec: ToolSpec, args: dict[str, Any], source: dict[str, ArgSource]
) -> None:
    """A reading a write records (a car's odometer at return or at the pump: a number whose name or description
    says odometer, reading, meter) goes on from the current reading of the row it is about (the vehicle the
    rental or the fill names), by a plausible rise: a value drawn from another row of the seed is some other
    car's odometer (a return 20,099 km after a three-day pickup), and one equal to the current reading is no
    new reading. A value the user or a lookup gave is kept when it is beyond the current one."""
    rows = acted_rows(world, args)
    for name, value in list(args.items()):
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        param = spec.param(name)
        said = set(words(name)) | set(words(param.description or ""))
        if not said & READING_WORDS:
            continue
        current = [
            float(r[name]) for r in rows if isinstance(r.get(name), int | float) and not isinstance(r[name], bool)
        ]
        if not current:
            continue
        floor = max(current)
        if value > floor and source.get(name) not in DRAWN_SOURCES:
            continue
        # beyond_readings may already have moved it past the latest logged reading: keep that when it is ahead
        if value > floor and source.get(name) == "free" and value - floor <= max(floor * 0.02, 1000):
            continue
        rise = max(1.0, round(floor * rng.uniform(0.002, 0.01)))
        moved = floor + rise
        args[name] = int(moved) if isinstance(value, int) else round(moved, 1)
        source[name] = "free"


def one_row_values(
    rng: random.Random,
    world: ServerWorld,
    spec: ToolSpec,
    args: dict[str, Any],
    source: dict[str, ArgSource],
    related: dict[str, list[Row]],
) -> None:
    """The details a write takes from the seed, taken together from one row of the table that holds them all
    (a fuel log's litres, cost and station from one fill): drawn one by one, 41.7 litres cost 390.35 euros
    (another truck's bill) and a line's description is another line's. Ids and enum values stay as drawn."""
    drawn = [
        n
        for n, v in args.items()
        if source.get(n) == "seed" and v is not None and not is_id_like(n) and not spec.param(n).enum
    ]
    if len(drawn) < 2:
        return
    best: tuple[int, str] | None = None
    for table, rows in sorted(world.tables.items()):
        held = sum(1 for n in drawn if rows and n in rows[0])
        if held >= 2 and (best is None or held > best[0]):
            best = (held, table)
    if best is None:
        return
    table = best[1]
    names = [n for n in drawn if n in world.tables[table][0]]
    complete = [r for r in world.tables[table] if all(r.get(n) is not None for n in names)]
    # A row of the same merchant (store, project) the write names: its plan, not another merchant's. Not one
    # sharing the persona's own keys (their account, their card): that would copy a row they already hold.
    theirs = {r.get(world.keys.get(t, "")) for t, rs in related.items() for r in rs} - {None}
    refs = {n: v for n, v in args.items() if is_id_like(n) and v not in theirs and n in world.tables[table][0]}
    same = [r for r in complete if any(r.get(n) == v for n, v in refs.items())]
    pool = [r for r in same or complete if r not in related.get(table, [])] or same or complete
    if not pool:
        return
    row = rng.choice(pool)
    for name in names:
        args[name] = _coerce(row[name], spec.param(name))
    # A write that names no row of that table makes a new one: its measured amounts (a fill's litres and cost)
    # are its own, not another driver's log to the cent (`envfarm.clients.datafit.copied_row`). All are scaled
    # by one factor, so what they say together (the price per litre) still holds.
    measured = [n for n in names if isinstance(args[n], float) and not args[n].is_integer()]
    if world.keys.get(table) not in args and len({args[n] for n in measured}) >= 2:
        factor = rng.choice((rng.uniform(0.8, 0.95), rng.uniform(1.05, 1.2)))
        for name in measured:
            places = len(repr(args[name]).partition(".")[2])
            args[name] = round(args[name] * factor, places)


def _table_holding(world: ServerWorld, param: Param) -> tuple[str, str] | None:
    """(table, column) a write's param fills: its `table.column` where the server annotates one, else the one
    table with such a column."""
    where = param.column or ""
    if "." in where and where.split(".", 1)[0] in world.tables:
        table, _, column = where.partition(".")
        return table, column
    found = [t for t, rows in world.tables.items() if rows and param.name in rows[0]]
    return (found[0], param.name) if len(found) == 1 else None


def recombined(value: str, taken: set[str], pool: Sequence[str], rng: random.Random) -> str | None:
    """A new value in the shape of `value`, none of `taken`: the words that tell the column's values apart
    (`tomas` and `ahmed` of `tomas_ahmed`, `Lakeshore` of `Lakeshore Named Query`) drawn from the other values at
    the same place (`tomas_kowalski`), else, where one word alone differs, from `pool` (words the rest of the
    data holds: `Copper Named Query`). None when no such value is found."""
    parts = re.split(r"([\s_.\-]+)", value)
    alike = [re.split(r"([\s_.\-]+)", t) for t in taken]
    alike = [a for a in alike if len(a) == len(parts) and a[1::2] == parts[1::2]]
    varying = [i for i in range(0, len(parts), 2) if len({a[i] for a in alike} | {parts[i]}) > 1]
    if not varying:
        return None
    choices: list[list[str]] = []
    for i in range(0, len(parts), 2):
        if i not in varying:
            choices.append([parts[i]])
        elif len(varying) > 1:
            choices.append(sorted({a[i] for a in alike} | {parts[i]}))
        else:
            used = {a[i].lower() for a in alike} | {w.lower() for w in parts[::2]}  # never 'Account Account'
            cased = [w.lower() if parts[i].islower() else w.capitalize() for w in pool]
            choices.append(sorted({w for w in cased if w.lower() not in used}))
    for _ in range(20):
        candidate = list(parts)
        for n, i in enumerate(range(0, len(parts), 2)):
            if not choices[n]:
                return None
            candidate[i] = rng.choice(choices[n])
        text = "".join(candidate)
        if text not in taken:
            return text
    return None


def _plain(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def new_record_names(
    rng: random.Random,
    world: ServerWorld,
    spec: ToolSpec,
    args: dict[str, Any],
    source: dict[str, ArgSource],
    naming: Mapping[str, set[str]],
) -> None:
    """A create's username is its own: a value drawn from the seed for a username, login or handle (`NAME_WORDS`)
    its table names rows by (`naming`: table -> the columns of its `refer` phrasings) and that names one row there
    would make a second `tomas_ahmed` (the task creates a duplicate, and "the account tomas_ahmed" names two
    rows). Such a value is made anew in the same shape (`recombined`); a write that keys a row of that table (an
    update) keeps its values."""
    pool: list[str] | None = None
    for name, value in list(args.items()):
        if source.get(name) != "seed" or not isinstance(value, str) or is_id_like(name) or spec.param(name).enum:
            continue
        if ISO_DATE.match(value) or len(value.split()) > MAX_NAME_WORDS:  # a day, a sentence: no name to remake
            continue
        held = _table_holding(world, spec.param(name))
        if held is None or held[1] not in naming.get(held[0], set()) or held[1].rsplit("_", 1)[-1] not in NAME_WORDS:
            continue  # only what the record is called: a second shipment to an address, a visit for the same reason
        key = world.keys.get(held[0], "")
        keyed = {r.get(key) for r in world.tables[held[0]]} & {v for v in args.values() if _plain(v)}
        if key in args or keyed:
            continue  # it keys a row there (an update), whatever its param is called
        taken = {r[held[1]] for r in world.tables[held[0]] if isinstance(r.get(held[1]), str)}
        if value not in taken:
            continue
        if pool is None:  # the words the data holds, for a name whose one telling word is taken everywhere
            pool = sorted(
                {
                    w
                    for rows in world.tables.values()
                    for r in rows
                    for v in r.values()
                    if isinstance(v, str) and len(v) <= 40
                    for w in re.findall(r"\b[A-Z][a-z]{3,}\b", v)
                }
            )
        fresh = _fresh(value) or recombined(value, taken, pool, rng)
        if fresh is None:
            raise Drop("a new record named like an existing one", f"{world.server}.{spec.name}.{name}")
        args[name], source[name] = fresh, "free"


def staff_side(spec: ToolSpec, said: set[str], source: dict[str, ArgSource]) -> list[str]:
    """The required details of a tool a customer asks staff for that no way of asking names and no lookup
    gave (a fill's verifying pharmacist): what the staff member serving them knows, never the customer, so
    never a hidden fact the customer holds. A free-text detail (a note, a reason) may still be theirs."""
    return [
        p.name
        for p in spec.params
        if p.required
        and p.name not in said
        and source.get(p.name) in {"seed", "free"}
        and not p.ref
        and not p.enum
        and not is_id_like(p.name)
        and p.type == "string"
        and not any(w in words(p.name) for w in ("reason", "note", "notes", "comment", "message", "text"))
    ]


class Grounder:
    """Grounds chains for one synthesis run: the worlds and catalog are read once and shared."""

    def __init__(
        self,
        connections: Connections,
        catalog: Catalog,
        worlds: dict[str, ServerWorld],
        today: dict[str, str] | None = None,
    ) -> None:
        self.connections = connections
        self.catalog = catalog
        self.worlds = worlds
        self.today = today or {}  # server -> its clock's date (ISO), where its instructions say
        self.pool = EpisodePool(connections)
        self._rows: dict[tuple[str, str, int], dict[str, list[Row]]] = {}
        self._index: dict[str, dict[str, list[tuple[str, int]]]] = {}
        self._seed_hash: dict[str, str] = {}
        self._pointed: dict[tuple[str, str], dict[str, list[Row]]] = {}

    def _persona_rows(self, server: str, persona: PersonaRecord, hops: int) -> dict[str, list[Row]]:
        key = (server, persona.email or persona.name, hops)
        if key not in self._rows:
            if server not in self._index:
                self._index[server] = value_index(self.worlds[server])
            self._rows[key] = persona_rows(self.worlds[server], persona, hops, self._index[server])
        return self._rows[key]

    async def aclose(self) -> None:
        await self.pool.aclose()

    async def seed_state(self, server: str) -> ExpectedState:
        """The server's seed state: what a task that must change nothing expects."""
        if server not in self._seed_hash:
            held = await self.pool.take(server, None)
            try:
                state = await held[0].state()
            finally:
                await self.pool.give(server, held, clean=True)
            if state is None:
                return ExpectedState()
            self._seed_hash[server] = state.hash
        return ExpectedState(hash=self._seed_hash[server])

    def _seed_values(
        self, server: str, param: Param, rows_by_table: dict[str, list[Row]], *, fallback: bool = True
    ) -> list[Any]:
        """Values of the parameter's column in `rows_by_table` (or, with `fallback`, in the whole seed)."""
        world = self.worlds[server]
        where = param.column or param.ref
        places = []
        if where and "." in where and where.split(".", 1)[0] in world.tables:
            places = [tuple(where.split(".", 1))]
        if not places:
            places = [(t, param.name) for t, rows in world.tables.items() if rows and param.name in rows[0]]
        values: list[Any] = []
        for table, column in places:
            rows = rows_by_table.get(table) or (world.tables.get(table, []) if fallback else [])
            values += [r[column] for r in rows if r.get(column) is not None]
        if param.enum:
            values = [v for v in values if v in param.enum] or (list(param.enum) if fallback else [])
        return list(dict.fromkeys(values))

    def _naming(self, server: str) -> dict[str, set[str]]:
        """table -> the columns its `refer` phrasings name a row by."""
        intents = self.catalog.intents.get(server)
        refer = intents.refer if intents is not None else {}
        return {table: {x.name for p in phrasings for x in slots(p)} for table, phrasings in refer.items()}

    def _column_count(self, server: str, param: Param, value: Any) -> int:
        """How many seed rows share `value` in the parameter's column (1: it identifies one row)."""
        world = self.worlds[server]
        where = param.column or param.ref
        table, column = where.split(".", 1) if where and "." in where else ("", param.name)
        tables = [table] if table in world.tables else list(world.tables)
        return sum(1 for t in tables for r in world.tables[t] if r.get(column) == value)

    def _value(
        self, rng: random.Random, server: str, param: Param, related: dict[str, list[Row]]
    ) -> tuple[Any, ArgSource]:
        values = self._seed_values(server, param, related)
        today = self.today.get(server)
        if today and values and all(isinstance(v, str) and ISO_DATE.match(v) for v in values):
            # A date a person asks about is ahead of them (a stay to book, a slot to take): the seed's past
            # dates are what servers reject ("the arrival date is in the past").
            values = [v for v in values if v[:10] >= today] or values
        if param.type in {"integer", "number"}:  # a seed value outside the schema's bounds is rejected unread
            values = [v for v in values if not isinstance(v, (int, float)) or _within(v, param)]
        if values:
            return _coerce(rng.choice(values), param), "seed"
        if param.enum:
            return rng.choice(param.enum), "free"
        if param.type == "boolean":
            return rng.random() < 0.5, "free"
        if param.type in {"integer", "number"}:
            low = int(param.minimum) if param.minimum is not None else 1
            high = int(param.maximum) if param.maximum is not None else low + 4
            return _coerce(rng.randint(low, max(low, min(high, low + 4))), param), "free"
        if not param.user_known:
            raise Drop("no value for an input", f"{server}: {param.name}")
        if param.pattern and today:
            # a date or a time a schema's pattern asks for ('starts_after'): a day of the coming two weeks, never
            # a filler phrase no pattern takes
            day = (datetime.fromisoformat(today) + timedelta(days=rng.randint(0, 14))).date().isoformat()
            for candidate in (day, f"{day}T09:00:00Z"):
                if re.search(param.pattern, candidate):
                    return candidate, "free"
        text = rng.choice(FREE_TEXT)
        if param.pattern and not re.search(param.pattern, text):
            raise Drop("no value for an input", f"{server}: {param.name} (pattern {param.pattern})")
        return text, "free"

    def _identify(
        self,
        rng: random.Random,
        server: str,
        spec: ToolSpec,
        persona: PersonaRecord,
        own: dict[str, list[Row]],
        related: dict[str, list[Row]],
    ) -> tuple[str, Any, ArgSource]:
        """One filter for a search: the persona's own value when the search can take one (the most
        telling one: unique in its column), else any known value. Who they are (their name or email) comes
        first: the chain an agent runs starts from the person ("find me, list my stays, take the one I
        mean"), not from a code they would have to be asked for; a category ("the folder is archive")
        comes last."""
        options = [p for p in spec.params if p.user_known]
        if not options:
            raise Drop("no value for an input", f"{server}.{spec.name}: nothing to search by")
        scored = []
        identity = {persona.email, persona.name} - {""}
        # What people name rows by (the `refer` slots: a course's code, a list's name) is what they will say,
        # so a search by it is keyed on their words ("CS 201"), not on another column held back.
        intents = self.catalog.intents.get(server)
        named = {x.name for ps in (intents.refer.values() if intents else []) for p in ps for x in slots(p)}
        told = Counter(
            x.follow or x.name for ps in (intents.refer.values() if intents else []) for p in ps for x in slots(p)
        )
        # Then what their rows point at (the store of their carts: its city is where they shop), before any row
        # of the seed: a Toronto customer asks for a cart at the store in Toronto, not at one in Lisbon.
        key = (server, persona.email or persona.name)
        if key not in self._pointed:
            self._pointed[key] = pointed_rows(self.worlds[server], related)
        pointed = self._pointed[key]
        for param in options:
            for weight, rows in ((2, own), (1, related), (0, pointed)):
                mine = self._seed_values(server, param, rows, fallback=False)
                if mine:
                    who = [v for v in mine if v in identity]
                    value = rng.choice(who or mine)
                    theirs = value in {persona.email, persona.name, *persona.facts.values()}
                    score = weight + 2 * (self._column_count(server, param, value) == 1) + 3 * theirs
                    # nor a message's whole text ("the text is Thanks Daniel, I'll update ..."): nobody holds
                    # back a sentence to be found by
                    wordy = isinstance(value, str) and len(value.split()) > 4
                    # nor a bound ("the max price is 42.00"): it narrows a search, it names no row
                    bound = re.match(r"(?:max|min)(?:imum)?_", param.name) is not None
                    score += 6 * (value in identity) - 4 * bool(param.enum) - 6 * wordy - 4 * bound
                    scored.append((score, param, value))
                    break
        plain = [p for p in options if not p.enum] or options
        # Of the columns people name rows by, the one they name them by most (a book's title, which the copy's
        # and the hold's phrasings say too, over its ISBN, which nobody has at hand)
        heard = [p for p in plain if p.name in named or (p.column or "").rpartition(".")[2] in named]
        if scored:
            top = max(s[0] for s in scored)
            best = [s for s in scored if s[0] == top]
            # a tie goes to what people name rows by most (a title over an ISBN)
            most = max(told[s[1].name] for s in best)
            _, param, value = rng.choice([s for s in best if told[s[1].name] == most])
            own_value = value in {persona.email, persona.name, *persona.facts.values()}
            # A filter that is neither the person's own value nor how people name the row ("the max price is
            # 42.00", "the language is Japanese" for a tour they name by its title) would be a hidden fact
            # nobody holds: a search by the words that name the row is keyed on what they say instead.
            if own_value or param in heard or not heard:
                return param.name, _coerce(value, param), "persona"
        most = max((told[p.name] + told[(p.column or "").rpartition(".")[2]] for p in heard), default=0)
        param = rng.choice(
            [p for p in heard if told[p.name] + told[(p.column or "").rpartition(".")[2]] == most] or heard or plain
        )
        value, source = self._value(rng, server, param, related)
        return param.name, value, source

    def _arguments(
        self,
        rng: random.Random,
        step: Step,
        spec: ToolSpec,
        calls: list[GoldCall],
        chosen_rows: dict[int, Row],
        persona: PersonaRecord,
        own: dict[str, dict[str, list[Row]]],
        related: dict[str, dict[str, list[Row]]],
    ) -> tuple[dict[str, Any], dict[str, ArgSource], set[int], Row | None, dict[int, Row]]:
        """One step's arguments: bound ones from earlier outputs (one row per producing call), the
        persona's own values, and seed values for the rest; write tools also get some optional details."""
        args: dict[str, Any] = {}
        source: dict[str, ArgSource] = {}
        uses: set[int] = set()
        target: Row | None = None
        picked: dict[int, Row] = {}
        server = step.server
        theirs = {persona.email, persona.name, *(v for v in persona.facts.values() if isinstance(v, str))}
        for name, bind in step.binds.items():
            param = spec.param(name)
            hits = _found(calls[bind.step].output, bind.fields)
            if bind.own:
                hits = [(v, r) for v, r in hits if v in theirs]
                if not hits:  # the earlier answer does not show them: they say who they are instead
                    name, value, how = self._identify(rng, server, spec, persona, own[server], related[server])
                    args[name], source[name] = value, how
                    continue
            if not hits:
                raise Drop("empty result", f"{calls[bind.step].tool} gave no {'/'.join(bind.fields)}")
            # The row the lookup found, by its own column of that name, over a row it points at (a reply's thread
            # parent): what the user said or held back describes the found row (`Auditor.pointed_only`).
            hits = [(v, r) for v, r in hits if r.get(name) == v] or [(v, r) for v, r in hits if name not in r] or hits
            row = chosen_rows.get(bind.step, picked.get(bind.step))
            same_row = [(v, r) for v, r in hits if r is row]
            if not calls[bind.step].arguments:  # a listing of everything: the persona's own rows, where it shows some
                hits = [(v, r) for v, r in hits if theirs & {x for x in r.values() if isinstance(x, str)}] or hits
            value, row = same_row[0] if same_row else rng.choice(hits)
            picked.setdefault(bind.step, row)
            args[name] = _coerce(value, param)
            source[name] = "output"
            uses.add(bind.step)
            if not param.user_known and target is None:
                target = row
        # A tool with no inputs, or only optional ones nobody would say (paging), lists everything: nothing to fill.
        if step.identify and any(p.user_known or p.required for p in spec.params):
            name, value, how = self._identify(rng, server, spec, persona, own[server], related[server])
            args[name], source[name] = value, how
        optional = [p for p in spec.params if not p.required and p.user_known and p.name not in args]
        intent = self.catalog.intent(server, spec.name) if step.role in ("goal", "follow") else None
        if intent is not None:
            # Goal-first: the details a person gives are those of one way they ask (a new phone number, not
            # a phone number and an email they never mention).
            asked = {s.name for s in slots(rng.choice(intent.say))}
            extras = [p for p in optional if p.name in asked]
        else:
            extras = [] if spec.read_only else [p for p in optional if rng.random() < 0.5] or optional[:1]
        for param in spec.params:
            if param.name in args or not (param.required or param in extras):
                continue
            mine = self._seed_values(server, param, own[server], fallback=False) if param.ref else []
            if mine:  # the persona's own key that they know (their mailbox address)
                args[param.name], source[param.name] = _coerce(rng.choice(mine), param), "persona"
            else:
                args[param.name], source[param.name] = self._value(rng, server, param, related[server])
        for param in spec.params:
            # A price that depends on who asks (a loyalty discount) is quoted for the persona, never anonymously.
            if param.name in args or param.required or not param.ref or not PERSONAL_PRICE.search(param.description):
                continue
            mine = self._seed_values(server, param, own[server], fallback=False)
            if len(mine) != 1:
                continue
            column = param.ref.partition(".")[2] or param.name
            found = [i for i, c in enumerate(calls) if any(v == mine[0] for v, _ in _found(c.output, [column]))]
            if not found:
                raise Drop("a personal price quoted without the person", f"{server}.{spec.name}.{param.name}")
            args[param.name], source[param.name] = _coerce(mine[0], param), "output"
            uses.add(found[-1])
        if intent is not None and step.role == "goal" and intent.asks == "customer":
            staff = staff_side(spec, {x.name for p in intent.say for x in slots(p)}, source)
            if staff:
                raise Drop("a staff-side value held by the customer", f"{server}.{spec.name}: {', '.join(staff)}")
        if not spec.read_only:
            one_row_values(rng, self.worlds[server], spec, args, source, related[server])
            new_record_names(rng, self.worlds[server], spec, args, source, self._naming(server))
            beyond_readings(rng, self.worlds[server].tables, args, source)
            past_current_reading(rng, self.worlds[server], spec, args, source)
            same_place(rng, self.worlds[server], args, source)
            # A change to the value the row already has changes nothing ("my new email" = the old one).
            world = self.worlds[server]
            rows: list[Row] = []  # the rows the write acts on: those its id arguments key (not where it found them)
            for name, value in args.items():
                ref = spec.param(name).ref or ""
                table, _, column = ref.partition(".")
                if not column and is_id_like(name):  # a key the listing does not annotate
                    table, column = next((t for t, rs in world.tables.items() if rs and name in rs[0]), ""), name
                rows += [r for r in world.tables.get(table, []) if column and r.get(column) == value]
            for name, value in list(args.items()):
                # A value read from the row itself and written back unchanged (an edit "to say" the same text);
                # a number may have to equal the row's (an amount paid in full), so only text counts here.
                echoed = isinstance(value, str) and source.get(name) == "output" and not is_id_like(name)
                if (echoed or source.get(name) in {"seed", "persona"}) and any(r.get(name) == value for r in rows):
                    fresh = _fresh(value)
                    if fresh is None:  # free text, a status: another row's value of the same column
                        # of the value's own kind: an imported column may hold text beside numbers
                        others = sorted(
                            {
                                v
                                for r in rows
                                for t in world.tables.values()
                                for v in _column_values(t, name)
                                if isinstance(v, str) == isinstance(value, str)
                            }
                            - {value}
                        )
                        if not others:
                            raise Drop("a change that changes nothing", f"{server}.{spec.name}.{name}")
                        # a new address in the same city as the old one (`same_place`)
                        near = [o for o in others if _tail(o) is not None and _tail(o) == _tail(value)]
                        fresh = rng.choice(near or others)
                    args[name], source[name] = fresh, "free"
        return args, source, uses, target, picked

    async def ground(self, rng: random.Random, chain: Chain, persona: PersonaRecord) -> Grounded:
        """Run the chain on fresh episodes; after a rejection, run it again choosing differently
        (up to `ATTEMPTS` times). An empty lookup is final: the persona has nothing there."""
        # On a server with intents every goal is something a person asks for: worth choosing the persona's
        # rows again when the server turns down the first choice (a stay already checked out).
        attempts = INTENT_ATTEMPTS if any(s in self.catalog.intents for s in chain.servers) else ATTEMPTS
        for attempt in range(attempts):
            try:
                return await self._run(rng, chain, persona)
            except Drop as drop:
                if drop.reason != "rejected by the server" or attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    async def _run(self, rng: random.Random, chain: Chain, persona: PersonaRecord) -> Grounded:
        related = {s: self._persona_rows(s, persona, 2) for s in chain.servers}
        own = {s: self._persona_rows(s, persona, 0) for s in chain.servers}
        calls: list[GoldCall] = []
        sources: list[dict[str, ArgSource]] = []
        targets: list[Row | None] = []
        chosen_rows: dict[int, Row] = {}
        held: dict[str, tuple[Episode, AsyncExitStack]] = {}
        wrote: set[str] = set()
        try:
            for server in chain.servers:
                held[server] = await self.pool.take(server, persona.email or None)
            episodes = {server: h[0] for server, h in held.items()}
            for index, step in enumerate(chain.steps):
                spec = self.catalog.spec(step.server, step.tool)
                limit = GOAL_TRIES if step.role == "goal" and spec.read_only is False else STEP_TRIES
                for tries in range(limit):
                    args, source, uses, target, picked = self._arguments(
                        rng, step, spec, calls, chosen_rows, persona, own, related
                    )
                    try:
                        result = await episodes[step.server].call_tool(step.tool, args)
                    except ControlError as exc:
                        wrote.add(step.server)  # never reuse an episode that stopped answering
                        raise Drop("server unavailable", f"{step.server}.{step.tool}: {exc}", step.server) from exc
                    if not result.is_error:
                        if not spec.read_only:
                            wrote.add(step.server)
                        break
                    # A rejected call changes nothing, so the same step can try other values.
                    if tries == limit - 1:
                        text = " ".join(getattr(c, "text", "") for c in result.content)[:200]
                        raise Drop("rejected by the server", f"{step.server}.{step.tool}: {text}")
                for producer, row in picked.items():
                    chosen_rows.setdefault(producer, row)
                calls.append(
                    GoldCall(
                        server=step.server,
                        tool=step.tool,
                        arguments=args,
                        output=output_of(result),
                        turn=step.turn,
                        is_write=not spec.read_only,
                        uses=sorted(uses),
                    )
                )
                sources.append(source)
                targets.append(target)
            expected: dict[str, ExpectedState] = {}
            for server, episode in episodes.items():
                if server not in wrote and server in self._seed_hash:
                    expected[server] = ExpectedState(hash=self._seed_hash[server])
                    continue
                state = await episode.state()
                if state is not None:
                    expected[server] = ExpectedState(hash=state.hash, diff=state.diff, tables=sorted(state.diff))
                    if not state.diff:
                        self._seed_hash[server] = state.hash
        finally:
            for server, episode_held in held.items():
                await self.pool.give(server, episode_held, clean=server not in wrote)
        # The task acts for the persona where a server knew them (user principals); else for whom every
        # server acted (a staff member serving the persona). Rollouts reset with it and reach the same episodes.
        principal = next((h[0].principal for h in held.values() if h[0].principal == persona.email), None)
        acting = {h[0].principal for h in held.values()}
        if principal is None and len(acting) == 1:
            principal = acting.pop()
        return Grounded(
            chain=chain,
            persona=persona,
            calls=calls,
            sources=sources,
            targets=targets,
            expected=expected,
            principal=principal,
        )
