"""Where an in-process episode's time goes, and how many SQL statements it runs.

One episode is the bench's isolated episode (`envfarm.bench.episodes`): reset, 3 reads, a booking, a list and
close on the reference server, through the driver's own in-memory connection. The profile splits the episode's
CPU by whose code runs (each function's own time, by the package it lives in): the SDK's dispatch (`mcp`,
`mcp_types`, client and server: both run in this process), the runtime (`envfarm.servers.runtime`), the
handler and SQLite (the server's tools module, the `Database` it queries through, `sqlite3`), pydantic, the
event loop (`anyio`, `asyncio`), and the rest (the standard library, builtins, the driver). SQL statements are
counted with SQLite's trace callback on every connection the server opens.

Run: `python -m envfarm.bench.hotpath [--farm DIR] [--episodes N]`; prints JSON.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from envfarm.bench.latency import PATIENT
from envfarm.bench.report import REFERENCE
from envfarm.clients.connect import Connections, farm_targets

BUCKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sdk", ("/mcp/", "/mcp_types/")),
    ("handler_sql", ("/servers/runtime/database.py", "sqlite3", "{method 'execute'", "{method 'fetch")),
    ("runtime", ("/servers/runtime/",)),
    ("handler_sql", ("/servers/",)),
    ("pydantic", ("/pydantic/", "/pydantic_core/", "pydantic_core")),
    ("event_loop", ("/anyio/", "/asyncio/", "/contextlib.py", "/typing.py")),
)


def bucket(where: str) -> str:
    """Whose code a profiled function is, from its file (or built-in name)."""
    for name, marks in BUCKETS:
        if any(mark in where for mark in marks):
            return name
    return "other"


def episode_calls(slot: str) -> list[tuple[str, dict[str, Any]]]:
    """The bench's isolated episode: 3 reads, a booking and a list (as `envfarm.bench.episodes`)."""
    return [
        ("find_patient", {"full_name": "a"}),
        ("get_slot", {"slot_id": slot}),
        ("book_appointment", {"patient_id": PATIENT, "slot_id": slot, "reason": "hotpath"}),
        ("list_appointments", {"patient_id": PATIENT}),
        ("get_slot", {"slot_id": slot}),
    ]


@contextmanager
def counted_statements() -> Iterator[Counter[str]]:
    """Every SQL statement run on a connection opened inside the block, counted by its first word."""
    counts: Counter[str] = Counter()
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(lambda sql: counts.update([sql.split(None, 1)[0].upper()]))
        return connection

    sqlite3.connect = traced  # type: ignore[assignment]
    try:
        yield counts
    finally:
        sqlite3.connect = connect


async def _episodes(farm_root: Path, slot: str, n: int, around: Callable[[], Any]) -> dict[str, Any]:
    calls = episode_calls(slot)
    async with Connections(farm_targets(farm_root, [REFERENCE])) as farm:

        async def one(i: int | str) -> None:
            async with farm.episode(REFERENCE, f"hotpath-{i}") as handle:
                for tool, arguments in calls:
                    result = await handle.call_tool(tool, arguments)
                    if result.is_error:
                        raise RuntimeError(f"{tool} failed: {result.content}")

        await one("warm-up")
        with around() as measured:
            cpu = time.process_time()
            for i in range(n):
                await one(i)
            cpu = time.process_time() - cpu
    return {"cpu_ms_per_episode": round(cpu * 1000 / n, 3), "measured": measured}


def measure(farm_root: Path, n: int) -> dict[str, Any]:
    """SQL statements per episode, plain CPU per episode, and the profiled split."""
    from envfarm.bench.latency import first_free_slot
    from envfarm.servers.runtime.farm import import_server

    slot = anyio.run(first_free_slot, import_server(farm_root, REFERENCE).build)
    with counted_statements() as counts:

        @contextmanager
        def fresh_count() -> Iterator[None]:
            counts.clear()  # the server's start and the warm-up episode are not counted
            yield

        anyio.run(_episodes, farm_root, slot, 1, fresh_count)
        sql = dict(counts)
    plain = anyio.run(_episodes, farm_root, slot, n, contextmanager(lambda: iter([None])))
    profiler = cProfile.Profile()

    @contextmanager
    def profiled() -> Iterator[cProfile.Profile]:
        profiler.enable()
        try:
            yield profiler
        finally:
            profiler.disable()

    anyio.run(_episodes, farm_root, slot, n, profiled)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    split: Counter[str] = Counter()
    pydantic_calls: Counter[str] = Counter()
    for (file, _, function), (_, calls, own, _, _) in stats.items():
        split[bucket(f"{file}:{function}")] += own
        if "pydantic_core" in function:
            if "validate_" in function:
                pydantic_calls["validations"] += calls
            elif "SchemaSerializer" in function or "to_json" in function:
                pydantic_calls["serializations"] += calls
    total = sum(split.values())
    return {
        "episodes": n,
        "sql_statements_per_episode": sum(sql.values()),
        "sql_by_kind": sql,
        "cpu_ms_per_episode": plain["cpu_ms_per_episode"],
        "profiled_split": {k: round(v / total, 3) for k, v in split.most_common()},
        "profiled_ms_per_episode": {k: round(v * 1000 / n, 3) for k, v in split.most_common()},
        "pydantic_calls_per_episode": {k: round(v / n, 1) for k, v in sorted(pydantic_calls.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--farm", type=Path, default=Path.cwd())
    parser.add_argument("--episodes", type=int, default=300)
    args = parser.parse_args()
    print(json.dumps(measure(args.farm, args.episodes), indent=1))


if __name__ == "__main__":
    main()
