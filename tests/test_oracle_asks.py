"""The oracle's trajectories are SFT data, so it must act only on what it was told: before a call uses a detail the
user holds back (an email, a date of birth, an account number), it asks for it, the scripted user answers, and
only then is the value used. The scorer holds every agent to the same: a customer looked up by details they never
gave fails the identification check. Rolled out on the frozen scoring corpus (30 tasks of 15 servers)."""

from __future__ import annotations

from conftest import REPO

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import OraclePolicy
from envfarm.clients.rollout import rollout_tasks
from envfarm.clients.scoring import Scorer, oracle_failures
from envfarm.clients.scoring.checks import grade_check
from envfarm.clients.scoring.claims import value_found
from envfarm.clients.tasks import load_tasks
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import ScriptedUser

TASKS = load_tasks(REPO / "tests" / "data" / "scoring_corpus" / "tasks.jsonl")


async def oracle_runs() -> list[Trajectory]:
    servers = sorted({s for t in TASKS for s in t.servers} | {r.server for t in TASKS for r in t.tools})
    async with Connections(farm_targets(REPO, servers), timeout=20) as connections:
        return await rollout_tasks(TASKS, OraclePolicy(), ScriptedUser(), connections, scorer=Scorer())


def heard_before(trajectory: Trajectory, call: int) -> str:
    """What the user said before the assistant message that made the `call`-th call."""
    seen, heard = 0, []
    for message in trajectory.messages:
        if message["role"] == "assistant":
            seen += len(message.get("tool_calls") or [])
            if seen > call:
                break
        elif message["role"] == "user":
            heard.append(str(message.get("content") or ""))
    return " ".join(heard)


def without_asking(trajectory: Trajectory) -> Trajectory:
    """The same trajectory with the oracle's questions for held-back details and the user's answers cut out
    (what the oracle did before it asked): the calls are the same, the details come from nowhere."""
    messages, skip = [], False
    for message in trajectory.messages:
        if message["role"] == "assistant" and str(message.get("content") or "").startswith("Could you tell me"):
            skip = True
            continue
        if skip and message["role"] == "user":
            skip = False
            continue
        messages.append(message)
    return trajectory.model_copy(update={"messages": messages})


async def test_the_oracle_asks_for_every_held_back_detail_before_it_uses_it() -> None:
    runs = await oracle_runs()
    assert oracle_failures(runs) == [] and all(t.score and t.score.reward == 1.0 for t in runs)
    used = 0
    for trajectory, task in zip(runs, TASKS, strict=True):
        for n, call in enumerate(trajectory.calls):
            for fact in task.hidden_facts:
                if str(fact.value) in {str(v) for v in call.arguments.values()}:
                    used += 1
                    assert value_found(fact.value, heard_before(trajectory, n)), (task.id, call.tool, fact.key)
    assert used >= 10, "the corpus should exercise held-back details"


async def test_a_lookup_by_details_the_user_never_gave_fails_identification() -> None:
    runs = await oracle_runs()
    failed = 0
    for trajectory, task in zip(runs, TASKS, strict=True):
        hidden = {str(f.value) for f in task.hidden_facts}
        for check in task.policy_checks:
            if check.kind != "must_identify":
                continue
            assert grade_check(check, trajectory).passed, (task.id, check.rule_id)
            if hidden & set(check.values):
                grade = grade_check(check, without_asking(trajectory))
                assert not grade.passed and "never gave" in grade.detail, (task.id, grade.detail)
                failed += 1
    assert failed >= 2, "the corpus should have identification by held-back details"


async def test_the_oracle_asks_for_the_personas_own_details_it_was_not_told() -> None:
    """ "Jonas here", then a lookup by "Jonas Dubois": the full name is the persona's, not held back, yet nobody
    said it; the oracle asks for it (once per value) unless an earlier call returned it."""
    runs = await oracle_runs()
    for trajectory, task in zip(runs, TASKS, strict=True):
        own = {task.persona.name, task.persona.email or "", *map(str, task.persona.known_facts.values())}
        for n, call in enumerate(trajectory.calls):
            seen = " ".join(str(c.output) for c in trajectory.calls[:n])
            for value in own - {""}:
                if value in {str(v) for v in call.arguments.values()}:
                    assert value_found(value, f"{heard_before(trajectory, n)} {seen}"), (task.id, call.tool, value)
        asked = [m["content"] for m in trajectory.messages if str(m.get("content") or "").startswith("Could you tell")]
        assert all(" and " not in q or len(set(q.split(" and "))) == 2 for q in asked), asked
