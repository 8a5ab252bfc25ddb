"""Side by side with a foreign stdio MCP server (`envfarm bench --peer PATH`): the same client and the same
kinds of requests, timed in alternating blocks, reported as ratios ours / peer.

A foreign server has other tools, so the call mix is matched by kind: a read with no required arguments
(ours: the reference server's `search_doctors`). Its isolation is what a driver gets without a control
plane: a fresh process per episode, so its reset is a cold start, and its episode is a fresh process
plus the calls.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from clients.connect import Connections, ServerConfig, stdio_params
from envfarm.bench.latency import Probe, ResetProbe, interleaved_p50
from envfarm.bench.report import REFERENCE, PeerComparison
from envfarm.bench.startup import first_tools_list_s
from servers.runtime.farm import stdio_args

OUR_READ: tuple[str, dict[str, Any]] = ("search_doctors", {})


def peer_command(path: Path) -> list[str]:
    """A Python file runs on this Python; anything else is run as an executable."""
    path = path.resolve()
    return [sys.executable, str(path)] if path.suffix == ".py" else [str(path)]


def no_argument_read(tools: list[types.Tool]) -> str:
    """The first tool with no required arguments, preferring one marked read-only."""
    free = [t for t in tools if not t.input_schema.get("required")]
    reads = [t for t in free if t.annotations is not None and t.annotations.read_only_hint]
    if not (reads or free):
        raise LookupError("the peer has no tool that can be called without arguments")
    return (reads or free)[0].name


async def _episodes_per_s(connections: Connections, server: str, tool: str, arguments: dict[str, Any], n: int) -> float:
    await connections.tools(server)
    started = time.perf_counter()
    for i in range(n):
        async with connections.episode(server, f"peer-bench-{i}") as episode:
            for _ in range(5):
                result = await episode.call_tool(tool, arguments)
                if result.is_error:
                    raise RuntimeError(f"{server}.{tool} failed during the benchmark: {result.content}")
    return round(n / (time.perf_counter() - started), 2)


async def _compare(farm_root: Path, peer: list[str], calls: int, episodes: int) -> dict[str, Any]:
    peer_params = StdioServerParameters(command=peer[0], args=peer[1:])
    async with Client(stdio_params(farm_root, REFERENCE)) as ours, Client(peer_params) as theirs:
        tool = no_argument_read((await theirs.list_tools()).tools)
        latency = await interleaved_p50(
            {
                "ours": Probe(ours, *OUR_READ, episode="peer-bench"),
                "peer": Probe(theirs, tool, {}),
                "ours_reset": ResetProbe(ours, "peer-bench"),
            },
            calls,
        )
    targets = {
        REFERENCE: stdio_params(farm_root, REFERENCE),
        "peer": ServerConfig(command=peer[0], args=peer[1:]),
    }
    async with Connections(targets) as connections:
        ours_rate = await _episodes_per_s(connections, REFERENCE, *OUR_READ, episodes)
        peer_rate = await _episodes_per_s(connections, "peer", tool, {}, max(2, episodes // 10))
    return {"tool": tool, "latency": latency, "rates": (ours_rate, peer_rate)}


def compare_with_peer(farm_root: Path, path: Path, rounds: int, calls: int, episodes: int) -> PeerComparison:
    peer = peer_command(path)
    ours = [sys.executable, *stdio_args(farm_root, REFERENCE)]
    first_tools_list_s(ours), first_tools_list_s(peer)
    starts: dict[str, list[float]] = {"ours": [], "peer": []}
    for _ in range(rounds):
        starts["ours"].append(first_tools_list_s(ours))
        starts["peer"].append(first_tools_list_s(peer))
    cold = {k: round(statistics.median(v), 4) for k, v in starts.items()}
    measured = anyio.run(_compare, farm_root, peer, calls, episodes)
    latency = measured["latency"]
    ours_rate, peer_rate = measured["rates"]
    reset = {"ours": latency["ours_reset"], "peer": round(cold["peer"] * 1000, 4)}
    return PeerComparison(
        peer=peer,
        read_tool={"ours": OUR_READ[0], "peer": measured["tool"]},
        cold_start_s_p50=cold,
        read_call_ms_p50={"ours": latency["ours"], "peer": latency["peer"]},
        isolated_reset_ms_p50=reset,
        isolated_episodes_per_s={"ours": ours_rate, "peer": peer_rate},
        ratios={
            "cold_start": round(cold["ours"] / cold["peer"], 3),
            "read_call": round(latency["ours"] / latency["peer"], 3),
            "isolated_reset": round(reset["ours"] / reset["peer"], 4),
            "isolated_episodes_per_s": round(ours_rate / peer_rate, 2),
        },
    )
