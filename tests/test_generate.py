"""`envfarm propose`: scenarios, specs, verification and the revise loop, against a scripted
OpenAI-compatible model on loopback. The model proposes; the verifier decides what is published."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from corpus import GOOD, farm_bytes
from scripted_openai import scripted_openai

from envfarm.cli import main
from envfarm.factory.generate.growth import GrowthSummary, SpecDraft, offline_draft, offline_scenarios, propose
from envfarm.llm import ChatModel, ModelConfig, Transcript
from envfarm.servers.runtime.registry import load_registry

NAME = "shed_proposed"
SCENARIOS = json.dumps(
    {"scenarios": [{"name": NAME, "domain": "community", "title": "Tool Shed", "description": "Members borrow tools."}]}
)
GOOD_HANDLERS = (GOOD / "handlers.py").read_text(encoding="utf-8")
# The handler reads a column that does not exist: every valid extend_loan call crashes.
BUGGY_HANDLERS = GOOD_HANDLERS.replace('loan["due_on"]', 'loan["due_date"]')


PRINCIPAL = {
    "kind": "staff",
    "description": "a volunteer at the tool shed counter",
    "values": ["Volunteer: Ana Silva"],
    "default": "Volunteer: Ana Silva",
    "customers": "a member says their name; lend and take back tools only for the person at the counter",
}
POLICY = "You volunteer at the tool shed counter.\n\n- Confirm the tool and the due date before lending.\n"


def draft(handlers: str, **changes: Any) -> str:
    spec = yaml.safe_load((GOOD / "spec.yaml").read_text(encoding="utf-8"))
    spec = {**spec, "name": NAME, "principal": PRINCIPAL, **changes}
    return json.dumps({"spec": spec, "handlers": handlers, "policy": POLICY}, default=str)


async def grow(
    script: list[Any], farm: Path, builds: Path, rounds: int = 3
) -> tuple[GrowthSummary, list[dict[str, Any]]]:
    with scripted_openai(script) as server:
        config = ModelConfig(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=30)
        model = ChatModel(config, Transcript(builds / "llm"))
        summary = await propose("tool sharing", 1, farm, builds, model, max_rounds=rounds)
        await model.aclose()
    return summary, server.requests


async def test_a_proposal_that_passes_first_time(tmp_path: Path) -> None:
    farm, builds = tmp_path / "farm", tmp_path / "builds"
    summary, requests = await grow([SCENARIOS, draft(GOOD_HANDLERS)], farm, builds)
    [result] = summary.results
    assert (result.status, len(result.rounds)) == ("published", 1), result.message
    entry = load_registry(farm).get(NAME)
    assert entry is not None and entry.verification == "passed"
    assert "tool sharing" in requests[0]["messages"][-2]["content"] and NAME in requests[1]["messages"][-2]["content"]
    # Provenance: every prompt and answer, the round, and the accounting.
    assert sorted(p.name for p in (builds / "llm").iterdir()) == [
        "0001-scenarios.json",
        f"0002-{NAME.replace('_', '-')}-spec.json",
    ]
    assert (builds / NAME / "round-1" / "spec" / "handlers.py").read_text(encoding="utf-8") == GOOD_HANDLERS
    stored = json.loads((builds / "summary.json").read_text(encoding="utf-8"))
    assert stored["usage"]["requests"] == 2 and stored["total_tokens"] == 30 and stored["seconds"] > 0


async def test_two_repairs_of_invalid_json(tmp_path: Path) -> None:
    script = ["Here you go: scenarios!", '{"scenarios": [', SCENARIOS, draft(GOOD_HANDLERS)]
    summary, requests = await grow(script, tmp_path / "farm", tmp_path / "builds")
    assert summary.results[0].status == "published" and summary.usage.repairs == 2
    assert "not JSON" in requests[1]["messages"][-1]["content"] and "not JSON" in requests[2]["messages"][-1]["content"]


async def test_a_failing_handler_is_fixed_in_the_next_round(tmp_path: Path) -> None:
    farm, builds = tmp_path / "farm", tmp_path / "builds"
    summary, requests = await grow([SCENARIOS, draft(BUGGY_HANDLERS), draft(GOOD_HANDLERS)], farm, builds)
    [result] = summary.results
    assert result.status == "published" and [r.passed for r in result.rounds] == [False, True]
    first = result.rounds[0].failures
    assert any(f.tool == "extend_loan" and f.check == "crash" for f in first), first
    revise = requests[2]["messages"][1]["content"]
    assert "failed verification" in revise and '"check": "crash"' in revise and "due_date" in revise
    assert (builds / NAME / "round-1" / "round.json").is_file() and (builds / NAME / "round-2" / "spec").is_dir()
    assert load_registry(farm).get(NAME) is not None


async def test_a_model_that_never_converges_publishes_nothing(tmp_path: Path, farm_root: Path) -> None:
    farm = tmp_path / "farm"
    shutil.copytree(farm_root, farm)
    before = farm_bytes(farm)
    summary, requests = await grow([SCENARIOS, draft(BUGGY_HANDLERS)], farm, tmp_path / "builds", rounds=2)
    [result] = summary.results
    assert result.status == "not_converged" and len(result.rounds) == 2 and not summary.ok
    assert "not verified after 2 round(s); nothing published" in result.message and "extend_loan" in result.message
    assert farm_bytes(farm) == before
    assert len(requests) == 3  # scenarios, the spec, one revision: the bound holds


async def test_an_invalid_draft_is_repaired_before_anything_is_built(tmp_path: Path) -> None:
    broken = json.loads(draft(GOOD_HANDLERS))
    broken["spec"]["tools"][0]["entity"] = "nowhere"
    broken["handlers"] = "import socket\n" + GOOD_HANDLERS
    summary, requests = await grow(
        [SCENARIOS, json.dumps(broken), draft(GOOD_HANDLERS)], tmp_path / "farm", tmp_path / "builds"
    )
    assert summary.results[0].status == "published" and summary.usage.repairs == 1
    problems = requests[2]["messages"][-1]["content"]
    assert "no entity 'nowhere'" in problems and "imports socket: network access" in problems


def test_a_draft_needs_a_principal_a_policy_expectations_and_scenarios() -> None:
    """What the verifier cannot ask for, the draft check does, so the model repairs it before a build."""
    bare = json.loads(draft(GOOD_HANDLERS))
    bare["spec"].pop("principal")
    bare["spec"].pop("scenarios")
    for tool in bare["spec"]["tools"]:
        tool["examples"] = [e["args"] if isinstance(e, dict) and "args" in e else e for e in tool.get("examples", [])]
    with pytest.raises(ValueError) as caught:
        SpecDraft.model_validate({**bare, "policy": ""})
    message = str(caught.value)
    for missing in ("spec.principal: missing", "policy: missing", "no example has an `expect`", "spec.scenarios"):
        assert missing in message, message
    # A policy the model put inside the spec is policy.md.
    inside = json.loads(draft(GOOD_HANDLERS))
    inside["spec"]["policy"] = inside.pop("policy")
    assert SpecDraft.model_validate(inside).policy == POLICY and "policy" not in SpecDraft.model_validate(inside).spec


def test_the_offline_proposer_is_deterministic_and_distinct() -> None:
    scenarios = offline_scenarios("bike repair", 4).scenarios
    assert [s.name for s in scenarios] == [
        "bike_repair_orders",
        "bike_repair_bookings",
        "bike_repair_requests",
        "bike_repair_orders_2",
    ]
    drafts = [offline_draft(s, "bike repair", i) for i, s in enumerate(scenarios)]
    assert all(isinstance(d, SpecDraft) for d in drafts)  # each validated like a build would
    again = [offline_draft(s, "bike repair", i) for i, s in enumerate(offline_scenarios("bike repair", 4).scenarios)]
    assert [d.model_dump_json() for d in drafts] == [d.model_dump_json() for d in again]


def test_offline_propose_publishes_verified_servers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    farm, builds = tmp_path / "farm", tmp_path / "builds"
    args = ["propose", "bike repair", "--n", "2", "--out", str(farm), "--build-dir", str(builds), "--mutants", "2"]
    code = main(args)
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert {s.name for s in load_registry(farm).servers} == {"bike_repair_orders", "bike_repair_bookings"}
    assert "2 of 2 published" in printed and "model offline" in printed
    stored = json.loads((builds / "summary.json").read_text(encoding="utf-8"))
    assert stored["model"] == "offline"
    # The offline template declares whom the agent acts for and its policy, and its expectations kill
    # the sampled seeded bugs (offline there is nobody to send a survivor to).
    for result in stored["results"]:
        assert result["kill_rate"] == 1.0 and result["rounds"][0]["mutation"]["mutants"] == 2, result
    spec_dir = builds / "bike_repair_orders" / "round-1" / "spec"
    assert yaml.safe_load((spec_dir / "spec.yaml").read_text(encoding="utf-8"))["principal"]["kind"] == "staff"
    assert "Identify the customer" in (spec_dir / "policy.md").read_text(encoding="utf-8")
    assert "Identify the customer" in (farm / "servers" / "bike_repair_orders" / "policy.md").read_text(
        encoding="utf-8"
    )


def _with_overdue_expectation(expect: dict[str, Any], scenarios: list[dict[str, Any]] | None = None) -> str:
    spec = yaml.safe_load((GOOD / "spec.yaml").read_text(encoding="utf-8"))
    for tool in spec["tools"]:
        if tool["name"] == "overdue_loans":
            tool["examples"] = [{"args": {}, "expect": expect}]
    return draft(GOOD_HANDLERS, tools=spec["tools"], scenarios=spec["scenarios"] + (scenarios or []))


# Round 1 only checks how many loans are overdue: a mutant that counts returned loans instead survives.
WEAK = _with_overdue_expectation({"result": {"count": 1}})
# Round 2 names the overdue loan, and a scenario makes a loan due today, which is not overdue yet.
DUE_TODAY = {
    "name": "due_today_is_not_overdue",
    "description": "A loan due today is not overdue; one due yesterday is.",
    "steps": [
        {"tool": "extend_loan", "args": {"loan_id": "loan_003", "days": 3}},
        {"tool": "overdue_loans", "args": {}, "expect": {"result": {"count": 0, "loans": []}}},
    ],
}
SHARP = _with_overdue_expectation(
    {"result": {"count": 1, "loans": [{"loan_id": "loan_003", "due_on": "2026-02-27"}]}}, [DUE_TODAY]
)


@pytest.mark.slow
async def test_surviving_mutants_go_back_to_the_model_and_the_next_round_kills_them(tmp_path: Path) -> None:
    farm, builds = tmp_path / "farm", tmp_path / "builds"
    with scripted_openai([SCENARIOS, WEAK, SHARP]) as server:
        config = ModelConfig(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=30)
        model = ChatModel(config, Transcript(builds / "llm"))
        summary = await propose("tool sharing", 1, farm, builds, model, max_rounds=3, mutants=7)
        await model.aclose()
    [result] = summary.results
    first, second = result.rounds
    assert first.passed and second.passed and result.published_round == 2, result.message
    assert first.mutation is not None and second.mutation is not None
    survived = {(m.file, m.kind, m.change) for m in first.mutation.survivors}
    assert any(f == "handlers.py" and "returned = 0" in c and c.endswith("= -> !=") for f, _, c in survived), survived
    assert (second.mutation.mutants, second.mutation.killed, result.kill_rate) == (7, 7, 1.0)
    # The survivors went back as failures to address, each with file:line and the change.
    revise = server.requests[2]["messages"][1]["content"]
    assert "seeded bugs survived" in revise
    assert all(f"{m.file}:{m.line} in `{m.function}`" in revise for m in first.mutation.survivors)
    assert len(server.requests) == 3 and "(mutants killed 7 of 7)" in result.message
    stored = json.loads((builds / "summary.json").read_text(encoding="utf-8"))
    assert stored["results"][0]["kill_rate"] == 1.0
    assert stored["results"][0]["rounds"][0]["mutation"]["kill_rate"] < 1.0
    assert load_registry(farm).get(NAME) is not None
