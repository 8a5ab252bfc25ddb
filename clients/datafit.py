"""Whether what a gold write puts into the data fits the data already there.

The grounder draws a write's free values from the seed, so a "new" fuel fill can repeat another driver's log to
the cent, a new meeting can land on top of one already on the person's agenda, a change can move a renewal date
into the past, a refund can give the reason "cancelled by the operator" for a departure that still runs, and an
offer to "pick up this weekend" can come from another city. A careful agent would stop at each of these; a task
whose gold does not is dropped at synthesis and failed by `envfarm tasks --audit`. Each check reads only the
write's arguments, the rows it added or changed (the expected diff), the seed rows and the farm clock, so it runs
the same on a task file as during generation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from envfarm.clients.graph import is_id_like, words

Row = dict[str, Any]
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
DEAD = {"cancelled", "canceled", "void", "deleted", "archived", "removed", "declined", "withdrawn", "no_show"}
# Pairs of columns that bound a row's time: an event's start and end, a stay's check-in and check-out.
SPANS = (("start", "end"), ("check_in", "check_out"), ("arrival", "departure"), ("from", "until"), ("pickup", "return"))
MIN_EVIDENCE = 5  # seed rows with a drawn value before the data is read as saying what that value implies
RARE = 0.1  # the share of the rows without a value that may share its state
MAX_KINDS = 6  # a category column (a status) has at most this many values over its table
# Words of a text that says the writer will be there in person ("Can pick up this weekend").
IN_PERSON = re.compile(
    r"\b(?:pick(?:ing)? (?:it )?up|pickup|collect (?:it|in person)|in person|come by|drop by)\b", re.I
)


def _dated(value: Any) -> bool:
    return isinstance(value, str) and bool(ISO_DATE.match(value))


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and not _dated(value)


def _measure(value: Any) -> bool:
    """A measured amount (69.6 litres, 113.06 euros): a number with a fraction, which two rows share by copy."""
    return isinstance(value, float) and not value.is_integer()


def copied_row(added: Row, rows: Sequence[Row], key: str | None) -> Row | None:
    """An existing row the created row repeats in every measured amount (two or more numbers with a fraction,
    the litres and the cost of a fill) and every text beside them: a "new" record copied from another one. None
    when the created row has fewer than two distinct such amounts (a price list's 26.50 is everyone's), or no
    row has them all."""
    measures = [c for c, v in added.items() if c != key and not is_id_like(c) and _measure(v)]
    if len({added[c] for c in measures}) < 2:  # one price said twice (amount, amount captured) is one amount
        return None
    texts = [c for c, v in added.items() if c != key and not is_id_like(c) and _text(v) and len(v.split()) <= 6]
    for row in rows:
        if key is not None and row.get(key) == added.get(key):
            continue
        if all(row.get(c) == added[c] for c in measures) and all(row.get(c) == added[c] for c in texts if c in row):
            return row
    return None


def _span(row: Row) -> tuple[str, str] | None:
    """(start column, end column) of a row's time span, where it has one with both ends dated."""
    for first, last in SPANS:
        starts = [c for c in row if c.startswith(first) and _dated(row[c])]
        ends = [c for c in row if c.startswith(last) and _dated(row[c])]
        if starts and ends:
            return starts[0], ends[0]
    return None


def _live(row: Row) -> bool:
    return not any(isinstance(v, str) and v.lower() in DEAD for v in row.values())


def _belongs(
    row: Row, key: str | None, who: set[str], tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]
) -> bool:
    """Whether a row is the person's: it holds one of their values (an organizer email), points at a row that
    does (a guest id), or a live row of another table ties them to it (an invitation not declined)."""
    if who & {v for v in row.values() if isinstance(v, str)}:
        return True
    keyed = {k: t for t, k in keys.items() if k}
    for column, value in row.items():
        table = keyed.get(column)
        if table is None or column == key or not isinstance(value, str):
            continue
        if any(r.get(column) == value and who & {v for v in r.values() if isinstance(v, str)} for r in tables[table]):
            return True
    if key is None or row.get(key) is None:
        return False
    return any(
        r.get(key) == row[key] and _live(r) and who & {v for v in r.values() if isinstance(v, str)}
        for t, rs in tables.items()
        if keys.get(t) != key
        for r in rs
    )


def overlapping_own(
    added: Row, table: str, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], who: set[str]
) -> Row | None:
    """A live existing row of the same table that is the person's (`who`: their email, name) and whose time span
    overlaps the created row's: a meeting on top of one already on their agenda, a second hotel stay on the same
    nights. None when the created row has no span, or nothing of theirs overlaps it."""
    span = _span(added)
    if span is None or not who:
        return None
    start, end = span
    key = keys.get(table)
    for row in tables.get(table, []):
        if key is not None and row.get(key) == added.get(key) or not _live(row):
            continue
        if not (_dated(row.get(start)) and _dated(row.get(end))):
            continue
        if row[start] < added[end] and added[start] < row[end] and _belongs(row, key, who, tables, keys):
            return row
    return None


def moved_into_past(before: Row, after: Row, today: str | None) -> str | None:
    """The column of a changed row whose date the change moves from today or later to before today (an unfreeze
    that makes a renewal date yesterday): the row now says something is due that has already passed. A column
    that was already past, or that the change sets to today or later, is no such move."""
    if not today:
        return None
    for column, old in before.items():
        new = after.get(column)
        if (
            isinstance(old, str)
            and isinstance(new, str)
            and _dated(old)
            and _dated(new)
            and old[:10] >= today > new[:10]
        ):
            return column
    return None


def _context(args: Mapping[str, Any], tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]) -> dict[str, Row]:
    """The rows a write is about, by table: each row one of its arguments names alone (a booking by its id or its
    reference), and the rows that row points at (the booking's departure)."""
    found: dict[str, Row] = {}
    for name, value in args.items():
        if not isinstance(value, str) or _dated(value):
            continue
        for table, rows in tables.items():
            hits = [r for r in rows if r.get(name) == value]
            if len(hits) == 1 and (is_id_like(name) or keys.get(table) == name or len(value) >= 4):
                found.setdefault(table, hits[0])
    for row in list(found.values()):
        for table, linked in _pointed(row, tables, keys).items():
            found.setdefault(table, linked)
    return found


def _pointed(row: Row, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]) -> dict[str, Row]:
    """The rows `row` points at by a reference column (a column named as another table's key), by table."""
    out: dict[str, Row] = {}
    for table, key in keys.items():
        value = row.get(key)
        if not key or not isinstance(value, str):
            continue
        hit = next((r for r in tables.get(table, []) if r.get(key) == value and r is not row), None)
        if hit is not None:
            out[table] = hit
    return out


def _kinds(tables: Mapping[str, Sequence[Row]]) -> dict[str, list[str]]:
    """Per table, its category columns: text of at most MAX_KINDS values over the table (a status)."""
    found: dict[str, list[str]] = {}
    for table, rows in tables.items():
        if len(rows) < MIN_EVIDENCE:
            continue
        found[table] = [
            c
            for c in rows[0]
            if not is_id_like(c)
            and all(r.get(c) is None or _text(r.get(c)) for r in rows)
            and 1 < len({r.get(c) for r in rows}) <= MAX_KINDS
        ]
    return found


def contradicted_value(
    arguments: Mapping[str, Any],
    drawn: Iterable[str],
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
) -> str | None:
    """A drawn text value whose every seed use goes with one state of a linked row, while the row this write is
    about is in another: "cancelled by the operator" is, in the seed, the refund reason of bookings whose departure
    is cancelled and of no others, so it is no reason for a booking whose departure is scheduled. Read from the data
    alone (at least MIN_EVIDENCE rows with the value, and the state telling them apart from the rows without it).
    Returns "column 'value' (table.column: seen x, here y)", or None."""
    context = _context(arguments, tables, keys)
    kinds = _kinds(tables)
    for name in drawn:
        value = arguments.get(name)
        if not _text(value) or is_id_like(name):
            continue
        for table, rows in tables.items():
            if not rows or name not in rows[0]:
                continue
            with_value = [r for r in rows if r.get(name) == value]
            others = [r for r in rows if r.get(name) is not None and r.get(name) != value]
            if len(with_value) < MIN_EVIDENCE or not others:
                continue
            for linked_table, here in context.items():
                if linked_table == table:
                    continue
                for column in kinds.get(linked_table, []):
                    seen = {_reach(r, linked_table, tables, keys).get(column) for r in with_value}
                    if len(seen) != 1 or None in seen:
                        continue
                    state = seen.pop()
                    elsewhere = [_reach(r, linked_table, tables, keys).get(column) for r in others]
                    elsewhere = [s for s in elsewhere if s is not None]
                    # telling: the rows without the value are seldom in that state (a chance run of three says nothing)
                    rare = elsewhere and sum(s == state for s in elsewhere) <= RARE * len(elsewhere)
                    if rare and here.get(column) not in (None, state):
                        return f"{name} {value!r} ({linked_table}.{column}: seen {state}, here {here.get(column)})"
    return None


def _reach(row: Row, table: str, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]) -> Row:
    """The row of `table` that `row` leads to in one or two reference hops (a refund's booking's departure)."""
    first = _pointed(row, tables, keys)
    if table in first:
        return first[table]
    for linked in first.values():
        second = _pointed(linked, tables, keys)
        if table in second:
            return second[table]
    return {}


def _city(row: Row) -> str | None:
    city = row.get("city")
    if isinstance(city, str) and city:
        return city
    for column, value in row.items():
        if "address" in words(column) and isinstance(value, str) and ", " in value:
            return value.rsplit(", ", 1)[1].strip() or None
    return None


def far_in_person(
    arguments: Mapping[str, Any], tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], who: set[str]
) -> str | None:
    """A text of the write that says the person will be there in person ("Can pick up this weekend") about a row
    in another city than theirs (a Toronto listing, a Seattle member). None where no text says so, or the cities
    are unknown or the same."""
    if not any(isinstance(v, str) and IN_PERSON.search(v) for v in arguments.values()):
        return None
    homes = {
        c
        for rows in tables.values()
        for r in rows
        if who & {v for v in r.values() if isinstance(v, str)}
        if (c := _city(r))
    }
    if not homes:
        return None
    for table, row in _context(arguments, tables, keys).items():
        city = row.get("city")
        if isinstance(city, str) and city and city not in homes and not (who & set(map(str, row.values()))):
            return f"{table} in {city}, the person in {', '.join(sorted(homes))}"
    return None


EXPIRY = re.compile(r"(?:^|_)(?:expires|expiry|expiration|valid_until)(?:_|$)")
DUE = re.compile(r"^due(?:_|$)")
RENEWING = re.compile(r"renew|extend|reactivat|replace|reinstat")


def expired_record(
    tool: str, args: Mapping[str, Any], tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], today: str | None
) -> str | None:
    """A row the call is about whose expiry date is already past (a copay quoted "before you fill" a prescription
    that expired in January): the request ignores what the data says. A tool that renews or replaces is what
    one asks of an expired record, so it is exempt. The row and column, else None."""
    if not today or RENEWING.search(tool):
        return None
    for name, value in args.items():
        if not isinstance(value, str) or _dated(value):
            continue
        for table, rows in tables.items():
            hits = [r for r in rows if r.get(name) == value]
            if len(hits) != 1 or not (is_id_like(name) or keys.get(table) == name):
                continue
            for column, when in hits[0].items():
                if EXPIRY.search(column) and isinstance(when, str) and _dated(when) and when[:10] < today:
                    return f"{table}.{column} {when[:10]} of {value}"
    return None


def row_conflicts(
    diff: Mapping[str, Any] | None,
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
    who: set[str],
    today: str | None,
) -> list[tuple[str, str]]:
    """(reason, detail) for every row a task adds or changes on one server that does not fit the seed: a copy,
    an overlap with the person's own row, a new row due before today (an invoice backdated past its due date), a
    date moved into the past. `diff` is the server's expected diff (table
    -> added, updated); `who` the person's email and name; `today` the farm clock's date. The reasons are the ones
    synthesis counts its drops by."""
    found: list[tuple[str, str]] = []
    for table, change in (diff or {}).items():
        rows = tables.get(table, [])
        key = keys.get(table, "")
        for row in _field(change, "added"):
            overdue = [c for c, v in row.items() if DUE.search(c) and isinstance(v, str) and _dated(v)]
            if today and any(str(row[c])[:10] < today for c in overdue):
                found.append(("a new row already overdue", f"{table} {row.get(key)}"))
            twin = copied_row(row, rows, keys.get(table))
            if twin is not None:
                found.append(("a new row that copies an existing one", f"{table} {twin.get(key)}"))
            clash = overlapping_own(row, table, tables, keys, who)
            if clash is not None:
                found.append(("a new row over one of the person's own", f"{table} {clash.get(key)}"))
        for changed in _field(change, "updated"):
            column = moved_into_past(changed.get("before") or {}, changed.get("after") or {}, today)
            if column is not None:
                found.append(("a date moved into the past", f"{table}.{column} of {changed.get('key')}"))
    return found


def value_conflicts(
    arguments: Mapping[str, Any], tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], who: set[str]
) -> list[tuple[str, str]]:
    """(reason, detail) for every value of one gold write that the data contradicts: a reason the linked rows
    belie (`contradicted_value`), an in-person text about a row in another city (`far_in_person`)."""
    found: list[tuple[str, str]] = []
    why = contradicted_value(arguments, list(arguments), tables, keys)
    if why is not None:
        found.append(("a reason the data contradicts", why))
    far = far_in_person(arguments, tables, keys, who)
    if far is not None:
        found.append(("in person in another city", far))
    return found


def clock_day(clock: str | None) -> str | None:
    """'12 May 2026 14:00' (a server's clock as its instructions say it) -> '2026-05-12'; None if unreadable."""
    try:
        return datetime.strptime(" ".join((clock or "").split()[:3]), "%d %B %Y").date().isoformat()
    except ValueError:
        return None


def _field(change: Any, name: str) -> list[Row]:
    value = change.get(name) if isinstance(change, Mapping) else getattr(change, name, None)
    return list(value or [])
