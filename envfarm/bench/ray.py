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
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from envfarm.bench.report import REFERENCE, Machine, machine
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import HeuristicPolicy
from envfarm.clients.ray_backend import HostSpec, RayBackend, RayOptions, import_ray
from envfarm.clients.rollout import Backend, LocalBackend, RolloutOptions
from envfarm.clients.scoring import Scorer
from envfarm.clients.tasks import Task
from envfarm.clients.users import ScriptedUser
from envfarm.servers.runtime.registry import default_farm_root, load_registry


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
    rounds: int = Field(description="the backends took turns this many times; figures are sums over the rounds")
    calls_per_episode: float
    rates: list[Rate]
    sequential_ms_per_episode: dict[str, float] = Field(description="one episode at a time, mean wall ms")
    outside_ms_per_episode: dict[str, float] = Field(
        description="one at a time, wall minus the rollout's own time (scoring, dispatch, transfer), mean"
    )
    ray_overhead_ms_per_episode: float = Field(description="outside time, Ray minus local: what Ray adds")
    actor_round_trip_ms: float = Field(description="an empty call to a farm host, mean")
    trajectory_kb: float = Field(description="a scored trajectory, pickled, mean")
    host_start_s: float = Field(description="Ray actor up with every server connected")
    host_idle_rss_mb: float
    host_peak_rss_mb: float
    host_mb_per_episode: float = Field(description="(peak - idle) / concurrent episodes")


async def _tasks(farm: Path, n: int) -> list[Task]:
    from envfarm.clients.synthesize import SynthesisOptions, synthesize

    async with Connections(farm_targets(farm, [REFERENCE], "memory")) as connections:
        synthesis = await synthesize(SynthesisOptions(n=n, servers=[REFERENCE], max_servers=1), connections)
    if not synthesis.tasks:
        raise RuntimeError(f"the synthesizer made no task on {REFERENCE}")
    return list(synthesis.tasks)


@dataclass
class _Tally:
    """Sums over the rounds of one backend."""

    seconds: float = 0.0
    episodes: int = 0
    calls: int = 0
    sequential_s: float = 0.0
    sequential_inside_s: float = 0.0
    sequential_episodes: int = 0

    async def throughput(self, backend: Backend, tasks: Sequence[Task], episodes: int, concurrency: int) -> None:
        options = RolloutOptions(k=-(-episodes // len(tasks)), concurrency=concurrency)
        started = time.perf_counter()
        done = await backend(tasks, HeuristicPolicy(), ScriptedUser(), options, scorer=Scorer())
        self.seconds += time.perf_counter() - started
        self.episodes += len(done)
        self.calls += sum(len(t.calls) for t in done)

    async def one_at_a_time(self, backend: Backend, tasks: Sequence[Task], n: int) -> None:
        """Episodes one at a time in one backend call (as a run makes it); each rollout's own time is
        measured where it runs, so wall minus it is what the backend adds around the rollout."""
        options = RolloutOptions(k=-(-n // len(tasks)), concurrency=1)
        started = time.perf_counter()
        done = await backend(tasks, HeuristicPolicy(), ScriptedUser(), options, scorer=Scorer())
        self.sequential_s += time.perf_counter() - started
        self.sequential_inside_s += sum(t.seconds for t in done)
        self.sequential_episodes += len(done)

    def rate(self, backend: str, workers: int, concurrency: int) -> Rate:
        return Rate(
            backend=backend,
            workers=workers,
            concurrency=concurrency,
            episodes=self.episodes,
            seconds=round(self.seconds, 3),
            episodes_per_s=round(self.episodes / self.seconds, 1),
        )

    def per_episode_ms(self) -> tuple[float, float]:
        n = max(self.sequential_episodes, 1)
        return round(self.sequential_s / n * 1000, 3), round(
            (self.sequential_s - self.sequential_inside_s) / n * 1000, 3
        )


async def measure(
    farm: Path,
    episodes: int,
    concurrency: int,
    sequential: int,
    n_tasks: int,
    command: str,
    servers: Sequence[str] | None = None,
    rounds: int = 3,
    cpus: float = 0.5,
) -> RayBench:
    """Every figure of the report; each farm host holds `servers` (default: the whole farm). The backends
    take turns, `rounds` times, so load from other jobs on a shared machine hits all of them alike."""
    ray = import_ray()
    tasks = await _tasks(farm, n_tasks)
    servers = list(servers or [s.name for s in load_registry(farm).servers])
    spec = HostSpec(farm=farm, servers=servers)
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    try:
        async with AsyncExitStack() as stack:
            local = LocalBackend(
                await stack.enter_async_context(Connections(farm_targets(farm, [REFERENCE], "memory")))
            )
            started = time.perf_counter()
            one = await stack.enter_async_context(RayBackend(spec, RayOptions(workers=1, cpus_per_worker=cpus)))
            host_start = time.perf_counter() - started
            two = await stack.enter_async_context(RayBackend(spec, RayOptions(workers=2, cpus_per_worker=cpus)))
            backends: list[tuple[str, int, Backend]] = [("local", 1, local), ("ray", 1, one), ("ray", 2, two)]
            tallies = [_Tally() for _ in backends]
            for _, workers, backend in backends:  # warm up every host
                await _Tally().throughput(backend, tasks, 2 * workers, 1)
            for _ in range(rounds):
                for tally, (_, _, backend) in zip(tallies, backends, strict=True):
                    await tally.throughput(backend, tasks, -(-episodes // rounds), concurrency)
                    if backend is not two:
                        await tally.one_at_a_time(backend, tasks, -(-sequential // rounds))
            host = one.actors()[0]
            peak = await host.ready.remote()
            started = time.perf_counter()
            for _ in range(sequential):
                await host.forget.remote("-")
            round_trip = (time.perf_counter() - started) / sequential * 1000
            sample = await one(tasks, HeuristicPolicy(), ScriptedUser(), RolloutOptions(), scorer=Scorer())
            size_kb = statistics.mean(len(pickle.dumps(t)) for t in sample) / 1024
            idle = one.hosts[0]
    finally:
        if started_ray:
            ray.shutdown()
    (local_ms, local_out), (ray_ms, ray_out) = tallies[0].per_episode_ms(), tallies[1].per_episode_ms()
    return RayBench(
        command=command,
        machine=machine(),
        ray_version=ray.__version__,
        servers_per_host=len(servers),
        tasks=len(tasks),
        rounds=rounds,
        calls_per_episode=round(tallies[0].calls / tallies[0].episodes, 2),
        rates=[t.rate(name, workers, concurrency) for t, (name, workers, _) in zip(tallies, backends, strict=True)],
        sequential_ms_per_episode={"local": local_ms, "ray": ray_ms},
        outside_ms_per_episode={"local": local_out, "ray": ray_out},
        ray_overhead_ms_per_episode=round(ray_out - local_out, 3),
        actor_round_trip_ms=round(round_trip, 3),
        trajectory_kb=round(size_kb, 1),
        host_start_s=round(host_start, 2),
        host_idle_rss_mb=idle.rss_mb,
        host_peak_rss_mb=peak.peak_rss_mb,
        host_mb_per_episode=round(max(peak.peak_rss_mb - idle.rss_mb, 0.0) / concurrency, 3),
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
    lines += [
        f"| {r.backend} | {r.workers} | {r.concurrency} | {r.episodes} | {r.episodes_per_s} | "
        f"{r.episodes_per_s / local.episodes_per_s:.2f}x |"
        for r in report.rates
    ]
    seq, out = report.sequential_ms_per_episode, report.outside_ms_per_episode
    lines += [
        "",
        (
            f"- one episode at a time (mean): local {seq['local']} ms, Ray {seq['ray']} ms; outside the rollout "
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
    parser.add_argument("--episodes", type=int, default=600, help="per backend, for throughput")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--sequential", type=int, default=150, help="episodes one at a time, per backend")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="turns the backends take")
    parser.add_argument("--cpus-per-host", type=float, default=0.5, help="CPUs Ray reserves per farm host (3 hosts)")
    parser.add_argument(
        "--servers", nargs="*", help=f"servers per farm host (default: the whole farm; needs {REFERENCE})"
    )
    args = parser.parse_args(argv)
    farm = (args.farm or default_farm_root()).resolve()
    command = " ".join(["python -m envfarm.bench.ray", *(argv if argv is not None else sys.argv[1:])])
    if args.servers and REFERENCE not in args.servers:
        parser.error(f"--servers must include {REFERENCE}, where the tasks are synthesized")
    report = asyncio.run(
        measure(
            farm,
            args.episodes,
            args.concurrency,
            args.sequential,
            args.tasks,
            command,
            args.servers,
            args.rounds,
            args.cpus_per_host,
        )
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    markdown = render_markdown(report)
    args.out.with_suffix(".md").write_text(markdown, encoding="utf-8")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
