"""The bench's `workers` section on made-up meter readings: each process gets its role (the command, the fork
server, the workers; the resource tracker none), the per-episode costs are the slopes between the small and
the big runs, and the projection follows its stated formula. The real runs are in `envfarm bench`
(test_bench.py runs it quick)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envfarm.bench.proctree import Metered, ProcStat
from envfarm.bench.report import _workers_section
from envfarm.bench.workers import WorkersRun, project, split, summarize_runs

STDOUT = "policy ...\nworkers: 2 processes, 1000 episodes, 0 failed with 0 lost workers; start-up 0.61 s (0.12 s CPU)\n"


def proc(pid: int, ppid: int, cpu: float, reaped: float = 0.0, pss: float = 0.0) -> ProcStat:
    return ProcStat(pid=pid, ppid=ppid, name="python", cpu_s=cpu, reaped_cpu_s=reaped, pss_mb=pss)


def metered(processes: list[ProcStat], outlived: list[int]) -> Metered:
    return Metered(
        returncode=0,
        wall_s=5.0,
        cpu_s=9.4,
        wall_cpu_s=9.0,
        polled_cpu_s=8.9,
        processes=processes,
        outlived=outlived,
        reaped_cpu_s={10: 2.0, 12: 6.5},
        stdout=STDOUT,
        stderr="",
    )


def test_a_metered_run_is_split_by_role() -> None:
    # 10 the command; 11 the resource tracker; 12 the fork server, which reaped worker 20 (3.0 s) while
    # worker 21 was still in /proc when the command ended.
    processes = [
        proc(10, 1, 1.9, pss=150),
        proc(11, 10, 0.02, pss=6),
        proc(12, 10, 1.0, reaped=3.0, pss=76),
        proc(20, 12, 2.9, pss=140),
        proc(21, 12, 3.1, pss=145),
    ]
    run = split(metered(processes, outlived=[12, 21]), workers=2, tasks=200, k=5)
    assert run.episodes == 1000 and run.cpu_s == 9.0 and run.cores == 1.8
    assert run.command_cpu_s == 2.0  # its exact rusage, not the last poll's 1.9
    assert run.fork_server_cpu_s == 1.0 and run.fork_server_pss_mb == 76
    assert run.workers_cpu_s == 6.1  # 3.0 reaped + 3.1 still there: each once
    assert run.worker_cpu_s == [2.9, 3.1] and run.worker_pss_mb == [140, 145]
    assert run.worker_ready_s == 0.61


def test_an_in_process_run_has_no_fork_server() -> None:
    run = split(metered([proc(10, 1, 9.0, pss=390)], outlived=[]), workers=1, tasks=200, k=5)
    assert run.fork_server_cpu_s == 0 and run.workers_cpu_s == 0 and run.worker_cpu_s == []


def run(workers: int, episodes: int, wall: float, cpu: float, command: float, pool: float) -> WorkersRun:
    return WorkersRun(
        workers=workers,
        tasks=episodes,
        episodes=episodes,
        wall_s=wall,
        cpu_s=cpu,
        cores=round(cpu / wall, 3),
        command_cpu_s=command,
        fork_server_cpu_s=1.0 if workers > 1 else 0.0,
        workers_cpu_s=pool,
        worker_cpu_s=[pool / 2, pool / 2] if workers > 1 else [],
        worker_pss_mb=[140.0, 150.0] if workers > 1 else [],
        command_pss_mb=160.0,
        fork_server_pss_mb=76.0 if workers > 1 else 0.0,
    )


def test_the_costs_are_slopes_and_the_projection_follows_its_formula() -> None:
    big = [
        run(1, 1002, 11.0, 11.0, 11.0, 0.0),
        run(2, 1002, 6.0, 11.2, 2.5, 7.7),
        run(2, 1002, 6.4, 11.4, 2.5, 7.9),
        run(1, 1002, 11.4, 11.4, 11.4, 0.0),
    ]
    small = {1: run(1, 2, 1.6, 1.6, 1.6, 0.0), 2: run(2, 2, 1.8, 2.9, 1.5, 0.3)}
    bench = summarize_runs(big, small, True, 1, [2.0, 2.5], Path("farm"), 1002)
    assert bench.wall_s == {"1": 11.2, "2": 6.2} and bench.speedup == round(11.2 / 6.2, 3)
    assert bench.in_process_ms_per_episode == 9.6  # (11.2 - 1.6) s over 1,000 added episodes
    assert bench.worker_ms_per_episode == 7.5 and bench.command_ms_per_episode == 1.0
    assert bench.worker_startup_cpu_s == pytest.approx((0.3 - 0.0075 * 2) / 2, abs=1e-3)
    assert bench.worker_pss_mb == 145.0
    # wall = 1.6 + 0.0096 E with one worker, 1.8 + 0.0044 E with two: level at E = 2 + 0.2 / 0.0052
    assert bench.break_even_episodes == pytest.approx(2 + 0.2 / (0.0096 - 0.0044), abs=0.1)
    by_cores = {p.cores: p for p in bench.projection}
    assert by_cores[2].episodes_per_s == round(2 / 8.5 * 1000, 1) and by_cores[2].bound == "the cores"
    assert by_cores[16].episodes_per_s == 1000.0 and by_cores[16].bound == "the command's one core"
    assert by_cores[64].memory_mb == 160 + 76 + 64 * 145
    assert by_cores[16].wall_s == round(1.8 + 1002 / 1000, 2)
    table = "\n".join(_workers_section(bench))
    assert "| 16 | 16 | 1000.0 | the command's one core |" in table and "from 40.5 episodes" in table


def test_two_workers_that_never_win_have_no_break_even() -> None:
    big = [run(1, 102, 2.0, 2.0, 2.0, 0.0), run(2, 102, 3.0, 4.0, 2.0, 1.0)]
    small = {1: run(1, 2, 1.0, 1.0, 1.0, 0.0), 2: run(2, 2, 1.5, 2.0, 1.5, 0.2)}
    assert summarize_runs(big, small, True, 1, [9.0, 9.0], Path("farm"), 102).break_even_episodes is None


def test_costs_that_load_swamped_give_no_projection_and_say_so() -> None:
    """Two workers' big runs cheaper than their small ones (noise at a few episodes): the slopes are not positive."""
    big = [run(1, 12, 2.0, 2.0, 2.0, 0.0), run(2, 12, 1.9, 2.0, 1.0, 0.2)]
    small = {1: run(1, 2, 1.0, 1.0, 1.0, 0.0), 2: run(2, 2, 1.5, 2.5, 1.2, 0.3)}
    bench = summarize_runs(big, small, True, 1, [15.0, 15.0], Path("farm"), 12)
    assert bench.worker_ms_per_episode + bench.command_ms_per_episode <= 0
    assert bench.projection == [] and bench.assumptions[-1].startswith("no projection: the per-episode CPU")
    assert "| 16 |" not in "\n".join(_workers_section(bench))


def test_project_is_bound_by_the_command_when_it_is_the_slower() -> None:
    p = project(64, worker_ms=10.0, command_ms=0.5, startup_s=2.0, episodes=1000, memory=(200.0, 100.0))
    assert p.workers == 64 and p.episodes_per_s == 2000.0 and p.bound == "the command's one core"
    assert p.wall_s == 2.5 and p.memory_mb == 6600


@pytest.mark.slow
def test_the_section_runs_one_and_two_workers_on_a_small_farm(farm_root: Path) -> None:
    from envfarm.bench.workers import workers_section

    bench = workers_section(farm_root, tasks=4, k=2, rounds=1)  # this farm makes 2 or more of them
    assert bench.same_scores
    tasks = bench.runs[0].tasks
    small = min(2, tasks - 1)
    assert [(r.workers, r.episodes) for r in bench.runs] == [(1, 2 * tasks), (2, 2 * tasks), (1, small), (2, small)]
    one, two = bench.runs[0], bench.runs[1]
    assert one.worker_cpu_s == [] and one.cpu_s == one.command_cpu_s > 0
    assert len(two.worker_cpu_s) == 2 and all(p > 0 for p in two.worker_pss_mb)
    assert two.fork_server_cpu_s > 0 and two.workers_cpu_s > 0 and two.worker_ready_s is not None
    assert two.cpu_s >= two.command_cpu_s + two.fork_server_cpu_s
    # 4 tasks x 2 episodes under a loaded CI machine may leave no positive per-episode cost to project from: then
    # no projection, and an assumption line that says why (never a division by zero)
    if bench.worker_ms_per_episode + bench.command_ms_per_episode > 0:
        assert [p.cores for p in bench.projection] == [2, 16, 64]
    else:
        assert bench.projection == [] and any(a.startswith("no projection") for a in bench.assumptions)
