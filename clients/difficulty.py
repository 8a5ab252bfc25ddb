"""Graded difficulty: a stochastic reference policy gives every task a solve rate in [0, 1].

The heuristic baseline is deterministic, so its solve rate is 0 or 1 for every task. The sampled
heuristic (`envfarm.clients.policies.SampledHeuristicPolicy`) draws each of its choices at a temperature,
so its k attempts of one task take different goals, lookups and rows; the share of attempts that succeed
is the task's difficulty for it. `envfarm tasks --difficulty LO:HI` keeps the tasks whose rate lies in
the band. Attempt `a` of task `t` draws from its own generator seeded by (t, a) alone, so a task's rate
does not depend on which rollouts run concurrently, nor on which worker runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from envfarm.clients.connect import Connections
from envfarm.clients.policies import SAMPLED, SampledHeuristicPolicy
from envfarm.clients.rollout import RolloutOptions, rollout_tasks
from envfarm.clients.scoring import Scorer
from envfarm.clients.tasks import Difficulty, Task
from envfarm.clients.users import ScriptedUser

POLICY = SAMPLED


def parse_band(text: str) -> tuple[float, float]:
    """'0.2:0.8' -> (0.2, 0.8); a clear error naming the flag otherwise."""
    try:
        low, high = (float(part) for part in text.split(":"))
    except ValueError as exc:
        raise ValueError(f"--difficulty {text!r}: expected LO:HI, two numbers in [0, 1]") from exc
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"--difficulty {text!r}: expected 0 <= LO <= HI <= 1")
    return low, high


async def grade(tasks: Sequence[Task], connections: Connections, k: int = 4, concurrency: int = 8) -> list[Task]:
    """The tasks with `difficulty` filled in: the sampled heuristic's solve rate over `k` attempts."""
    if k < 1:
        raise ValueError("k must be at least 1")
    trajectories = await rollout_tasks(
        tasks,
        SampledHeuristicPolicy(),
        ScriptedUser(),
        connections,
        RolloutOptions(k=k, concurrency=concurrency),
        scorer=Scorer(),
    )
    solved: dict[str, int] = {}
    for trajectory in trajectories:
        success = trajectory.score is not None and trajectory.score.success
        solved[trajectory.task_id] = solved.get(trajectory.task_id, 0) + int(success)
    graded = []
    for task in tasks:
        rate = round(solved.get(task.id, 0) / k, 3)
        difficulty = task.difficulty or Difficulty()
        difficulty = difficulty.model_copy(
            update={
                "solve_rate": {**difficulty.solve_rate, POLICY: rate},
                "rollouts": {**difficulty.rollouts, POLICY: k},
            }
        )
        graded.append(task.model_copy(update={"difficulty": difficulty}))
    return graded


def in_band(tasks: Sequence[Task], low: float, high: float) -> list[Task]:
    return [t for t in tasks if t.difficulty and low <= t.difficulty.solve_rate.get(POLICY, -1.0) <= high]
