"""The reward function for verl's `custom_reward_function` (`path: <this file>`, `name: compute_score`).

The reward of an envfarm rollout is `envfarm.clients.scoring.Scorer`'s, the one `envfarm eval` gives: the final state
against the expected one, the claims on the final answer and the policy checks. Only the rollout's own episode
knows its final state, so `envfarm.clients.verl_env.EnvfarmInteraction` scores it when the simulated user is done and
reports the reward as its last turn score, which verl hands to this function in `extra_info["turn_scores"]`.
Given a recorded trajectory instead (`extra_info["trajectory"]`, one line of `trajectories.jsonl`), it
scores that, as `envfarm eval` would.
"""

from __future__ import annotations

from typing import Any

import anyio

from envfarm.clients.scoring import Scorer
from envfarm.clients.trajectory import Trajectory

DATA_SOURCE = "envfarm"


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None
) -> float:
    """verl's reward signature. A rollout that ended before the user was done (verl cut it at its length or
    turn limit) never had its episode scored, and gets 0."""
    if data_source != DATA_SOURCE:
        raise ValueError(f"compute_score scores envfarm rows (data_source {DATA_SOURCE!r}), not {data_source!r}")
    info = extra_info or {}
    if info.get("trajectory"):
        trajectory = Trajectory.model_validate_json(str(info["trajectory"]))
        scored = anyio.run(Scorer(), trajectory)
        return scored.score.reward if scored.score is not None else 0.0
    scores = list(info.get("turn_scores") or [])
    return float(scores[-1]) if scores else 0.0
