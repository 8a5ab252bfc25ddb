"""Whether the free values of a gold write tell one story the data supports.

The grounder fills each optional detail of a write from the seed on its own, so one call can take its dispute
reason from one row and its details from another ("not received ... there are deep scratches"), or a card's
last four digits from one card and its label from another ("7894 ... 'Visa ending 1561'"). And a reason may
claim what the data shows is false: a refund "duplicate" of a charge that nothing duplicates. A task built on
such a call is dropped; these checks read the call's arguments, where each came from, and the seed rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from envfarm.clients.audit import mentions
from envfarm.clients.graph import is_id_like, words

Row = dict[str, Any]
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
DRAWN = ("seed", "free")  # argument sources the grounder picked (not the user's own value, not a lookup)


def _text(value: Any) -> bool:
    """A value that tells something: text that is not a date."""
    return isinstance(value, str) and bool(value.strip()) and not ISO_DATE.match(value)


def mixed_rows(
    arguments: Mapping[str, Any], sources: Mapping[str, str], tables: Mapping[str, Sequence[Row]]
) -> tuple[str, list[str]] | None:
    """(table, argument names) when two or more drawn text values of one write are each some row's value in
    that table's columns of the same names, but no one row holds them together; else None."""
    drawn = {
        name: value
        for name, value in arguments.items()
        if sources.get(name) in DRAWN and _text(value) and not is_id_like(name)
    }
    for table, rows in sorted(tables.items()):
        if not rows:
            continue
        found = [n for n, v in drawn.items() if n in rows[0] and any(r.get(n) == v for r in rows)]
        if len(found) < 2:
            continue
        if not any(all(r.get(n) == drawn[n] for n in found) for r in rows):
            return table, sorted(found)
    return None


def _keys(name: str) -> bool:
    return is_id_like(name) or name.endswith("_id")


def unsupported_duplicate(
    arguments: Mapping[str, Any], tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]
) -> str | None:
    """The row a write calls a duplicate when the data shows nothing it duplicates: a value of the call says
    "duplicate" and the row its id argument names has no twin, another row of its table with the same
    references (customer, merchant, card...) and the same amount. None when the call claims no duplicate, or
    its row has a twin."""
    if not any(isinstance(v, str) and "duplicate" in words(v.replace("_", " ")) for v in arguments.values()):
        return None
    for table, rows in sorted(tables.items()):
        key = keys.get(table)
        if not rows or key is None:
            continue
        named = [r for r in rows if any(r.get(key) == v for v in arguments.values() if isinstance(v, str))]
        for row in named:
            same = [c for c, v in row.items() if c != key and v is not None and (_keys(c) or c == "amount")]
            if not same:
                continue
            twins = [r for r in rows if r.get(key) != row[key] and all(r.get(c) == row[c] for c in same)]
            if not twins:
                return f"{table} {row[key]}"
    return None


def _acted_on(output: Any, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]) -> tuple[str, Row] | None:
    """(table, seed row) of the row a write returned, as it was before the task: the table whose key the
    output carries and that shares the most columns with it. None for a row the write created."""
    if not isinstance(output, dict):
        return None
    found = [(t, k) for t, k in keys.items() if k in output and tables.get(t)]
    if not found:
        return None
    table, key = max(found, key=lambda tk: len(set(tables[tk[0]][0]) & set(output)))
    row = next((r for r in tables[table] if r.get(key) == output[key]), None)
    return (table, row) if row is not None else None


def switches_to_current(
    arguments: Mapping[str, Any],
    output: Any,
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
    said: str,
) -> str | None:
    """The reference a write sets on the row it changes (the row it returns) to what that row already points
    at, while the user names the target as the change ("switch my insurance to the Lakeshore Student Plan"
    when that is the plan on file; "move my booking to room 103" when it is in room 103): the request asks for
    a change the data shows is none. A date or an amount restated as it stands reads naturally ("move my stay
    to 15-18 May", keeping the arrival); a reference named as new does not. `said` is everything the user
    says. None when no argument does so, or the write created its row."""
    acted = _acted_on(output, tables, keys)
    if acted is None:
        return None
    table, row = acted
    for name, value in arguments.items():
        if name == keys.get(table) or not _keys(name) or row.get(name) != value:
            continue
        pointed = [r for t, rs in tables.items() if keys.get(t) == name for r in rs if r.get(name) == value]
        if any(_text(v) and not _keys(c) and mentions(said, v) for r in pointed for c, v in r.items()):
            return f"{table} {row.get(keys[table])}: {name}"
    return None


NAMING = {"name", "title"}  # columns that name what a row is (a plan, a task), not who it is for
DEAD = {"cancelled", "canceled", "void", "deleted", "archived", "removed", "declined"}


def overlapping_row(added: Row, rows: Sequence[Row], key: str | None) -> Row | None:
    """A live existing row the created row `added` duplicates or overlaps: one under the same parent (its first
    reference column: the calendar) that spans an overlapping time (both have a start and an end column: an
    event on top of another in the same slot), or, where the rows have no span, one with the same references
    that shares a date and every category value (a second draft of the same date for the same customer), or
    one with the same name or title (a second subscription to a plan the customer already pays).
    None when the create adds a new record."""
    refs = [c for c, v in added.items() if c != key and _keys(c) and v is not None]
    if not refs or not rows:
        return None
    parent = refs[0]
    starts = [c for c in added if c.startswith("start") and _dated(added[c])]
    ends = [c for c in added if c.startswith("end") and _dated(added[c])]
    dates = [c for c, v in added.items() if _dated(v)]
    # category columns (a status, a kind): few distinct values over the table, unlike a number or a title
    kinds = [
        c
        for c, v in added.items()
        if _text(v) and not _keys(c) and len({r.get(c) for r in rows}) * 2 <= len(rows) and c not in dates
    ]
    named = [c for c, v in added.items() if _text(v) and not _keys(c) and set(words(c)) & NAMING and c not in dates]
    for row in rows:
        if key is not None and row.get(key) == added.get(key) or row.get(parent) != added[parent]:
            continue
        if any(isinstance(v, str) and v.lower() in DEAD for v in row.values()):
            continue
        if starts and ends:
            s, e = starts[0], ends[0]
            if _dated(row.get(s)) and _dated(row.get(e)) and row[s] < added[e] and added[s] < row[e]:
                return row
            continue
        # the same named thing again (a "Premium streaming" plan the customer already pays, a task of the same
        # title in the project): a second copy of something held, whatever its date
        if any(row.get(c) == added[c] for c in named):
            return row
        # the same day (a date) or the same moment (a time: two slots of one day are two slots)
        same_day = any(row.get(c) == added[c] or _day(row.get(c)) == added[c] for c in dates)
        if any(_wordy(v) and row.get(c) != v for c, v in added.items()):
            continue  # a message or a comment of its own words is new content, however alike its heading
        if same_day and kinds and all(row.get(c) == added[c] for c in [*refs, *kinds]):
            return row
    return None


def _dated(value: Any) -> bool:
    return isinstance(value, str) and bool(ISO_DATE.match(value))


def _day(value: Any) -> str | None:
    """The date of a date-time value (None for a plain date or anything else)."""
    return value[:10] if _dated(value) and len(value) > 10 else None


def _wordy(value: Any) -> bool:
    return _text(value) and len(value.split()) > 4


def addresses_self(arguments: Mapping[str, Any], sources: Mapping[str, str], name: str) -> str | None:
    """A text the person writes that speaks to themselves by their first name ('Keiko, the usage report is in the
    shared doc now', posted by Keiko): drawn from another row, it was written to them, not by them. The argument's
    name, else None. Only drawn values count; what the person dictates is theirs."""
    first = name.split()[0] if name.split() else ""
    if not first:
        return None
    to_them = re.compile(rf"^(?:(?:hi|hey|hello|thanks|dear)\s+)?{re.escape(first)}\b\s*[,:!-]", re.IGNORECASE)
    for key, value in arguments.items():
        if sources.get(key) in {"seed", "free"} and isinstance(value, str) and to_them.search(value.strip()):
            return key
    return None
