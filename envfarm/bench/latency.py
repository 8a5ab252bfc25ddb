"""Latency probes: each measurement is taken beside the same measurement on a do-nothing SDK server
(the floor), in alternating blocks, so a slow machine and a slow runtime can be told apart."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer

from envfarm.bench.report import REFERENCE
from envfarm.clients.connect import free_port, stdio_params
from envfarm.servers.runtime.control import EpisodeClient

PATIENT = "pat_dc63z3"

# A do-nothing server: the SDK's own floor for each transport, measured in the same run.
FLOOR_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer
from mcp_types import RequestParamsMeta

server = MCPServer("floor", log_level="WARNING")


@server.tool()
async def echo(text: str) -> str:
    return text


if len(sys.argv) > 1:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
else:
    server.run("stdio")
"""


def p50_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 4)


def reset_p50(definition: Any, n: int) -> tuple[float, float]:
    """p50 of forking a fresh episode (the runtime's way) and of the SQLite backup API (the anchor)."""
    from envfarm.servers.runtime.episodes import EpisodeStore

    store = EpisodeStore(definition.seed())
    forks: list[float] = []
    backups: list[float] = []
    for _ in range(n):
        started = time.perf_counter()
        connection = store.fork()
        forks.append(time.perf_counter() - started)
        store.release(connection)
        started = time.perf_counter()
        target = sqlite3.connect(":memory:")
        store.seed.backup(target)
        backups.append(time.perf_counter() - started)
        target.close()
    return p50_ms(forks), p50_ms(backups)


@dataclass(frozen=True)
class Probe:
    """One tool call to time, through an entered client."""

    client: Client
    tool: str
    arguments: dict[str, Any]
    episode: str | None = None

    async def call(self) -> None:
        result = await EpisodeClient(self.client, self.episode).call_tool(self.tool, self.arguments)
        if result.is_error:
            raise RuntimeError(f"{self.tool} failed during the benchmark: {result.content}")


@dataclass(frozen=True)
class ResetProbe:
    """One control-plane reset of an episode back to the seed, through an entered client."""

    client: Client
    episode: str

    async def call(self) -> None:
        await EpisodeClient(self.client, self.episode).reset()


async def interleaved_p50(probes: dict[str, Probe | ResetProbe], n: int, rounds: int = 5) -> dict[str, float]:
    """p50 of each probe over `n` calls, taken in alternating blocks after a warm-up, so a subject and
    its floor see the same machine load (other work on a shared machine moves single-shot numbers)."""
    samples: dict[str, list[float]] = {name: [] for name in probes}
    for probe in probes.values():
        for _ in range(10):
            await probe.call()
    for _ in range(rounds):
        for name, probe in probes.items():
            for _ in range(max(1, n // rounds)):
                started = time.perf_counter()
                await probe.call()
                samples[name].append(time.perf_counter() - started)
    return {name: p50_ms(values) for name, values in samples.items()}


@contextlib.contextmanager
def floor_http_server() -> Iterator[str]:
    """The do-nothing SDK server over streamable HTTP; yields its URL once it answers."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", FLOOR_SERVER, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.perf_counter() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.perf_counter() > deadline:
                    raise RuntimeError("the floor HTTP server did not start") from None
                time.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def floor_server() -> MCPServer:
    server = MCPServer("floor", log_level="WARNING")

    async def echo(text: str) -> str:
        return text

    server.add_tool(echo, name="echo", description="Echo the text back.")
    return server


async def local_latencies(farm_root: Path, build: Callable[[], MCPServer], slot: str, n: int) -> dict[str, float]:
    """Reference-server call p50 in-process and over stdio, each beside the SDK floor."""
    read = {"slot_id": slot}
    echo = {"text": "hi"}
    async with Client(build()) as ours, Client(floor_server()) as floor:
        results = await interleaved_p50(
            {
                "inprocess": Probe(ours, "get_slot", read, "bench-latency"),
                "floor_inprocess": Probe(floor, "echo", echo),
            },
            n,
        )
    async with (
        Client(stdio_params(farm_root, REFERENCE)) as ours,
        Client(StdioServerParameters(command=sys.executable, args=["-c", FLOOR_SERVER])) as floor,
    ):
        results |= await interleaved_p50(
            {
                "stdio": Probe(ours, "get_slot", read, "bench-latency"),
                "floor_stdio": Probe(floor, "echo", echo),
                "reset_stdio": ResetProbe(ours, "bench-latency"),
            },
            n,
        )
    return results


async def first_free_slot(build: Callable[[], MCPServer]) -> str:
    """A slot every fresh episode can book: the write each concurrent episode makes."""
    async with Client(build()) as client:
        doctors = (await client.call_tool("search_doctors", {})).structured_content or {}
        doctor = doctors["doctors"][0]["doctor_id"]
        slots = await client.call_tool("list_free_slots", {"doctor_id": doctor, "starts_after": "2000-01-01T00:00:00Z"})
        for row in (slots.structured_content or {})["slots"]:
            booked = await EpisodeClient(client, "probe").call_tool(
                "book_appointment", {"patient_id": PATIENT, "slot_id": row["slot_id"], "reason": "probe"}
            )
            if not booked.is_error:
                return str(row["slot_id"])
    raise RuntimeError(f"{REFERENCE} has no slot a fresh episode can book")
