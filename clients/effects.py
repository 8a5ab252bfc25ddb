"""Whether every write of a task still shows in its end state: a chain whose later write undoes an earlier
goal (book a session, then cancel the membership that cancels it; move a booking, then cancel it) asks for
something self-defeating, and its gold end state no longer holds what the user asked for first.

Judged on state diffs alone, whatever the tools are called: the gold is replayed on a fresh episode, the
server's diff against the seed is read after each write, and the effect of a write is what changed between
the diff before it and the diff after it. A write whose effect is nothing (seats changed to the number
booked, a drop-off moved to the branch it already was) asks for no change. The effect survives when, at the end,
- every row it added is still there and every row it removed is still gone;
- no value it set went back to what it was before the write (a conversation untrashed then trashed again);
- no text or flag it set was overwritten (numbers may move on: a total grows as lines are added);
- no lifecycle value (a status-like column) of a row it added or changed moved on afterwards: a booking it
  made or moved that ends up cancelled, a draft it edited that ends up sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envfarm.clients.graph import ToolSpec
from envfarm.servers.runtime.control import TableDiff

Row = dict[str, Any]
RowKey = tuple[str, Any]  # (table, primary key)
SEED = object()  # a value (or row) as the seed has it: the diff does not mention it
LIFECYCLE_VALUE = re.compile(r"^[a-z][a-z_]*$")
LIFECYCLE_MAX_VALUES = 8  # distinct values a status-like column holds in the seed, at most


@dataclass(frozen=True)
class Undone:
    """A write whose effect a later write took back, and how."""

    call: int  # index of the write among the gold calls
    table: str
    key: Any
    how: str  # "removed", "reverted <column>", "overwrote <column>", "moved <column> on"


def view(diff: Mapping[str, TableDiff]) -> dict[RowKey, Row | None]:
    """Per changed row, what the diff says of it: its columns that differ from the seed (every column of an
    added row), or None for a removed row. Rows matched by their first column, as the server's diff does."""
    rows: dict[RowKey, Row | None] = {}
    for table, changes in diff.items():
        for row in changes.added:
            rows[table, next(iter(row.values()))] = {**row, "__added__": True}
        for row in changes.removed:
            rows[table, next(iter(row.values()))] = None
        for update in changes.updated:
            rows[table, update["key"]] = dict(update.get("after") or {})
    return rows


def _cell(rows: Mapping[RowKey, Row | None], key: RowKey, column: str) -> Any:
    if key not in rows:
        return SEED
    row = rows[key]
    return None if row is None else row.get(column, SEED)


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def lifecycle_columns(specs: Iterable[ToolSpec], tables: Mapping[str, Sequence[Row]]) -> set[str]:
    """Column names that hold a row's lifecycle: a tool takes them as an enum (a `status` filter), or the seed
    holds a few short lower-case words in them (booked, cancelled, partially_paid) over many rows."""
    found = {(p.column or p.name).rpartition(".")[2] for spec in specs for p in spec.params if p.enum}
    for rows in tables.values():
        if len(rows) < LIFECYCLE_MAX_VALUES:
            continue
        for column in rows[0]:
            values = {r.get(column) for r in rows}
            if 1 < len(values) <= LIFECYCLE_MAX_VALUES and all(
                isinstance(v, str) and LIFECYCLE_VALUE.match(v) for v in values
            ):
                found.add(column)
    return found


def _twin_added(
    table: str,
    key: RowKey,
    gone: Row | None,
    later: Sequence[Mapping[str, TableDiff] | None],
    final: Mapping[RowKey, Row | None],
    removed_in: Mapping[str, TableDiff],
) -> bool:
    """Whether a row added by a later write points at everything the removed row pointed at (the same
    channel and member): the removal taken back under a new key."""
    removed = gone or next((r for r in removed_in[table].removed if next(iter(r.values())) == key[1]), None)
    if not removed:
        return False
    refs = {c: v for c, v in list(removed.items())[1:] if c.endswith("_id") and v is not None}
    if not refs or not any(d is not None and table in d for d in later):
        return False
    return any(
        k[0] == table
        and isinstance(row, dict)
        and row.get("__added__")
        and all(row.get(c) == v for c, v in refs.items())
        for k, row in final.items()
    )


def undone(
    diffs: Sequence[Mapping[str, TableDiff] | None], end: Mapping[str, TableDiff], lifecycle: set[str]
) -> list[Undone]:
    """The writes whose effect does not survive to `end`. `diffs[i]` is the server's diff against the seed
    after gold call i (None for a read, or a call on another server); every diff is of one server."""
    found: list[Undone] = []
    final = view(end)
    before: dict[RowKey, Row | None] = {}
    for index, diff in enumerate(diffs):
        if diff is None:
            continue
        after = view(diff)
        if after == before:  # the server took the call and changed nothing: seats set to what they were
            found.append(Undone(index, "", None, "changed nothing"))
        for key in sorted(set(before) | set(after), key=repr):
            old, new = before.get(key, SEED), after.get(key, SEED)
            if old == new:
                continue
            table = key[0]
            created = (
                isinstance(new, dict) and new.get("__added__") and not (isinstance(old, dict) and old.get("__added__"))
            )
            if created and not isinstance(final.get(key), dict):
                found.append(Undone(index, table, key[1], "removed"))
                continue
            if new is None:
                if final.get(key, SEED) is not None:
                    found.append(Undone(index, table, key[1], "restored"))
                elif isinstance(old, dict) or key not in before:
                    # gone, but a later write added its twin (left a channel, then joined it again)
                    gone = old if isinstance(old, dict) else None
                    if _twin_added(table, key, gone, diffs[index + 1 :], final, diff):
                        found.append(Undone(index, table, key[1], "added again"))
                continue
            if not isinstance(new, dict):
                continue
            if final.get(key, SEED) is None:
                found.append(Undone(index, table, key[1], "removed"))
                continue
            old_row = old if isinstance(old, dict) else {}
            for column in sorted(set(new) | set(old_row)):
                if column == "__added__":
                    continue
                was, set_to, now = _cell(before, key, column), _cell(after, key, column), _cell(final, key, column)
                if was == set_to or now == set_to:
                    continue
                if now == was and not new.get("__added__"):
                    found.append(Undone(index, table, key[1], f"reverted {column}"))
                elif column in lifecycle:
                    found.append(Undone(index, table, key[1], f"moved {column} on"))
                elif not _numeric(set_to) or not _numeric(now):
                    found.append(Undone(index, table, key[1], f"overwrote {column}"))
            # A lifecycle value of the row that this write left alone, moved on later: the row it acted on was
            # cancelled, sent or closed after it.
            found += [
                Undone(index, table, key[1], f"moved {column} on")
                for column in lifecycle - set(new)
                if _cell(after, key, column) != _cell(final, key, column)
            ]
        before = after
    return found
