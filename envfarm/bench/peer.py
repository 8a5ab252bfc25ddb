"""Side by side with a foreign stdio MCP server (`envfarm bench --peer PATH`): the same client and the same
kinds of requests, timed in alternating blocks, reported as ratios ours / peer.

A foreign server has other tools, so the call mix is matched by kind: a read with no required arguments
(ours: the reference server's `search_doctors`). Its isolation is what a driver gets without a control
plane: a fresh process per episode, so its reset is a cold start, and its episode is a fresh process
plus the calls.

The peer is a command line with its own interpreter (`/venv/bin/python server.py`: an mcp 1.x server does
not import on ours), or a `.py` file run on this Python. Cold starts alternate who goes first, round by
round, so neither side always starts on a machine the other just warmed or loaded. What either server
writes to stderr goes to a log file, never into the bench's output.
"""

from __future__ import annotations

import os
import shlex
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from envfarm.bench.latency import Probe, ResetProbe, interleaved_p50
from envfarm.bench.report import REFERENCE, PeerComparison
from envfarm.bench.startup import cold_start_sample
from envfarm.clients.connect import Connections, ServerConfig, stdio_params
from envfarm.servers.runtime.farm import stdio_args

OUR_READ: tuple[str, dict[str, Any]] = ("search_doctors", {})


def peer_command(peer: str) -> list[str]:
    """The peer's argv. A path to a file: a `.py` file runs on this Python, anything else is run as an
    executable. Otherwise `peer` is a command line, split as a shell would (`/venv/bin/python server.py`),
    its words naming an existing file made absolute (the peer starts in a scratch folder). Raises ValueError
    for an empty command or a program that is neither a file nor on PATH."""
    whole = Path(peer).expanduser()
    if whole.is_file():
        whole = whole.absolute()  # not resolved: a venv's python is a symlink that must stay the venv's
        return [sys.executable, str(whole)] if whole.suffix == ".py" else [str(whole)]
    try:
        words = shlex.split(peer)
    except ValueError as exc:
        raise ValueError(f"--peer {peer!r}: not a command line ({exc})") from None
    if not words:
        raise ValueError("--peer: the command is empty")
    argv = [str(Path(w).absolute()) if not w.startswith("-") and Path(w).is_file() else w for w in words]
    if not Path(argv[0]).is_file() and shutil.which(argv[0]) is None:
        raise ValueError(f"--peer {peer!r}: {words[0]!r} is neither a file nor a program on PATH")
    return argv


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


async def _compare(farm_root: Path, peer: list[str], calls: int, episodes: int, log: TextIO) -> dict[str, Any]:
    peer_params = StdioServerParameters(command=peer[0], args=peer[1:])
    async with (
        Client(stdio_client(stdio_params(farm_root, REFERENCE), errlog=log)) as ours,
        Client(stdio_client(peer_params, errlog=log)) as theirs,
    ):
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


def cold_start_order(rounds: int) -> list[tuple[str, str]]:
    """Who starts first in each cold-start round: ours, then the peer, then ours again, and so on."""
    return [("ours", "peer") if n % 2 == 0 else ("peer", "ours") for n in range(rounds)]


def compare_with_peer(
    farm_root: Path, peer_cli: str, rounds: int, calls: int, episodes: int, log: Path | None = None
) -> PeerComparison:
    """Measure ours and the peer (`peer_cli`, see `peer_command`) side by side; both servers' stderr is
    appended to `log` (default: discarded)."""
    peer = peer_command(peer_cli)
    argv = {"ours": [sys.executable, *stdio_args(farm_root, REFERENCE)], "peer": peer}
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
    with open(log if log is not None else os.devnull, "a", encoding="utf-8") as errors:
        for side in ("ours", "peer"):  # warm-up: bytecode caches, the page cache
            cold_start_sample(argv[side], stderr=errors)
        starts: dict[str, list[float]] = {"ours": [], "peer": []}
        for order in cold_start_order(rounds):
            for side in order:
                starts[side].append(cold_start_sample(argv[side], stderr=errors)[0])
        cold = {k: round(statistics.median(v), 4) for k, v in starts.items()}
        measured = anyio.run(_compare, farm_root, peer, calls, episodes, errors)
    latency = measured["latency"]
    ours_rate, peer_rate = measured["rates"]
    reset = {"ours": latency["ours_reset"], "peer": round(cold["peer"] * 1000, 4)}
    return PeerComparison(
        peer=peer,
        log=str(log) if log is not None else None,
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
