"""Isolated-episode throughput through the driver's own connections (`clients.connect`): each
episode is "reset + 5 calls + close" on its own episode of the reference server, many at a time,
in-process, over one multiplexed stdio process, and over the HTTP farm host."""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from clients.connect import Connections, Transport, farm_targets
from envfarm.bench.latency import PATIENT
from envfarm.bench.report import REFERENCE


async def episodes_per_s(
    farm_root: Path, slot: str, n: int, transport: Transport, base_url: str | None = None, concurrency: int = 16
) -> float:
    """Finished episodes per second of wall time; an episode with an unexpected result raises."""
    calls = [
        ("find_patient", {"full_name": "a"}),
        ("get_slot", {"slot_id": slot}),
        ("book_appointment", {"patient_id": PATIENT, "slot_id": slot, "reason": "throughput"}),
        ("list_appointments", {"patient_id": PATIENT}),
        ("get_slot", {"slot_id": slot}),
    ]
    limiter = anyio.CapacityLimiter(concurrency)
    run = f"tp-{time.monotonic_ns()}"
    async with Connections(farm_targets(farm_root, [REFERENCE], transport, base_url)) as farm:

        async def episode(i: int | str) -> None:
            async with limiter, farm.episode(REFERENCE, f"{run}-{i}") as handle:
                for tool, arguments in calls:
                    result = await handle.call_tool(tool, arguments)
                    if result.is_error:
                        raise RuntimeError(f"{tool} failed in episode {i}: {result.content}")

        # Before the clock: connect (for stdio, start the process) and one episode, as the latency probes
        # warm up: a server imports its tools and builds each argument model on the first call.
        await episode("warm-up")
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for i in range(n):
                group.start_soon(episode, i)
        return round(n / (time.perf_counter() - started), 1)
