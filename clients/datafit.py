"""Whether what a gold write puts into the data fits the data already there.

The grounder draws a write's free values from the seed, so a "new" fuel fill can repeat another driver's log to
the cent, a new meeting can land on top of one already on the person's agenda, a change can move a renewal date
into the past, a refund can give the reason "cancelled by the operator" for a departure that still runs, and an
offer to "pick up this weekend" can come from another city. It can also put two places in one row that the
service's own rows never combine (a car picked up in Austin and dropped off in Vienna), start a driver's second
trip while one is in progress, credit "Returned hardware" on an invoice that bills only consulting, date a payment
before its invoice, reuse another payment's reference, file an office-supplies line under an airline, bill 40 data
migrations where no invoice bills more than 2, or pin a message and then archive its channel. A careful agent
would stop at each of these; a task whose gold does not is dropped at synthesis and failed by `envfarm tasks
--audit`. Each check reads only the write's arguments, the rows it added or changed (the expected diff), the seed
rows and the farm clock, so it runs the same on a task file as during generation.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any

from envfarm.clients.graph import is_id_like, words
from envfarm.clients.speech import MONEY, label

Row = dict[str, Any]
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
DEAD = {"cancelled", "canceled", "void", "deleted", "archived", "removed", "declined", "withdrawn", "no_show"}
# Pairs of columns that bound a row's time: an event's start and end, a stay's check-in and check-out.
SPANS = (("start", "end"), ("check_in", "check_out"), ("arrival", "departure"), ("from", "until"), ("pickup", "return"))
MIN_EVIDENCE = 5  # seed rows with a drawn value before the data is read as saying what that value implies
RARE = 0.1  # the share of the rows without a value that may share its state
STATE_WORD = re.compile(r"status|state")  # a column naming where a row is in its life, not what sort it is
MAX_KINDS = 6  # a category column (a status) has at most this many values over its table
# A column of words a person writes for a row (a charge's description, a visit's reason, a post's text).
NOTE_COLUMN = re.compile(r"reason|note|memo|description|text|body|summary|subject|title|comment|message")
# A written column that names a row rather than says why (a meeting's title): a weekly 1:1 has the same title each week.
NAMING_COLUMN = re.compile(r"title|subject|name")
RECENT = (3, 60)  # days before and after today in which a like row of the person's is still the same errand
VERBATIM_WORDS = 8  # words of a text said before that make a new row with it a copy, whoever wrote the first
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


def _near(row: Row, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]) -> list[tuple[str, Row]]:
    """(table, row) of the rows `row` leads to in one or two reference hops (a visit's slot, and the slot's doctor)."""
    first = _pointed(row, tables, keys)
    return [*first.items(), *((t, r) for f in first.values() for t, r in _pointed(f, tables, keys).items())]


def _holds(row: Row, who: set[str]) -> bool:
    """Whether a row holds one of the person's values (their email, their name)."""
    return bool(who & {v for v in row.values() if isinstance(v, str)})


def _others(row: Row, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], who: set[str]) -> set[str]:
    """The keys of the rows `row` leads to in one or two reference hops that are not a person's own record (the
    merchant of a charge, the doctor of a visit's slot, a post's channel), each as 'table:key'."""
    return {
        f"{table}:{linked.get(keys[table])}" for table, linked in _near(row, tables, keys) if not _holds(linked, who)
    }


def _leads_to(row: Row, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], who: set[str]) -> bool:
    """Whether a row leads to the person's own record in one or two reference hops (a scheduled payment's account's
    customer): it is theirs, though it holds none of their values itself."""
    return any(_holds(linked, who) for _, linked in _near(row, tables, keys))


def _recent(
    row: Row, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], today: str, ahead_only: bool = False
) -> bool:
    """Whether a row, or a row it points at when it has no date of its own (a visit's slot), is dated within
    RECENT of today (`ahead_only`: after today): yesterday's bill payment and next week's visit are the errand still
    in hand."""
    dates = [v[:10] for v in row.values() if _dated(v)]
    if not dates:
        dates = [v[:10] for r in _pointed(row, tables, keys).values() for v in r.values() if _dated(v)]
    day = date.fromisoformat(today)
    low = today if ahead_only else (day - timedelta(days=RECENT[0])).isoformat()
    high = (day + timedelta(days=RECENT[1])).isoformat()
    return any(low < d <= high if ahead_only else low <= d <= high for d in dates)


def repeated_errand(
    added: Row,
    table: str,
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
    who: set[str],
    today: str | None,
    written: Iterable[Any] | None = None,
) -> Row | None:
    """An existing live row that the created one repeats in its words and its counterpart: a second "Monthly bill at
    Greenfield Energy" charge the day after the first, a second "headaches" visit with the doctor the patient is
    already booked with next week, a post that says word for word what is in the channel already. A careful agent
    asks before doing an errand twice. A row of the person's still ahead with the same reason or note (not a title)
    repeats it whatever it points at (a skin rash booked with a dermatologist next week, and now with a
    pediatrician). Otherwise the first row must share a counterpart, and be the person's and dated near today, or,
    for a text of VERBATIM_WORDS words or more, anyone's (a verbatim repost is a copy whoever wrote the first). None
    when no row shares a written text (NOTE_COLUMN) on these terms. `written`: the
    texts the write's arguments gave (only those are the person's words; a server's own 'Room 103, 1 night(s) at
    180.00' is no errand); None takes every text of the row."""
    key = keys.get(table)
    said = None if written is None else {w.strip().lower() for w in written if isinstance(w, str)}
    notes = {
        c: v.strip().lower()
        for c, v in added.items()
        if NOTE_COLUMN.search(c) and not is_id_like(c) and _text(v) and (said is None or v.strip().lower() in said)
    }
    if not notes or today is None:
        return None
    counterparts = _others(added, tables, keys, who)
    for row in tables.get(table, []):
        if key and row.get(key) == added.get(key) or not _live(row):
            continue
        same = [c for c, v in notes.items() if isinstance(row.get(c), str) and row[c].strip().lower() == v]
        if not same:
            continue
        mine = _belongs(row, key, who, tables, keys) or _leads_to(row, tables, keys, who)
        said_why = [c for c in same if not NAMING_COLUMN.search(c)]  # a reason, a note: not a recurring title
        if said_why and mine and _recent(row, tables, keys, today, ahead_only=True):
            return row  # the same complaint already booked for next week, whoever with: the errand is in hand
        if not counterparts & _others(row, tables, keys, who):
            continue
        verbatim = any(len(notes[c].split()) >= VERBATIM_WORDS for c in same)
        if verbatim or (mine and _recent(row, tables, keys, today)):
            return row
    return None


def twin_row(added: Row, rows: Sequence[Row], key: str | None) -> Row | None:
    """A live existing row the created one equals in every column but its key and its dates, under the same parent
    (a second "Printed manuals x 10" line on a draft invoice that has one): the same thing done twice. It must
    point at a parent (a reference column) and agree on at least two more filled columns. None when no row does."""
    compared = [c for c, v in added.items() if c != key and not _dated(v)]
    parents = [c for c in compared if is_id_like(c) and isinstance(added[c], str)]
    filled = [c for c in compared if c not in parents and added[c] not in (None, "")]
    if not parents or len(filled) < 2:
        return None
    for row in rows:
        if key is not None and row.get(key) == added.get(key) or not _live(row):
            continue
        if all(c in row and row[c] == added[c] for c in compared):
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


ON_HOLD = {"paused", "suspended", "frozen", "on_hold", "held"}  # states in which a row does not run until resumed
PLANNED = re.compile(r"scheduled|planned")  # a column holding when a row is meant to happen
# A stamp of a row getting under way (a departure, a check-in, a pickup), as against a cancellation or a payment,
# which may come any day before
UNDER_WAY = re.compile(r"start|depart|check(?:ed)?_?in|pick(?:ed)?_?up|arriv|board")


def ahead_of_its_day(row: Row, before: Row, after: Row, today: str | None) -> str | None:
    """A change that stamps today on a row getting under way (a departure, a check-in: a column empty before, dated
    today after) while the row is planned for a later day: a trip scheduled for Sunday started on Monday. A careful
    agent points out the date. "column today, planned column day", else None."""
    if today is None:
        return None
    stamped = [
        c
        for c, v in after.items()
        if UNDER_WAY.search(c) and before.get(c) is None and _dated(v) and str(v)[:10] == today
    ]
    if not stamped:
        return None
    span = _span(row)
    planned = [c for c in row if PLANNED.search(c) and _dated(row[c])] + ([span[0]] if span else [])
    later = [c for c in planned if c not in after and str(row[c])[:10] > today]
    return f"{stamped[0]} today, {later[0]} {str(row[later[0]])[:10]}" if later else None


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


def _context(
    args: Mapping[str, Any],
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
    named_only: bool = False,
) -> dict[str, Row]:
    """The rows a write is about, by table: each row one of its arguments names alone (a booking by its id or its
    reference), and the rows that row points at (the booking's departure). `named_only`: only the rows an id or
    key argument names, not what they point at (the prescription a quote is for, not its drug)."""
    found: dict[str, Row] = {}
    for name, value in args.items():
        if not isinstance(value, str) or _dated(value):
            continue
        for table, rows in tables.items():
            by_key = is_id_like(name) or keys.get(table) == name
            if named_only and not by_key:
                continue
            hits = [r for r in rows if r.get(name) == value]
            if len(hits) == 1 and (by_key or len(value) >= 4):
                found.setdefault(table, hits[0])
    if named_only:
        return found
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


def _places(tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Per table that is a place (a branch, a store, a customer with an address), its key value -> city."""
    found: dict[str, dict[str, str]] = {}
    for table, rows in tables.items():
        key = keys.get(table)
        if not key or not rows:
            continue
        cities = {row[key]: city for row in rows if isinstance(row.get(key), str) and (city := _city(row))}
        if cities:
            found[table] = cities
    return found


def _whereabouts(
    row: Row, table: str, places: Mapping[str, Mapping[str, str]], keys: Mapping[str, str]
) -> dict[str, str]:
    """Column -> city for every column of `row` that says where something is: its own city or address, or a
    reference to a place row (a rental's pickup and drop-off branch, an order's store)."""
    found: dict[str, str] = {}
    for column, value in row.items():
        if not isinstance(value, str) or not value:
            continue
        if column == keys.get(table):
            continue
        said = words(column)
        if "city" in said and not _dated(value):
            found[column] = value
        elif "address" in said and ", " in value:
            found[column] = value.rsplit(", ", 1)[1].strip()
        else:
            for place, cities in places.items():
                key = keys[place]
                if (column == key or column.endswith("_" + key)) and value in cities:
                    found[column] = cities[value]
                    break
    return found


def crossed_places(
    row: Row,
    table: str,
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
    changed: Iterable[str] | None = None,
) -> str | None:
    """Two places of one written row in different cities where the seed's rows of that table (at least
    MIN_EVIDENCE with both) almost never are (at most a RARE share): a car picked up in Austin and dropped off in
    Vienna, a car returned to Lisbon whose drop-off was Denver, a grocery order from a Berlin store delivered to a
    Lisbon address. What the service does, read from its own rows: a parcel's sender and recipient in two
    countries is everyday, so their table says so. `changed`: for a changed row, the columns the write set (one
    of the two places must be among them: a seed row that already spans two cities is not this write's doing).
    "column city, column city (seen in k of n)", else None."""
    places = _places(tables, keys)
    here = _whereabouts(row, table, places, keys)
    if len(set(here.values())) < 2:
        return None
    seen = [_whereabouts(r, table, places, keys) for r in tables.get(table, [])]
    columns = sorted(here)
    for i, first in enumerate(columns):
        for second in columns[i + 1 :]:
            if here[first] == here[second]:
                continue
            if changed is not None and first not in changed and second not in changed:
                continue
            both = [w for w in seen if first in w and second in w]
            apart = sum(w[first] != w[second] for w in both)
            if len(both) >= MIN_EVIDENCE and apart <= RARE * len(both):
                return f"{first} {here[first]}, {second} {here[second]} (apart in {apart} of {len(both)})"
    return None


def dated_before_parent(
    added: Row, table: str, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]
) -> str | None:
    """A date of a new row earlier than a date of the row it belongs to, where no seed row of its table (at least
    MIN_EVIDENCE with both) ever is: a payment received 5 February on an invoice issued 21 March. "column
    date before parent.column date", else None."""
    rows = tables.get(table, [])
    dated = [c for c, v in added.items() if _dated(v)]
    for parent_table, parent in _pointed(added, tables, keys).items():
        for mine in dated:
            for theirs in [c for c, v in parent.items() if _dated(v)]:
                if added[mine][:10] >= parent[theirs][:10]:
                    continue
                pairs = [
                    (r[mine][:10], up[theirs][:10])
                    for r in rows
                    if _dated(r.get(mine))
                    and _dated((up := _pointed(r, tables, keys).get(parent_table, {})).get(theirs))
                ]
                if len(pairs) >= MIN_EVIDENCE and not any(a < b for a, b in pairs):
                    return f"{mine} {added[mine][:10]} before {parent_table}.{theirs} {parent[theirs][:10]}"
    return None


def reused_reference(
    added: Row, table: str, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]
) -> str | None:
    """A code of a new row (one word with a digit: a bank reference, a serial) that another row of its table
    already holds, in a column where every seed row's code is its own (at least MIN_EVIDENCE): a payment
    recorded with the reference of another invoice's payment. "column value (as key)", else None."""
    rows = tables.get(table, [])
    key = keys.get(table, "")
    for column, value in added.items():
        if column == key or is_id_like(column) or not isinstance(value, str) or _dated(value):
            continue
        if " " in value.strip() or not any(ch.isdigit() for ch in value):
            continue
        codes = [r.get(column) for r in rows if isinstance(r.get(column), str) and r.get(column)]
        if len(codes) < MIN_EVIDENCE or len(set(codes)) < len(codes):
            continue
        twin = next((r for r in rows if r.get(column) == value and (not key or r.get(key) != added.get(key))), None)
        if twin is not None:
            return f"{column} {value} (as {twin.get(key)})"
    return None


def _sorts(table: str, tables: Mapping[str, Sequence[Row]]) -> list[str]:
    """A table's columns that sort its rows into a few groups: a category (a status, a kind) or a reference to a
    short list (an expense category)."""
    rows = tables.get(table, [])
    sorts = list(_kinds(tables).get(table, []))
    if rows:
        sorts += [
            c
            for c in rows[0]
            if c not in sorts
            and c.endswith("_id")
            and 1 < len({repr(r.get(c)) for r in rows}) <= 2 * MAX_KINDS
            and len({repr(r.get(c)) for r in rows}) * 2 <= len(rows)
        ]
    return sorts


def unusual_pairing(
    row: Row,
    table: str,
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
    changed: Iterable[str] | None = None,
) -> str | None:
    """A value the write sets that the seed always files under another group than the row's: the merchant of an
    office-supplies line changed to "Northjet", which every seed line files under air travel, in a table where a
    merchant names its category (at least 1 - RARE of the merchants seen twice keep to one). `changed`: for a
    changed row, the columns the write set. "column 'value' (sort: seen x, here y)", else None."""
    rows = tables.get(table, [])
    key = keys.get(table, "")
    sorts = _sorts(table, tables)
    for column, value in row.items():
        if column == key or column in sorts or is_id_like(column) or not _text(value) or len(value.split()) > 6:
            continue
        if changed is not None and column not in changed:
            continue
        mine = [r for r in rows if r.get(column) == value and (not key or r.get(key) != row.get(key))]
        if len(mine) < 2:
            continue
        for sort in sorts:
            seen = {r.get(sort) for r in mine}
            if len(seen) != 1 or row.get(sort) in seen or row.get(sort) is None:
                continue
            groups: dict[Any, set[Any]] = {}
            for r in rows:
                groups.setdefault(r.get(column), set()).add(r.get(sort))
            repeated = [v for v in groups if sum(r.get(column) == v for r in rows) >= 2]
            loyal = sum(len(groups[v]) == 1 for v in repeated)
            if len(repeated) >= MIN_EVIDENCE and loyal >= (1 - RARE) * len(repeated):
                return f"{column} {value!r} ({sort}: seen {seen.pop()}, here {row.get(sort)})"
    return _unusual_parent(row, table, tables, keys, changed)


def _parent_sorts(rows: Sequence[Row]) -> list[str]:
    """A parent table's columns that sort its rows (a merchant's category): text, shared by two rows or more on
    average, and no state (STATE_WORD), which the task's own writes move."""
    if not rows:
        return []
    return [
        c
        for c in rows[0]
        if not is_id_like(c)
        and not STATE_WORD.search(c)
        and all(r.get(c) is None or _text(r.get(c)) for r in rows)
        and 1 < len({r.get(c) for r in rows}) <= len(rows) / 2
    ]


def _unusual_parent(
    row: Row, table: str, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], changed: Iterable[str] | None
) -> str | None:
    """A value the seed files, in MIN_EVIDENCE rows or more, only under parents of one sort, set on a row whose
    parent is of another: a "Premium streaming" subscription (every seed one is an entertainment merchant's) at a
    vet clinic. The sort is the parent's (the merchant's category), read through the row's reference."""
    rows = tables.get(table, [])
    key = keys.get(table, "")
    changed = set(changed) if changed is not None else None
    for ref, target in row.items():
        if ref == key or not ref.endswith("_id") or not isinstance(target, str):
            continue
        for parent in [t for t, k in keys.items() if k == ref and t != table and tables.get(t)]:
            by_key = {r.get(ref): r for r in tables[parent]}
            # a state (a listing's status) moves with the writes a task makes; a sort (a merchant's category) stays
            for sort in _parent_sorts(tables[parent]):
                here = by_key.get(target, {}).get(sort)
                if here is None:
                    continue
                for column, value in row.items():
                    if column in (key, ref) or is_id_like(column) or not _text(value) or len(value.split()) > 6:
                        continue
                    if STATE_WORD.search(column) or (changed is not None and not {column, ref} & changed):
                        continue
                    mine = [r for r in rows if r.get(column) == value and (not key or r.get(key) != row.get(key))]
                    seen = {by_key.get(r.get(ref), {}).get(sort) for r in mine}
                    parents = {r.get(ref) for r in mine}  # one merchant's own plan says nothing of its category
                    if (
                        len(mine) >= MIN_EVIDENCE
                        and len(parents) > 1
                        and len(seen) == 1
                        and None not in seen
                        and here not in seen | {None}
                    ):
                        return f"{column} {value!r} ({parent}.{sort}: seen {seen.pop()}, here {here})"
    return None


OUTLIER = 5  # times the largest the seed shows for the same thing, past which an amount is no everyday one
SPAN_OUTLIER = 2  # times the longest span the seed's rows of a table show, past which a new span is no such row


def _days(row: Row, span: tuple[str, str]) -> float | None:
    try:
        start, end = (datetime.fromisoformat(str(row[c]).replace("Z", "+00:00")) for c in span)
    except (KeyError, ValueError):
        return None
    if (start.tzinfo is None) != (end.tzinfo is None):
        return None
    return (end - start).total_seconds() / 86400


def outlying_span(row: Row, table: str, tables: Mapping[str, Sequence[Row]]) -> str | None:
    """A row whose time span is more than SPAN_OUTLIER times the longest of the table's seed rows (at least
    MIN_EVIDENCE of them): a "1:1" on the calendar for the three days of a car rental, where no meeting runs past
    an hour and a half. "start-end: n days (table: at most m over k rows)", else None."""
    span = _span(row)
    if span is None:
        return None
    length = _days(row, span)
    seen = [d for r in tables.get(table, []) if _span(r) == span and (d := _days(r, span)) is not None]
    if length is None or len(seen) < MIN_EVIDENCE or length <= SPAN_OUTLIER * max(seen):
        return None
    return f"{span[0]}-{span[1]}: {length:.2f} days ({table}: at most {max(seen):.2f} over {len(seen)} rows)"


CAP_SHARE = 0.8  # the largest share of its parent's number a seed row reaches, for the parent's to read as a cap


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def past_its_cap(
    added: Row,
    table: str,
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
    moved: Mapping[tuple[str, str], set[str]] | None = None,
) -> str | None:
    """A number of a new row above a number of the row it points at that the seed's rows never pass, though they
    come close (every offer at most the listing's asking price, some at it): an offer of $63 on a listing asking
    $51, a refund above the charge, a claim above the declared value. Read from at least MIN_EVIDENCE seed pairs.
    A parent number the same write moves (`moved`: (table, key) -> columns changed) follows its rows, as a
    vehicle's odometer follows its fuel logs and an invoice's subtotal its lines: no cap.
    "table.column n above parent.column m (seed: at most x of it over k rows)", else None."""
    rows = tables.get(table, [])
    key = keys.get(table, "")
    for ref, target in added.items():
        if ref == key or not isinstance(target, str):
            continue
        parents = [t for t, k in keys.items() if k == ref and t != table and tables.get(t)]
        for parent in parents:
            by_key = {k: r for r in tables[parent] if isinstance(k := r.get(ref), str)}
            here = by_key.get(target)
            if here is None:
                continue
            for column, value in added.items():
                if not _number(value) or is_id_like(column):
                    continue
                for cap, limit in here.items():
                    if not _number(limit) or limit <= 0 or value <= limit or is_id_like(cap):
                        continue
                    if cap in (moved or {}).get((parent, target), set()):
                        continue
                    shares = [
                        r[column] / p[cap]
                        for r in rows
                        if _number(r.get(column))
                        and isinstance(r.get(ref), str)
                        and (p := by_key.get(r[ref])) is not None
                        and _number(p.get(cap))
                        and p[cap] > 0
                    ]
                    if len(shares) >= MIN_EVIDENCE and max(shares) <= 1 and max(shares) >= CAP_SHARE:
                        return (
                            f"{table}.{column} {value} above {parent}.{cap} {limit} "
                            f"(seed: at most {max(shares):.2f} of it over {len(shares)} rows)"
                        )
    return None


def _money(column: str) -> bool:
    """A column holding an amount of money, by the words of its name (`unit_price`, `asking_price`)."""
    return bool(MONEY.search(label(column)))


def outlying_amount(added: Row, table: str, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]) -> str | None:
    """A number of a new row more than OUTLIER times the largest the seed's rows show for the same named thing
    (at least MIN_EVIDENCE of them): 40 of "Data migration" on an invoice, where no invoice bills more than 2;
    or an amount of money under 1/OUTLIER of the smallest they show: an "Onboarding package" at $48.00 where
    every seed line bills it at 2,500.00 (a price taken from another line, not a discount). The thing is a row
    with a name or title that the new row points at (a catalogue item, an extra), not a person or an account.
    "column value (thing: at most m over n rows)" or "(thing: at least m ...)", else None."""
    rows = tables.get(table, [])
    key = keys.get(table, "")
    for ref, value in added.items():
        if ref == key or not ref.endswith("_id") or not isinstance(value, str):
            continue
        named = _named_tables(ref, table, tables, keys)
        if not named:
            continue
        same = [r for r in rows if r.get(ref) == value and (not key or r.get(key) != added.get(key))]
        if len(same) < MIN_EVIDENCE:
            continue
        for column, amount in added.items():
            if column == ref or is_id_like(column) or isinstance(amount, bool) or not isinstance(amount, int | float):
                continue
            seen = [
                r[column] for r in same if isinstance(r.get(column), int | float) and not isinstance(r[column], bool)
            ]
            if len(seen) < MIN_EVIDENCE:
                continue
            if max(seen) > 0 and amount > OUTLIER * max(seen):
                return f"{column} {amount:g} ({named[0]} {value}: at most {max(seen):g} over {len(seen)} rows)"
            if _money(column) and min(seen) > 0 and 0 < amount * OUTLIER < min(seen):
                return f"{column} {amount:g} ({named[0]} {value}: at least {min(seen):g} over {len(seen)} rows)"
    return None


def _named_tables(ref: str, table: str, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]) -> list[str]:
    """The tables with a name or title whose key `ref` is (a catalogue item, an extra), other than `table`."""
    things = [t for t, k in keys.items() if k == ref and tables.get(t) and t != table]
    return [t for t in things if {"name", "title"} & set(tables[t][0])]


def second_of_a_thing(
    added: Row, table: str, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]
) -> Row | None:
    """A live row under the same parent for the same named thing as the new row: a second "Onboarding package"
    line on an invoice that bills one already, at another price. Only where the seed never holds two (of at least
    MIN_EVIDENCE parent-thing pairs): there a person changes the line they have, or a clerk asks which they mean.
    The parent is any other row the new one points at but a person. The row it repeats, else None."""
    rows = tables.get(table, [])
    key = keys.get(table)
    refs = [c for c, v in added.items() if c != key and isinstance(v, str) and is_id_like(c)]
    things = [c for c in refs if _named_tables(c, table, tables, keys)]
    people = _people(tables, keys)
    parents = [c for c in refs if c not in things and c not in people]
    live = [r for r in rows if _live(r) and (key is None or r.get(key) != added.get(key))]
    for thing in things:
        for parent in parents:
            pairs = Counter((r.get(parent), r.get(thing)) for r in live if r.get(parent) and r.get(thing))
            if sum(pairs.values()) < MIN_EVIDENCE or max(pairs.values()) > 1:
                continue
            same = (added[parent], added[thing])
            repeated = next((r for r in live if (r.get(parent), r.get(thing)) == same), None)
            if repeated is not None:
                return repeated
    return None


def leap_from_before(before: Row, after: Row, given: Iterable[Any] | None = None) -> str | None:
    """An amount of money a change moves more than OUTLIER times up or down from the row's own value: a listing's
    asking price 'dropped' from 12.00 to 273.00, a payment of 140.63 changed to 1,450.00. Repricing moves an amount
    by a share of itself; a value many times it was drawn from another row. `given`: the amounts the write's
    arguments gave, when known: only those are checked (an invoice's subtotal falling with the line removed from
    it follows the data). "column before -> after", else None."""
    amounts = None if given is None else list(given)
    for column, new in after.items():
        old = before.get(column)
        if not (_money(column) and _number(new) and _number(old)) or is_id_like(column):
            continue
        assert isinstance(old, int | float) and isinstance(new, int | float)
        if old <= 0 or new <= 0:
            continue
        if amounts is not None and not any(abs(new - a) < 0.005 for a in amounts):
            continue
        if new > OUTLIER * old or old > OUTLIER * new:
            return f"{column} {old:g} -> {new:g}"
    return None


def _people(tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]) -> set[str]:
    """The key columns of the tables whose rows are people (they have an email): driver_id, member_id."""
    return {keys[t] for t, rows in tables.items() if keys.get(t) and rows and "email" in rows[0]}


def second_in_state(
    row: Row,
    table: str,
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
    changed: Iterable[str] | None = None,
) -> str | None:
    """A state a person holds one row in at a time, by the seed (at least MIN_EVIDENCE rows in it, no person
    with two), that the write puts a row into while the person already has another there: a trip started while
    the driver's other trip is in progress. `changed`: for a changed row, the columns the write set (the state
    must be one). "table.column value: person already has key", else None."""
    rows = tables.get(table, [])
    key = keys.get(table, "")
    people = _people(tables, keys)
    for column in _kinds(tables).get(table, []):
        value = row.get(column)
        if not set(words(column)) & STATE_WORDS:
            continue
        if not isinstance(value, str) or (changed is not None and column not in changed):
            continue
        held = [r for r in rows if r.get(column) == value and (not key or r.get(key) != row.get(key))]
        if len(held) < MIN_EVIDENCE:
            continue
        for owner in sorted(people & set(row)):
            counts = Counter(r.get(owner) for r in held if r.get(owner) is not None)
            if not counts or max(counts.values()) > 1 or counts[row.get(owner)] == 0:
                continue
            other = next(r for r in held if r.get(owner) == row.get(owner))
            return f"{table}.{column} {value}: {row.get(owner)} already has {other.get(key)}"
    return None


# Words a reason uses for physical goods, which a catalogue calls its products ("Returned hardware").
GOODS = {"hardware", "goods", "equipment", "device", "merchandise", "item", "product"}
# Columns that say how far along a row is, not what kind of thing it is.
STATE_WORDS = {"status", "state", "stage"}


def _implied(text: str) -> set[str]:
    """The kinds of thing a short text names: its own words (plurals folded: 'Hours billed twice' -> hour), and
    'product' for a word of goods."""
    said = set(words(text))
    return said | ({"product"} if said & GOODS else set())


def unfit_reason(
    arguments: Mapping[str, Any], tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str]
) -> str | None:
    """A short text of the write that names a kind of thing (a product, an hour) the rows under the row it is
    about never are, where the data has that kind elsewhere: a credit "Returned hardware" on an invoice whose
    lines bill only consulting and a data migration (lines point at catalogue items of kind 'service'), "Hours
    billed twice" on one with no hourly line. What a row is made of: the rows its parts (the rows that point at
    it: its lines) point at (their items); its parts' own states (an account's schedules, 'once' or 'monthly')
    say how it runs, not what it holds. "argument 'text' (table.column here: values)", else None."""
    # a phrase (a reason, a note), not one name: a pickup branch the person picks is a choice, not a claim
    texts = {n: v for n, v in arguments.items() if _text(v) and not is_id_like(n) and 2 <= len(v.split()) <= 6}
    if not texts:
        return None
    kinds = _kinds(tables)
    for table, row in _context(arguments, tables, keys, named_only=True).items():
        key = keys.get(table)
        if not key or not isinstance(row.get(key), str):
            continue
        under: dict[str, list[Row]] = {}
        for child_table, rows in tables.items():
            if child_table == table:
                continue
            for child in rows:
                if child.get(key) == row[key]:
                    for linked_table, linked in _pointed(child, tables, keys).items():
                        if linked_table != table:
                            under.setdefault(linked_table, []).append(linked)
        for name, text in texts.items():
            named = _implied(text)
            for linked_table, found in sorted(under.items()):
                for column in kinds.get(linked_table, []):
                    if set(words(column)) & STATE_WORDS:
                        continue
                    values = {r.get(column) for r in tables[linked_table]}
                    meant = {v for v in values if isinstance(v, str) and v.lower() in named}
                    here = {r.get(column) for r in found}
                    if meant and not meant & here:
                        listed = ", ".join(sorted(str(v) for v in here))
                        return f"{name} {text!r} ({linked_table}.{column} here: {listed})"
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
    for table, row in _context(args, tables, keys, named_only=True).items():
        for column, when in row.items():
            if EXPIRY.search(column) and isinstance(when, str) and _dated(when) and when[:10] < today:
                named = next((v for k, v in row.items() if k == keys.get(table)), None)
                return f"{table}.{column} {when[:10]} of {named}"
    return None


def row_conflicts(
    diff: Mapping[str, Any] | None,
    tables: Mapping[str, Sequence[Row]],
    keys: Mapping[str, str],
    who: set[str],
    today: str | None,
    written: Iterable[Any] | None = None,
) -> list[tuple[str, str]]:
    """(reason, detail) for every row a task adds or changes on one server that does not fit the seed: a copy,
    an overlap with the person's own row, a new row due before today (an invoice backdated past its due date), a
    date moved into the past, places or a value the seed never combines, a second row in a one-at-a-time state,
    a date before the row it belongs to, an amount far past the seed's, another row's reference. `diff` is the
    server's expected diff (table -> added, updated); `who` the person's email and name; `today` the farm clock's
    date; `written` the texts and numbers the gold writes gave as arguments (`written_values`; only the person's
    words repeat an errand, only an amount they gave leaps from the row's own). The reasons are the ones
    synthesis counts its drops by."""
    found: list[tuple[str, str]] = []
    given = None if written is None else [w for w in written if _number(w)]
    changed_columns = {
        (table, str(u.get("key"))): set(u.get("after") or {})
        for table, change in (diff or {}).items()
        for u in _field(change, "updated")
    }
    for table, change in (diff or {}).items():
        rows = tables.get(table, [])
        key = keys.get(table, "")
        for row in _field(change, "added"):
            overdue = [c for c, v in row.items() if DUE.search(c) and isinstance(v, str) and _dated(v)]
            if today and any(str(row[c])[:10] < today for c in overdue):
                found.append(("a new row already overdue", f"{table} {row.get(key)}"))
            twin = copied_row(row, rows, keys.get(table)) or twin_row(row, rows, keys.get(table))
            if twin is not None:
                found.append(("a new row that copies an existing one", f"{table} {twin.get(key)}"))
            again = repeated_errand(row, table, tables, keys, who, today, written)
            if again is not None and twin is None:
                found.append(("a new row repeating an errand of the person's", f"{table} {again.get(key)}"))
            second = second_of_a_thing(row, table, tables, keys) if twin is None else None
            if second is not None:
                found.append(("a second row for the same thing", f"{table} {second.get(key)}"))
            clash = overlapping_own(row, table, tables, keys, who)
            if clash is not None:
                found.append(("a new row over one of the person's own", f"{table} {clash.get(key)}"))
            found += _placed(row, table, tables, keys, None)
            early = dated_before_parent(row, table, tables, keys)
            if early is not None:
                found.append(("a new row dated before what it belongs to", f"{table} {row.get(key)}: {early}"))
            long = outlying_span(row, table, tables)
            if long is not None:
                found.append(("a span far past the seed's", f"{table} {row.get(key)}: {long}"))
            capped = past_its_cap(row, table, tables, keys, changed_columns)
            if capped is not None:
                found.append(("an amount past what it belongs to", capped))
            outlier = outlying_amount(row, table, tables, keys)
            if outlier is not None:
                found.append(("an amount far past the seed's", f"{table} {row.get(key)}: {outlier}"))
            reused = reused_reference(row, table, tables, keys)
            if reused is not None:
                found.append(("a new row with another row's reference", f"{table} {row.get(key)}: {reused}"))
        for changed in _field(change, "updated"):
            before, after = changed.get("before") or {}, changed.get("after") or {}
            column = moved_into_past(before, after, today)
            if column is not None:
                found.append(("a date moved into the past", f"{table}.{column} of {changed.get('key')}"))
            moved = [c for c, v in after.items() if before.get(c) != v]
            # the diff holds the changed columns only: the rest of the row is the seed's
            seed = next((r for r in rows if key and r.get(key) == changed.get("key")), {})
            found += _placed({**seed, **before, **after}, table, tables, keys, moved)
            was = seed | before
            state = next(
                (c for c, v in was.items() if STATE_WORD.search(c) and isinstance(v, str) and v in ON_HOLD), None
            )
            if state is not None and state not in after:
                held = f"{table} {changed.get('key')}: {state} {was[state]}"
                found.append(("a change to a row on hold that leaves it on hold", held))
            early = ahead_of_its_day(was, before, after, today)
            if early is not None:
                found.append(("a change ahead of the row's day", f"{table} {changed.get('key')}: {early}"))
            leap = leap_from_before(was, after, given)
            if leap is not None:
                found.append(("an amount many times the row's own", f"{table} {changed.get('key')}: {leap}"))
            merged = {**seed, **after}
            span = _span(merged)
            long = outlying_span(merged, table, tables) if span and set(moved) & set(span) else None
            if long is not None:
                found.append(("a span far past the seed's", f"{table} {changed.get('key')}: {long}"))
    return found


def _placed(
    row: Row, table: str, tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], changed: list[str] | None
) -> list[tuple[str, str]]:
    """(reason, detail) for a written row whose places or state the seed says do not go together
    (`crossed_places`, `second_in_state`)."""
    found = []
    crossed = crossed_places(row, table, tables, keys, changed)
    if crossed is not None:
        found.append(("places the service never combines", f"{table}: {crossed}"))
    second = second_in_state(row, table, tables, keys, changed)
    if second is not None:
        found.append(("a second row in a one-at-a-time state", second))
    paired = unusual_pairing(row, table, tables, keys, changed)
    if paired is not None:
        found.append(("a value the seed files under another group", f"{table}: {paired}"))
    return found


def value_conflicts(
    arguments: Mapping[str, Any], tables: Mapping[str, Sequence[Row]], keys: Mapping[str, str], who: set[str]
) -> list[tuple[str, str]]:
    """(reason, detail) for every value of one gold write that the data contradicts: a reason the linked rows
    belie (`contradicted_value`), an in-person text about a row in another city (`far_in_person`), a reason naming
    a kind of thing the row has none of (`unfit_reason`)."""
    found: list[tuple[str, str]] = []
    why = contradicted_value(arguments, list(arguments), tables, keys)
    if why is not None:
        found.append(("a reason the data contradicts", why))
    far = far_in_person(arguments, tables, keys, who)
    if far is not None:
        found.append(("in person in another city", far))
    unfit = unfit_reason(arguments, tables, keys)
    if unfit is not None:
        found.append(("a reason that fits nothing on the row", unfit))
    return found


# Columns whose turning true retires a row (an archived channel, a deleted folder): what sits in it is done with.
RETIRING_FLAGS = re.compile(r"^(?:is_)?(?:archived|deleted|closed_for_good)$")


def _retired(diff: Mapping[str, Any], keys: Mapping[str, str]) -> list[tuple[str, Any]]:
    """(table, key) of every row a server's diff retires: removed, set to a dead state ('cancelled', 'void',
    'archived'), or flagged archived or deleted."""
    found: list[tuple[str, Any]] = []
    for table, change in diff.items():
        removed = change.get("removed") if isinstance(change, Mapping) else getattr(change, "removed", None)
        updated = change.get("updated") if isinstance(change, Mapping) else getattr(change, "updated", None)
        key = keys.get(table)
        found += [(table, row.get(key)) for row in removed or [] if key and row.get(key) is not None]
        for update in updated or []:
            before, after = update.get("before") or {}, update.get("after") or {}
            dead = any(isinstance(v, str) and v.lower() in DEAD and before.get(c) != v for c, v in after.items())
            flagged = any(RETIRING_FLAGS.match(c) and v and not before.get(c) for c, v in after.items())
            if dead or flagged:
                found.append((table, update.get("key")))
    return found


def _mentions_value(call: Any, value: Any) -> bool:
    """Whether a call names `value` in its arguments or in the row it returns."""
    named = list(call.arguments.values())
    if isinstance(call.output, Mapping):
        named += list(call.output.values())
    return any(v == value for v in named if isinstance(v, str))


def retires_what_was_used(
    calls: Sequence[Any], diffs: Mapping[str, Mapping[str, Any]], keys: Mapping[str, Mapping[str, str]]
) -> str | None:
    """A later gold write that retires the row an earlier write acted in or on: pin a message in a channel, then
    archive the channel; add an extra to a rental, then cancel the rental. The first write's effect is moot the
    moment the second lands, so no one would ask for both. Read from the end state (`diffs`: server -> table ->
    diff; `keys`: server -> table -> key column) and the calls in order; the retiring write is the last that
    names the row. "tool then tool: table key", else None."""
    for server, diff in diffs.items():
        writes = [c for c in calls if c.server == server and c.is_write]
        for table, key in _retired(diff, keys.get(server, {})):
            naming = [i for i, c in enumerate(writes) if _mentions_value(c, key)]
            if len(naming) < 2:
                continue
            last = naming[-1]
            if key not in writes[last].arguments.values():
                continue  # the last write that names the row returns it, but something else retired it
            first = writes[naming[0]]
            return f"{first.tool} then {writes[last].tool}: {table} {key}"
    return None


def written_values(calls: Iterable[Any], server: str) -> set[Any]:
    """The texts and amounts a task's gold writes on `server` give as arguments: what the person wrote or asked
    for, never a server's own."""
    return {
        v for c in calls if c.server == server and c.is_write for v in c.arguments.values() if _text(v) or _number(v)
    }


def clock_day(clock: str | None) -> str | None:
    """'12 May 2026 14:00' (a server's clock as its instructions say it) -> '2026-05-12'; None if unreadable."""
    try:
        return datetime.strptime(" ".join((clock or "").split()[:3]), "%d %B %Y").date().isoformat()
    except ValueError:
        return None


def _field(change: Any, name: str) -> list[Row]:
    value = change.get(name) if isinstance(change, Mapping) else getattr(change, name, None)
    return list(value or [])
