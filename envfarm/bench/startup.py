"""Start-up: one stdio server from spawn to its first `tools/list` answer, beside a bare SDK echo server
in alternating rounds, and the whole farm host for the built-in farm and a synthetic farm several times
its size (the same servers copied under new names), to see how start-up grows per server.

Run alone: `python -m envfarm.bench.startup [--farm DIR] [--rounds N] [--copies K] [--baseline CHECKOUT]`;
`--baseline` adds an older checkout of envfarm (its runtime and its farm) to the same alternating rounds,
for a before/after figure from one run (a checkout with its own `.venv` runs on that interpreter).
`--list-all` measures only the farm host on the farm as it is
(a broad farm of hundreds of imported servers): start-up, memory, and every tool listed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import anyio

from envfarm.bench.latency import FLOOR_SERVER
from envfarm.bench.report import REFERENCE, ColdStart, FarmListing, FarmStart
from envfarm.clients.connect import farm_process, http_client, shared_http_client
from envfarm.servers.runtime.farm import stdio_args
from envfarm.servers.runtime.registry import Registry, load_registry, write_registry

NAMESPACE = "envfarm"

# initialize, initialized, tools/list: written at once, as a client that does not wait would.
HANDSHAKE = b"".join(
    json.dumps(message).encode() + b"\n"
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "envfarm-bench", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
)


def checkout_env(checkout: Path) -> dict[str, str]:
    """The environment that makes this Python import envfarm from `checkout` instead of this installation.

    Only a checkout from before the envfarm namespace: its servers are the top-level package `servers`,
    which PYTHONPATH reaches. One with the namespace maps its folders under `envfarm` with its own install
    (setup.py), which PYTHONPATH cannot express: this installation's mapping would answer instead, so such
    a checkout is refused rather than measured as if it were this one."""
    launched = {" ".join(s.launch.args) for s in load_registry(checkout).servers}
    if any(args.startswith(f"-m {NAMESPACE}.") for args in launched):
        raise ValueError(
            f"{checkout}: its servers run under the {NAMESPACE} namespace; PYTHONPATH cannot point them at that "
            "checkout (run its own install's bench there instead)"
        )
    return {**os.environ, "PYTHONPATH": str(checkout.resolve()), "ENVFARM_HOME": str(checkout.resolve())}


def own_python(checkout: Path) -> Path | None:
    """The interpreter of a checkout's own install (`CHECKOUT/.venv/bin/python`), if it has one: what runs a
    checkout with the envfarm namespace as itself."""
    python = checkout / ".venv" / "bin" / "python"
    return python if python.exists() else None


def baseline_probe(checkout: Path, name: str) -> tuple[list[str], Mapping[str, str] | None]:
    """How to start server `name` of an older checkout: with its own install's interpreter where it has one,
    else this one with PYTHONPATH pointed at it (`checkout_env`)."""
    python = own_python(checkout)
    if python is not None:
        return [str(python), "-m", module_of(checkout, name)], None
    return [sys.executable, "-m", module_of(checkout, name)], checkout_env(checkout)


def module_of(farm_root: Path, name: str) -> str:
    """The module server `name` of the farm runs as (`-m <module>` in its registry entry)."""
    entry = load_registry(farm_root).get(name)
    if entry is None or entry.launch.args[:1] != ["-m"] or len(entry.launch.args) < 2:
        raise LookupError(f"{farm_root}: the registry has no `-m` launch for a server named {name!r}")
    return entry.launch.args[1]


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds a live process has run so far, every thread's (the scheduler's own nanosecond count, Linux);
    None where /proc does not say."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            total += int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


def cold_start_sample(
    argv: Sequence[str], timeout: float = 60.0, env: Mapping[str, str] | None = None, stderr: IO[str] | None = None
) -> tuple[float, float, float | None]:
    """Wall seconds from spawning `argv` until its stdout carries the answer to tools/list (id 2), the CPU
    seconds the process used in all (start, listing, exit), and those it had used when it answered (None off
    Linux): on a shared machine, where other jobs stretch the wall time, the CPU time is the steadier figure.
    The process's stderr goes to `stderr` (default: discarded)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr if stderr is not None else subprocess.DEVNULL,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(HANDSHAKE)
        process.stdin.flush()
        while True:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"{argv} exited before answering tools/list")
            message = json.loads(line)
            if message.get("id") == 2:
                if "result" not in message or not message["result"].get("tools"):
                    raise RuntimeError(f"{argv} answered tools/list with {line[:300]!r}")
                elapsed = time.perf_counter() - started
                answered_cpu = process_cpu_s(process.pid)
                break
            if time.perf_counter() - started > timeout:
                raise RuntimeError(f"{argv} did not answer tools/list within {timeout} s")
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    return elapsed, cpu, answered_cpu


def cold_start(farm_root: Path, rounds: int, name: str = REFERENCE, baseline: Path | None = None) -> ColdStart:
    """Alternate spawning our server and the echo floor (and a baseline checkout's server), after one
    warm-up each (bytecode caches)."""
    ours = [sys.executable, *stdio_args(farm_root, name)]
    probes: dict[str, tuple[list[str], Mapping[str, str] | None]] = {
        "ours": (ours, None),
        "floor": ([sys.executable, "-c", FLOOR_SERVER], None),
    }
    if baseline is not None:
        probes["baseline"] = baseline_probe(baseline, name)
    samples: dict[str, list[tuple[float, float, float | None]]] = {key: [] for key in probes}
    for argv, env in probes.values():
        cold_start_sample(argv, env=env)
    for number in range(rounds):  # who goes first alternates: the one right after another start pays for it
        for key in probes if number % 2 == 0 else reversed(probes):
            argv, env = probes[key]
            samples[key].append(cold_start_sample(argv, env=env))
    wall = {key: statistics.median(w for w, _, _ in values) for key, values in samples.items()}
    cpu = {key: statistics.median(c for _, c, _ in values) for key, values in samples.items()}
    answered = {
        key: statistics.median(a for _, _, a in values if a is not None)
        for key, values in samples.items()
        if all(a is not None for _, _, a in values)
    }
    return ColdStart(
        command=ours,
        ours_s_p50=round(wall["ours"], 4),
        floor_s_p50=round(wall["floor"], 4),
        ratio=round(wall["ours"] / wall["floor"], 3),
        rounds=rounds,
        baseline_s_p50=round(wall["baseline"], 4) if "baseline" in wall else None,
        cpu_s_p50={key: round(value, 4) for key, value in cpu.items()},
        cpu_ratio=round(cpu["ours"] / cpu["floor"], 3),
        answer_cpu_s_p50={key: round(value, 4) for key, value in answered.items()} or None,
        answer_cpu_ratio=round(answered["ours"] / answered["floor"], 3) if {"ours", "floor"} <= set(answered) else None,
    )


def synthetic_farm(farm_root: Path, copies: int, into: Path) -> list[str]:
    """A farm holding every server of `farm_root` `copies` times (`<name>`, `<name>_x2`, ...): the same
    code under new package names, so each copy is imported and built like a server of its own."""
    registry = load_registry(farm_root)
    entries = []
    for entry in registry.servers:
        for k in range(1, copies + 1):
            name = entry.name if k == 1 else f"{entry.name}_x{k}"
            target = into / "servers" / name
            shutil.copytree(farm_root / "servers" / entry.name, target)
            # the package its own modules name: `envfarm.servers.<name>` (without `envfarm.` in an older checkout)
            package = module_of(farm_root, entry.name)
            copy = package.removesuffix(entry.name) + name
            own = re.compile(rf"(?<![\w.]){re.escape(package)}\b")
            for module in target.glob("*.py"):
                module.write_text(own.sub(copy, module.read_text(encoding="utf-8")), encoding="utf-8")
            launch = entry.launch.model_copy(update={"args": ["-m", copy], "http_path": f"/{name}/mcp"})
            entries.append(entry.model_copy(update={"name": name, "launch": launch}))
    write_registry(into, Registry(servers=sorted(entries, key=lambda e: e.name)))
    return [e.name for e in entries]


async def _list_all(base_url: str, names: list[str]) -> None:
    async with shared_http_client() as http:
        for name in names:
            async with http_client(f"{base_url}/{name}/mcp", http) as client:
                await client.list_tools()


async def _tool_counts(base_url: str, names: list[str], concurrency: int = 8) -> dict[str, int]:
    """How many tools each server lists over HTTP (a fresh MCP session per server, `concurrency` at once)."""
    counts: dict[str, int] = {}
    limit = anyio.Semaphore(concurrency)

    async def one(http: Any, name: str) -> None:
        async with limit, http_client(f"{base_url}/{name}/mcp", http) as client:
            counts[name] = len((await client.list_tools()).tools)

    async with shared_http_client() as http, anyio.create_task_group() as group:
        for name in names:
            group.start_soon(one, http, name)
    return counts


def farm_listing(farm_root: Path) -> FarmListing:
    """`envfarm serve --all` on `farm_root` as it is: seconds and memory until the index answers and until
    every server has listed its tools, and every server whose listing differs from registry.json."""
    registry = load_registry(farm_root)
    names = [s.name for s in registry.servers]
    with farm_process(farm_root) as farm:
        ready, rss_ready = farm.answered_after_s, farm.rss_mb()
        started = time.perf_counter()
        listed = anyio.run(_tool_counts, farm.base_url, names)
        listed_s = ready + time.perf_counter() - started
        cpu, rss = farm.cpu_s(), farm.rss_mb()
    registered = {s.name: s.tool_count for s in registry.servers}
    return FarmListing(
        farm=str(farm_root),
        servers=len(names),
        tools_registered=sum(registered.values()),
        tools_listed=sum(listed.values()),
        mismatched={n: [registered[n], listed.get(n, 0)] for n in names if listed.get(n, 0) != registered[n]},
        ready_s=round(ready, 3),
        listed_s=round(listed_s, 3),
        cpu_s=round(cpu, 3),
        rss_mb_ready=round(rss_ready, 1),
        rss_mb_listed=round(rss, 1),
        ms_per_server=round(listed_s / max(1, len(names)) * 1000, 2),
        kb_per_server=round(rss * 1024 / max(1, len(names)), 1),
    )


def farm_ready_s(farm_root: Path, names: list[str], env: Mapping[str, str] | None = None) -> tuple[float, float]:
    """Seconds from spawning `envfarm serve --all` until every server listed its tools over HTTP, and
    the CPU seconds the farm process used until then."""
    with farm_process(farm_root, env=env) as farm:
        started = time.perf_counter()
        anyio.run(_list_all, farm.base_url, names)
        return round(farm.answered_after_s + time.perf_counter() - started, 3), round(farm.cpu_s(), 3)


def farm_growth(farm_root: Path, copies: Sequence[int] = (1, 4), baseline: Path | None = None) -> FarmStart:
    """Start-up of the farm host for the built-in farm and for synthetic farms `copies` times its size;
    with `baseline`, that checkout's farm host on its own farm of the same sizes, right after each."""
    sizes: list[int] = []
    seconds: list[float] = []
    cpu: list[float] = []
    before: list[float] = []
    before_cpu: list[float] = []
    with tempfile.TemporaryDirectory(prefix="envfarm-bench-farm-") as scratch:
        for k in copies:
            root = Path(scratch) / f"x{k}"
            names = synthetic_farm(farm_root, k, root)
            farm_ready_s(root, names)  # warm-up: bytecode caches of the copied modules
            sizes.append(len(names))
            wall, used = farm_ready_s(root, names)
            seconds.append(wall)
            cpu.append(used)
            if baseline is not None and own_python(baseline) is None:  # a namespaced one: its cold start only
                old = Path(scratch) / f"baseline-x{k}"
                old_names = synthetic_farm(baseline, k, old)
                env = checkout_env(baseline)
                farm_ready_s(old, old_names, env)
                wall, used = farm_ready_s(old, old_names, env)
                before.append(wall)
                before_cpu.append(used)
    slope = (seconds[-1] - seconds[0]) / (sizes[-1] - sizes[0]) * 1000 if sizes[-1] > sizes[0] else 0.0
    return FarmStart(
        servers=sizes,
        seconds=seconds,
        cpu_seconds=cpu,
        ms_per_added_server=round(slope, 2),
        baseline_seconds=before or None,
        baseline_cpu_seconds=before_cpu or None,
    )


def main(argv: Sequence[str] | None = None) -> None:
    from envfarm.servers.runtime.registry import default_farm_root

    parser = argparse.ArgumentParser(prog="python -m envfarm.bench.startup", description=__doc__)
    parser.add_argument(
        "--farm", type=Path, default=None, help="farm root (default: $ENVFARM_HOME or the installed farm)"
    )
    parser.add_argument("--rounds", type=int, default=15, help="alternating cold starts of each server")
    parser.add_argument("--copies", type=int, default=4, help="the synthetic farm holds the farm this many times")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="an older envfarm checkout to measure in the same rounds (run by its own .venv/bin/python when it has "
        "one: then its cold start only)",
    )
    parser.add_argument(
        "--list-all", action="store_true", help="only `serve --all` on the farm as it is: start, memory, every tool"
    )
    args = parser.parse_args(argv)
    farm_root = (args.farm or default_farm_root()).resolve()
    if args.list_all:
        print(farm_listing(farm_root).model_dump_json(indent=2))
        return
    print(cold_start(farm_root, args.rounds, baseline=args.baseline).model_dump_json(indent=2))
    print(farm_growth(farm_root, (1, args.copies), baseline=args.baseline).model_dump_json(indent=2))


if __name__ == "__main__":
    main()
