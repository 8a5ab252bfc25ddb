"""Episode isolation: every episode owns a private copy of the seed state.

Which episode a request works on is the caller's (`caller.identify`): an explicit handle (`_meta`, the
per-episode URL, a 2025-era session, the token's own episode) names one of the store's episodes; no handle
means the connection's own episode (`ConnectionScope`).

Forking the seed deserializes its image into a fresh in-memory database (tens of microseconds,
about twice as fast as the backup API), so episodes are cheap (~220 KB of memory each for the clinic).
Named episodes live under one `EpisodeBudget` per process (memory, LRU across servers, idle TTL);
a closed or evicted one answers EpisodeExpired, never a silent fresh seed. An episode id is at most
`MAX_EPISODE_ID` characters, and the ids of closed episodes are remembered as fixed-size digests whose
memory counts against the same budget.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import closing
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from envfarm.servers.runtime.arguments import preview
from envfarm.servers.runtime.database import (
    EPISODE_TABLE,
    SEQUENCES_TABLE,
    EpisodeConnection,
    insert_row,
    read_principal,
    set_principal,
    snapshot,
    state_hash,
    user_tables,
)

_TRAILING_NUMBER = re.compile(r"(\d+)\D*$")
# The seed database as the factory ships it beside schema.sql and seed.json: a serialized SQLite image,
# loaded in a fraction of a millisecond instead of replaying every seed row at each start.
SEED_IMAGE = "seed.sqlite"
# Named episodes one server keeps open at most; beyond that the least recently used is closed.
DEFAULT_MAX_EPISODES = 4096
# A named episode nobody touched for this long is closed (the SDK ends idle HTTP sessions after as long).
DEFAULT_EPISODE_TTL_S = 1800.0
# An episode's memory over its database image: the deserialized pages plus SQLite's page cache.
EPISODE_MEMORY_FACTOR = 2.7
# Freed episode memory handed back to the OS at least this often.
TRIM_EVERY_BYTES = 8 << 20
# Closed or evicted ids remembered (to answer episode_expired) per process, at most ...
MAX_EXPIRED_KEYS = 1_000_000
# ... and at most this share of the episode budget: each is a 16-byte digest in an ordered table, ~155 bytes
# (measured with tracemalloc over 100,000), counted as EXPIRED_KEY_BYTES against the budget.
EXPIRED_KEY_BYTES = 160
EXPIRED_KEYS_SHARE = 8
# The longest episode id a request may name (`_meta`, per-episode URL, control plane). Longer ones are refused
# at once: ids are kept while the episode is open, and one id of a megabyte cost a megabyte each.
MAX_EPISODE_ID = 128
Clock = Callable[[], float]


def open_memory(image: bytes | None = None) -> EpisodeConnection:
    """A private in-memory database, optionally loaded from a serialized image. Autocommit mode:
    the runtime opens and ends each call's transaction itself."""
    connection = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False, factory=EpisodeConnection)
    if image is not None:
        connection.deserialize(image)
    connection.execute("PRAGMA foreign_keys = ON")
    return connection


def next_number(rows: list[dict[str, Any]], opaque: bool = False) -> int:
    """The first id number past the seed: after the row count and, for sequential ids, after any number a
    key ends with, so new ids never collide with hand-numbered seed keys (opaque ids carry no number: the
    count is it, and a new opaque id is checked against the rows anyway)."""
    keys = [] if opaque else [str(next(iter(row.values()))) for row in rows if row]
    numbers = [int(m[1]) for key in keys if (m := _TRAILING_NUMBER.search(key))]
    return max([len(rows), *numbers]) + 1


def build_seed(
    schema_sql: str,
    seed_rows: Mapping[str, list[dict[str, Any]]],
    principal: str | None = None,
    id_namespace: str | None = None,
) -> sqlite3.Connection:
    """Create the seed database: schema, rows, each table's id sequence past its seed rows, and the
    default principal (an episode forked from it acts for them until a reset names another).
    `id_namespace` is the server's when its ids are opaque (`ServerDefinition.id_namespace`).

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
        connection.execute(
            f"INSERT INTO {SEQUENCES_TABLE} (table_name, next) VALUES (?, ?)",
            (table, next_number(rows, opaque=id_namespace is not None)),
        )
    set_principal(connection, principal)
    connection.execute("COMMIT")
    return connection


def seed_image(
    schema_sql: str, seed_rows: Mapping[str, list[dict[str, Any]]], id_namespace: str | None = None
) -> bytes:
    """The serialized seed database: what the factory writes as `seed.sqlite`, byte-identical for the
    same schema, rows, id namespace and SQLite version."""
    connection = build_seed(schema_sql, seed_rows, id_namespace=id_namespace)
    try:
        return connection.serialize()
    finally:
        connection.close()


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
        broken = connection.execute("PRAGMA foreign_key_check").fetchmany(5)
        if broken:
            where = "; ".join(f"a row of {t} (rowid {r}) points at a missing row of {p}" for t, r, p, _ in broken)
            raise ValueError(f"the state breaks foreign keys: {where}")
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
            self._store.release(self._connection)
        self._connection = connection

    def episode(self, key: str | None, owner: str | None) -> sqlite3.Connection:
        """The episode a request works on: the store's episode `key` (opened from the seed on first use) for
        the token `owner`, or with no key this connection's own."""
        return self.connection if key is None else self._store.named(key, owner)

    def existing(self, key: str | None, owner: str | None) -> sqlite3.Connection:
        """As `episode`, but an episode never opened is read from the seed, not opened: reading a state
        must not cost an episode."""
        if key is None:
            return self.connection
        return self._store.peek(key, owner) or self._store.seed


class EpisodeExpired(LookupError):
    """A named episode that was closed or evicted: answering it from a fresh seed would silently
    lose the writes the caller believes are there."""


class EpisodeForbidden(PermissionError):
    """A named episode that another principal (bearer token) created."""


class EpisodeIdInvalid(ValueError):
    """An episode id the server will not keep (too long)."""


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4 << 30


def default_budget_mb() -> int:
    """Named episodes may hold an eighth of this machine's memory (at least 256 MB)."""
    return max(256, _physical_memory() // 8 >> 20)


@cache
def malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, resolved once (a sandboxed server resolves it before native loading is
    refused, see `envfarm.factory.sandbox.guard`); None where glibc is not the allocator."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here: loading it cost a server ~1 ms of start-up, before any episode was closed

    try:
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


def _trim_heap() -> None:
    """Hand freed heap back to the OS. glibc keeps freed SQLite pages in its arenas (a closed clinic
    episode left ~210 KB of RSS behind, measured by `python -m envfarm.bench.memory`); malloc_trim
    returns them. A no-op where glibc is not the allocator."""
    if (trim := malloc_trim()) is not None:
        trim(0)


class EpisodeBudget:
    """The named episodes of every server in one process, under one memory budget and an idle TTL.

    Least recently used episodes are evicted first, across servers, so `serve --all` stays within
    `max_bytes` however many servers it hosts. An episode's size is estimated when it opens (its
    database image plus SQLite's page cache of it: ~2.7x the image, measured on the clinic).
    """

    def __init__(
        self, max_mb: float | None = None, ttl_s: float | None = DEFAULT_EPISODE_TTL_S, *, clock: Clock = time.monotonic
    ) -> None:
        self.max_bytes = int((default_budget_mb() if max_mb is None else max_mb) * (1 << 20))
        self.ttl_s = ttl_s if ttl_s else None
        self._clock = clock
        self._entries: OrderedDict[tuple[EpisodeStore, str], tuple[int, float]] = OrderedDict()
        # Each open key's stores, so that ending a 2025-era session finds its episodes without scanning every open
        # one (a scan made 1,000 concurrent sessions cost O(n^2)).
        self._stores: dict[str, set[EpisodeStore]] = {}
        self.bytes = 0  # of the open episodes
        self._freed_since_trim = 0
        # Closed or evicted ids (digests salted per store) -> why, oldest first: a request naming one answers
        # episode_expired. Bounded by a share of the budget; the oldest are forgotten first.
        self._expired: OrderedDict[bytes, str] = OrderedDict()
        self.max_expired = max(1, min(MAX_EXPIRED_KEYS, self.max_bytes // EXPIRED_KEYS_SHARE // EXPIRED_KEY_BYTES))

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def expired_bytes(self) -> int:
        """The memory of the remembered closed ids, counted against `max_bytes`."""
        return len(self._expired) * EXPIRED_KEY_BYTES

    def remember(self, digest: bytes, why: str) -> None:
        """Remember a closed or evicted episode (by its digest) so that naming it answers episode_expired."""
        self._expired[digest] = why
        self._expired.move_to_end(digest)
        while len(self._expired) > self.max_expired:
            self._expired.popitem(last=False)

    def expired(self, digest: bytes) -> str | None:
        """Why the episode with this digest is gone, or None if it is not known to be."""
        return self._expired.get(digest)

    def forget(self, digest: bytes) -> None:
        """The episode is open again (a reset)."""
        self._expired.pop(digest, None)

    def add(self, store: EpisodeStore, key: str, size: int) -> None:
        self._entries[(store, key)] = (size, self._clock())
        self._stores.setdefault(key, set()).add(store)
        self.bytes += size
        self.sweep(keep=(store, key))

    def touch(self, store: EpisodeStore, key: str) -> None:
        entry = (store, key)
        size, _ = self._entries[entry]
        self._entries[entry] = (size, self._clock())
        self._entries.move_to_end(entry)
        self.sweep(keep=entry)

    def remove(self, store: EpisodeStore, key: str) -> None:
        entry = self._entries.pop((store, key), None)
        if entry is not None:
            stores = self._stores[key]
            stores.discard(store)
            if not stores:
                del self._stores[key]
            self.bytes -= entry[0]
            self._freed_since_trim += entry[0]
            if self._freed_since_trim >= TRIM_EVERY_BYTES or not self._entries:
                self._freed_since_trim = 0
                _trim_heap()

    def close_key(self, key: str) -> None:
        """Close the episode `key` on every server under this budget (a 2025-era session ended)."""
        for store in list(self._stores.get(key, ())):
            store.close(key, None, owner_check=False)

    def sweep(self, keep: tuple[EpisodeStore, str] | None = None) -> None:
        """Evict the least recently used episodes while over budget, and every idle one past the TTL."""
        oldest = self._clock() - self.ttl_s if self.ttl_s else None
        while self._entries:
            entry, (_, used) = next(iter(self._entries.items()))
            over = self.bytes + self.expired_bytes > self.max_bytes
            if entry == keep or not (over or (oldest is not None and used < oldest)):
                break
            store, key = entry
            store.evict(key)


class EpisodeStore:
    """The seed state of one server and the named episodes forked from it."""

    def __init__(
        self,
        seed: sqlite3.Connection,
        *,
        max_episodes: int = DEFAULT_MAX_EPISODES,
        persistent: sqlite3.Connection | None = None,
        budget: EpisodeBudget | None = None,
    ) -> None:
        self.seed = seed
        self._image = seed.serialize()
        self._principal = read_principal(seed)  # what every fork holds: its memo starts with it
        self.episode_bytes = int(len(self._image) * EPISODE_MEMORY_FACTOR)
        self.max_episodes = max_episodes
        self.persistent = persistent
        self.budget = budget if budget is not None else EpisodeBudget()
        self._named: OrderedDict[str, sqlite3.Connection] = OrderedDict()
        self._owners: dict[str, str] = {}
        self._salt = os.urandom(16)  # this store's closed ids are digests no other store shares

    def _digest(self, key: str) -> bytes:
        return hashlib.blake2b(key.encode(errors="surrogatepass"), digest_size=16, salt=self._salt).digest()

    @cached_property
    def seed_state(self) -> dict[str, list[dict[str, Any]]]:
        """The seed's rows, read on first need (a state diff), not at every start."""
        return snapshot(self.seed)

    @cached_property
    def seed_hash(self) -> str:
        """The seed's state hash, computed once: a reset to the seed answers it, hashing nothing."""
        return state_hash(self.seed_state)

    def fork(self) -> sqlite3.Connection:
        """A new episode's connection holding the seed: always a fresh connection.

        A closed episode's connection is never loaded again. SQLite 3.40 keeps a dangling pointer to the
        replaced schema when an image is deserialized into a connection that has already prepared
        statements: the next statement using a table-valued function (`json_each`, `pragma_table_info`)
        read freed memory and the process died with SIGSEGV on about half of all seeds (valgrind: invalid
        read in `sqlite3SchemaToIndex`). A fresh connection costs ~0.1 ms more per episode (measured by
        `envfarm bench`, figure `reset`)."""
        if self.persistent is not None:
            return self.persistent
        connection = open_memory(self._image)
        connection.principal = self._principal
        return connection

    def release(self, connection: sqlite3.Connection) -> None:
        """An episode's connection is no longer used: close it (the seed and a persistent file stay)."""
        if connection is self.persistent or connection is self.seed:
            return
        connection.close()

    def _check(self, key: str, owner: str | None, *, reopen: bool = False) -> None:
        if not reopen and key not in self._named and (why := self.budget.expired(self._digest(key))) is not None:
            raise EpisodeExpired(
                f"episode {preview(key)} was {why}; its state is gone. Start a new episode "
                "(a new id, or envfarm/episode/reset on this one)."
            )
        if self._owners.get(key, owner) != owner:
            raise EpisodeForbidden(f"episode {preview(key)} belongs to another token")

    def peek(self, key: str, owner: str | None = None) -> sqlite3.Connection | None:
        """The open episode called `key`, or None if it was never opened; never opens one."""
        if self.persistent is not None:
            return self.persistent
        self._check(key, owner)
        return self._named.get(key)

    def named(self, key: str, owner: str | None = None) -> sqlite3.Connection:
        """The episode called `key`, forked from the seed on first use; an expired one raises
        EpisodeExpired and another owner's raises EpisodeForbidden."""
        if self.persistent is not None:
            return self.persistent
        self._check(key, owner)
        connection = self._named.get(key)
        if connection is None:
            connection = self.fork()
            self.replace(key, connection, owner)
        else:
            self._named.move_to_end(key)
            self.budget.touch(self, key)
        return connection

    def replace(self, key: str, connection: sqlite3.Connection, owner: str | None = None) -> None:
        """Make `connection` the episode called `key` (open again if it had expired), closing the one it replaces."""
        self._check(key, owner, reopen=True)
        self._drop(key)
        self.budget.forget(self._digest(key))
        self._named[key] = connection
        if owner is not None:
            self._owners[key] = owner
        self.budget.add(self, key, self.episode_bytes)
        while len(self._named) > self.max_episodes:
            self.evict(next(iter(self._named)))

    def _drop(self, key: str) -> sqlite3.Connection | None:
        connection = self._named.pop(key, None)
        if connection is not None:
            self.release(connection)
            self.budget.remove(self, key)
        return connection

    def _expire(self, key: str, why: str) -> None:
        self._owners.pop(key, None)
        self.budget.remember(self._digest(key), why)

    def evict(self, key: str) -> None:
        """Close `key` to free memory; later requests for it get EpisodeExpired."""
        if self._drop(key) is not None:
            self._expire(key, "evicted (memory budget or idle time)")

    def close(self, key: str, owner: str | None = None, *, owner_check: bool = True) -> bool:
        if owner_check:
            self._check(key, owner, reopen=True)
        closed = self._drop(key) is not None
        if closed:
            self._expire(key, "closed")
        return closed

    def __len__(self) -> int:
        return len(self._named)


def _check_persistent(path: Path, tables: set[str]) -> None:
    if not path.is_file():
        raise ValueError(f"--db {path}: not a file")
    if path.stat().st_size == 0:
        raise ValueError(f"--db {path}: the file is empty; delete it and the server creates it from the seed")
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as probe:
            found = set(user_tables(probe))
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"--db {path}: not a SQLite database ({exc})") from exc
    if found != tables:
        missing = ", ".join(sorted(tables - found)) or "none"
        raise ValueError(
            f"--db {path}: holds another database (tables missing: {missing}; extra: "
            f"{', '.join(sorted(found - tables)) or 'none'}); pass a new path or this server's own file"
        )


def open_persistent(path: Path, seed: sqlite3.Connection) -> sqlite3.Connection:
    """A file-backed state for manual probing: created from the seed once, WAL, survives restarts.
    An existing file must hold this server's tables: an empty file or another server's database is
    refused here (ValueError) rather than failing every call with `no such table`."""
    is_new = not path.exists()
    if not is_new:
        _check_persistent(path, set(user_tables(seed)))
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    if is_new:
        seed.backup(connection)
    elif connection.execute(f"SELECT 1 FROM sqlite_master WHERE name = '{EPISODE_TABLE}'").fetchone() is None:
        set_principal(connection, read_principal(seed))  # a file from before principals existed
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA foreign_keys = ON")
    return connection
