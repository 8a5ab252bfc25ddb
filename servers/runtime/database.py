"""The database handle every tool function receives, and the state views built on it.

Tools get a `Database`, never a raw connection: it offers parameterized queries only, the frozen
clock, id generation, and `reject()` for business-rule failures. The runtime opens a transaction
around each call and rolls it back on any failure, so a failed call changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from servers.runtime.arguments import preview

SEQUENCES_TABLE = "_envfarm_sequences"
Params = Mapping[str, Any] | Sequence[Any]


class Rejected(Exception):
    """A call the environment refuses (unknown id, broken rule). The message is shown to the agent."""


class Database:
    """A per-episode view of one SQLite connection, with the environment's frozen clock."""

    def __init__(self, connection: sqlite3.Connection, now: str, id_formats: Mapping[str, str]) -> None:
        self.connection = connection
        self.now = now
        self._id_formats = id_formats

    def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        cursor = self.connection.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def one(self, sql: str, params: Params = ()) -> dict[str, Any] | None:
        cursor = self.connection.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else dict(zip([d[0] for d in cursor.description], row))

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self.connection.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run a write; return the number of rows it changed."""
        return self.connection.execute(sql, params).rowcount

    def insert(self, table: str, row: Mapping[str, Any]) -> dict[str, Any]:
        """Insert one row; return it as stored (with the schema's defaults filled in)."""
        columns = ", ".join(row)
        marks = ", ".join(f":{c}" for c in row)
        return self.returning(f"INSERT INTO {table} ({columns}) VALUES ({marks}) RETURNING *", dict(row))

    def returning(self, sql: str, params: Params = ()) -> dict[str, Any]:
        """Run a write ending in `RETURNING *` that changes exactly one row (generated code checked its
        key first); return that row, so it need not be fetched again."""
        rows = self.all(sql, params)  # run to completion, so no statement is left open at commit
        if len(rows) != 1:
            raise LookupError(f"expected one row changed, got {len(rows)}: {sql}")
        return rows[0]

    def next_id(self, table: str) -> str:
        """Allocate the next id of `table` from its sequence (deterministic, never reused)."""
        number = self.scalar(f"SELECT next FROM {SEQUENCES_TABLE} WHERE table_name = ?", (table,))
        self.connection.execute(f"UPDATE {SEQUENCES_TABLE} SET next = next + 1 WHERE table_name = ?", (table,))
        return self._id_formats[table].format(number)

    def require(self, table: str, column: str, value: Any, what: str) -> dict[str, Any]:
        """Return the row where `column = value`, or reject naming the unknown value."""
        row = self.one(f"SELECT * FROM {table} WHERE {column} = ?", (value,))
        if row is None:
            raise Rejected(f"Unknown {what} {preview(value)}: no such record exists.")
        return row

    @staticmethod
    def reject(message: str) -> NoReturn:
        raise Rejected(message)


def contains_pattern(text: str | None) -> str | None:
    """The `LIKE ... ESCAPE '!'` pattern matching any text that holds `text` (LIKE ignores ASCII case), with `%`,
    `_` and `!` escaped: a search for "50%" finds that text, not every row. None stays None."""
    if text is None:
        return None
    escaped = text.replace("!", "!!").replace("%", "!%").replace("_", "!_")
    return f"%{escaped}%"


def insert_row(connection: sqlite3.Connection, table: str, row: Mapping[str, Any]) -> None:
    """Insert one row; table and column names come from generated code or the schema, values are parameters."""
    columns = ", ".join(row)
    marks = ", ".join(f":{c}" for c in row)
    connection.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", dict(row))


def user_tables(connection: sqlite3.Connection) -> list[str]:
    rows = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE '\\_envfarm%' ESCAPE '\\' ORDER BY name"
    ).fetchall()
    return [r[0] for r in rows]


def snapshot(connection: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
    """Every user table's rows, in primary-key order (rowid order for ties): the episode state."""
    state: dict[str, list[dict[str, Any]]] = {}
    for table in user_tables(connection):
        cursor = connection.execute(f"SELECT * FROM {table} ORDER BY 1")
        names = [d[0] for d in cursor.description]
        state[table] = [dict(zip(names, row)) for row in cursor.fetchall()]
    return state


def state_hash(state: Mapping[str, list[dict[str, Any]]]) -> str:
    canonical = json.dumps(state, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def diff_states(
    before: Mapping[str, list[dict[str, Any]]], after: Mapping[str, list[dict[str, Any]]]
) -> dict[str, dict[str, list[Any]]]:
    """Per table: rows added, removed, and updated (as {key, before, after}); unchanged tables omitted.

    Rows are matched by their first column, the primary key in every generated schema.
    """
    result: dict[str, dict[str, list[Any]]] = {}
    for table in sorted(set(before) | set(after)):
        old = {next(iter(r.values())): r for r in before.get(table, [])}
        new = {next(iter(r.values())): r for r in after.get(table, [])}
        added = [new[k] for k in new if k not in old]
        removed = [old[k] for k in old if k not in new]
        updated = [
            {
                "key": k,
                "before": {c: v for c, v in old[k].items() if new[k].get(c) != v},
                "after": {c: v for c, v in new[k].items() if old[k].get(c) != v},
            }
            for k in new
            if k in old and old[k] != new[k]
        ]
        if added or removed or updated:
            result[table] = {"added": added, "removed": removed, "updated": updated}
    return result
