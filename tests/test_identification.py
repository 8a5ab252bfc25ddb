"""Identification as each desk's policy names it (issue 27, criterion C of the annotation rubric): the rule's
parts resolve to columns (the spec check refuses a part no column holds); tasks hold back exactly those values,
one hop from the persona too (a card's last four digits), the gold looks the customer up by them before the
first write the rule governs, and every such write has a `must_identify` check; the audit reports a task that
skips any of it, and a question the user asks that no claim answers."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from envfarm.clients.audit import Auditor, audit_tasks, build_auditor, mentions
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.graph import load_specs
from envfarm.clients.policy_checks import identifies, load_rules, shows
from envfarm.clients.synthesize import SynthesisOptions, synthesize
from envfarm.clients.tasks import Claim, Persona, Provenance, Task, Turn
from envfarm.factory.spec import SpecError, parse_spec
from envfarm.servers.runtime.identification import identification, is_identification_rule, unresolved

SPECS = sorted(p for p in (REPO / "factory" / "specs").iterdir() if (p / "spec.yaml").exists())


def _spec(path: Path) -> dict:
    return yaml.safe_load((path / "spec.yaml").read_text())


@pytest.mark.parametrize(
    ("server", "wanted"),
    [
        ("payments", [["customers.email", "payment_methods.last4"]]),
        ("car_rental", [["drivers.full_name", "drivers.date_of_birth"]]),
        ("parcel_shipping", [["customers.email", "shipments.tracking_number"]]),
        ("library", [["members.card_number"], ["members.full_name", "members.email"]]),
        ("hotel", [["guests.full_name", "reservations.confirmation_code"], ["guests.full_name", "guests.email"]]),
        ("invoicing", [["clients.company_name", "clients.contact_email"]]),
        ("newsletter", [["subscribers.email"]]),
    ],
)
def test_a_rule_resolves_to_the_columns_that_hold_what_it_names(server: str, wanted: list[list[str]]) -> None:
    spec = _spec(REPO / "factory" / "specs" / server)
    tables = {t: list(e["columns"]) for t, e in spec["entities"].items()}
    rule = next(r["rule"] for r in spec["unenforced_rules"] if is_identification_rule(r["rule"]))
    assert [[f"{p.table}.{p.column}" for p in a] for a in identification(rule, tables)] == wanted


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_every_built_in_identification_rule_names_only_what_the_data_holds(path: Path) -> None:
    spec = _spec(path)
    tables = {t: list(e["columns"]) for t, e in spec["entities"].items()}
    texts = [r["rule"] for r in spec.get("unenforced_rules", []) if is_identification_rule(r["rule"])]
    texts += [c] if (c := (spec.get("principal") or {}).get("customers")) else []
    assert [part for text in texts for part in unresolved(text, tables)] == []


def test_the_spec_check_refuses_a_rule_naming_a_field_no_table_has() -> None:
    """Grocery's policy once asked for an order number no row has: no agent could match it."""
    data = _spec(REPO / "factory" / "specs" / "grocery_delivery")
    data["policy"] = (REPO / "factory" / "specs" / "grocery_delivery" / "policy.md").read_text()
    parse_spec(copy.deepcopy(data), "grocery")  # as built: every part resolves
    for rule in data["unenforced_rules"]:
        if is_identification_rule(rule["rule"]):
            rule["rule"] = rule["rule"].replace("the order's delivery address", "the order number")
    with pytest.raises(SpecError) as raised:
        parse_spec(data, "grocery")
    assert "'the order number', which no column of any table holds" in str(raised.value)


DESKS = ["payments", "car_rental", "newsletter", "grocery_delivery", "parcel_shipping", "marketplace"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
async def test_every_governed_write_identifies_the_customer_by_the_policy_fields(seed: int) -> None:
    """Soak over seeds: per desk, the values the policy names (one hop away too) are said or held back, a gold
    read before the first governed write is keyed on one and shows every one, and each governed write has a
    must_identify check with them. The old synthesis held back no card digits and checked no add_extra."""
    async with Connections(farm_targets(REPO, DESKS)) as farm:
        synthesis = await synthesize(SynthesisOptions(n=8, seed=seed, servers=DESKS), farm)
        rules = {s: await load_rules(farm, s) for s in DESKS}
        auditor = await build_auditor(farm, DESKS)
    report = audit_tasks(auditor, synthesis.tasks)
    assert report.failed == 0, report.findings
    governed = 0
    for task in synthesis.tasks:
        if any(c.kind == "must_refuse" for c in task.policy_checks):
            continue
        said = "\n".join(
            [task.opening_message, *(t.message for t in task.turns), *(str(h.value) for h in task.hidden_facts)]
        )
        for index, call in enumerate(task.gold_calls):
            rule = next((r for r in rules[call.server] if r.kind == "identify"), None)
            if not call.is_write or rule is None or call.tool not in rule.tools:
                continue
            governed += 1
            checks = [
                c
                for c in task.policy_checks
                if c.kind == "must_identify" and (c.server, c.tool) == (call.server, call.tool)
            ]
            assert checks, f"{task.id}: {call.server}.{call.tool} has no must_identify"
            values = checks[0].values
            assert all(v in said for v in values), f"{task.id}: {values} not said nor held back"
            reads = [c for c in task.gold_calls[:index] if c.server == call.server and not c.is_write]
            assert any(identifies(c.arguments, values) for c in reads), task.id
            # shown by a read keyed on something (a listing of everyone is no match of this customer)
            assert all(any(shows(c, v) and c.arguments for c in reads) for v in values), task.id
            if call.server == "payments":  # the card's last four digits: a value one hop from the customer
                assert any(v.isdigit() and len(v) == 4 for v in values), values
    assert governed, synthesis.summary.dropped


def _asking(message: str, claims: list[Claim]) -> Task:
    return Task(
        id="t",
        servers=["clinic"],
        tools=[],
        persona=Persona(name="Maria Lopez"),
        opening_message=message,
        turns=[Turn(message=message)],
        gold_calls=[],
        claims=claims,
        provenance=Provenance(sampler="hand", seed=0),
    )


@pytest.mark.parametrize(
    ("message", "claims", "unanswered"),
    [
        ("Please cancel my membership. When does it renew?", [], True),
        (
            "Please cancel my membership. When does it renew?",
            [Claim(text="states when it renews: 4 May", values=["Monday 4 May"])],
            False,
        ),
        (
            "Pay my bill. I'd also like to know the order total, please.",
            [Claim(text="states the status: paid", values=["paid"])],
            True,
        ),
        (
            "Pay my bill. I'd also like to know the order total, please.",
            [Claim(text="states the total: 12.50", values=["12.50"])],
            False,
        ),
        ("Also, what did it cost?", [Claim(text="states the price: 40.00", values=["40.00"])], False),
        ("Could you move my stay to 4 May?", [], False),
        (
            "How much is still owed, and when is it due?",
            [Claim(text="states the amount owed: 12.50", values=["12.50"])],
            True,
        ),
        # a yes/no question is answered by a claim on what it asks, not by a number beside it (gold6)
        ("Is the Friday class full?", [Claim(text="states how many places it has: 12", values=["12"])], True),
        ("Is the Friday class full?", [Claim(text="states whether it is full: no", values=["no"])], False),
    ],
)
def test_the_audit_reports_a_question_no_claim_answers(message: str, claims: list[Claim], unanswered: bool) -> None:
    found = Auditor._unanswered(_asking(message, claims))
    assert bool(found) is unanswered, [f.detail for f in found]
    assert all(f.check == "claims" for f in found)


OTHERS = ["banking", "invoicing", "library", "docs_drive", "payments"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_an_optional_detail_is_said_never_only_held_back(seed: int) -> None:
    """Soak over seeds: every optional argument of a gold write (a memo, a line's text) is in what the user
    says, never only a hidden fact nobody has a reason to ask for; no lookup is narrowed by a held-back
    category ("the role is viewer"). The old writer held back banking memos and invoice line texts."""
    async with Connections(farm_targets(REPO, OTHERS)) as farm:
        synthesis = await synthesize(SynthesisOptions(n=8, seed=seed, servers=OTHERS), farm)
        specs = {(s.server, s.name): s for s in await load_specs(farm, OTHERS)}
        auditor = await build_auditor(farm, OTHERS)
    assert audit_tasks(auditor, synthesis.tasks).failed == 0
    assert synthesis.tasks, synthesis.summary.dropped
    for task in synthesis.tasks:
        said = "\n".join([task.opening_message, *(t.message for t in task.turns)])
        hidden = {json.dumps(h.value, default=str) for h in task.hidden_facts}
        for call in task.gold_calls:
            spec = specs[call.server, call.tool]
            for name, value in call.arguments.items():
                param = spec.param(name)
                if isinstance(value, bool) or value in (None, ""):
                    continue
                if call.is_write and not param.required and param.user_known:
                    assert mentions(said, value), f"{task.id}: {call.tool}.{name}={value!r} never said"
                if not call.is_write and param.enum:
                    assert json.dumps(value) not in hidden, (
                        f"{task.id}: {call.tool}.{name} narrowed by a held-back {value!r}"
                    )


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
async def test_any_alternative_the_policy_allows_passes_the_check(seed: int) -> None:
    """The library identifies a member by card number, or full name and email: the must_identify check takes
    the values of both, so an agent that looks the member up by card number follows the policy too."""
    async with Connections(farm_targets(REPO, ["library"])) as farm:
        synthesis = await synthesize(SynthesisOptions(n=6, seed=seed, servers=["library"]), farm)
    checks = [c for t in synthesis.tasks for c in t.policy_checks if c.kind == "must_identify"]
    assert checks, synthesis.summary.dropped
    for check in checks:
        assert any(v.startswith("LC-") for v in check.values), check.values  # the card number
        assert any("@" in v for v in check.values), check.values  # the email
