"""Issue 27's figure for cross-server tasks: the share where data flows between turns (a value one server's
calls returned is an argument of another server's call or a later turn's), and the share where what flows is
more than who the persona is."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import REPO

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.synthesize import SynthesisOptions, flowing_values, flows_between_turns, synthesize
from envfarm.clients.tasks import GoldCall, Persona, Provenance, Task, Turn

EMAIL = "maria.lopez@example.com"


def joined(second_arguments: dict[str, Any], uses: list[int], server: str = "calendar", turn: int = 1) -> Task:
    """Turn 1 finds Maria's appointment on the clinic; turn 2 makes a call with `second_arguments`."""
    found = {"appointments": [{"appointment_id": "apt_1", "starts_at": "2026-03-04T10:00", "email": EMAIL}]}
    return Task(
        id="t",
        servers=sorted({"clinic", server}),
        tools=[],
        persona=Persona(name="Maria Lopez", email=EMAIL),
        opening_message="",
        turns=[Turn(message="", gold_calls=[0]), Turn(message="", gold_calls=[1])],
        gold_calls=[
            GoldCall(server="clinic", tool="list_appointments", arguments={"email": EMAIL}, output=found),
            GoldCall(server=server, tool="create_event", arguments=second_arguments, turn=turn, uses=uses),
        ],
        provenance=Provenance(sampler="topology", seed=0),
    )


def test_a_date_found_on_one_server_and_written_on_another_flows_beyond_identity() -> None:
    task = joined({"title": "Dentist", "starts_at": "2026-03-04T10:00"}, uses=[0])
    assert flowing_values(task) == ["2026-03-04T10:00"]
    assert flows_between_turns(task) and flows_between_turns(task, beyond_identity=True)


def test_the_persona_s_own_email_carried_over_joins_the_turns_by_the_person_alone() -> None:
    task = joined({"email": EMAIL, "title": "Dentist"}, uses=[0])
    assert flows_between_turns(task) and not flows_between_turns(task, beyond_identity=True)


def test_no_flow_without_a_use_or_within_one_turn_of_one_server() -> None:
    assert not flows_between_turns(joined({"starts_at": "2026-03-04T10:00"}, uses=[]))
    same_turn = joined({"starts_at": "2026-03-04T10:00"}, uses=[0], server="clinic", turn=0)
    assert not flows_between_turns(same_turn)
    # A value the call does not take from the output it names (uses points elsewhere) does not flow.
    assert not flows_between_turns(joined({"title": "Dentist"}, uses=[0]))


@pytest.mark.slow
async def test_the_tasks_summary_reports_the_flow_share_of_its_cross_server_tasks() -> None:
    servers = ["clinic", "banking", "calendar", "mail"]
    async with Connections(farm_targets(REPO, servers)) as farm:
        synthesis = await synthesize(SynthesisOptions(n=8, seed=5, servers=servers), farm)
    crossing = [t for t in synthesis.tasks if len(t.servers) > 1]
    assert crossing, "no cross-server task to measure"
    summary = synthesis.summary
    assert summary.cross_server_flow_share == round(sum(map(flows_between_turns, crossing)) / len(crossing), 3)
    beyond = [flows_between_turns(t, beyond_identity=True) for t in crossing]
    assert summary.cross_server_flow_beyond_identity_share == round(sum(beyond) / len(crossing), 3)
    assert summary.cross_server_flow_beyond_identity_share <= summary.cross_server_flow_share


def test_free_text_of_one_server_never_feeds_a_parameter_of_another() -> None:
    """An unsubscribe's reason is no reason for a credit note: the same name across servers links only values
    that name a person or a thing (an email), never text a person writes for one occasion."""
    from envfarm.clients.graph import OutField, Param, ToolSpec, similar_links

    producer = ToolSpec(
        server="newsletter",
        name="unsubscribe",
        read_only=False,
        outputs=[OutField(name="reason"), OutField(name="email"), OutField(name="comment")],
    )
    consumer = ToolSpec(
        server="invoicing",
        name="issue_credit_note",
        read_only=False,
        params=[Param(name="reason"), Param(name="contact_email"), Param(name="comment")],
    )
    links = similar_links([producer, consumer], cross_server=True)
    assert [(link.field, link.param) for link in links] == [("email", "contact_email")]
