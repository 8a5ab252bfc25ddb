"""Against a running farm host: start-up, memory, HTTP latency in both protocol eras, isolated episodes one at a
time in both eras, and many concurrent isolated episodes checked for leaks."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator

import anyio
import httpx2

from envfarm.bench.latency import PATIENT, Probe, interleaved_p50
from envfarm.bench.report import REFERENCE, IsolatedEras, SessionRun
from envfarm.bench.sizes import Sizes
from envfarm.clients.connect import Era, FarmProcess, http_client, shared_http_client
from envfarm.servers.runtime.control import EpisodeClient

PROGRESS_EVERY_S = 10.0
ERA_NAMES: dict[str, str] = {"auto": "2026-07-28 (per-episode URL)", "legacy": "2025-11-25 (Mcp-Session-Id)"}
ERAS: tuple[Era, Era] = ("auto", "legacy")
SETTLE_S = 0.1  # after a block, before reading the farm's CPU: a session's teardown may finish after its DELETE


async def serve_all_section(
    farm: FarmProcess, floor_url: str, servers: list[str], slot: str, sizes: Sizes
) -> tuple[float, float, dict[str, float], IsolatedEras, list[SessionRun]]:
    """Against the running farm: time until every server lists its tools, RSS, HTTP call p50 in both
    eras beside the SDK floor, the eras' isolated episodes (before the concurrent runs, which leave the host
    with a larger heap), then the concurrent-episodes runs."""
    started = time.perf_counter()
    async with shared_http_client() as http:
        for name in servers:
            async with http_client(farm.url(name), http) as client:
                await client.list_tools()
        ready_s = farm.answered_after_s + time.perf_counter() - started
        rss_mb = farm.rss_mb()
        read = {"slot_id": slot}
        async with (
            http_client(farm.url(REFERENCE), http) as modern,
            http_client(farm.url(REFERENCE), http, "legacy") as legacy,
            http_client(floor_url, http) as floor,
        ):
            latencies = await interleaved_p50(
                {
                    "http": Probe(modern, "get_slot", read, "bench-latency"),
                    "http_legacy": Probe(legacy, "get_slot", read, "bench-latency"),
                    "floor_http": Probe(floor, "echo", {"text": "hi"}),
                },
                sizes.calls,
            )
    isolated = await isolated_eras(farm, slot, sizes.era_episodes, sizes.era_rounds)
    runs = [await concurrent_episodes(farm, slot, sizes.sessions, mode) for mode in ERAS]
    return ready_s, rss_mb, latencies, isolated, runs


async def isolated_eras(farm: FarmProcess, slot: str, n: int, rounds: int) -> IsolatedEras:
    """`n` episodes one at a time per era per round, the same episode as `concurrent_episodes` (book, list, close;
    each its own MCP client), in blocks alternating the eras (the era that goes first alternates by round, so a
    drift of the machine's load falls on both); each era's server CPU per episode from the farm process's CPU over
    its blocks. One untimed episode per era first, so neither era's first block pays for warming up."""
    run = uuid.uuid4().hex[:8]
    cpu_s: dict[Era, float] = dict.fromkeys(ERAS, 0.0)
    failed: dict[Era, int] = dict.fromkeys(ERAS, 0)
    errors: list[str] = []
    started = time.perf_counter()

    async def block(mode: Era, first: int, count: int) -> int:
        """`count` episodes of `mode` one after another; how many failed."""
        failures = 0
        async with shared_http_client(pool_timeout=None) as http:
            for i in range(first, first + count):
                try:
                    ok = await one_episode(farm, http, mode, slot, f"{run}-{mode}", i, _no_barrier, budget_s=60.0)
                except Exception as exc:  # noqa: BLE001 - a failed episode is counted and sampled, never dropped
                    errors.append("; ".join(f"{type(e).__name__}: {e}" for e in _leaves(exc))[:300])
                    ok = False
                failures += not ok
        await anyio.sleep(SETTLE_S)
        return failures

    for mode in ERAS:
        await block(mode, n * rounds, 1)  # warm-up, not counted
    for r in range(rounds):
        for mode in ERAS if r % 2 == 0 else ERAS[::-1]:
            before = farm.cpu_s()
            failed[mode] += await block(mode, r * n, n)
            cpu_s[mode] += farm.cpu_s() - before
    return IsolatedEras(
        episodes_per_block=n,
        rounds=rounds,
        server_cpu_ms_per_episode={ERA_NAMES[m]: round(cpu_s[m] * 1000 / (n * rounds), 2) for m in ERAS},
        failed={ERA_NAMES[m]: failed[m] for m in ERAS},
        error_samples=sorted(set(errors))[:5],
        seconds=round(time.perf_counter() - started, 2),
    )


async def _no_barrier() -> None:
    """An isolated episode waits for no one after its write."""


async def one_episode(
    farm: FarmProcess,
    http: httpx2.AsyncClient,
    mode: Era,
    slot: str,
    run: str,
    i: int,
    after_write: Callable[[], Awaitable[None]],
    budget_s: float,
) -> bool:
    """One episode as its own MCP client: book `slot`, `after_write`, read back, end the episode (2026 era:
    `envfarm/episode/close`; 2025 era: the session's DELETE, which closes its episode), so both eras do the same
    work. True when it saw exactly its own booking; False for a leak (a refused write, or someone else's booking);
    a failure raises."""
    reason = f"bench {run} episode {i}"
    # 2026 era: no transport session, so the episode is named by its URL; 2025 era: by the HTTP session.
    url = farm.url(REFERENCE, f"{run}-{i}") if mode == "auto" else farm.url(REFERENCE)
    async with http_client(url, http, mode) as client:
        write = await client.call_tool("book_appointment", {"patient_id": PATIENT, "slot_id": slot, "reason": reason})
        await after_write()
        read = await client.call_tool("list_appointments", {"patient_id": PATIENT, "status": "booked"})
        seen = [
            a["reason"]
            for a in (read.structured_content or {}).get("appointments", [])
            if a["reason"].startswith(f"bench {run} ")
        ]
        closed = True
        if mode == "auto":  # a 2025-era session's episode ends with the session (DELETE); this one is closed
            closed = (await EpisodeClient(client, None, timeout=budget_s).close()).closed  # the run bounds it
    return not write.is_error and not read.is_error and seen == [reason] and closed


async def concurrent_episodes(
    farm: FarmProcess,
    slot: str,
    n: int,
    mode: Era,
    budget_s: float = 300.0,
    barrier_s: float = 60.0,
    connections: int | None = None,
) -> SessionRun:
    """`n` MCP clients at once, each its own episode (`one_episode`): book the same slot, wait until all have
    booked, then read back and end the episode. Isolated episodes all succeed and each sees
    exactly its own booking; a shared state shows up as "slot already taken" or as someone else's booking.

    The run degrades instead of deadlocking on its own load: a request waits for a pooled connection
    as long as it needs (no PoolTimeout; the whole run has `budget_s`), the all-booked barrier gives up
    after `barrier_s` (the episodes still read back, only no longer all at once), and progress is
    printed while it runs. Connections are unbounded by default: an open session may hold one (a
    standing stream), and a pool smaller than `n` would otherwise starve the sessions still to book."""
    run = uuid.uuid4().hex[:8]
    booked = 0
    everyone_booked = anyio.Event()
    completed = leaks = 0
    errors: list[str] = []

    def arrive() -> None:
        nonlocal booked
        booked += 1
        if booked == n:
            everyone_booked.set()

    async def episode(i: int, http: httpx2.AsyncClient) -> None:
        nonlocal completed, leaks
        arrived = False

        async def all_booked() -> None:
            nonlocal arrived
            arrive()
            arrived = True
            with anyio.move_on_after(barrier_s):
                await everyone_booked.wait()

        try:
            if await one_episode(farm, http, mode, slot, run, i, all_booked, budget_s):
                completed += 1
            else:
                leaks += 1
        except Exception as exc:  # noqa: BLE001 - a failed episode is counted and sampled, never dropped
            errors.append("; ".join(f"{type(e).__name__}: {e}" for e in _leaves(exc))[:300])
            if not arrived:
                arrive()

    async def report_progress() -> None:
        while True:
            await anyio.sleep(PROGRESS_EVERY_S)
            print(
                f"bench:   {ERA_NAMES[mode]}: {booked}/{n} booked, {completed} done, {leaks} leaks, "
                f"{len(errors)} errors, {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    started, cpu_before = time.perf_counter(), farm.cpu_s()
    # A legacy session keeps a GET stream open for its whole life: it always gets its own connection.
    async with shared_http_client(None if mode == "legacy" else connections, pool_timeout=None) as http:
        with anyio.move_on_after(budget_s):
            async with anyio.create_task_group() as group:
                group.start_soon(report_progress)
                async with anyio.create_task_group() as episodes:
                    for i in range(n):
                        episodes.start_soon(episode, i, http)
                group.cancel_scope.cancel()
    return SessionRun(
        era=ERA_NAMES[mode],
        sessions=n,
        completed=completed,
        leaks=leaks,
        errors=n - completed - leaks,
        error_samples=sorted(set(errors))[:5],
        seconds=round(time.perf_counter() - started, 2),
        server_cpu_ms_per_episode=round((farm.cpu_s() - cpu_before) * 1000 / n, 2),
        server_rss_mb_after=round(farm.rss_mb(), 1),
    )


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The real failures inside (nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc
