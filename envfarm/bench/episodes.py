"""Isolated-episode throughput through the driver's own connections (`envfarm.clients.connect`): each
episode is "reset + 5 calls + close" on its own episode of the reference server, many at a time,
in-process, over one multiplexed stdio process, and over the HTTP farm host; and the SDK's floor for
the same seven requests in-process (an echo tool and a control plane that does nothing)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Extension, MCPServer, MethodBinding

from envfarm.bench.latency import PATIENT
from envfarm.bench.report import REFERENCE
from envfarm.clients.connect import Connections, Transport, farm_targets
from envfarm.servers.runtime.control import EXTENSION, CloseResult, EpisodeParams, Method, ResetParams, ResetResult

FLOOR = "floor"
Calls = Sequence[tuple[str, dict[str, Any]]]


async def _rate(targets: Mapping[str, Any], server: str, calls: Calls, n: int, concurrency: int) -> float:
    """Finished episodes per second of wall time; an episode with an unexpected result raises."""
    limiter = anyio.CapacityLimiter(concurrency)
    run = f"tp-{time.monotonic_ns()}"
    async with Connections(targets) as farm:

        async def episode(i: int | str) -> None:
            async with limiter, farm.episode(server, f"{run}-{i}") as handle:
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


async def episodes_per_s(
    farm_root: Path, slot: str, n: int, transport: Transport, base_url: str | None = None, concurrency: int = 16
) -> float:
    """Episodes per second on the reference server: 3 reads, a booking and a list after the reset."""
    calls = [
        ("find_patient", {"full_name": "a"}),
        ("get_slot", {"slot_id": slot}),
        ("book_appointment", {"patient_id": PATIENT, "slot_id": slot, "reason": "throughput"}),
        ("list_appointments", {"patient_id": PATIENT}),
        ("get_slot", {"slot_id": slot}),
    ]
    targets = farm_targets(farm_root, [REFERENCE], transport, base_url)
    return await _rate(targets, REFERENCE, calls, n, concurrency)


class _NoEpisodes(Extension):
    """The episode control plane with nothing behind it: reset and close answer at once."""

    identifier = EXTENSION

    async def _reset(self, _: Any, params: ResetParams) -> ResetResult:
        return ResetResult(episode=params.episode, hash="", principal=None, instructions=None)

    async def _close(self, _: Any, params: EpisodeParams) -> CloseResult:
        return CloseResult(episode=params.episode, closed=True, open_episodes=0)

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding(method=Method.RESET, params_type=ResetParams, handler=self._reset),
            MethodBinding(method=Method.CLOSE, params_type=EpisodeParams, handler=self._close),
        ]


def floor_episode_server() -> MCPServer:
    """The bare SDK with an echo tool and a do-nothing control plane: what seven requests cost at least."""
    server = MCPServer(FLOOR, log_level="WARNING", extensions=[_NoEpisodes()])

    async def echo(text: str) -> str:
        return text

    server.add_tool(echo, name="echo", description="Echo the text back.")
    return server


async def floor_episodes_per_s(n: int, concurrency: int = 16) -> float:
    """The same episode shape (reset + 5 calls + close, through `Connections`) on the floor server, in-process."""
    return await _rate({FLOOR: floor_episode_server()}, FLOOR, [("echo", {"text": "hi"})] * 5, n, concurrency)
