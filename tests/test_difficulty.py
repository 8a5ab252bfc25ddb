"""Graded difficulty: the sampled heuristic gives each task a solve rate in [0, 1], the same again for
the same tasks, and `--difficulty LO:HI` keeps the band."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import anyio
import pytest
from conftest import REPO

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.difficulty import POLICY, grade, in_band, parse_band
from envfarm.clients.policies import (
    SAMPLED,
    HeuristicAgent,
    HeuristicPolicy,
    SampledHeuristicAgent,
    SampledHeuristicPolicy,
    make_policy,
)
from envfarm.clients.scoring.aggregate import solve_rate_histogram
from envfarm.clients.synthesize import SynthesisOptions, synthesize
from envfarm.clients.tasks import Task, write_jsonl


@pytest.mark.slow
async def test_solve_rates_are_fractions_of_k_and_repeat() -> None:
    servers = ["clinic", "banking", "calendar", "mail"]
    async with Connections(farm_targets(REPO, servers)) as farm:
        tasks = (await synthesize(SynthesisOptions(n=6, seed=3, servers=servers), farm)).tasks
        graded = await grade(tasks, farm, k=4)
        again = await grade(tasks, farm, k=4)
    rates = [t.difficulty.solve_rate[POLICY] for t in graded if t.difficulty]
    assert len(rates) == len(tasks) and all(r in {0.0, 0.25, 0.5, 0.75, 1.0} for r in rates)
    assert rates == [t.difficulty.solve_rate[POLICY] for t in again if t.difficulty]
    assert all(t.difficulty and t.difficulty.rollouts[POLICY] == 4 for t in graded)
    low = in_band(graded, 0.0, 0.0)
    assert all(t.difficulty and t.difficulty.solve_rate[POLICY] == 0.0 for t in low)
    assert len(in_band(graded, 0.0, 1.0)) == len(graded)


@pytest.mark.parametrize("text", ["0.5", "a:b", "0.8:0.2", "0:2"])
def test_a_bad_band_is_a_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match="--difficulty"):
        parse_band(text)
    assert parse_band("0.2:0.8") == (0.2, 0.8)


# ---------------------------------------------------------------- the sampled heuristic


def _agent(task_id: str, attempt: int) -> SampledHeuristicAgent:
    return SampledHeuristicPolicy().agent(Task.model_construct(id=task_id), [], attempt=attempt)


def test_the_greedy_heuristic_takes_the_first_best_choice_and_the_sampled_one_draws() -> None:
    greedy = HeuristicPolicy().agent(Task.model_construct(id="t"), [])
    assert isinstance(greedy, HeuristicAgent)
    assert greedy._pick(["a", "b", "c"], [1.0, 3.0, 3.0]) == "b"
    # An attempt draws the same choices again, wherever it runs; attempts (and tasks) draw differently.
    keys = [(task, attempt) for task in ("t1", "t2") for attempt in range(8)]

    def draws() -> list[list[str]]:
        agents = [_agent(*key) for key in keys]
        return [[agent._pick(list("abcd"), [1.0] * 4) for _ in range(3)] for agent in agents]

    assert draws() == draws()
    assert len({tuple(d) for d in draws()}) > 1
    # A lead of 10 (the tool named in the request) wins nearly every draw; at equal scores each is drawn.
    picks = Counter(_agent("t1", a)._pick(["named", "other"], [10.0, 0.0]) for a in range(2000))
    assert picks["named"] > 1990
    picks = Counter(_agent("t1", a)._pick(["x", "y"], [2.0, 2.0]) for a in range(2000))
    assert 800 < picks["x"] < 1200
    # Within an attempt a choice, once drawn, stands until the candidates or their scores change.
    agent = _agent("t1", 0)
    assert len({agent._pick(list("abcd"), [1.0] * 4) for _ in range(20)}) == 1
    assert len({agent._pick(list("abcd"), [1.0, 1.0, 1.0, 1.0 + i / 1000]) for i in range(20)}) > 1
    assert make_policy(SAMPLED).name == SAMPLED == POLICY


def test_the_solve_rate_histogram_counts_tasks_per_rate() -> None:
    per_task = {"a": [True, False, False, False, False], "b": [False] * 5, "c": [True] * 5, "d": [False] * 5}
    assert solve_rate_histogram(per_task) == {"0": 2, "0.2": 1, "1": 1}
    assert solve_rate_histogram({"a": [True, False, True]}) == {"0.667": 1}


def _stable(line: str) -> str:
    """A trajectory line without its timings and its episodes' random tags (they differ between any two runs)."""
    row = json.loads(line)
    del row["seconds"], row["episodes"]
    for call in row["calls"]:
        del call["seconds"]
    return json.dumps(row)


@pytest.mark.slow
def test_the_sampled_heuristic_writes_the_same_bytes_again_and_on_two_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`envfarm rollout --policy heuristic-sampled --k 3`: the same trajectories and scores twice with one worker
    and once with two, and the solve-rate histogram printed."""
    from envfarm.cli import main

    servers = ["clinic", "banking", "calendar", "mail"]

    async def tasks() -> list[Task]:
        async with Connections(farm_targets(REPO, servers)) as farm:
            return (await synthesize(SynthesisOptions(n=6, seed=3, servers=servers), farm)).tasks

    tasks_file = tmp_path / "tasks.jsonl"
    write_jsonl(tasks_file, anyio.run(tasks))
    common = ["--farm", str(REPO), "rollout", str(tasks_file), "--policy", SAMPLED, "--k", "3"]
    written = []
    for run, workers in enumerate((1, 1, 2)):
        out = tmp_path / f"run{run}.jsonl"
        assert main([*common, "--workers", str(workers), "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        assert f"{SAMPLED}: tasks per solve rate over 3 attempts: " in printed
        written.append([_stable(line) for line in out.read_text().splitlines()])
    assert written[0] == written[1] == written[2]
    assert len(written[0]) == 18
