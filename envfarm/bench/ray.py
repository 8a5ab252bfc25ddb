"""`python -m envfarm.bench.ray`: what going through Ray costs, next to the local backend.

The same scored rollouts (the heuristic policy and the scripted user on tasks synthesized on the reference
server) run three ways: in this process (the local backend), on one Ray farm host, and on two. Reported:
episodes per second for each; the wall time of one episode at a time locally and through Ray, and the
part of it spent outside the rollout itself (the difference between the two is Ray's overhead per
episode: the call, shipping the task out and the trajectory back); the
round trip of an empty actor call; a trajectory's pickled size; and a farm host's start time, memory
idle (every server of the farm in-process) and memory per concurrent episode (its peak over a run at
the given concurrency). JSON to `--out`, markdown beside it. Needs `pip install "envfarm[ray]"`.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from clients.connect import Connections, farm_targets
from clients.policies import HeuristicPolicy
from clients.ray_backend import HostInfo, HostSpec, RayBackend, RayOptions, import_ray
from clients.rollout import Backend, LocalBackend, RolloutOptions
from clients.scoring import Scorer
from clients.tasks import Task
from clients.users import ScriptedUser
from envfarm.bench.report import REFERENCE, Machine, machine
from servers.runtime.registry import default_farm_root, load_registry


class Rate(BaseModel):
    backend: str
    workers: int
    concurrency: int = Field(description="rollouts in flight per worker (the local backend: in total)")
    episodes: int
    seconds: float
    episodes_per_s: float


class RayBench(BaseModel):
    command: str
    machine: Machine
    ray_version: str
    servers_per_host: int
    tasks: int
    calls_per_episode: float
    rates: list[Rate]
    sequential_ms_per_episode: dict[str, float] = Field(description="one episode at a time, median wall ms")
    outside_ms_per_episode: dict[str, float] = Field(
        description="one at a time, median of wall minus the rollout's own time (scoring, dispatch, transfer)"
    )
    ray_overhead_ms_per_episode: float = Field(description="outside time, Ray minus local: what Ray adds")
    actor_round_trip_ms: float = Field(description="an empty call to a farm host, mean")
    trajectory_kb: float = Field(description="a scored trajectory, pickled, mean")
    host_start_s: float = Field(description="Ray actor up with every server connected")
    host_idle_rss_mb: float
    host_peak_rss_mb: float
    host_mb_per_episode: float = Field(description="(peak - idle) / concurrent episodes")


async def _tasks(farm: Path, n: int) -> list[Task]:
    from clients.synthesize import SynthesisOptions, synthesize

    async with Connections(farm_targets(farm, [REFERENCE], "memory")) as connections:
        synthesis = await synthesize(SynthesisOptions(n=n, servers=[REFERENCE], max_servers=1), connections)
    if not synthesis.tasks:
        raise RuntimeError(f"the synthesizer made no task on {REFERENCE}")
    return list(synthesis.tasks)


async def _timed(backend: Backend, tasks: Sequence[Task], episodes: int, concurrency: int) -> tuple[float, int, float]:
    """Seconds for at least `episodes` scored rollouts, how many ran, and their mean tool calls."""
    options = RolloutOptions(k=-(-episodes // len(tasks)), concurrency=concurrency)
    started = time.perf_counter()
    done = await backend(tasks, HeuristicPolicy(), ScriptedUser(), options, scorer=Scorer())
    return time.perf_counter() - started, len(done), sum(len(t.calls) for t in done) / len(done)


async def _sequential_ms(backend: Backend, tasks: Sequence[Task], n: int) -> tuple[float, float]:
    """Median wall ms of one episode at a time, and of the part outside the rollout itself (measured
    where it runs): subtracting it cancels the rollout's own run-to-run noise out of the overhead."""
    options = RolloutOptions(concurrency=1)
    walls, outside = [], []
    for i in range(n):
        started = time.perf_counter()
        [done] = await backend([tasks[i % len(tasks)]], HeuristicPolicy(), ScriptedUser(), options, scorer=Scorer())
        wall = time.perf_counter() - started
        walls.append(wall)
        outside.append(wall - done.seconds)
    return round(statistics.median(walls) * 1000, 3), round(statistics.median(outside) * 1000, 3)


def _rate(backend: str, workers: int, concurrency: int, timed: tuple[float, int, float]) -> Rate:
    seconds, episodes, _ = timed
    return Rate(
        backend=backend,
        workers=workers,
        concurrency=concurrency,
        episodes=episodes,
        seconds=round(seconds, 3),
        episodes_per_s=round(episodes / seconds, 1),
    )


@dataclass
class _OnRay:
    rates: list[Rate]
    sequential_ms: tuple[float, float]
    round_trip_ms: float
    trajectory_kb: float
    host_start_s: float
    idle: HostInfo
    peak: HostInfo


async def _on_ray(spec: HostSpec, tasks: Sequence[Task], episodes: int, concurrency: int, sequential: int) -> _OnRay:
    """Throughput on 1 and 2 hosts; on 1 host also the sequential wall time, round trip, size and memory."""
    rates: list[Rate] = []
    for workers in (2, 1):  # the one-host backend last: its measurements follow
        started = time.perf_counter()
        backend = RayBackend(spec, RayOptions(workers=workers, cpus_per_worker=0.5))
        async with backend:
            start_s = time.perf_counter() - started
            await _timed(backend, tasks[:1], 2 * workers, 1)  # warm up every host
            rates.insert(0, _rate("ray", workers, concurrency, await _timed(backend, tasks, episodes, concurrency)))
            if workers > 1:
                continue
            host = backend.actors()[0]
            peak = await host.ready.remote()
            sequential_ms = await _sequential_ms(backend, tasks, sequential)
            started = time.perf_counter()
            for _ in range(sequential):
                await host.forget.remote("-")
            round_trip = (time.perf_counter() - started) / sequential * 1000
            sample = await backend(tasks, HeuristicPolicy(), ScriptedUser(), RolloutOptions(), scorer=Scorer())
            size_kb = statistics.mean(len(pickle.dumps(t)) for t in sample) / 1024
            return _OnRay(rates, sequential_ms, round_trip, size_kb, start_s, backend.hosts[0], peak)
    raise AssertionError("unreachable")


async def measure(
    farm: Path,
    episodes: int,
    concurrency: int,
    sequential: int,
    n_tasks: int,
    command: str,
    servers: Sequence[str] | None = None,
) -> RayBench:
    """Every figure of the report; each farm host holds `servers` (default: the whole farm)."""
    ray = import_ray()
    tasks = await _tasks(farm, n_tasks)
    servers = list(servers or [s.name for s in load_registry(farm).servers])
    async with Connections(farm_targets(farm, [REFERENCE], "memory")) as connections:
        local = LocalBackend(connections)
        await _timed(local, tasks[:1], 1, 1)  # warm up
        timed = await _timed(local, tasks, episodes, concurrency)
        local_ms = await _sequential_ms(local, tasks, sequential)
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    try:
        on_ray = await _on_ray(HostSpec(farm=farm, servers=servers), tasks, episodes, concurrency, sequential)
    finally:
        if started_ray:
            ray.shutdown()
    return RayBench(
        command=command,
        machine=machine(),
        ray_version=ray.__version__,
        servers_per_host=len(servers),
        tasks=len(tasks),
        calls_per_episode=round(timed[2], 2),
        rates=[_rate("local", 1, concurrency, timed), *on_ray.rates],
        sequential_ms_per_episode={"local": local_ms[0], "ray": on_ray.sequential_ms[0]},
        outside_ms_per_episode={"local": local_ms[1], "ray": on_ray.sequential_ms[1]},
        ray_overhead_ms_per_episode=round(on_ray.sequential_ms[1] - local_ms[1], 3),
        actor_round_trip_ms=round(on_ray.round_trip_ms, 3),
        trajectory_kb=round(on_ray.trajectory_kb, 1),
        host_start_s=round(on_ray.host_start_s, 2),
        host_idle_rss_mb=on_ray.idle.rss_mb,
        host_peak_rss_mb=on_ray.peak.peak_rss_mb,
        host_mb_per_episode=round(max(on_ray.peak.peak_rss_mb - on_ray.idle.rss_mb, 0.0) / concurrency, 3),
    )


def render_markdown(report: RayBench) -> str:
    local = next(r for r in report.rates if r.backend == "local")
    lines = [
        (
            f"Ray {report.ray_version} on {report.machine.cpu_count} CPUs ({report.machine.cpu_model}); "
            f"{report.tasks} tasks on {REFERENCE}, heuristic policy, scripted user, "
            f"{report.calls_per_episode} tool calls per episode; `{report.command}`"
        ),
        "",
        "| backend | workers | concurrency | episodes | episodes/s | vs local |",
        "|---|---|---|---|---|---|",
    ]
    for r in report.rates:
        lines.append(
            f"| {r.backend} | {r.workers} | {r.concurrency} | {r.episodes} | {r.episodes_per_s} | "
            f"{r.episodes_per_s / local.episodes_per_s:.2f}x |"
        )
    seq, out = report.sequential_ms_per_episode, report.outside_ms_per_episode
    lines += [
        "",
        (
            f"- one episode at a time (median): local {seq['local']} ms, Ray {seq['ray']} ms; outside the rollout "
            f"itself: local {out['local']} ms, Ray {out['ray']} ms: "
            f"**Ray overhead {report.ray_overhead_ms_per_episode} ms per episode** "
            f"(empty actor call {report.actor_round_trip_ms} ms, trajectory {report.trajectory_kb} KB pickled)"
        ),
        (
            f"- farm host ({report.servers_per_host} servers in-process): up in {report.host_start_s} s, "
            f"{report.host_idle_rss_mb} MB idle, {report.host_peak_rss_mb} MB peak, "
            f"{report.host_mb_per_episode} MB per concurrent episode"
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envfarm.bench.ray", description=__doc__.split("\n")[0])
    parser.add_argument("--farm", type=Path, default=None, help="default: the installed farm")
    parser.add_argument("--out", type=Path, default=Path("reports/bench_ray.json"))
    parser.add_argument("--episodes", type=int, default=400, help="per throughput run")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--sequential", type=int, default=100, help="episodes one at a time, per backend")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument(
        "--servers", nargs="*", help=f"servers per farm host (default: the whole farm; needs {REFERENCE})"
    )
    args = parser.parse_args(argv)
    farm = (args.farm or default_farm_root()).resolve()
    command = " ".join(["python -m envfarm.bench.ray", *(argv if argv is not None else sys.argv[1:])])
    if args.servers and REFERENCE not in args.servers:
        parser.error(f"--servers must include {REFERENCE}, where the tasks are synthesized")
    report = asyncio.run(
        measure(farm, args.episodes, args.concurrency, args.sequential, args.tasks, command, args.servers)
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    markdown = render_markdown(report)
    args.out.with_suffix(".md").write_text(markdown, encoding="utf-8")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
