"""Every command accepts what another wrote: `tasks` -> `rollout` -> `eval` -> `export`, each with its
default flags (only the count and seed of `tasks`, and the format `export` requires), on several seeds.

Synthesized tasks enable a few tools of a server outside the task as distractors; `rollout` must
connect those servers too (it once connected only `task.servers` and died with "no server named ...")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envfarm.cli import main
from envfarm.clients.formats import FORMATS
from envfarm.clients.rollout import task_servers
from envfarm.clients.tasks import Task, read_jsonl
from envfarm.clients.trajectory import Trajectory

SEEDS = (1, 2, 3)


@pytest.mark.parametrize("seed", SEEDS)
def test_tasks_rollout_eval_export_chain_with_default_flags(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["tasks", "--n", "2", "--seed", str(seed)]) == 0
    tasks = list(read_jsonl(tmp_path / "tasks.jsonl", Task))
    assert tasks  # (a seed may ground fewer than asked: that is synthesis's business, not the chain's)
    # The case that broke rollout: a distractor's server that no task is about.
    assert {s for t in tasks for s in task_servers(t)} > {s for t in tasks for s in t.servers}

    assert main(["rollout", "tasks.jsonl"]) == 0, capsys.readouterr().err
    trajectories = list(read_jsonl(tmp_path / "tasks.trajectories.jsonl", Trajectory))
    assert [t.task_id for t in trajectories] == [t.id for t in tasks]
    assert all(t.stop_reason != "server_error" for t in trajectories), [t.stop_detail for t in trajectories]

    assert main(["eval", "tasks.trajectories.jsonl"]) == 0
    assert "heuristic" in capsys.readouterr().out  # the summary table names the policy it scored

    for fmt in FORMATS:
        assert main(["export", "tasks.trajectories.jsonl", "--format", fmt]) == 0
        written = sorted(p for p in tmp_path.iterdir() if p.name.startswith("tasks.trajectories_") and fmt in p.name)
        assert written, f"export --format {fmt} wrote nothing"
        out = capsys.readouterr().out
        assert f"{fmt} rows to" in out
    verl = next(p for p in tmp_path.iterdir() if p.name.startswith("tasks.trajectories_verl"))
    if verl.suffix == ".jsonl":
        rows = [json.loads(line) for line in verl.read_text().splitlines() if line]
        assert len(rows) == len(tasks)  # one RL row per task, failed rollouts included
