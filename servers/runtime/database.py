"""The database handle every tool function receives, and the state views built on it.

Tools get a `Database`, never a raw connection: it offers parameterized queries only, the frozen
clock, id generation, and `reject()` for business-rule failures. The runtime opens a transaction
around each call and rolls it back on any failure, so a failed call changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, overload

from envfarm.servers.runtime.arguments import preview

SEQUENCES_TABLE = "_envfarm_sequences"
EPISODE_TABLE = "_envfarm_episode"  # one row: the episode's principal (outside the state: never hashed or diffed)
Params = Mapping[str, Any] | Sequence[Any]
MAX_PAGE = 200  # the largest `limit` a list accepts
ID_SYMBOLS = "abcdefghijkmnpqrstuvwxyz23456789"  # 32 symbols: no l, o, 0 or 1 to misread
ID_LETTERS = "abcdefghijkmnpqrstuvwxyz"
ID_DIGITS = "23456789"
OPAQUE_KEY = re.compile(r".*[_-][a-km-np-z][a-km-np-z2-9]{4}[2-9]")  # what opaque_id makes (any prefix)


def opaque_id(id_format: str, namespace: str, table: str, number: int, attempt: int = 0) -> str:
    """The opaque id of row `number` of `table` on server `namespace`: the prefix of `id_format`
    (`pat_` of `pat_{:04d}`) and six symbols of a hash of server, table, number and `attempt` (the next
    attempt after a collision): a letter, four of 32 symbols, a digit (about 2e8 ids per table).
    Deterministic, yet no id tells its neighbour's; it starts with a letter, so it never reads as a
    sequential id, and ends with a digit, so it still reads as an id. Seeds (envfarm.factory.ids) and new rows
    (`Database.next_id`) use it."""
    digest = int.from_bytes(hashlib.sha256(f"{namespace}/{table}/{number}/{attempt}".encode()).digest()[:8], "big")
    symbols = []
    for alphabet in (ID_LETTERS, ID_SYMBOLS, ID_SYMBOLS, ID_SYMBOLS, ID_SYMBOLS, ID_DIGITS):
        symbols.append(alphabet[digest % len(alphabet)])
        digest //= len(alphabet)
    return id_format.partition("{")[0] + "".join(symbols)


class Rejected(Exception):
    """A call the environment refuses (unknown id, broken rule). The message is shown to the agent."""


class Database:
    """A per-episode view of one SQLite connection, with the environment's frozen clock and the
    episode's principal. Every query given named parameters (a mapping) also gets `:now` and `:principal`
    bound, so SQL may use them without each call passing them; a parameter of the call's own by either
    name wins. `scopes` maps a table to the SQL condition (using `:principal`) a row must meet to be
    visible: `require` treats other people's rows as unknown, as a real API does. SQL may also call
    `contains(text, part)` (see `contains`)."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        now: str,
        id_formats: Mapping[str, str],
        principal: str | None = None,
        scopes: Mapping[str, str] | None = None,
        id_namespace: str | None = None,
        key_columns: dict[str, str] | None = None,
    ) -> None:
        self.connection = connection
        self.now = now
        self._id_formats = id_formats
        self.principal = principal
        self._scopes = scopes or {}
        self._id_namespace = id_namespace  # the server's name when its ids are opaque; None: sequential
        # Each table's primary-key column: `key_columns` is one memo per server (the schema never changes; the
        # server fills it from the seed, `primary_keys`), so a table's key is read at most once, not per call.
        self._key_columns = {} if key_columns is None else key_columns
        if isinstance(connection, sqlite3.Connection) and not isinstance(connection, FarmConnection):
            install_functions(connection)  # a plain connection (a `--db` file's, a test's): registered per call
        # (A handler sandbox's proxy runs its SQL on the host's connection, where `contains` is registered.)

    @overload
    def bind(self, params: Mapping[str, Any]) -> dict[str, Any]: ...
    @overload
    def bind(self, params: Sequence[Any]) -> Sequence[Any]: ...
    def bind(self, params: Params) -> Params:
        """`params` with `:now` and `:principal` bound (named parameters only; the call's own win)."""
        if isinstance(params, Mapping):
            return {"now": self.now, "principal": self.principal, **params}
        return params

    def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        cursor = self.connection.execute(sql, self.bind(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def one(self, sql: str, params: Params = ()) -> dict[str, Any] | None:
        cursor = self.connection.execute(sql, self.bind(params))
        row = cursor.fetchone()
        return None if row is None else dict(zip([d[0] for d in cursor.description], row))

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self.connection.execute(sql, self.bind(params)).fetchone()
        return None if row is None else row[0]

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run a write; return the number of rows it changed."""
        return self.connection.execute(sql, self.bind(params)).rowcount

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

    def _sequence(self, table: str) -> int:
        """The number the next id of `table` gets."""
        return int(self.scalar(f"SELECT next FROM {SEQUENCES_TABLE} WHERE table_name = ?", (table,)))

    def next_id(self, table: str) -> str:
        """Allocate the next id of `table` from its sequence (deterministic, never reused)."""
        number = self._sequence(table)
        self.connection.execute(f"UPDATE {SEQUENCES_TABLE} SET next = next + 1 WHERE table_name = ?", (table,))
        return self._id_for(table, number)

    def id_number(self, table: str) -> int:
        """The sequence number of the id `next_id(table)` gave last (a human-facing number such as an
        invoice's INV-1057 follows it, whatever the id looks like)."""
        return self._sequence(table) - 1

    def peek_id(self, table: str) -> str:
        """The id the next `next_id(table)` will give, allocating nothing."""
        return self._id_for(table, self._sequence(table))

    def _key_column(self, table: str) -> str:
        key = self._key_columns.get(table)
        if key is None:
            key = self._key_columns[table] = self.scalar("SELECT name FROM pragma_table_info(?) WHERE pk > 0", (table,))
        return str(key)

    def _id_for(self, table: str, number: int) -> str:
        """Sequence number -> id: formatted, or opaque (the first attempt no row of the table holds)."""
        id_format = self._id_formats[table]
        if self._id_namespace is None:
            return id_format.format(number)
        key = self._key_column(table)
        attempt = 0
        while True:
            new = opaque_id(id_format, self._id_namespace, table, number, attempt)
            if self.scalar(f"SELECT 1 FROM {table} WHERE {key} = ?", (new,)) is None:
                return new
            attempt += 1

    def visible(self, table: str) -> str:
        """The SQL condition on `table`'s rows that the principal may see (`1` when all)."""
        scope = self._scopes.get(table)
        return f"({scope})" if scope else "1"

    def require(self, table: str, value: Any, what: str | None = None, *, column: str | None = None) -> dict[str, Any]:
        """Return the row of `table` whose key is `value` (or whose `column` is, for another unique column)
        that the principal may see, or reject naming the unknown value as `what` (default: the column's
        name). Another principal's row is as unknown as a missing one."""
        column = column or self._key_column(table)
        sql = f"SELECT * FROM {table} WHERE {column} = :value AND {self.visible(table)}"
        row = self.one(sql, {"value": value})
        if row is None:
            raise Rejected(f"Unknown {what or column} {preview(value)}: no such record exists.")
        return row

    def page(self, sql: str, params: Mapping[str, Any], limit: int, cursor: str | None) -> Page:
        """One page of a list: the rows of `sql` (which orders them) from `cursor` on, at most `limit`,
        with the total, whether more follow and the cursor of the next page. A cursor is opaque and
        bound to its query: one from another search or with other filters is refused."""
        if not 1 <= limit <= MAX_PAGE:
            raise Rejected(f"limit must be between 1 and {MAX_PAGE}, got {limit}.")
        params = self.bind(params)
        query = hashlib.sha256(json.dumps([sql, dict(params)], sort_keys=True, default=str).encode()).hexdigest()[:8]
        offset = 0
        if cursor:
            offset = _decode_cursor(cursor, query)
        total = int(self.scalar(f"SELECT count(*) FROM ({sql})", params))
        rows = self.all(f"{sql} LIMIT {int(limit)} OFFSET {int(offset)}", params)
        more = offset + len(rows) < total
        next_cursor = _encode_cursor(offset + len(rows), query) if more else None
        return Page(rows=rows, total=total, has_more=more, cursor=next_cursor)

    def reject(self, message: str, params: Mapping[str, Any] | None = None) -> NoReturn:
        """Refuse the call with `message`; with `params`, its `{name}` placeholders are filled from them
        (and `{now}`, `{principal}`)."""
        raise Rejected(message if params is None else message.format_map(self.bind(params)))


class Page(dict[str, Any]):
    """A list page as tools return it: `rows`, `total`, `has_more`, `cursor` (None on the last page)."""

    def __init__(self, rows: list[dict[str, Any]], total: int, has_more: bool, cursor: str | None) -> None:
        super().__init__(rows=rows, total=total, has_more=has_more, cursor=cursor)


def _encode_cursor(offset: int, query: str) -> str:
    return base64.urlsafe_b64encode(f"{query}:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, query: str) -> int:
    """The offset a cursor stands for; reject one that is malformed or from another query."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        owner, _, offset = text.partition(":")
        number = int(offset)
    except (ValueError, UnicodeDecodeError):
        raise Rejected(f"cursor {cursor!r} is not a cursor this server gave out; call again without it.") from None
    if owner != query or number < 0:
        raise Rejected(
            f"cursor {cursor!r} belongs to another list or other filters; repeat the same call with it, "
            "or call again without it for the first page."
        )
    return number


_UNREAD = object()


def contains(text: Any, part: Any) -> bool | None:
    """SQL `contains(text, part)`: whether `text` holds `part`, ignoring ASCII case (as SQLite's LIKE
    and lower() do); `%`, `_` and every other character match only themselves. NULL when either is NULL,
    so `(:part IS NULL OR contains(column, :part))` is the filter of a "contains" search. It runs once per
    row scanned: ASCII text (the common case) takes the fast `str.lower`."""
    if text is None or part is None:
        return None
    if type(text) is not str or type(part) is not str:
        text, part = _text(text), _text(part)
    if text.isascii() and part.isascii():
        return part.lower() in text.lower()
    return part.translate(_ASCII_LOWER) in text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _text(value: Any) -> str:
    """A value as SQLite's text conversion gives it (a number's digits, a blob's UTF-8)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def install_functions(connection: sqlite3.Connection) -> None:
    """Register the SQL functions generated code calls (`contains`) on `connection`."""
    connection.create_function("contains", 2, contains, deterministic=True)


class FarmConnection(sqlite3.Connection):
    """A connection with the runtime's SQL functions registered once, when it opens (a `Database` over any
    other connection registers them on each call)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        install_functions(self)


class EpisodeConnection(FarmConnection):
    """An in-memory episode's connection, remembering the principal its `EPISODE_TABLE` holds: every call
    needs it, and re-reading it cost one SQL statement per call. Only `set_principal` writes that table
    (tools cannot: their SQL goes through `Database`, and the table is outside the state), so the memo
    stays true. A file's connection (`--db`) is a plain one and is read each time."""

    principal: object = _UNREAD


def read_principal(connection: sqlite3.Connection) -> str | None:
    """The principal the episode acts for (None on a server without principals)."""
    known = getattr(connection, "principal", _UNREAD)
    if known is not _UNREAD:
        return known  # type: ignore[return-value]
    row = connection.execute(f"SELECT principal FROM {EPISODE_TABLE}").fetchone()
    principal = None if row is None else row[0]
    if isinstance(connection, EpisodeConnection):
        connection.principal = principal
    return principal


def set_principal(connection: sqlite3.Connection, principal: str | None) -> None:
    connection.execute(f"CREATE TABLE IF NOT EXISTS {EPISODE_TABLE} (principal TEXT)")
    connection.execute(f"DELETE FROM {EPISODE_TABLE}")
    connection.execute(f"INSERT INTO {EPISODE_TABLE} (principal) VALUES (?)", (principal,))
    if isinstance(connection, EpisodeConnection):
        connection.principal = principal


def primary_keys(connection: sqlite3.Connection) -> dict[str, str]:
    """Each user table's primary-key column (the first, for a composite key)."""
    keys: dict[str, str] = {}
    for table in user_tables(connection):
        columns = connection.execute(f"PRAGMA table_info({table})").fetchall()
        key = min((c for c in columns if c[5] > 0), key=lambda c: c[5], default=None)
        if key is not None:
            keys[table] = key[1]
    return keys


def json_array(values: Sequence[Any] | None) -> str | None:
    """An array argument bound for SQL (`IN (SELECT value FROM json_each(:param))`); None stays None."""
    return None if values is None else json.dumps(list(values))


def comma_joined(values: Sequence[Any] | None) -> str | None:
    """An array argument stored in a text column: its items joined with ', '; None stays None."""
    return None if values is None else ", ".join(str(v) for v in values)


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


def snapshot(
    connection: sqlite3.Connection, scopes: Mapping[str, str] | None = None, principal: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Every user table's rows, in primary-key order (rowid order for ties): the episode state. With
    `scopes` (table -> SQL condition on `:principal`, as `Database.visible`), only the rows `principal` may see."""
    state: dict[str, list[dict[str, Any]]] = {}
    for table in user_tables(connection):
        scope = (scopes or {}).get(table)
        where = f" WHERE ({scope})" if scope else ""
        cursor = connection.execute(f"SELECT * FROM {table}{where} ORDER BY 1", {"principal": principal})
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
