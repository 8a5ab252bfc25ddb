"""`envfarm bench`: measure the farm against the performance targets of DESIGN.md.

Every number comes from real transports: the in-memory MCP client, a stdio subprocess, and the whole
farm served by `envfarm serve --all` as a subprocess on loopback. Each latency is reported as overhead
over the same measurement on a do-nothing SDK server in the same run (the floor). The report is JSON
(`--out`) plus a markdown table beside it.

The probes use the reference environment (`clinic`), which every farm built from this repo holds;
farm-wide numbers (start time, memory, build + verify) cover every server in the registry.
"""

from __future__ import annotations

import shlex
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import anyio

from envfarm.bench.episodes import episodes_per_s, floor_episodes_per_s
from envfarm.bench.latency import first_free_slot, floor_http_server, local_latencies, reset_p50
from envfarm.bench.report import REFERENCE, BenchReport, machine, render_markdown, verdicts
from envfarm.bench.sessions import serve_all_section
from envfarm.bench.sizes import Sizes
from envfarm.clients.connect import farm_process
from envfarm.clients.run import measure_episode_rate
from envfarm.servers.runtime.farm import import_server
from envfarm.servers.runtime.registry import load_registry

__all__ = ["BenchReport", "leaked", "render_markdown", "run_bench"]


def time_build_all(quick: bool) -> tuple[float | None, str]:
    """Build and verify the built-in farm into a temporary folder, with envfarm.factory.build.build_all."""
    from envfarm import factory
    from envfarm.factory import build

    specs = Path(factory.__file__).parent / "specs"
    paths = [specs / REFERENCE] if quick else [specs]
    what = f"build_all([{paths[0]}], <tmp farm>, verify=True, jobs=2)"
    with tempfile.TemporaryDirectory(prefix="envfarm-bench-build-") as farm:
        started = time.perf_counter()
        try:
            result = anyio.run(partial(build.build_all, paths, Path(farm), verify=True, jobs=2))
        except Exception as exc:  # noqa: BLE001 - the build pipeline is reported on, not trusted
            return None, f"not measured: {what} raised {type(exc).__name__}: {exc}"
        seconds = round(time.perf_counter() - started, 2)
        built = len(load_registry(Path(farm)).servers)
    if not result.ok:
        return None, f"not measured: {what}: {result.succeeded} of {len(result.servers)} published ({seconds} s)"
    return seconds, f"{what}: {built} servers built and verified"


def run_bench(
    farm_root: Path,
    out_path: Path,
    quick: bool = False,
    peer: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> BenchReport:
    """Measure, write `out_path` (JSON) and the markdown table beside it (`render_markdown`), and return the
    report; `progress` hears the name of each section as it starts. Prints nothing. Missed targets and
    episodes that failed under load are data in the report (`leaked` says whether episodes leaked into each
    other: broken isolation, a correctness bug). With `peer` (a foreign stdio server), also measure it
    beside ours and report the ratios (`peer` is a command line, see `envfarm.bench.peer.peer_command`; both
    servers' stderr goes to `<out>.peer.log`). LookupError when the farm lacks the reference server."""
    sizes = Sizes.for_mode(quick)
    registry = load_registry(farm_root)
    servers = [s.name for s in registry.servers]
    if REFERENCE not in servers:
        raise LookupError(f"the bench probes the {REFERENCE!r} reference server, which {farm_root} does not publish")
    module = import_server(farm_root, REFERENCE)
    command = shlex.join(
        [
            "envfarm",
            "--farm",
            str(farm_root),
            "bench",
            "--out",
            str(out_path),
            *(["--quick"] if quick else []),
            *(["--peer", peer] if peer else []),
        ]
    )

    def step(name: str) -> None:
        if progress is not None:
            progress(name)

    step("episode reset")
    reset, backup = reset_p50(module.DEFINITION, sizes.resets)
    slot = anyio.run(first_free_slot, module.build)
    step("in-process and stdio calls")
    latency = anyio.run(local_latencies, farm_root, module.build, slot, sizes.calls)
    step(f"isolated episodes (reset + 5 calls), {sizes.episodes} each in-process and over stdio")
    throughput = {"memory": anyio.run(episodes_per_s, farm_root, slot, sizes.episodes, "memory")}
    throughput["floor_memory"] = anyio.run(floor_episodes_per_s, sizes.episodes)  # the SDK alone, right after
    throughput["stdio"] = anyio.run(episodes_per_s, farm_root, slot, sizes.episodes, "stdio")
    step(f"scored rollouts (heuristic policy, scripted user), {sizes.episodes} in-process")
    rollouts = anyio.run(partial(measure_episode_rate, farm_root, REFERENCE, episodes=sizes.episodes))
    step(
        f"serve --all: start, HTTP calls, {sizes.era_rounds} x {sizes.era_episodes} isolated episodes per era, "
        f"{sizes.sessions} concurrent episodes per era"
    )
    with farm_process(farm_root) as farm, floor_http_server() as floor_url:
        start_s, rss_mb, http, isolated, runs = anyio.run(serve_all_section, farm, floor_url, servers, slot, sizes)
        throughput["http"] = anyio.run(episodes_per_s, farm_root, slot, sizes.episodes, "http", farm.base_url)
    latency |= http
    step(f"cold start of one stdio server, {sizes.cold_starts} rounds; serve --all for the farm x{sizes.farm_copies}")
    from envfarm.bench.startup import cold_start, farm_growth  # here, so `python -m envfarm.bench.startup` runs clean

    cold = cold_start(farm_root, sizes.cold_starts)
    growth = farm_growth(farm_root, (1, sizes.farm_copies))
    comparison = None
    if peer is not None:
        from envfarm.bench.peer import compare_with_peer

        step(f"side by side with the peer {peer}")
        comparison = compare_with_peer(
            farm_root,
            peer,
            sizes.cold_starts,
            sizes.calls,
            sizes.episodes // 10 or 5,
            log=out_path.with_suffix(".peer.log"),
        )
    step(
        f"rollout --workers 1|2 on {sizes.worker_tasks} tasks x {sizes.worker_k}, {sizes.worker_rounds} interleaved "
        "rounds, every process metered"
    )
    from envfarm.bench.workers import workers_section

    workers = workers_section(farm_root, tasks=sizes.worker_tasks, k=sizes.worker_k, rounds=sizes.worker_rounds)
    step("build + verify")
    build_s, build_detail = time_build_all(quick)

    reset_stdio = latency.pop("reset_stdio")
    floor = {k.removeprefix("floor_"): v for k, v in latency.items() if k.startswith("floor_")}
    floor["http_legacy"] = floor["http"]
    report = BenchReport(
        command=command,
        quick=quick,
        farm=str(farm_root),
        servers=servers,
        machine=machine(),
        reset_ms_p50=reset,
        reset_backup_api_ms_p50=backup,
        reset_stdio_ms_p50=reset_stdio,
        call_ms_p50={k: v for k, v in latency.items() if not k.startswith("floor_")},
        sdk_floor_ms_p50=floor,
        overhead_ms_p50={k: round(v - floor[k], 4) for k, v in latency.items() if k in floor},
        farm_start_s=round(start_s, 3),
        farm_rss_mb=round(rss_mb, 1),
        peer=comparison,
        cold_start=cold,
        farm_growth=growth,
        isolated_episodes_per_s=throughput,
        episodes_per_s=rollouts.episodes_per_s,
        episodes_detail=rollouts,
        concurrent_sessions=min(r.completed if r.leaks == 0 else 0 for r in runs),
        concurrent_sessions_detail=runs,
        isolated_eras=isolated,
        build_all_s=build_s,
        build_all_detail=build_detail,
        workers=workers,
        targets=[],
    )
    report.targets = verdicts(report)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    out_path.with_suffix(".md").write_text(render_markdown(report), encoding="utf-8")
    return report


def leaked(report: BenchReport) -> str:
    """Which runs leaked episodes into each other under load (the bench's one failure: a correctness bug), or ''."""
    return "; ".join(
        f"{r.era}: {r.leaks} of {r.sessions} sessions" for r in report.concurrent_sessions_detail if r.leaks
    )


def failure_cause(exc: BaseException) -> str:
    """What broke, in one line: the innermost exceptions of a task group's `ExceptionGroup`, each with its type."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(failure_cause(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}".strip()
