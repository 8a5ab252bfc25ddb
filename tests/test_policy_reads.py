"""Reads a policy puts before a write ("Tell the guest the fee (get_cancellation_fee) before cancelling", "Quote
before booking (quote_stay)"): found in the policy's words, made by the gold just before the write with the user
asking for what they return, and graded in order; and refusals decided by a lookup, never by the opening."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from handmade import base
from test_policy_checks import farm

from envfarm.clients.graph import ToolSpec
from envfarm.clients.policies import OraclePolicy
from envfarm.clients.policy_checks import required_reads
from envfarm.clients.rollout import rollout_tasks
from envfarm.clients.scoring import Scorer
from envfarm.clients.scoring.checks import grade_check
from envfarm.clients.synthesize import SynthesisOptions, synthesize
from envfarm.clients.tasks import ExpectedState, PolicyCheck
from envfarm.clients.trajectory import CallRecord, Trajectory
from envfarm.clients.users import ScriptedUser

READS = {"get", "list", "find", "search", "quote", "validate", "track", "check", "read"}


def specs_of(server: str) -> list[ToolSpec]:
    """A built server's tools as the graph sees them (read vs write by the spec's verb, as the tests need it)."""
    spec = json.loads((REPO / "servers" / server / "spec.json").read_text())
    return [
        ToolSpec(
            server=server,
            name=t["name"],
            description=t.get("description", ""),
            read_only=t["name"].split("_")[0] in READS and t["name"] != "check_in" and t["name"] != "check_out",
        )
        for t in spec["tools"]
    ]


def policy_of(server: str) -> str:
    path = REPO / "servers" / server / "policy.md"
    return path.read_text() if path.is_file() else ""


def test_required_reads_come_from_the_policys_words() -> None:
    hotel = {(r.read, tuple(r.writes)) for r in required_reads("hotel", policy_of("hotel"), specs_of("hotel"))}
    assert hotel == {("quote_stay", ("create_reservation",)), ("get_cancellation_fee", ("cancel_reservation",))}
    parcel = required_reads("parcel_shipping", policy_of("parcel_shipping"), specs_of("parcel_shipping"))
    assert {(r.read, tuple(r.writes)) for r in parcel} == {
        ("quote_rates", ("create_shipment",)),
        ("validate_address", ("change_delivery_address", "create_shipment")),
    }
    # each rule is the clause that asks for the read, never the whole line
    assert {r.rule for r in parcel} == {
        "Quote before shipping (quote_rates)",
        "validate a typed address (validate_address) before you ship or redirect to it",
    }


def test_prose_rules_without_a_named_read_give_none() -> None:
    specs = specs_of("hotel")
    assert required_reads("hotel", "- Read the new total back before changing.", specs) == []
    assert required_reads("hotel", "- Free until 2 days before arrival (quote_stay).", specs) == []  # no write
    assert required_reads("hotel", "- Cancel (no_such_tool) before booking.", specs) == []  # no tool of it
    # a write tool in brackets is no read
    assert required_reads("hotel", "- Tell them (cancel_reservation) before booking.", specs) == []


@pytest.mark.parametrize("server", sorted(p.parent.name for p in (REPO / "servers").glob("*/spec.json")))
def test_every_required_read_names_a_read_and_writes_of_its_server(server: str) -> None:
    specs = {s.name: s for s in specs_of(server)}
    for read in required_reads(server, policy_of(server), list(specs.values())):
        assert specs[read.read].read_only and read.writes
        assert all(not specs[w].read_only for w in read.writes) and read.read in read.rule


def trajectory(*tools: str) -> Trajectory:
    calls = [CallRecord(call_id=str(i), name=t, server="hotel", tool=t, ok=True) for i, t in enumerate(tools)]
    messages = [{"role": "system", "content": ""}, {"role": "user", "content": "hi"}]
    messages += [{"role": "assistant", "content": "", "tool_calls": [{"id": c.call_id}]} for c in calls]
    task = base("hotel-order", "Cancel my stay.", "Cancel my stay.", [], ExpectedState(hash=""))
    return Trajectory(id="t", task_id="t", policy="p", user="u", messages=messages, tools=[], calls=calls, task=task)


def test_must_call_with_governed_writes_grades_the_order() -> None:
    check = PolicyCheck(
        rule="Tell the guest the fee (get_cancellation_fee) before cancelling",
        kind="must_call",
        server="hotel",
        tool="get_cancellation_fee",
        tools=["cancel_reservation"],
    )
    assert grade_check(check, trajectory("find_reservation", "get_cancellation_fee", "cancel_reservation")).passed
    late = grade_check(check, trajectory("cancel_reservation", "get_cancellation_fee"))
    assert not late.passed and "before get_cancellation_fee" in (late.detail or "")
    assert not grade_check(check, trajectory("cancel_reservation")).passed
    assert grade_check(check, trajectory("get_cancellation_fee")).passed  # nothing cancelled: nothing out of order


def spoken_equal(value: object, said: list[str]) -> bool:
    """Whether a claim's values ('0.00') state an output's value (0.0)."""
    if isinstance(value, int | float):
        return any(abs(float(v) - value) < 1e-9 for v in said)
    return str(value) in said


@pytest.mark.parametrize("seed", [3, pytest.param(11, marks=pytest.mark.slow)])
async def test_hotel_writes_get_their_policy_read_first_and_refusals_rest_on_a_lookup(seed: int) -> None:
    options = SynthesisOptions(n=10, servers=["hotel"], max_servers=1, seed=seed, refusal_share=0.5)
    async with farm(["hotel"]) as connections:
        synthesis = await synthesize(options, connections)
        again = await synthesize(options, connections)
        oracle = await rollout_tasks(synthesis.tasks, OraclePolicy(), ScriptedUser(), connections, scorer=Scorer())
    tasks = synthesis.tasks
    assert "\n".join(t.model_dump_json() for t in tasks) == "\n".join(t.model_dump_json() for t in again.tasks)
    assert all(t.score and t.score.success for t in oracle), [
        t.score for t in oracle if t.score and not t.score.success
    ]
    before = {"cancel_reservation": "get_cancellation_fee", "create_reservation": "quote_stay"}
    governed = 0
    for task in tasks:
        for index, call in enumerate(task.gold_calls):
            if call.tool not in before:
                continue
            governed += 1
            read = next(i for i, c in enumerate(task.gold_calls[:index]) if c.tool == before[call.tool])
            # the user asks to hear what the read returns, and a claim checks it
            output = task.gold_calls[read].output
            assert any(c.field in output and spoken_equal(output[c.field], c.values) for c in task.claims if c.field), (
                task.claims
            )
            assert any(c.kind == "must_call" and c.tool == before[call.tool] for c in task.policy_checks)
        if any(c.kind == "must_refuse" for c in task.policy_checks):
            assert task.gold_calls and not any(c.is_write for c in task.gold_calls)
            assert task.persona.email not in json.dumps(task.gold_calls[-1].output)
    assert governed >= 1
