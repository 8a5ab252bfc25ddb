"""Episode memory on a running farm host: what one episode costs, and whether closing comes back down.

`python -m envfarm.bench.memory --episodes 2000` starts `envfarm serve --all` and measures its RSS:

1. at start, and after a warm-up (a few episodes opened and closed, so imports and caches are paid);
2. with N named episodes open at once (2026 era, one per-episode URL, one write each): memory per episode;
3. after closing them all (`envfarm/episode/close`);
4. after N 2025-era HTTP sessions, each opened, written to and ended (DELETE closes its episode).

The target: RSS after closing back within 10% of the warmed start.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

import anyio
import httpx2
from pydantic import BaseModel, Field

from envfarm.bench.latency import PATIENT, first_free_slot
from envfarm.bench.report import REFERENCE
from envfarm.clients.connect import FarmProcess, farm_process, http_client, shared_http_client
from envfarm.servers.runtime.control import EpisodeClient
from envfarm.servers.runtime.farm import import_server
from envfarm.servers.runtime.registry import default_farm_root

WARM_UP = 50
CONCURRENCY = 50
TARGET = 0.10


class MemoryReport(BaseModel):
    episodes: int
    rss_start_mb: float = Field(description="the farm host right after it answered")
    rss_warm_mb: float = Field(description="after a warm-up of episodes opened and closed: the baseline")
    rss_open_mb: float = Field(description="with every named episode open")
    kb_per_episode: float
    rss_after_close_mb: float
    rss_after_sessions_mb: float = Field(description="after as many 2025-era sessions opened, written and ended")
    growth_after_close: float = Field(description="(after close - warm) / warm")
    growth_after_sessions: float
    target: float = TARGET
    met: bool
    seconds: float


async def _book(http: httpx2.AsyncClient, url: str, slot: str, mode: str = "auto") -> None:
    async with http_client(url, http, mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool(
            "book_appointment", {"patient_id": PATIENT, "slot_id": slot, "reason": "memory"}
        )
        if result.is_error:
            raise RuntimeError(f"book_appointment failed: {result.content}")


async def _in_waves(count: int, work: object) -> None:
    limiter = anyio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with limiter:
            await work(i)  # type: ignore[operator]

    async with anyio.create_task_group() as group:
        for i in range(count):
            group.start_soon(one, i)


async def measure(
    farm: FarmProcess, slot: str, episodes: int, progress: bool = True, warm_up: int = WARM_UP
) -> MemoryReport:
    started = time.perf_counter()
    rss_start = farm.rss_mb()
    run = uuid.uuid4().hex[:8]

    def say(text: str) -> None:
        if progress:
            print(
                f"memory: {text} (RSS {farm.rss_mb():.1f} MB, {time.perf_counter() - started:.0f} s)", file=sys.stderr
            )

    async with shared_http_client(None, pool_timeout=None) as http:

        async def open_named(prefix: str, count: int) -> None:
            await _in_waves(count, lambda i: _book(http, farm.url(REFERENCE, f"{prefix}-{i}"), slot))

        async def close_named(prefix: str, count: int) -> None:
            async with http_client(farm.url(REFERENCE), http) as control:
                for i in range(count):
                    await EpisodeClient(control, f"{prefix}-{i}").close()

        await open_named(f"warm-{run}", warm_up)
        await close_named(f"warm-{run}", warm_up)
        await _in_waves(warm_up, lambda i: _book(http, farm.url(REFERENCE), slot, "legacy"))
        rss_warm = farm.rss_mb()
        say("warmed up")
        await open_named(run, episodes)
        rss_open = farm.rss_mb()
        say(f"{episodes} named episodes open")
        await close_named(run, episodes)
        rss_closed = farm.rss_mb()
        say("all closed")
        await _in_waves(episodes, lambda i: _book(http, farm.url(REFERENCE), slot, "legacy"))
        await anyio.sleep(1.0)
        rss_sessions = farm.rss_mb()
        say(f"{episodes} 2025-era sessions opened and ended")
    growth_close = (rss_closed - rss_warm) / rss_warm
    growth_sessions = (rss_sessions - rss_warm) / rss_warm
    return MemoryReport(
        episodes=episodes,
        rss_start_mb=round(rss_start, 1),
        rss_warm_mb=round(rss_warm, 1),
        rss_open_mb=round(rss_open, 1),
        kb_per_episode=round((rss_open - rss_warm) * 1024 / episodes, 1),
        rss_after_close_mb=round(rss_closed, 1),
        rss_after_sessions_mb=round(rss_sessions, 1),
        growth_after_close=round(growth_close, 4),
        growth_after_sessions=round(growth_sessions, 4),
        met=growth_close <= TARGET and growth_sessions <= TARGET,
        seconds=round(time.perf_counter() - started, 1),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envfarm.bench.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--farm", type=Path, help="farm root (default: $ENVFARM_HOME, else the installed farm)")
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    args = parser.parse_args(argv)
    farm_root = (args.farm or default_farm_root()).resolve()
    slot = anyio.run(first_free_slot, import_server(farm_root, REFERENCE).build)
    with farm_process(farm_root) as farm:
        report = anyio.run(measure, farm, slot, args.episodes)
    text = report.model_dump_json(indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    print(json.dumps({"met": report.met}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
