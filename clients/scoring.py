"""Scoring: rewards that cannot be gamed by the path taken or by talk alone.

- State match (tau2-style, path-independent): each server's final diff against the seed must equal
  the gold diff, table by table, and no other table may change. Ids the gold run generated (the keys
  of rows it added) are compared as placeholders, so an agent whose detours used up other ids still
  matches; every other value must be equal.
- Claims coverage (MCP-Atlas-style): each claim scores 1 / 0.5 / 0 against what the assistant said,
  by deterministic normalized matching offline (numbers, dates, case) or by an LLM judge when one is
  configured; the answer passes at >= 0.75 coverage.
- Policy checks (`clients.policy_checks`): graded deterministically from the trajectory (a read-back
  answered before a write, a customer lookup before acting for them, no forbidden write); a refusal's
  wording also goes to the LLM judge when one is configured.
- An error taxonomy that keeps server errors apart from the agent's, with policy violations their own kind.
The default reward is 1.0 when the state matches, the claims pass and every policy check holds, else 0.0.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from clients.policy_checks import asks_confirmation, declines, identifies
from clients.tasks import Claim, Difficulty, ExpectedState, PolicyCheck, Task
from clients.trajectory import ClaimGrade, ErrorCategory, PolicyGrade, Score, ServerState, Trajectory
from envfarm.llm import ChatModel, LLMError
from servers.runtime.control import TableDiff

PASS_COVERAGE = 0.75
NEW_ID = "<new id>"


class RewardConfig(BaseModel):
    """How the score becomes a reward. `all`: 1.0 only when every required part passes."""

    mode: Literal["all", "weighted"] = "all"
    require_state: bool = True
    require_claims: bool = True
    require_policy: bool = True
    weights: dict[str, float] = Field(default_factory=lambda: {"state": 0.5, "claims": 0.5})


# ---------------------------------------------------------------- state match


def _generated_ids(diff: dict[str, TableDiff]) -> set[Any]:
    """The key (first column) of every added row: ids the run generated."""
    return {next(iter(row.values())) for table in diff.values() for row in table.added if row}


def _canonical(value: Any, new_ids: set[Any]) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v, new_ids) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_canonical(v, new_ids) for v in value]
    return NEW_ID if isinstance(value, str) and value in new_ids else value


def _rows(rows: list[dict[str, Any]], new_ids: set[Any]) -> Counter[str]:
    return Counter(json.dumps(_canonical(row, new_ids), sort_keys=True, default=str) for row in rows)


def _updated(rows: list[dict[str, Any]], new_ids: set[Any]) -> Counter[str]:
    """Updated rows by key and final values (`before` is the seed's, so it adds nothing)."""
    return _rows([{"key": row.get("key"), "after": row.get("after")} for row in rows], new_ids)


def state_problems(expected: ExpectedState, final: ServerState, server: str) -> list[str]:
    """What differs between the gold diff and the final one; empty when they match."""
    problems: list[str] = []
    gold_new, final_new = _generated_ids(expected.diff), _generated_ids(final.diff)
    empty = TableDiff()
    for table in sorted(set(expected.diff) | set(final.diff)):
        want, got = expected.diff.get(table, empty), final.diff.get(table, empty)
        if table not in expected.diff and table not in expected.tables:
            problems.append(f"{server}.{table}: changed, but the task never touches it")
            continue
        for part, compare in (("added", _rows), ("removed", _rows), ("updated", _updated)):
            wanted = compare(getattr(want, part), gold_new)
            found = compare(getattr(got, part), final_new)
            if wanted != found:
                missing = sum((wanted - found).values())
                extra = sum((found - wanted).values())
                problems.append(f"{server}.{table}: {part} rows differ ({missing} missing, {extra} unexpected)")
    return problems


def state_match(task: Task, final: dict[str, ServerState]) -> tuple[bool | None, list[str]]:
    """Path-independent match of every server's final state; None when no server reports state."""
    checked, problems = 0, []
    for server, expected in task.expected_state.items():
        state = final.get(server)
        if state is None:
            continue
        checked += 1
        if expected.hash is not None and state.hash == expected.hash:
            continue  # byte-identical state: no need to compare diffs
        problems += state_problems(expected, state, server)
    for server, state in final.items():
        if server not in task.expected_state and state.diff:
            checked += 1
            problems.append(f"{server}: changed ({', '.join(sorted(state.diff))}), but the task never touches it")
    return (None, []) if checked == 0 else (not problems, problems)


# ---------------------------------------------------------------- claims

MONTHS = {
    m: n
    for n, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        1,
    )
}
MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})")
MONTH_FIRST = re.compile(rf"\b{MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}\.?(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?", re.IGNORECASE)


def _month(name: str) -> int:
    return next(n for m, n in MONTHS.items() if m.startswith(name.lower()[:3]))


def dates_in(text: str, default_year: int | None = None) -> set[tuple[int | None, int, int]]:
    """(year, month, day) of every date written as ISO, 'March 5, 2026' or '5 March'."""
    found: set[tuple[int | None, int, int]] = set()
    for y, m, d in ISO_DATE.findall(text):
        found.add((int(y), int(m), int(d)))
    for month, day, year in MONTH_FIRST.findall(text):
        found.add((int(year) if year else default_year, _month(month), int(day)))
    for day, month, year in DAY_FIRST.findall(text):
        found.add((int(year) if year else default_year, _month(month), int(day)))
    return found


def numbers_in(text: str) -> list[float]:
    values = []
    for raw in NUMBER.findall(text):
        try:
            values.append(float(raw.replace(",", "")))
        except ValueError:
            continue
    return values


def times_in(text: str) -> set[tuple[int, int]]:
    found = set()
    for hour, minute, half in TIME.findall(text):
        h = int(hour) % 12 + (12 if half and half.lower().startswith("p") else 0) if half else int(hour)
        if minute or half:
            found.add((h, int(minute or 0)))
    return found


def normalize(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w@.$:/-]+", " ", text.lower())).strip()


def value_found(value: str, answer: str) -> bool:
    """Is `value` stated in `answer`? Numbers by value, dates in any common form, text case-insensitively."""
    raw = str(value).strip()
    if not raw:
        return True
    try:
        moment = datetime.fromisoformat(raw)
        is_datetime = "T" in raw or " " in raw.strip()
    except ValueError:
        moment, is_datetime = None, False
    if moment is not None:
        day = (moment.year, moment.month, moment.day)
        dates = dates_in(answer, default_year=moment.year)
        if day not in dates and (None, moment.month, moment.day) not in dates:
            return False
        return not is_datetime or (moment.hour, moment.minute) in times_in(answer) or raw[11:16] in answer
    number = raw.replace(",", "").removeprefix("$")
    try:
        target = float(number)
    except ValueError:
        if normalize(raw) in normalize(answer):
            return True
        parts = [part for part in raw.split(", ") if part.strip()]  # a list value: every item, in any order
        return len(parts) > 1 and all(value_found(part, answer) for part in parts)
    return any(math.isclose(target, found, abs_tol=0.005) for found in numbers_in(answer))


def grade_claim(claim: Claim, answer: str) -> ClaimGrade:
    values = claim.values or [claim.text]
    matched = [v for v in values if value_found(v, answer)]
    missing = [v for v in values if v not in matched]
    score = 1.0 if not missing else 0.5 if matched else 0.0
    return ClaimGrade(claim=claim.text, score=score, matched=matched, missing=missing, judge="deterministic")


JUDGE_PROMPT = (
    "You grade whether an assistant's final answer states a claim. Reply with exactly one number: "
    "1 if the answer states the claim fully and correctly, 0.5 if partly, 0 if not or wrongly."
)


async def ask_judge(judge: ChatModel, system: str, user: str, grades: set[float]) -> tuple[float | None, str | None]:
    """The judge's one-number grade, or None and why (a failed call, or an answer that is not one of `grades`):
    a broken judge never crashes scoring nor silently rewards."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    try:
        reply = await judge.text(messages, max_tokens=8)
    except LLMError as exc:
        return None, str(exc)
    try:
        value = float(reply.strip().strip(".").strip())
    except ValueError:
        value = math.nan
    if value not in grades:
        allowed = ", ".join(f"{g:g}" for g in sorted(grades, reverse=True))
        return None, f"{judge.name}: not a grade ({allowed}): {reply[:80]!r}"
    return value, None


async def judge_claim(judge: ChatModel, claim: Claim, answer: str) -> ClaimGrade:
    """The judge's 1 / 0.5 / 0; a judge error keeps the deterministic grade and records why."""
    fallback = grade_claim(claim, answer)
    value, error = await ask_judge(judge, JUDGE_PROMPT, f"Answer:\n{answer}\n\nClaim:\n{claim.text}", {1.0, 0.5, 0.0})
    if value is None:
        return fallback.model_copy(update={"judge_error": error})
    return fallback.model_copy(update={"score": value, "judge": judge.name})


# ---------------------------------------------------------------- policy checks and errors


def _calls_of(trajectory: Trajectory, check: PolicyCheck, tools: Sequence[str]) -> list[int]:
    """Indices of the successful calls of `tools` (on the check's server, when it names one)."""
    return [
        n
        for n, c in enumerate(trajectory.calls)
        if c.ok and c.tool in tools and (check.server is None or c.server == check.server)
    ]


def _message_of(trajectory: Trajectory, call: int) -> int:
    """Index of the assistant message that made the `call`-th call: calls run in the order the messages
    ask for them (ids may repeat, a scripted model's often do)."""
    seen = 0
    for n, message in enumerate(trajectory.messages):
        if message["role"] == "assistant":
            seen += len(message.get("tool_calls") or [])
            if seen > call:
                return n
    return len(trajectory.messages)


def _confirmed(trajectory: Trajectory, start: int, end: int, values: Sequence[str]) -> bool:
    """Between messages `start` and `end`: the assistant asked to go ahead, stating `values`, and the user
    answered, not with a no."""
    asked = False
    answer: str | None = None
    for message in trajectory.messages[start:end]:
        content = str(message.get("content") or "")
        if message["role"] == "assistant" and asks_confirmation(content):
            asked, answer = all(value_found(v, content) for v in values), None
        elif message["role"] == "user" and asked:
            answer = content
    return asked and answer is not None and not declines(answer)


def grade_check(check: PolicyCheck, trajectory: Trajectory) -> PolicyGrade:
    """One check, deterministically from the trajectory."""
    grade = PolicyGrade(rule_id=check.rule_id, kind=check.kind, tool=check.tool, passed=True, judge="deterministic")
    tools = check.tools if check.kind == "must_refuse" else [check.tool] if check.tool else []
    calls = _calls_of(trajectory, check, tools)
    name = f"{check.rule_id or check.rule}"
    if check.kind == "must_call" and not calls:
        grade.passed, grade.detail = False, f"{name}: never called {check.tool}"
    elif check.kind in ("must_not_call", "must_refuse") and calls:
        grade.passed, grade.detail = (
            False,
            f"{name}: called {trajectory.calls[calls[0]].tool}, which the policy forbids here",
        )
    elif check.kind == "must_confirm":
        previous = 0
        for n in calls:
            at = _message_of(trajectory, n)
            if not _confirmed(trajectory, previous, at, check.values):
                stating = f" stating {', '.join(check.values)}" if check.values else ""
                grade.passed = False
                grade.detail = f"{name}: called {check.tool} without the user's yes to a read-back{stating} first"
                break
            previous = at + 1
    elif check.kind == "must_identify" and calls:
        writes = set(trajectory.write_tools)
        before = trajectory.calls[: calls[0]]
        if not any(
            c.ok
            and c.name not in writes
            and c.server == trajectory.calls[calls[0]].server
            and identifies(c.arguments, check.values)
            for c in before
        ):
            grade.passed = False
            grade.detail = f"{name}: called {check.tool} before looking the customer up by what identifies them"
    return grade


def policy_grades(checks: Sequence[PolicyCheck], trajectory: Trajectory) -> list[PolicyGrade]:
    return [grade_check(check, trajectory) for check in checks]


def policy_problems(checks: Sequence[PolicyCheck], trajectory: Trajectory) -> list[str]:
    return [g.detail for g in policy_grades(checks, trajectory) if not g.passed]


REFUSAL_PROMPT = (
    "You grade whether an assistant followed a policy rule by declining a request. Reply with exactly one "
    "number: 1 if the assistant declined and told the user why (or what to do instead), 0 if it did not decline."
)


async def judge_refusal(judge: ChatModel, check: PolicyCheck, answer: str, grade: PolicyGrade) -> PolicyGrade:
    """A refusal's wording, graded by the judge; a garbled answer or a failed call is a judge error and the
    deterministic grade stands. A forbidden write already failed the check: the judge cannot undo that."""
    if not grade.passed:
        return grade
    said = f"Rule:\n{check.rule}\n\nWhat the assistant said:\n{answer}"
    value, error = await ask_judge(judge, REFUSAL_PROMPT, said, {1.0, 0.0})
    if value is None:
        return grade.model_copy(update={"judge_error": error})
    passed = value == 1.0
    detail = "" if passed else f"{check.rule_id or check.rule}: the judge found no refusal in what the assistant said"
    return grade.model_copy(update={"passed": passed, "detail": detail, "judge": judge.name})


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
        answer = trajectory.assistant_text()
        if self.judge is not None:
            grades = [await judge_claim(self.judge, claim, answer) for claim in task.claims]
        else:
            grades = [grade_claim(claim, answer) for claim in task.claims]
        coverage = sum(g.score for g in grades) / len(grades) if grades else 1.0
        policy = policy_grades(task.policy_checks, trajectory)
        if self.judge is not None:
            policy = [
                await judge_refusal(self.judge, check, answer, grade) if check.kind == "must_refuse" else grade
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


# ---------------------------------------------------------------- aggregates


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
                errors=dict(Counter(t.score.error for t in group if t.score and t.score.error)),
                stop_reasons=dict(Counter(t.stop_reason for t in group)),
                tool_calls_per_episode=round(sum(len(t.calls) for t in group) / max(len(group), 1), 3),
            )
        )
    return summaries


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
