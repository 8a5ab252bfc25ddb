"""The bench's `workers` section: `envfarm rollout --workers 1|2` on the same synthesized tasks, interleaved,
each run metered over its whole process tree (the command, the fork server, every worker: `proctree`), and
the projection of the measured costs to 16 and 64 cores.

What one run of each size gives: wall time, CPU of every process (exact, from the meter's rusage), cores used
(CPU / wall), the split (the command, the fork server's own import, each worker) and each worker's PSS at
its largest. Two small runs (2 tasks, k=1) give the fixed costs, so that the per-episode costs are the
slopes between the small and the big runs: a worker's CPU per episode, the command's (it dispatches and files
the workers' lines), and a worker's start-up (fork, build every server, connect, first calls' imports).
"""

from __future__ import annotations

import json
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

from envfarm.bench.proctree import Metered, run_metered

STARTUP = re.compile(r"start-up ([\d.]+) s \(([\d.]+) s CPU\)")


class WorkersRun(BaseModel):
    """One `envfarm rollout` run, metered."""

    workers: int
    tasks: int
    episodes: int
    wall_s: float
    cpu_s: float = Field(
        description="every process of the run while the command ran: the command, the fork server, the workers"
    )
    cores: float = Field(description="cpu_s / wall_s")
    command_cpu_s: float = Field(description="the rollout command's own process")
    fork_server_cpu_s: float = Field(0.0, description="its own: one import of the driver and the server runtime")
    workers_cpu_s: float = Field(0.0, description="all workers: the fork server's reaped children, exact")
    worker_cpu_s: list[float] = Field(default_factory=list, description="each worker, at its last poll")
    worker_pss_mb: list[float] = Field(default_factory=list, description="each worker at its largest")
    command_pss_mb: float
    fork_server_pss_mb: float = 0.0
    worker_ready_s: float | None = Field(None, description="the slowest worker, from start to its servers answering")


class Projection(BaseModel):
    cores: int
    workers: int
    episodes_per_s: float
    bound: str = Field(description="what limits it: the cores, or the command's one core (it files every episode)")
    wall_s: float = Field(description="the big run's episodes on this many cores, start-up included")
    memory_mb: float = Field(description="the command and the fork server, plus every worker's PSS")


class WorkersBench(BaseModel):
    """`envfarm rollout --workers 1` against `--workers 2` on the same tasks, and what that projects to."""

    commands: list[str]
    rounds: int
    runs: list[WorkersRun] = Field(description="in the order they ran: the sizes alternate who goes first")
    wall_s: dict[str, float] = Field(description="workers -> median wall of the big runs")
    cpu_s: dict[str, float]
    cores: dict[str, float]
    speedup: float = Field(description="median wall with 1 worker / with 2")
    same_scores: bool = Field(description="every run printed the same scores and wrote the same trajectories")
    in_process_ms_per_episode: float = Field(description="CPU per added episode with one worker (this process)")
    worker_ms_per_episode: float = Field(description="worker CPU per added episode, summed over the workers")
    command_ms_per_episode: float = Field(description="the command's CPU per added episode with 2 workers")
    worker_startup_cpu_s: float = Field(description="one worker's CPU before its episodes, first calls included")
    fork_server_cpu_s: float
    worker_pss_mb: float = Field(description="median over the big runs' workers, at their largest")
    startup_wall_s: float = Field(description="the small 2-worker run's wall: start-up and 2 episodes")
    break_even_episodes: float | None = Field(
        description="episodes from which 2 workers finish first, from the walls (small and big runs of each); "
        "None when 2 workers never did here"
    )
    projection: list[Projection]
    assumptions: list[str]
    load_average: list[float] = Field(description="1-minute load average before and after the section")


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def _stable(line: str) -> str:
    """A trajectory line without what differs between any two runs: timings, the episode ids' random tags."""
    row = json.loads(line)
    del row["seconds"], row["episodes"]
    for call in row["calls"]:
        del call["seconds"]
    return json.dumps(row)


def _scores(stdout: str) -> str:
    """The scores table a rollout prints (before its `workers:` and `wrote` lines)."""
    return stdout.split("\nworkers:")[0].split("\nwrote")[0]


def measure_run(farm: Path, tasks_file: Path, workers: int, k: int, out: Path) -> tuple[WorkersRun, Metered]:
    """`envfarm rollout TASKS --workers N --k K` under the meter."""
    argv = [sys.executable, "-m", "envfarm.cli", "--farm", str(farm), "rollout", str(tasks_file)]
    metered = run_metered([*argv, "--workers", str(workers), "--k", str(k), "--out", str(out)], timeout=900)
    if metered.returncode != 0:
        raise RuntimeError(f"rollout --workers {workers} failed ({metered.returncode}): {metered.stderr[-2000:]}")
    return split(metered, workers, len(tasks_file.read_text().splitlines()), k), metered


def split(metered: Metered, workers: int, tasks: int, k: int) -> WorkersRun:
    """A metered rollout's processes by role: the command is the meter's child, the fork server the command's
    child with children of its own (the workers); the multiprocessing resource tracker is neither."""
    by_pid = {p.pid: p for p in metered.processes}
    command = metered.processes[0]
    children = {p.pid: [c for c in metered.processes if c.ppid == p.pid] for p in metered.processes}
    fork_server = next((p for p in children[command.pid] if children[p.pid]), None)
    pool = children[fork_server.pid] if fork_server else []
    ready = STARTUP.search(metered.stdout)
    alive = set(metered.outlived)  # a worker not yet reaped by the fork server is in /proc, not in its cutime
    return WorkersRun(
        workers=workers,
        tasks=tasks,
        episodes=tasks * k,
        wall_s=metered.wall_s,
        cpu_s=metered.wall_cpu_s,
        cores=round(metered.cores, 3),
        command_cpu_s=metered.reaped_cpu_s.get(command.pid, by_pid[command.pid].cpu_s),
        fork_server_cpu_s=fork_server.cpu_s if fork_server else 0.0,
        workers_cpu_s=round(fork_server.reaped_cpu_s + sum(w.cpu_s for w in pool if w.pid in alive), 3)
        if fork_server
        else 0.0,
        worker_cpu_s=[round(w.cpu_s, 2) for w in pool],
        worker_pss_mb=[w.pss_mb for w in pool],
        command_pss_mb=command.pss_mb,
        fork_server_pss_mb=fork_server.pss_mb if fork_server else 0.0,
        worker_ready_s=float(ready.group(1)) if ready else None,
    )


def project(
    cores: int, worker_ms: float, command_ms: float, startup_s: float, episodes: int, memory: tuple[float, float]
) -> Projection:
    """One worker per core (the default), the command's dispatch sharing the cores with them:
    episodes/s = min(cores / (worker + command CPU per episode), 1 / command CPU per episode)."""
    by_cores = cores / (worker_ms + command_ms) * 1000
    by_command = 1 / command_ms * 1000 if command_ms > 0 else float("inf")
    rate = min(by_cores, by_command)
    fixed_mb, per_worker_mb = memory
    return Projection(
        cores=cores,
        workers=cores,
        episodes_per_s=round(rate, 1),
        bound="the cores" if by_cores <= by_command else "the command's one core",
        wall_s=round(startup_s + episodes / rate, 2),
        memory_mb=round(fixed_mb + cores * per_worker_mb),
    )


def workers_section(
    farm: Path, *, tasks: int, k: int, rounds: int, seed: int = 0, tasks_file: Path | None = None
) -> WorkersBench:
    """Synthesize `tasks` tasks (or take `tasks_file`), then run them with 1 and 2 workers `rounds` times,
    alternating which goes first, plus one small run of each for the fixed costs."""
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="envfarm-bench-workers-") as scratch:
        folder = Path(scratch)
        small_file = folder / "small.jsonl"
        if tasks_file is None:
            tasks_file = folder / "tasks.jsonl"
            make = [sys.executable, "-m", "envfarm.cli", "--farm", str(farm), "tasks", "--n", str(tasks)]
            made = subprocess.run(
                [*make, "--seed", str(seed), "--out", str(tasks_file)], check=False, capture_output=True, text=True
            )
            if made.returncode != 0 or not tasks_file.exists():
                raise RuntimeError(f"envfarm tasks failed ({made.returncode}): {made.stderr[-2000:]}")
        lines = tasks_file.read_text().splitlines()
        tasks = len(lines)
        if tasks < 2:
            raise RuntimeError(f"{tasks_file}: {tasks} tasks; the section needs 2 or more")
        small_file.write_text("\n".join(lines[: min(2, tasks - 1)]) + "\n")  # fewer than the big runs
        runs: list[WorkersRun] = []
        outputs: dict[str, tuple[list[str], str]] = {}
        same = True
        for number in range(rounds):
            for workers in (1, 2) if number % 2 == 0 else (2, 1):
                out = folder / f"w{workers}.jsonl"
                run, metered = measure_run(farm, tasks_file, workers, k, out)
                runs.append(run)
                got = ([_stable(line) for line in out.read_text().splitlines()], _scores(metered.stdout))
                first = outputs.setdefault("first", got)
                same = same and got == first
        small = {w: measure_run(farm, small_file, w, 1, folder / f"small{w}.jsonl")[0] for w in (1, 2)}
    return summarize_runs(runs, small, same, k, [load_before, _load()], farm, tasks)


def summarize_runs(
    runs: list[WorkersRun],
    small: dict[int, WorkersRun],
    same: bool,
    k: int,
    load: list[float],
    farm: Path,
    tasks: int,
) -> WorkersBench:
    """The medians, the per-episode slopes against the small runs, and the projection."""

    def median(workers: int, key: str) -> float:
        return round(statistics.median(getattr(r, key) for r in runs if r.workers == workers), 3)

    big = {w: [r for r in runs if r.workers == w] for w in (1, 2)}
    episodes = big[2][0].episodes
    added = episodes - small[2].episodes

    def slope_ms(values: list[float], fixed: float) -> float:
        return round((statistics.median(values) - fixed) / added * 1000, 3)

    in_process_ms = slope_ms([r.cpu_s for r in big[1]], small[1].cpu_s)
    worker_ms = slope_ms([r.workers_cpu_s for r in big[2]], small[2].workers_cpu_s)
    command_ms = slope_ms([r.command_cpu_s for r in big[2]], small[2].command_cpu_s)
    startup_cpu = (small[2].workers_cpu_s - worker_ms / 1000 * small[2].episodes) / small[2].workers
    pss = statistics.median(p for r in big[2] for p in r.worker_pss_mb) if big[2][0].worker_pss_mb else 0.0
    fixed_mb = statistics.median(r.command_pss_mb + r.fork_server_pss_mb for r in big[2])
    slope = {w: (statistics.median(r.wall_s for r in big[w]) - small[w].wall_s) / added for w in (1, 2)}
    break_even = None
    if slope[1] > slope[2]:
        later = max(small[2].wall_s - small[1].wall_s, 0.0) / (slope[1] - slope[2])
        break_even = round(small[2].episodes + later, 1)
    # A few episodes under heavy load (`--quick` beside other jobs) can leave no positive per-episode cost to
    # project from: no projection then, and the report says why, instead of dividing by zero.
    projected = worker_ms + command_ms > 0
    projection = (
        [project(n, worker_ms, command_ms, small[2].wall_s, episodes, (fixed_mb, pss)) for n in (2, 16, 64)]
        if projected
        else []
    )
    command = "envfarm --farm {farm} rollout TASKS --workers N --k {k}"
    return WorkersBench(
        commands=[
            f"envfarm --farm {shlex.quote(str(farm))} tasks --n {tasks} --seed 0 --out TASKS",
            command.format(farm=shlex.quote(str(farm)), k=k) + " (N = 1, 2; and on TASKS' first 2, or 1, with --k 1)",
        ],
        rounds=len(big[2]),
        runs=[*runs, small[1], small[2]],
        wall_s={str(w): median(w, "wall_s") for w in (1, 2)},
        cpu_s={str(w): median(w, "cpu_s") for w in (1, 2)},
        cores={str(w): median(w, "cores") for w in (1, 2)},
        speedup=round(median(1, "wall_s") / median(2, "wall_s"), 3),
        same_scores=same,
        in_process_ms_per_episode=in_process_ms,
        worker_ms_per_episode=worker_ms,
        command_ms_per_episode=command_ms,
        worker_startup_cpu_s=round(startup_cpu, 3),
        fork_server_cpu_s=round(statistics.median(r.fork_server_cpu_s for r in big[2]), 3),
        worker_pss_mb=round(pss, 1),
        startup_wall_s=small[2].wall_s,
        break_even_episodes=break_even,
        projection=projection,
        assumptions=[
            "an offline policy (CPU-bound; an LLM policy waits on its endpoint, not on cores)",
            "one worker per core (the default), the command's dispatch sharing the cores with them",
            (
                "episodes/s = min(cores / (worker + command CPU per episode), 1 / command CPU per episode), the "
                "per-episode costs measured here (slopes between the small and the big runs); no other load"
            ),
            (
                "start-up stays the small 2-worker run's wall: workers build their servers in parallel, each on "
                "its own core, and the fork server forks them in milliseconds each"
            ),
            (
                "memory: the command's and the fork server's PSS, plus each worker's PSS at its largest here; a "
                "worker grows with the episodes it has run (SQLite forks, caches), not with the number of workers"
            ),
            *(
                []
                if projected
                else [
                    f"no projection: the per-episode CPU came out at {worker_ms + command_ms:g} ms (worker + command), "
                    "too few episodes for the load to measure"
                ]
            ),
        ],
        load_average=load,
    )
