"""The one world: the cast, the farm invariants over published seeds, and the variety of work text."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from envfarm.factory.world import clock, content
from envfarm.factory.world.cast import build_cast
from envfarm.factory.world.invariants import Farm, check_farm, farm_violations, load_farm
from envfarm.factory.world.sources import SPECS

SERVERS = Path(__file__).resolve().parents[1] / "servers"


@pytest.fixture(scope="module")
def farm() -> Farm:
    return load_farm(SERVERS)


def test_the_published_farm_holds_every_world_invariant(farm: Farm) -> None:
    assert [str(v) for v in check_farm(farm)] == []


def test_a_person_moved_to_another_city_names_both_servers_and_rows(farm: Farm) -> None:
    seeds = copy.deepcopy(farm.seeds)
    maria = next(c for c in seeds["grocery_delivery"]["customers"] if c["full_name"] == "Maria Patel")
    maria["address"] = "1 Harbor Street, Reykjavik"
    broken = [v for v in check_farm(Farm(clocks=farm.clocks, seeds=seeds)) if "Reykjavik" in v.message]
    cities = [v for v in broken if "city" in v.message]
    assert len(cities) == 1
    (violation,) = cities
    assert violation.rule == "same person"
    assert {(r.server, r.table) for r in violation.rows} == {
        ("banking", "customers"),
        ("grocery_delivery", "customers"),
    }
    assert maria["customer_id"] in {r.key for r in violation.rows}
    assert "maria.patel@example.com" in violation.message


def test_a_charge_that_disagrees_with_its_grocery_order_is_reported(farm: Farm) -> None:
    seeds = copy.deepcopy(farm.seeds)
    charge = next(c for c in seeds["payments"]["charges"] if c["description"].startswith("Grocery order ord_"))
    charge["amount"] = round(charge["amount"] + 1, 2)
    broken = [v for v in check_farm(Farm(clocks=farm.clocks, seeds=seeds)) if v.rule == "order charged"]
    assert len(broken) == 1
    assert {r.server for r in broken[0].rows} == {"grocery_delivery", "payments"}
    assert charge["charge_id"] in {r.key for r in broken[0].rows}


def test_an_undeclared_clock_is_a_violation(farm: Farm) -> None:
    clocks = {**farm.clocks, "mail": "2026-04-14T09:00:00Z"}
    broken = [v for v in check_farm(Farm(clocks=clocks, seeds=farm.seeds)) if v.rule == "one clock"]
    assert [v.rows[0].server for v in broken] == ["mail"]


def test_farm_violations_reads_a_servers_folder(tmp_path: Path) -> None:
    for name in ("banking", "marketplace"):
        shutil.copytree(SERVERS / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    seed_file = tmp_path / "marketplace" / "seed.json"
    seed = json.loads(seed_file.read_text())
    member = seed["members"][0]
    member["city"] = "Atlantis"
    seed_file.write_text(json.dumps(seed))
    violations = farm_violations(tmp_path)
    assert len(violations) == 1
    assert {r.server for r in violations[0].rows} == {"banking", "marketplace"}
    assert member["member_id"] in {r.key for r in violations[0].rows}


def test_the_cast_is_deterministic_and_consistent() -> None:
    first, second = build_cast(), build_cast()
    assert first == second
    assert len({p.email for p in first}) == len(first) == 80
    staff = [p for p in first if p.employer == "Northwind Analytics"]
    assert len(staff) == 40 and all(p.department and p.cost_center for p in staff)


def test_work_text_is_varied_and_plentiful(farm: Farm) -> None:
    report = content.variety(farm.seeds)
    assert set(report) == {"mail", "chat", "comments", "documents"}
    for kind, (count, ratio) in report.items():
        assert count >= 80, kind
        assert ratio >= 0.8, kind


def test_distinct_ratio_counts_repeats() -> None:
    assert content.distinct_ratio(["a", "b", "a", "c"]) == 0.75
    assert content.distinct_ratio([]) == 1.0


def test_a_reply_answers_the_item_it_was_asked_about() -> None:
    ws = content.workstream_for("Q2 budget review")
    assert ws.key == "budget"
    asked = content.write(content.rng_for("t", 1), ws, "ask", "Noah")
    answer = content.reply_to(content.rng_for("t", 2), ws, asked, "Maria")
    assert answer.act == "answer" and answer.item == asked.item and asked.item in answer.text


def test_a_warehouse_order_shipped_from_elsewhere_is_reported(farm: Farm) -> None:
    seeds = copy.deepcopy(farm.seeds)
    order = next(o for o in seeds["warehouse"]["orders"] if o["status"] == "shipped")
    order["shipped_at"] = "2026-02-01T00:00:00Z"
    broken = [v for v in check_farm(Farm(clocks=farm.clocks, seeds=seeds)) if v.rule == "order shipped"]
    assert len(broken) == 1
    assert {(r.server, r.table) for r in broken[0].rows} == {("warehouse", "orders"), ("parcel_shipping", "shipments")}
    assert order["order_id"] in {r.key for r in broken[0].rows}


def test_a_quoted_figure_missing_from_the_drive_is_reported(farm: Farm) -> None:
    seeds = copy.deepcopy(farm.seeds)
    message = seeds["team_chat"]["messages"][0]
    message["text"] += " Also $999,999 for snacks."
    broken = [v for v in check_farm(Farm(clocks=farm.clocks, seeds=seeds)) if v.rule == "quoted figure"]
    assert [r.key for v in broken for r in v.rows if r.server == "team_chat"] == [message["message_id"]]


def test_every_built_in_server_is_in_the_world() -> None:
    built_in = {p.name for p in SPECS.iterdir() if p.is_dir()}
    assert built_in == set(clock.ON_FARM_CLOCK) | set(clock.DECLARED_SKEWS)


def test_a_server_outside_the_world_keeps_its_own_clock(farm: Farm) -> None:
    clocks = {**farm.clocks, "shed": "2020-01-01T00:00:00Z"}
    assert [v for v in check_farm(Farm(clocks=clocks, seeds=farm.seeds)) if v.rule == "one clock"] == []


def test_envfarm_verify_all_reports_world_violations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI hook: `verify --all` ends with the world invariants and fails on one (here the farm's
    registry lists no server, so only the world check runs over the server folders it holds)."""
    from envfarm.cli import main

    (tmp_path / "registry.json").write_text(json.dumps({"servers": []}), encoding="utf-8")
    for name in ("clinic", "pharmacy"):
        (tmp_path / "servers" / name).mkdir(parents=True)
        for file in ("seed.json", "spec.json"):
            shutil.copy(SERVERS / name / file, tmp_path / "servers" / name / file)
    assert main(["--farm", str(tmp_path), "verify", "--all"]) == 0
    assert "0 world invariant violations" in capsys.readouterr().out

    seed_file = tmp_path / "servers" / "clinic" / "seed.json"
    seed = json.loads(seed_file.read_text())
    pharmacy_emails = {p["email"] for p in json.loads((SERVERS / "pharmacy" / "seed.json").read_text())["patients"]}
    patient = next(p for p in seed["patients"] if p["email"] in pharmacy_emails)
    patient["date_of_birth"] = "1901-01-01"
    seed_file.write_text(json.dumps(seed))
    assert main(["--farm", str(tmp_path), "verify", "--all"]) == 1
    out = capsys.readouterr().out
    assert "1 world invariant violations" in out
    (line,) = [x for x in out.splitlines() if x.startswith("world: ")]
    assert f"clinic.patients[{patient['patient_id']}]" in line and "pharmacy.patients[" in line
