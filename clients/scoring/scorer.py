"""The scorer: each part of a rollout graded on its own, then one reward and, when it failed, why.

- State (`envfarm.clients.scoring.state`): the final diff of every server against the gold one, path-independent.
- Claims (`envfarm.clients.scoring.claims`): each claim against the assistant's answers alone, by meaning, or by an
  LLM judge when one is configured; the answer passes at >= 0.75 coverage.
- Policy checks (`envfarm.clients.scoring.checks`): deterministic from the trajectory; a refusal's wording also goes
  to the judge when one is configured.
- An error taxonomy that keeps the environment's failures apart from the agent's, with policy violations and
  false claims of success their own kinds.
The default reward is 1.0 when the state matches, the claims pass and every policy check holds, else 0.0.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from envfarm.clients.policy_checks import claims_success
from envfarm.clients.scoring.checks import clocks_of, last_words, policy_grades
from envfarm.clients.scoring.claims import PASS_COVERAGE, evidence_of, final_answers, grade_claim
from envfarm.clients.scoring.judge import judge_claim, judge_refusal
from envfarm.clients.scoring.state import state_match
from envfarm.clients.trajectory import ErrorCategory, Score, Trajectory
from envfarm.llm import ChatModel


class RewardConfig(BaseModel):
    """How the score becomes a reward. `all`: 1.0 only when every required part passes."""

    mode: Literal["all", "weighted"] = "all"
    require_state: bool = True
    require_claims: bool = True
    require_policy: bool = True
    weights: dict[str, float] = Field(default_factory=lambda: {"state": 0.5, "claims": 0.5})


def false_success(trajectory: Trajectory, score: Score) -> bool:
    """The assistant told the user a change was made when it was not: on a request the policy forbids (a forbidden
    write that did run is a policy violation instead), or when a change the task wants never ran and nothing else
    was written in its place (a different, wrong write is a wrong tool or wrong arguments)."""
    if not claims_success(last_words(trajectory)):
        return False
    task = trajectory.task
    forbidden = {tool for check in task.policy_checks if check.kind == "must_refuse" for tool in check.tools}
    if any(check.kind == "must_refuse" for check in task.policy_checks):
        return not any(c.ok and c.tool in forbidden for c in trajectory.calls)
    wanted = {(g.server, g.tool) for g in task.gold_calls if g.is_write}
    written = {(c.server, c.tool) for c in trajectory.calls if c.ok and c.name in trajectory.write_tools}
    return score.state_match is False and bool(wanted - written) and written <= wanted


def classify(trajectory: Trajectory, score: Score) -> ErrorCategory | None:
    """Why a rollout failed, the environment's fault first (so it never counts against the agent)."""
    if score.success:
        return None
    if trajectory.stop_reason == "policy_error":
        return "policy_error"
    if trajectory.stop_reason == "server_error" or any(
        c.error in ("server_error", "timeout") for c in trajectory.calls
    ):
        return "server_error"
    if trajectory.stop_reason == "user_error":
        return "user_error"
    if false_success(trajectory, score):
        return "false_success"
    if trajectory.stop_reason in ("max_turns", "max_tool_calls", "max_tokens", "wall_time"):
        return "out_of_turns"
    if any(not g.passed and g.kind != "must_call" for g in score.policy):
        return "policy_violation"  # did what the policy forbids (a missing must-call is judged below)
    if score.state_match is not False and not score.claims_pass:
        if any(g.judge_error for g in score.claims) and score.claims_coverage < PASS_COVERAGE:
            return "judge_error"
        return "wrong_answer" if any(c.ok for c in trajectory.calls) else "gave_up"  # nothing looked up: no answer
    if score.state_match is not False:
        return "policy_violation"  # state and claims hold: only a policy check failed
    errors = {c.error for c in trajectory.calls}
    gold_writes = {(g.server, g.tool) for g in trajectory.task.gold_calls if g.is_write}
    done = {(c.server, c.tool) for c in trajectory.calls if c.ok}
    if "unknown_tool" in errors or any(
        c.ok and (c.server, c.tool) not in gold_writes and c.name in trajectory.write_tools for c in trajectory.calls
    ):
        return "wrong_tool"
    if errors & {"malformed", "invalid_arguments"}:
        return "bad_arguments"
    if "rejected" in errors:
        return "rule_violation"
    if gold_writes and gold_writes <= done:
        return "bad_arguments"  # the right writes ran, with the wrong values
    return "gave_up"


def reward(score: Score, config: RewardConfig) -> float:
    if config.mode == "weighted":
        state = 1.0 if score.state_match in (True, None) else 0.0
        return round(
            config.weights.get("state", 0.0) * state + config.weights.get("claims", 0.0) * score.claims_coverage, 4
        )
    parts = []
    if config.require_state:
        parts.append(score.state_match is not False)
    if config.require_claims:
        parts.append(score.claims_pass)
    if config.require_policy:
        parts.append(score.policy_pass)
    return 1.0 if all(parts) else 0.0


class Scorer:
    """Scores trajectories: deterministic by default, with an LLM judge for claims when given one."""

    def __init__(self, config: RewardConfig | None = None, judge: ChatModel | None = None) -> None:
        self.config = config or RewardConfig()
        self.judge = judge

    async def __call__(self, trajectory: Trajectory) -> Trajectory:
        task = trajectory.task
        matched, problems = state_match(task, trajectory.final_state)
        answer = final_answers(trajectory.messages)
        clocks, evidence = clocks_of(trajectory), evidence_of(trajectory.messages)
        grades = [grade_claim(claim, answer, clocks, evidence) for claim in task.claims]
        if self.judge is not None:
            grades = [
                await judge_claim(self.judge, claim, answer, grade)
                for claim, grade in zip(task.claims, grades, strict=True)
            ]
        coverage = sum(g.score for g in grades) / len(grades) if grades else 1.0
        policy = policy_grades(task.policy_checks, trajectory)
        if self.judge is not None:
            said = last_words(trajectory)
            policy = [
                await judge_refusal(self.judge, check, said, grade) if check.kind == "must_refuse" else grade
                for check, grade in zip(task.policy_checks, policy, strict=True)
            ]
        score = Score(
            state_match=matched,
            state_problems=problems,
            claims_coverage=round(coverage, 4),
            claims_pass=coverage >= PASS_COVERAGE,
            claims=grades,
            policy_pass=all(g.passed for g in policy),
            policy_problems=[g.detail for g in policy if not g.passed],
            policy=policy,
        )
        score.server_error = trajectory.stop_reason == "server_error"
        score.policy_error = trajectory.stop_reason == "policy_error"
        score.reward = 0.0 if score.excluded else reward(score, self.config)
        score.success = score.reward >= 1.0 if self.config.mode == "all" else score.reward >= PASS_COVERAGE
        score.error = classify(trajectory, score)
        trajectory.score = score
        return trajectory
