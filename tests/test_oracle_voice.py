"""The words of tasks and of the oracle's SFT answers over the whole built-in farm, at seeds no other test uses.

Reading seed 11 (and the seed-7373 annotation) found the oracle's read-backs and answers built from tool and
column names ("I'll subscribe the list “Careers”", "with hours purchased 20", "update the member contact for the
member", "check the res with arrival date on April 11 out", "as for whether it passed, that's pass"), and the
user's messages carrying template seams ("Use what you found for me a moment ago.", "Why? Too many emails.", "how
much would I pay, ...? Could you tell me my copay?"). Each check below fails on one of those patterns."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO

from envfarm.clients.audit import audit_tasks, build_auditor
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import OraclePolicy
from envfarm.clients.rollout import rollout_tasks
from envfarm.clients.scoring import Scorer
from envfarm.clients.speech import speech_problems, template_seams
from envfarm.clients.synthesize import SynthesisOptions, synthesize
from envfarm.clients.tasks import Task
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import ScriptedUser
from envfarm.clients.writing import HEAR, _unasked

# A user message that points at data instead of saying it, or asks in a form's voice.
USER_SEAMS = re.compile(
    r"\bUse what you found\b|\ba moment ago\b|\bthat one\b|\bWhy\? [A-Z]|\bReason: |\bthe details of my \w+ for\b"
)
# The sentence the writer adds to ask to hear something ('Could you tell me {what}?'): its `{what}`.
_HEARD = re.compile(
    "|".join(
        re.escape(t).replace(re.escape("{what}"), f"(?P<what{n}>.+?)") for n, t in enumerate(sum(HEAR.values(), ()))
    )
)


def _registered() -> list[str]:
    return sorted(s["name"] for s in json.loads((REPO / "registry.json").read_text())["servers"])


def _heard_twice(task: Task) -> list[str]:
    """A message that asks for a value in its request and again in an 'I'd also like to know ...' sentence (the
    claims it names are covered by the question before it)."""
    found = []
    for message in [task.opening_message, *(t.message for t in task.turns[1:])]:
        sentences = re.split(r"(?<=[.?!])\s+", message)
        for at, sentence in enumerate(sentences):
            match = _HEARD.fullmatch(sentence)
            if match is None:
                continue
            what = next(v for v in match.groupdict().values() if v)
            before = " ".join(s for s in sentences[:at] if s.endswith("?"))
            claims = [c for c in task.claims if c.text.split(":")[0].split(" ", 1)[1] in what]
            # read against every claim of the task, so a question is matched to the field it names (the total
            # outstanding), not to the only amount offered (the amount due of another request)
            unasked = {c.text for c in _unasked(task.claims, before)}
            if before and claims and not any(c.text in unasked for c in claims):
                found.append(f"{task.id}: {before!r} then {sentence!r}")
    return found


def _problems(tasks: list[Task], trajectories: list[Trajectory]) -> list[str]:
    problems = []
    for task in tasks:
        messages = [task.opening_message, *(t.message for t in task.turns[1:])]
        problems += [f"{task.id}: user says {m.group(0)!r}: {s}" for s in messages if (m := USER_SEAMS.search(s))]
        problems += _heard_twice(task)
    for trajectory in trajectories:
        if not trajectory.score or not trajectory.score.success:
            problems.append(f"{trajectory.task_id}: the oracle failed")
        for message in trajectory.messages:
            if message["role"] == "assistant" and message.get("content"):
                said = str(message["content"])
                problems += [f"{trajectory.task_id}: {p}: {said}" for p in speech_problems(said, trajectory.task)]
    return problems


async def _voice(seed: int, n: int) -> tuple[list[Task], list[Trajectory]]:
    servers = _registered()
    async with Connections(farm_targets(REPO, servers)) as farm:
        synthesis = await synthesize(SynthesisOptions(n=n, seed=seed, servers=servers), farm)
        report = audit_tasks(await build_auditor(farm, servers), synthesis.tasks)
        assert report.failed == 0, report.findings
        trajectories = await rollout_tasks(synthesis.tasks, OraclePolicy(), ScriptedUser(), farm, scorer=Scorer())
    return synthesis.tasks, trajectories


async def test_tasks_and_oracle_answers_read_as_people_talk() -> None:
    tasks, trajectories = await _voice(11, 16)
    assert len(tasks) >= 12
    writes = [c for t in tasks for c in t.gold_calls if c.is_write]
    assert writes and all(c.asked for c in writes), "every change carries the user's own request for the read-back"
    assert _problems(tasks, trajectories) == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", [12, 13, 14, 15, 16])
async def test_tasks_and_oracle_answers_read_as_people_talk_over_seeds(seed: int) -> None:
    tasks, trajectories = await _voice(seed, 35)
    assert _problems(tasks, trajectories) == []


def test_the_seam_checks_catch_what_reviewers_found() -> None:
    for bad in [
        "Great. And please add me to the Security Advisories newsletter. Use what you found for me a moment ago.",
        "I want out of my Weekly Digest subscription. Why? No longer relevant.",
        'Please add "Write API documentation", for that one, due 6 May.',
    ]:
        assert USER_SEAMS.search(bad), bad
    for bad in [
        "Just to confirm: I'll subscribe the list “Careers”. Shall I go ahead?",
        "I've purchased the package for the student “Felix Andersen”, with hours purchased 20.",
        "Just to confirm: I'll add a comment saying \"I'd move the copy.\". Shall I go ahead?",
    ]:
        assert template_seams(bad), bad
