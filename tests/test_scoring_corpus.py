"""The adversarial scoring corpus (`tests/scoring_corpus.py`), really executed and scored by `envfarm eval`.

Every case's steps are replayed as a model's actions in a real rollout: its tool calls run on the live
servers (in-process, over `mcp.Client`), the scripted user answers its questions, and the final states are
read from the control plane. The trajectories go to a JSONL file and `envfarm eval` scores it: the verdicts
compared here are the ones the CLI writes. Each case must agree with the careful human's verdict (and the user
must answer as a person would); the agreement over the whole corpus is printed and must be >= 95%.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import REPO
from scoring_corpus import CASES, Case

from envfarm.cli import main as envfarm
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import Action, AgentTool, ToolCallRequest
from envfarm.clients.rollout import EndEpisode, Rollout, task_servers
from envfarm.clients.tasks import Task, load_tasks, read_jsonl, write_jsonl
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import ScriptedUser

TASKS = REPO / "tests" / "data" / "scoring_corpus" / "tasks.jsonl"


@dataclass
class ReplayAgent:
    """Plays a case's steps in order, one action per step; out of steps, the episode ends."""

    case: Case
    task: Task
    names: dict[tuple[str, str], str]
    done: int = field(default=0)

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        if self.done >= len(self.case.steps):
            raise EndEpisode
        step = self.case.steps[self.done]
        self.done += 1
        if step[0] == "say":
            return Action(content=step[1])
        if step[0] == "gold":
            gold = self.task.gold_calls[step[1]]
            server, tool, arguments = gold.server, gold.tool, gold.arguments
        else:
            _, server, tool, arguments = step
        name = self.names.get((server, tool))
        assert name is not None, f"{self.case.id}: the task does not enable {server}.{tool}"
        return Action(tool_calls=[ToolCallRequest(id=f"call_{self.done}", name=name, arguments=json.dumps(arguments))])


@dataclass
class ReplayPolicy:
    case: Case
    name: str = "replay"

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> ReplayAgent:
        return ReplayAgent(self.case, task, {(t.server, t.tool): t.name for t in tools})

    async def aclose(self) -> None:
        return None


async def roll_out(tasks: dict[str, Task]) -> list[Trajectory]:
    servers = sorted({s for case in CASES for s in task_servers(tasks[case.task])})
    trajectories = []
    async with Connections(farm_targets(REPO, servers), timeout=20) as connections:
        for case in CASES:
            trajectory = await Rollout(tasks[case.task], ReplayPolicy(case), ScriptedUser(), connections).run()
            trajectory.id = f"corpus:{case.id}"
            trajectory.metadata["case"] = case.id
            trajectories.append(trajectory)
    return trajectories


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Trajectory]:
    """Every case rolled out for real, then scored by `envfarm eval` (the CLI, in this process)."""
    tasks = {task.id: task for task in load_tasks(TASKS)}
    folder = tmp_path_factory.mktemp("corpus")
    rolled, rescored = folder / "corpus.jsonl", folder / "scored.jsonl"
    write_jsonl(rolled, anyio.run(roll_out, tasks))
    assert envfarm(["eval", str(rolled), "--out", str(rescored)]) == 0
    return {t.metadata["case"]: t for t in read_jsonl(rescored, Trajectory)}


def verdict(trajectory: Trajectory) -> bool:
    assert trajectory.score is not None
    return trajectory.score.success


def explain(trajectory: Trajectory) -> str:
    score = trajectory.score
    assert score is not None
    said = [f"{m['role']}: {m.get('content')}" for m in trajectory.messages[1:] if m.get("content")]
    why = (
        score.state_problems + score.policy_problems + [f"claim {g.claim}: {g.score} {g.detail}" for g in score.claims]
    )
    return f"error={score.error}; " + "; ".join(why) + "\n" + "\n".join(said)


def test_the_corpus_is_broad() -> None:
    assert len(CASES) >= 40 and len({c.id for c in CASES}) == len(CASES)
    tasks = {task.id: task for task in load_tasks(TASKS)}
    servers = {s for case in CASES for s in tasks[case.task].servers}
    assert len(servers) >= 8, servers
    assert sum(c.passes for c in CASES) >= 15 and sum(not c.passes for c in CASES) >= 15


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_envfarm_eval_agrees_with_the_careful_human(case: Case, scored: dict[str, Trajectory]) -> None:
    trajectory = scored[case.id]
    calls = [s for s in case.steps if s[0] in ("gold", "call")]
    assert len(trajectory.calls) == len(calls) and all(c.ok for c in trajectory.calls), "the case ran as written"
    replies = [str(m["content"]) for m in trajectory.messages[2:] if m["role"] == "user"]
    for expected, reply in zip(case.user, replies, strict=False):
        assert reply.startswith(expected), f"the user answered {reply!r}, a person says {expected!r}..."
    assert len(replies) >= len(case.user), replies
    assert verdict(trajectory) is case.passes, f"{case.why}\n{explain(trajectory)}"
    if case.error is not None:
        assert trajectory.score is not None and trajectory.score.error == case.error, explain(trajectory)


def test_agreement_over_the_corpus(scored: dict[str, Trajectory]) -> None:
    agree = sum(verdict(scored[case.id]) is case.passes for case in CASES)
    print(f"envfarm eval agrees with the careful human on {agree} of {len(CASES)} ({agree / len(CASES):.1%})")
    assert agree / len(CASES) >= 0.95


def test_the_corpus_file_holds_only_the_tasks_it_uses() -> None:
    used = {case.task for case in CASES}
    assert {task.id for task in load_tasks(Path(TASKS))} == used
