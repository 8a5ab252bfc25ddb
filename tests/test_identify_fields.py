"""`must_identify` holds every field the policy names ("full name and date of birth"): a write made before the
user gave the date of birth fails it even when the agent looked the patient up by the name they gave; the oracle
asks for the date of birth first and passes; the oracle's refusal names the record that is not the asker's."""

from __future__ import annotations

from conftest import REPO
from handmade import pay_invoice_task
from scripted_openai import scripted_openai
from test_policy_checks import config, grades, replay

from envfarm.clients import speech
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import ChatPolicy, OraclePolicy
from envfarm.clients.rollout import rollout_tasks
from envfarm.clients.scoring import Scorer
from envfarm.clients.tasks import HiddenFact, PolicyCheck, Task
from envfarm.clients.users import ScriptedUser

RULE = (
    "Identify the patient by full name and date of birth before you discuss or change their appointments or invoices."
)


async def identified_task(connections: Connections) -> Task:
    """The hand-grounded pay task, its date of birth held back and both fields required before paying."""
    task = await pay_invoice_task(connections)
    patient = task.gold_calls[0].output["patients"][0]
    name, born = patient["full_name"], patient["date_of_birth"]
    task.hidden_facts = [HiddenFact(key="date_of_birth", value=born, description=f"my date of birth is {born}")]
    task.policy_checks = [
        PolicyCheck(
            rule=RULE,
            rule_id="identify",
            kind="must_identify",
            server="clinic",
            tool="pay_invoice",
            values=[name, born],
            alternatives=[[name, born]],
        )
    ]
    return task


async def test_a_write_before_the_user_gave_the_date_of_birth_fails_and_the_oracle_asks_for_it() -> None:
    async with Connections(farm_targets(REPO, ["clinic"]), timeout=10) as connections:
        task = await identified_task(connections)
        with scripted_openai(replay(task, read_back=True)) as model:
            policy = ChatPolicy(config(model.base_url))
            [named_only] = await rollout_tasks([task], policy, ScriptedUser(), connections, scorer=Scorer())
            await policy.aclose()
        [oracle] = await rollout_tasks([task], OraclePolicy(), ScriptedUser(), connections, scorer=Scorer())
    assert grades(named_only) == {"must_identify": False}
    assert named_only.score and "without the user giving" in named_only.score.policy_problems[0]
    assert oracle.score and oracle.score.success and grades(oracle) == {"must_identify": True}
    born = str(task.hidden_facts[0].value)
    asked = [m for m in oracle.messages if m["role"] == "user" and born in str(m.get("content"))]
    assert asked, "the oracle never heard the date of birth"


def test_a_refusal_names_the_record_that_is_not_the_askers() -> None:
    said = speech.refusal("Never change one customer's records for another person.", "TB-62929")
    assert "TB-62929 is not under your name" in said and "Never change one customer's records" in said
    assert "not under your name" not in speech.refusal("Never change one customer's records for another person.")
