"""The verifier: a good environment passes every check; each broken one fails for its own reason.

The corpus runs with the static checks switched off, to show the dynamic checks catch each fault on
their own; the static layer is tested separately on the same handlers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from corpus import BROKEN, GOOD, stage_case

from envfarm.factory.generate.codegen import render_schema
from envfarm.factory.publish import code_hash, spec_hash, stage, staging_root
from envfarm.factory.source import load_environment
from envfarm.factory.spec import SearchTool
from envfarm.factory.verify.call_plan import invalid_calls, plan_calls
from envfarm.factory.verify.report import VERIFIER_VERSION, VerificationReport, VerifyOptions
from envfarm.factory.verify.rule_check import MAX_PROBES, _like, rule_probes, state_probes
from envfarm.factory.verify.schemas import canonical, differences, expected_output
from envfarm.factory.verify.search_check import SearchOracle
from envfarm.factory.verify.static_checks import check_handlers
from envfarm.factory.verify.tool_checks import effect_problems, expected_annotations
from envfarm.factory.verify.verifier import load_server_spec, verify_server

# case -> (check, tool) that must fail; "*" is a server-wide check.
CASES: dict[str, tuple[str, str]] = {
    "read_tool_writes": ("effect", "inspect_item"),
    "handler_crashes": ("crash", "extend_loan"),
    "output_not_matching_schema": ("output", "overdue_stats"),
    "rule_never_rejects": ("rule", "return_item"),
    "module_global_leak": ("isolation", "*"),
    "wall_clock": ("determinism", "*"),
    "unseeded_random": ("determinism", "*"),
    "tool_missing_from_listing": ("listed", "get_item"),
    "wrong_annotations": ("annotations", "get_item"),
    "handler_hangs": ("timeout", "reserve_item"),
    "handler_prints": ("output_stream", "available_count"),
    "principal_leak": ("cross_principal", "my_loans"),
    "wrong_result": ("expect", "extend_loan"),
    "uncovered_rule": ("coverage", "extend_loan"),
    "unreachable_rows": ("reachable:loans", "*"),
    "search_filters_or": ("search", "find_items"),
    "rule_off_by_one": ("rule_edge", "lend_item"),
    "stored_date_off_by_one": ("state_edge", "extend_loan"),
}
# case -> what the static layer finds in its handlers.py (faults it cannot see map to nothing).
STATIC_KINDS: dict[str, set[str]] = {
    "read_tool_writes": set(),
    "handler_crashes": set(),
    "output_not_matching_schema": set(),
    "module_global_leak": {"module_state"},
    "wall_clock": {"call"},
    "unseeded_random": {"import"},
    "handler_hangs": set(),
    "handler_prints": {"call"},
}
DYNAMIC_ONLY = VerifyOptions(static=False, call_timeout=1.0)


async def _verify_cases(root_factory: pytest.TempPathFactory) -> dict[str, VerificationReport]:
    reports: dict[str, VerificationReport] = {}
    limiter = anyio.CapacityLimiter(2)

    async def one(case: str) -> None:
        async with limiter:
            staged = stage_case(BROKEN / case, root_factory.mktemp(case))
            reports[case] = await verify_server(staged, staging_root(staged), DYNAMIC_ONLY)

    async with anyio.create_task_group() as group:
        for case in CASES:
            group.start_soon(one, case)
    return reports


@pytest.fixture(scope="module")
def corpus_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, VerificationReport]:
    return anyio.run(_verify_cases, tmp_path_factory)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> tuple[VerificationReport, Path]:
    staged = stage_case(GOOD, tmp_path_factory.mktemp("good"))
    return anyio.run(verify_server, staged, staging_root(staged), VerifyOptions()), staged


def test_good_environment_passes_every_check(good: tuple[VerificationReport, Path]) -> None:
    report, staged = good
    assert report.failures == [] and report.passed
    assert report.verifier_version == VERIFIER_VERSION
    assert report.code_hash == code_hash(staged) and report.spec_hash == spec_hash(staged)
    assert set(report.files) >= {"tools.py", "server.py", "handlers.py", "schema.sql", "spec.json", "seed.json"}
    assert report.checks == {
        "static": "passed",
        "launch": "passed",
        "isolation": "passed",
        "determinism": "passed",
        "coverage": "passed",
        "reachable:items": "passed",
        "reachable:loans": "passed",
    }
    assert report.advisories == []
    for tool in report.tools:
        assert tool.valid_calls, f"{tool.tool} was never called successfully"
        assert {"listed", "input_schema", "output_schema", "annotations", "valid_call", "output", "effect"} <= set(
            tool.checks
        )
        assert set(tool.checks.values()) == {"passed"}
    by_name = {t.tool: t for t in report.tools}
    assert {"rule", "unknown_id", "missing_argument", "wrong_type", "unchanged_on_error"} <= set(
        by_name["lend_item"].checks
    )
    assert by_name["extend_loan"].valid_calls[0]["loan_id"] == "loan_001"  # loan_002 is returned: the rule refuses it
    assert 0 < report.timings.launch_s < report.timings.total_s


@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_case_is_rejected_for_its_reason(case: str, corpus_reports: dict[str, VerificationReport]) -> None:
    report = corpus_reports[case]
    check, tool = CASES[case]
    failed = {(f.check, f.tool) for f in report.failures}
    assert not report.passed
    assert (check, tool) in failed, f"{case}: expected {check} on {tool}, got {sorted(failed)}"
    failure = next(f for f in report.failures if (f.check, f.tool) == (check, tool))
    assert failure.expected and failure.actual and failure.call


def test_rows_no_list_reaches_block_publishing_naming_the_table(corpus_reports: dict[str, VerificationReport]) -> None:
    [failure] = [f for f in corpus_reports["unreachable_rows"].failures if f.check.startswith("reachable:")]
    assert failure.call == {"table": "loans"}
    assert failure.actual.startswith("2 of 3 loans rows never listed") and "loan_001" in failure.actual


def test_hung_handler_stops_the_run_but_the_report_is_complete(corpus_reports: dict[str, VerificationReport]) -> None:
    report = corpus_reports["handler_hangs"]
    assert report.checks["completed"] == "failed"
    # The run stops at the first hung call: one timeout, not one per remaining call (no wall-clock bound:
    # launching a server takes seconds on a loaded machine).
    assert [(f.check, f.tool) for f in report.failures] == [("timeout", "reserve_item"), ("completed", "*")]


def test_report_names_static_and_dynamic_failures_together(tmp_path: Path) -> None:
    staged = stage_case(BROKEN / "wall_clock", tmp_path)
    report = anyio.run(verify_server, staged, staging_root(staged), VerifyOptions())
    failed = {(f.check, f.tool) for f in report.failures}
    assert {("static:call", "handlers.py"), ("determinism", "*")} <= failed
    static = next(f for f in report.failures if f.check == "static:call")
    assert static.call == {"file": "handlers.py", "line": 10, "function": "lend_item"} and "wall clock" in static.actual


@pytest.mark.parametrize("case", sorted(STATIC_KINDS))
def test_static_layer_sees_what_it_can(case: str) -> None:
    findings = check_handlers((BROKEN / case / "handlers.py").read_text(encoding="utf-8"))
    assert {f.kind for f in findings} == STATIC_KINDS[case]


def test_static_checks_allow_constant_tables_but_not_shared_state() -> None:
    source = """
import os, random
from datetime import datetime
GRADES = {"A": 4.0}
SEEN = []
_cache = {}
def handler(db, key):
    global counter
    SEEN.append(key)
    print(key)
    return {"at": datetime.now(), "grade": GRADES[key], "data": open("x").read(), "x": eval("1")}
"""
    found = {(f.kind, f.code.split("(")[0].split(" =")[0]) for f in check_handlers(source)}
    assert ("module_state", "GRADES") not in found
    assert {
        ("module_state", "SEEN"),
        ("module_state", "_cache"),
        ("global", "global counter"),
        ("import", "import os, random"),
    } <= found
    assert {("call", "print"), ("call", "datetime.now"), ("call", "open"), ("call", "eval")} <= found
    assert [f.kind for f in check_handlers("def broken(:\n")] == ["syntax"]


def test_call_plan_respects_rules_and_derives_invalid_calls() -> None:
    source = load_environment(GOOD)
    plans, seed = plan_calls(source.spec, render_schema(source.spec))
    lend = plans["lend_item"]
    assert lend.candidates and not lend.must_pass
    assert all(c["item_id"] in {"item_002", "item_003"} and c["due_on"] >= "2026-03-02" for c in lend.candidates)
    assert len(plans["find_items"].must_pass) == 2  # no filters, then every filter from one row
    invalid = invalid_calls(seed, lend.tool, lend.candidates[0])
    checks = [c.check for c in invalid]
    assert checks.count("missing_argument") == 1 and checks.count("wrong_type") == 1 and checks.count("unknown_id") == 1
    rules = [c.message for c in invalid if c.check == "rule"]
    assert rules == ["Item item_001 is not available to lend.", "The due date 2026-01-01 is in the past."]


def test_output_schema_differences_name_the_field() -> None:
    spec = load_environment(GOOD).spec
    expected = expected_output(spec, spec.tool("get_item"))
    listed = {
        "type": "object",
        "required": ["item_id", "name", "category", "status"],
        "properties": {
            "item_id": {"type": "string"},
            "name": {"type": "string"},
            "category": {"enum": ["garden", "power"], "type": "string"},
            "status": {"anyOf": [{"enum": ["available", "lent", "retired"], "type": "string"}, {"type": "null"}]},
        },
    }
    found = differences(expected, canonical(listed))
    assert any(d.startswith("properties.category.enum") for d in found)
    assert any(d.startswith("properties.status.type") for d in found)
    assert len(found) == 2


def test_effects_are_judged_against_the_declared_tables(good: tuple[VerificationReport, Path]) -> None:
    _, staged = good
    spec = load_server_spec(staged)
    _, seed = plan_calls(spec, (staged / "schema.sql").read_text())
    remove = spec.tool("remove_item")
    removed = {"items": {"added": [], "removed": [{"item_id": "item_003"}], "updated": []}}
    assert effect_problems(spec, seed, remove, {"item_id": "item_003"}, removed, None) == []
    leaked = {**removed, "loans": {"added": [], "removed": [{"loan_id": "loan_001"}], "updated": []}}
    assert effect_problems(spec, seed, remove, {"item_id": "item_003"}, leaked, None) == [
        'changed loans (undeclared): {"added": [], "removed": [{"loan_id": "loan_001"}], "updated": []}'
    ]
    read = spec.tool("get_item")
    assert effect_problems(spec, seed, read, {"item_id": "item_001"}, {}, None) == []
    assert effect_problems(spec, seed, read, {"item_id": "item_001"}, removed, None)


def test_a_wrong_result_is_reported_with_example_field_expected_and_actual(
    corpus_reports: dict[str, VerificationReport],
) -> None:
    report = corpus_reports["wrong_result"]
    wrong = [f for f in report.failures if f.check == "expect"]
    assert {f.tool for f in wrong} == {"extend_loan"}
    fields = {f.actual.split(":")[0]: f for f in wrong}
    assert set(fields) == {"result.due_on", "loans[loan_001].due_on"}
    failure = fields["loans[loan_001].due_on"]
    assert failure.expected == '"2026-03-12"' and failure.actual.endswith('"2026-03-11"')
    assert failure.call and failure.call["expectation"] == "tools.6(extend_loan).examples.0"
    assert failure.call["arguments"] == {"loan_id": "loan_001", "days": 7}


def test_coverage_gate_names_the_unexercised_rule_and_records_coverage_per_tool(
    corpus_reports: dict[str, VerificationReport], good: tuple[VerificationReport, Path]
) -> None:
    report = corpus_reports["uncovered_rule"]
    gaps = [f for f in report.failures if f.check == "coverage"]
    reject = next(f for f in gaps if "db.reject" in f.actual)
    assert reject.tool == "extend_loan" and reject.call == {
        "file": "handlers.py",
        "line": 18,
        "function": "extend_loan",
    }
    assert reject.actual.startswith("handlers.py:18 never ran under one")
    branches = {f.call["line"] for f in gaps if f.call and "->" in f.actual}
    assert 17 in branches  # the `if` never went the rejecting way
    extend = next(t for t in good[0].tools if t.tool == "extend_loan")
    assert extend.coverage and extend.coverage.branches == extend.coverage.branches_by_expectations > 0


def test_expected_annotations_come_from_the_spec_not_from_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifier's own table: a bug in the runtime's effect_hints (which every server uses) would be
    expected as well as served if the verifier asked the runtime."""
    from envfarm.servers.runtime import effects

    def broken(*args: object, **kwargs: object) -> effects.Hints:
        return effects.Hints(read_only_hint=False, destructive_hint=False, idempotent_hint=False)

    monkeypatch.setattr(effects, "effect_hints", broken)
    spec = load_environment(GOOD).spec
    hints = {t.name: expected_annotations(t) for t in spec.tools}
    read, write = (True, False, True), (False, True, True)
    table = {  # (readOnly, destructive, idempotent) by the MCP meaning of each effect
        "find_items": read,
        "get_item": read,
        "lend_item": (False, False, False),
        "return_item": write,
        "remove_item": write,
        "overdue_loans": read,  # custom, writes nothing
        "extend_loan": (False, True, False),  # custom that writes
    }
    for name, (read_only, destructive, idempotent) in table.items():
        assert hints[name] == {
            "read_only_hint": read_only,
            "destructive_hint": destructive,
            "idempotent_hint": idempotent,
            "open_world_hint": False,
        }, name


def test_search_oracle_expects_what_the_spec_author_wrote_and_probes_every_filter() -> None:
    spec = load_environment(GOOD).spec
    _, seed = plan_calls(spec, render_schema(spec))
    oracle = SearchOracle(spec, seed)
    find_loans = spec.tool("find_loans")
    assert isinstance(find_loans, SearchTool)
    # The shed's own hand-written example: borrower "ana", ordered by due date.
    assert oracle.expected(find_loans, {"borrower": "ANA"}, None) == ["loan_003", "loan_001"]
    probes = [p for p in oracle.probes(None) if p.tool.name == "find_items"]
    assert [p.label for p in probes] == ["no filter", "name", "category", "status", "every filter"]
    everything = probes[0].expected
    for probe in probes[1:-1]:
        ((name, value),) = probe.arguments.items()
        assert probe.expected and len(probe.expected) < len(everything), (name, value)  # each filter narrows
    assert probes[1].arguments["name"].swapcase() in " ".join(r["name"] for r in spec.seed["items"])
    assert set(probes[-1].arguments) == {"name", "category", "status"} and probes[-1].expected


def test_rule_edges_ask_the_spec_which_rule_refuses_a_call_at_today() -> None:
    spec = load_environment(GOOD).spec
    _, seed = plan_calls(spec, render_schema(spec))
    lend = spec.tool("lend_item")
    valid = {"item_id": "item_002", "borrower": "Cy Tran", "due_on": "2026-03-09"}
    probes = rule_probes(seed, lend, [valid])
    by_due = {p.arguments["due_on"]: p for p in probes if p.arguments.get("item_id") == "item_002"}
    assert by_due["2026-03-02"].message is None  # due today: no rule refuses it
    assert by_due["2026-03-01"].message == "The due date 2026-03-01 is in the past."
    assert all(p.messages for p in probes) and len(probes) <= MAX_PROBES


def test_state_edges_move_a_stored_date_two_foreign_keys_away_to_where_the_rule_flips() -> None:
    server = Path(__file__).parent.parent / "servers" / "course_registration"
    spec = load_server_spec(server)
    _, seed = plan_calls(spec, (server / "schema.sql").read_text())
    drop = spec.tool("drop_enrollment")  # refused once the term's drop deadline (enrollment -> section -> term) passed
    call = {"enrollment_id": "enr_x6uh68"}
    probes = [p for p in state_probes(seed, drop, [call]) if p.arguments == call]
    by_change = {p.change: p for p in probes}
    today, yesterday = "terms[trm_nfvmq3].drop_deadline = 2026-04-13", "terms[trm_nfvmq3].drop_deadline = 2026-04-12"
    assert set(by_change) == {today, yesterday}, "only the two values where the rule flips are probed"
    assert by_change[today].message is None  # the deadline is today: still allowed
    assert by_change[yesterday].message is not None and "drop deadline" in by_change[yesterday].message
    deadlines = {r["term_id"]: r["drop_deadline"] for r in by_change[today].rows}
    assert deadlines["trm_nfvmq3"] == "2026-04-13" and len(deadlines) == len(spec.seed["terms"])  # the whole table
    assert {r["drop_deadline"] for r in spec.seed["terms"]}.isdisjoint(
        {"2026-04-13"}
    )  # the seed alone never reaches it


def test_a_handler_that_breaks_only_on_a_moved_state_is_advised_not_failed(tmp_path: Path) -> None:
    # The overdue rule's case without its generator bug, and a handler that assumes no loan is ever due today
    # (no tool and no seeded row makes one): the state edge at today breaks it, which is reported, not failed.
    staged = stage(load_environment(BROKEN / "stored_date_off_by_one"), tmp_path)
    handlers = staged / "handlers.py"
    lookup = '    loan = db.require("loans", loan_id)\n'
    text = handlers.read_text()
    assert lookup in text
    handlers.write_text(text.replace(lookup, lookup + '    assert loan["due_on"] != db.now[:10], "due today"\n'))
    report = anyio.run(verify_server, staged, staging_root(staged), DYNAMIC_ONLY)
    assert report.passed, report.failures
    advised = [a for a in report.advisories if a.check == "crash_on_moved_state"]
    assert advised and advised[0].tool == "extend_loan" and advised[0].call is not None
    assert advised[0].call["state"] == "loans[loan_001].due_on = 2026-03-02"


def test_a_moved_datetime_is_written_as_the_column_s_seed_values_are() -> None:
    now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    assert _like("2026-01-01T10:00:00Z", now, "datetime") == "2026-03-02T09:00:00Z"
    assert _like("2026-01-01 10:00:00", now, "datetime") == "2026-03-02 09:00:00"
    assert _like("2026-01-01T10:00:00+02:00", now, "datetime") == "2026-03-02T11:00:00+02:00"  # the same instant
    assert _like("2026-01-01T10:00:00.000Z", now, "datetime") == "2026-03-02T09:00:00.000Z"
    assert _like(None, now, "datetime") == "2026-03-02T09:00:00Z" and _like(None, now, "date") == "2026-03-02"


def test_rule_edges_make_a_call_again_as_other_principals_who_can_see_its_rows() -> None:
    server = Path(__file__).parent.parent / "servers" / "marketplace"
    spec = load_server_spec(server)
    _, seed = plan_calls(spec, (server / "schema.sql").read_text())
    accept = spec.tool("accept_offer")  # "Only the seller can accept offer ..." is a rule on :principal
    seller_call = {"principal": "felix.andersen@example.com", "offer_id": "off_k5h8c4"}
    probes = [p for p in rule_probes(seed, accept, [seller_call]) if p.arguments["offer_id"] == "off_k5h8c4"]
    others = [p for p in probes if p.arguments["principal"] != "felix.andersen@example.com"]
    assert others, "no other principal made the seller's call"
    for probe in others:  # only the buyer sees the offer besides its seller: the seller rule refuses them
        assert (
            probe.message == "Only the seller can accept offer off_k5h8c4, and you are not the seller of its listing."
        )
        assert probe.arguments["principal"] == "omar.novak@example.com"
