"""Aggregates over scored trajectories: per-policy rates (server and policy errors counted, never averaged in),
pass@k and pass^k, measured task difficulty, and the oracle's failures (each one a pipeline bug)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field

from envfarm.clients.tasks import Difficulty, Task
from envfarm.clients.trajectory import Trajectory


class PolicySummary(BaseModel):
    """What `scores.json` holds per policy (and per opening: calibrated or not)."""

    policy: str
    calibrated: bool
    episodes: int
    scored_episodes: int = Field(description="episodes without a server or policy error (the denominator of the rates)")
    success_rate: float
    state_match_rate: float
    claims_pass_rate: float
    policy_pass_rate: float = Field(0.0, description="share of episodes whose every policy check held")
    policy_checks: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="per check kind (and overall, 'all'): checks graded and passed"
    )
    mean_reward: float
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    pass_hat_k: dict[str, float] = Field(default_factory=dict)
    solve_rates: dict[str, int] = Field(
        default_factory=dict,
        description="per-task solve rate (the share of its scored attempts that succeeded) -> tasks, ascending",
    )
    errors: dict[str, int] = Field(default_factory=dict)
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    tool_calls_per_episode: float = 0.0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k draws from n attempts (c correct) succeeds (the unbiased estimator)."""
    return 1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all k draws succeed (tau-bench's pass^k)."""
    return math.comb(c, k) / math.comb(n, k)


def summarize(trajectories: Sequence[Trajectory]) -> list[PolicySummary]:
    """Per (policy, opening) rates over scored trajectories; server errors are counted, not averaged in."""
    groups: dict[tuple[str, bool], list[Trajectory]] = {}
    for t in trajectories:
        groups.setdefault((t.policy, t.calibrated), []).append(t)
    summaries = []
    for (policy, calibrated), group in groups.items():
        scored = [t for t in group if t.score is not None and not t.score.excluded]
        n = max(len(scored), 1)

        def rate(flag: list[bool], n: int = n) -> float:
            return round(sum(flag) / n, 4)

        per_task: dict[str, list[bool]] = {}
        for t in scored:
            per_task.setdefault(t.task_id, []).append(bool(t.score and t.score.success))
        k_max = min((len(v) for v in per_task.values()), default=0)
        at_k, hat_k = {}, {}
        for k in range(1, k_max + 1):
            at_k[str(k)] = round(sum(pass_at_k(len(v), sum(v), k) for v in per_task.values()) / len(per_task), 4)
            hat_k[str(k)] = round(sum(pass_hat_k(len(v), sum(v), k) for v in per_task.values()) / len(per_task), 4)
        summaries.append(
            PolicySummary(
                policy=policy,
                calibrated=calibrated,
                episodes=len(group),
                scored_episodes=len(scored),
                success_rate=rate([bool(t.score and t.score.success) for t in scored]),
                state_match_rate=rate([bool(t.score and t.score.state_match is not False) for t in scored]),
                claims_pass_rate=rate([bool(t.score and t.score.claims_pass) for t in scored]),
                policy_pass_rate=rate([bool(t.score and t.score.policy_pass) for t in scored]),
                policy_checks=_check_tally(scored),
                mean_reward=round(sum(t.score.reward for t in scored if t.score) / n, 4),
                pass_at_k=at_k,
                pass_hat_k=hat_k,
                solve_rates=solve_rate_histogram(per_task),
                errors=dict(Counter(t.score.error for t in group if t.score and t.score.error)),
                stop_reasons=dict(Counter(t.stop_reason for t in group)),
                tool_calls_per_episode=round(sum(len(t.calls) for t in group) / max(len(group), 1), 3),
            )
        )
    return summaries


def solve_rate_histogram(per_task: dict[str, list[bool]]) -> dict[str, int]:
    """How many tasks have each solve rate over their attempts ("0", "0.4", "1"): with one deterministic attempt
    every task is 0 or 1; a stochastic policy over k attempts spreads them over [0, 1]."""
    rates = Counter(round(sum(v) / len(v), 3) for v in per_task.values() if v)
    return {f"{rate:g}": rates[rate] for rate in sorted(rates)}


def _check_tally(trajectories: Sequence[Trajectory]) -> dict[str, dict[str, int]]:
    tally: dict[str, dict[str, int]] = {}
    for t in trajectories:
        for grade in t.score.policy if t.score else []:
            for key in (grade.kind, "all"):
                entry = tally.setdefault(key, {"checks": 0, "passed": 0})
                entry["checks"] += 1
                entry["passed"] += grade.passed
    return dict(sorted(tally.items()))


def fill_difficulty(tasks: Sequence[Task], trajectories: Sequence[Trajectory]) -> None:
    """Each task's measured difficulty: the solve rate of every policy that rolled it out (calibrated openings)."""
    by_task: dict[str, dict[str, list[bool]]] = {}
    for t in trajectories:
        if t.calibrated and t.score is not None and not t.score.excluded:
            by_task.setdefault(t.task_id, {}).setdefault(t.policy, []).append(t.score.success)
    for task in tasks:
        runs = by_task.get(task.id)
        if not runs:
            continue
        difficulty = task.difficulty or Difficulty()
        for policy, results in runs.items():
            difficulty.solve_rate[policy] = round(sum(results) / len(results), 4)
            difficulty.rollouts[policy] = len(results)
        task.difficulty = difficulty


def oracle_failures(trajectories: Sequence[Trajectory]) -> list[str]:
    """Tasks where the oracle did not score 1.0: each one a pipeline bug, with why."""
    failures = []
    for t in trajectories:
        if t.policy == "oracle" and t.score is not None and t.score.reward < 1.0:
            why = (
                t.score.state_problems
                + t.score.policy_problems
                + [f"claim missing: {g.claim}" for g in t.score.claims if g.score < 1]
            )
            failures.append(f"{t.task_id}: {t.stop_reason}; " + ("; ".join(why) or (t.score.error or "")))
    return failures
