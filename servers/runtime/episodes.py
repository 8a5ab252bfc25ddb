"""Episode isolation: every episode owns a private copy of the seed state.

An episode is found, in order, by:
1. `_meta["envfarm/episode"]` on the request (works on every transport and protocol era);
2. the `X-Envfarm-Episode` header, which the farm host sets for per-episode URLs
   (`/<server>/episodes/<id>/mcp`);
3. the legacy HTTP `Mcp-Session-Id` (one episode per 2025-era HTTP session);
4. otherwise the connection: an in-memory client or a stdio process gets its own episode; a
   2026-era HTTP request with no handle shares the server's default episode.

Forking the seed deserializes its image into a fresh in-memory database (tens of microseconds,
about twice as fast as the backup API), so episodes are cheap (~100 KB each for the clinic); named
episodes are kept in an LRU bounded by `max_episodes`.
"""

from __future__ import annotations

import re
import sqlite3
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from servers.runtime.control import EPISODE_HEADER, EPISODE_META_KEY
from servers.runtime.database import (
    EPISODE_TABLE,
    SEQUENCES_TABLE,
    insert_row,
    read_principal,
    set_principal,
    snapshot,
    state_hash,
    user_tables,
)

_TRAILING_NUMBER = re.compile(r"(\d+)\D*$")
SESSION_HEADER = "mcp-session-id"
# Named episodes one server keeps open at most; beyond that the least recently used is closed.
DEFAULT_MAX_EPISODES = 4096


def open_memory(image: bytes | None = None) -> sqlite3.Connection:
    """A private in-memory database, optionally loaded from a serialized image. Autocommit mode:
    the runtime opens and ends each call's transaction itself."""
    connection = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    if image is not None:
        connection.deserialize(image)
    connection.execute("PRAGMA foreign_keys = ON")
    return connection


def next_number(rows: list[dict[str, Any]]) -> int:
    """The first id number past the seed: after the row count and after any number a key ends with,
    so new ids never collide with hand-numbered seed keys."""
    numbers = [int(m[1]) for row in rows if row and (m := _TRAILING_NUMBER.search(str(next(iter(row.values())))))]
    return max([len(rows), *numbers]) + 1


def build_seed(
    schema_sql: str, seed_rows: Mapping[str, list[dict[str, Any]]], principal: str | None = None
) -> sqlite3.Connection:
    """Create the seed database: schema, rows, each table's id sequence past its seed rows, and the
    default principal (an episode forked from it acts for them until a reset names another).

    Foreign keys are checked at commit, so seed rows may point at rows that come later.
    """
    connection = open_memory()
    connection.executescript(schema_sql)
    connection.execute("BEGIN")
    connection.execute("PRAGMA defer_foreign_keys = ON")
    for table, rows in seed_rows.items():
        for row in rows:
            insert_row(connection, table, row)
    for table in user_tables(connection):
        rows = seed_rows.get(table, [])
        connection.execute(f"INSERT INTO {SEQUENCES_TABLE} (table_name, next) VALUES (?, ?)", (table, next_number(rows)))
    set_principal(connection, principal)
    connection.execute("COMMIT")
    return connection


def load_state(connection: sqlite3.Connection, state: Mapping[str, list[dict[str, Any]]]) -> None:
    """Replace the rows of the tables named in `state`, atomically; raise ValueError naming what failed."""
    known = set(user_tables(connection))
    unknown = sorted(set(state) - known)
    if unknown:
        raise ValueError(f"unknown tables {unknown}; this server has {sorted(known)}")
    connection.execute("BEGIN")
    try:
        connection.execute("PRAGMA defer_foreign_keys = ON")
        for table, rows in state.items():
            connection.execute(f"DELETE FROM {table}")
            for n, row in enumerate(rows):
                try:
                    insert_row(connection, table, row)
                except sqlite3.Error as exc:
                    raise ValueError(f"state.{table}[{n}]: {exc}") from exc
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


class ConnectionScope:
    """What the server lifespan yields: the episode of one connection, made on first use."""

    def __init__(self, store: EpisodeStore) -> None:
        self._store = store
        self._connection: sqlite3.Connection | None = None

    @property
    def connection(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = self._store.fork()
        return self._connection

    def replace(self, connection: sqlite3.Connection) -> None:
        if self._connection is not None and self._connection is not connection:
            self._connection.close()
        self._connection = connection


class EpisodeStore:
    """The seed state of one server and the named episodes forked from it."""

    def __init__(
        self,
        seed: sqlite3.Connection,
        *,
        max_episodes: int = DEFAULT_MAX_EPISODES,
        persistent: sqlite3.Connection | None = None,
    ) -> None:
        self.seed = seed
        self.seed_state = snapshot(seed)
        self.seed_hash = state_hash(self.seed_state)  # a reset to the seed answers this, hashing nothing
        self._image = seed.serialize()
        self.max_episodes = max_episodes
        self.persistent = persistent
        self._named: OrderedDict[str, sqlite3.Connection] = OrderedDict()

    def fork(self) -> sqlite3.Connection:
        if self.persistent is not None:
            return self.persistent
        return open_memory(self._image)

    def named(self, key: str) -> sqlite3.Connection:
        """The episode called `key`, forked from the seed on first use."""
        if self.persistent is not None:
            return self.persistent
        connection = self._named.get(key)
        if connection is None:
            connection = self.fork()
            self.replace(key, connection)
        else:
            self._named.move_to_end(key)
        return connection

    def replace(self, key: str, connection: sqlite3.Connection) -> None:
        """Make `connection` the episode called `key`, closing the one it replaces."""
        self.close(key)
        self._named[key] = connection
        while len(self._named) > self.max_episodes:
            _, evicted = self._named.popitem(last=False)
            evicted.close()

    def close(self, key: str) -> bool:
        connection = self._named.pop(key, None)
        if connection is not None:
            connection.close()
        return connection is not None

    def __len__(self) -> int:
        return len(self._named)


def open_persistent(path: Path, seed: sqlite3.Connection) -> sqlite3.Connection:
    """A file-backed state for manual probing: created from the seed once, WAL, survives restarts."""
    is_new = not path.exists()
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    if is_new:
        seed.backup(connection)
    elif connection.execute(f"SELECT 1 FROM sqlite_master WHERE name = '{EPISODE_TABLE}'").fetchone() is None:
        set_principal(connection, read_principal(seed))  # a file from before principals existed
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA foreign_keys = ON")
    return connection


def resolve_key(meta: Mapping[str, Any] | None, request: Any) -> str | None:
    """The explicit episode handle of a request, or None to use the connection's own episode."""
    if meta and (key := meta.get(EPISODE_META_KEY)):
        return str(key)
    headers = getattr(request, "headers", None)
    if headers is not None:
        if key := headers.get(EPISODE_HEADER):
            return str(key)
        if session := headers.get(SESSION_HEADER):
            return f"session:{session}"
    return None
