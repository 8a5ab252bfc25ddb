"""Expectations in the spec: how they are written (and refused when malformed, naming file and field),
and how a call's result and state change are judged against them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from corpus import GOOD

from envfarm.factory.source import load_environment
from envfarm.factory.spec import EnvironmentSpec, Example, Expect, SpecError
from envfarm.factory.verify.expect import Mismatch, apply_diff, judge, match, resolve, row_changes, seed_rows

SPEC = yaml.safe_load((GOOD / "spec.yaml").read_text(encoding="utf-8"))


def shed() -> EnvironmentSpec:
    return load_environment(GOOD).spec


def broken_spec(tmp_path: Path, edit: Any) -> SpecError:
    data = yaml.safe_load((GOOD / "spec.yaml").read_text(encoding="utf-8"))
    edit(data)
    folder = tmp_path / "shed"
    folder.mkdir(parents=True)
    (folder / "spec.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    (folder / "handlers.py").write_text((GOOD / "handlers.py").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_environment(folder)
    assert caught.value.source.endswith("spec.yaml")
    return caught.value


def test_bare_and_structured_examples_parse_and_bare_ones_stay_bare() -> None:
    bare = Example.model_validate({"loan_id": "loan_001", "note": "x"})
    assert bare.args == {"loan_id": "loan_001", "note": "x"} and bare.expect is None
    assert bare.model_dump() == {"loan_id": "loan_001", "note": "x"}
    full = Example.model_validate({"args": {"loan_id": "loan_001"}, "expect": {"error": "was returned"}})
    assert full.refused and full.model_dump()["expect"]["error"] == "was returned"


def test_malformed_expectations_name_the_field(tmp_path: Path) -> None:
    def shape(data: dict[str, Any]) -> None:
        extend = next(t for t in data["tools"] if t["name"] == "extend_loan")
        extend["examples"] = [
            {"args": {"loan_id": "loan_001", "days": 1}, "expect": {"error": "no", "result": {"x": 1}}},
            {"args": {"loan_id": "loan_001", "days": 1}, "expect": {"state": {"loans.loan_001": 1}}},
            {"args": {"loan_id": "loan_001", "days": 1}, "expect": {"rows": {"loans": {"added": -1}}}},
        ]

    problems = dict(broken_spec(tmp_path / "shape", shape).problems)
    assert "changes nothing" in problems["tools.6.examples.0.expect"]
    assert "table[key].column" in problems["tools.6.examples.1.expect"]
    assert "greater than or equal to 0" in problems["tools.6.examples.2.expect.rows.loans.added"]

    def names(data: dict[str, Any]) -> None:
        extend = next(t for t in data["tools"] if t["name"] == "extend_loan")
        extend["examples"] = [
            {"args": {"loan_id": "loan_001", "days": 1}, "expect": {"state": {"loans[loan_001].colour": "red"}}},
            {"args": {"loan_id": "loan_001", "days": 1}, "expect": {"rows": {"boats": {"added": 1}}}},
        ]
        data["scenarios"][0]["steps"][2]["args"] = {"loan_id": "${nobody.loan_id}"}
        data["scenarios"][0]["steps"][1]["tool"] = "borrow_boat"

    problems = dict(broken_spec(tmp_path / "names", names).problems)
    assert "has no column 'colour'" in problems["tools.6(extend_loan).examples.0.expect.state.loans[loan_001].colour"]
    assert "no entity 'boats'" in problems["tools.6(extend_loan).examples.1.expect.rows.boats"]
    assert "no earlier named step" in problems["scenarios.0(lend_return_lend_again).steps.2"]
    assert "no tool 'borrow_boat'" in problems["scenarios.0(lend_return_lend_again).steps.1.tool"]


def test_partial_match_names_the_field_with_expected_and_actual() -> None:
    actual = {"count": 2, "loans": [{"loan_id": "a", "due_on": "2026-03-01"}, {"loan_id": "b"}], "x": 1}
    assert match({"count": 2, "loans": [{"loan_id": "a"}, {}]}, actual) == []
    assert match({"count": 3}, actual) == [Mismatch("result.count", "3", "2")]
    assert match({"loans": [{"due_on": "2026-03-02"}, {}]}, actual) == [
        Mismatch("result.loans.0.due_on", '"2026-03-02"', '"2026-03-01"')
    ]
    assert match({"loans": [{}]}, actual)[0].field == "result.loans"
    assert match({"total": 1.1}, {"total": 0.1 + 1.0}) == [] and match({"ok": True}, {"ok": 1}) == []


def test_references_resolve_with_their_type_or_inside_text() -> None:
    results = {"loan": {"loan_id": "loan_004", "days": 7, "items": [{"id": "i"}]}}
    assert resolve({"n": "${loan.days}", "s": "id ${loan.loan_id}", "k": "${loan.items.0.id}"}, results) == {
        "n": 7,
        "s": "id loan_004",
        "k": "i",
    }
    assert resolve({"loans[${loan.loan_id}].returned": True}, results) == {"loans[loan_004].returned": True}


def test_judge_reads_row_changes_and_values_from_seed_plus_diff() -> None:
    spec = shed()
    seed = seed_rows(spec)
    diff = {
        "loans": {
            "added": [{"loan_id": "loan_004", "item_id": "item_003", "returned": 0}],
            "removed": [],
            "updated": [],
        },
        "items": {
            "added": [],
            "removed": [],
            "updated": [{"key": "item_003", "before": {}, "after": {"status": "lent"}}],
        },
    }
    after = apply_diff(seed, diff, spec)
    assert {t: c.model_dump() for t, c in row_changes(seed, after).items()} == {
        "items": {"added": 0, "updated": 1, "removed": 0},
        "loans": {"added": 1, "updated": 0, "removed": 0},
    }
    good = Expect.model_validate(
        {"rows": {"loans": {"added": 1}, "items": {"updated": 1}}, "state": {"items[item_003].status": "lent"}}
    )
    assert judge(spec, good, False, "", {}, seed, after) == []
    wrong = Expect.model_validate(
        {"rows": {"loans": {"added": 1}}, "state": {"items[item_003].status": "available", "items[item_009]": None}}
    )
    found = judge(spec, wrong, False, "", {}, seed, after)
    assert [str(m) for m in found] == [
        "rows.items: expected unchanged, got 1 updated",
        'items[item_003].status: expected "available", got "lent"',
    ]
    refused = Expect(error="not available")
    assert [m.field for m in judge(spec, refused, True, "Item is not available", None, seed, after)] == [
        "rows.items",
        "rows.loans",
    ]
    assert judge(spec, refused, False, "", {"loan_id": "x"}, seed, seed)[0].expected.startswith("a rejection")
