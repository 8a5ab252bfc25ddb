"""Spec validation: a broken spec reports every problem at once, each with its file and field path."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CLINIC_SPEC

from envfarm.factory.source import load_environment
from envfarm.factory.spec import RowResult, RowsResult, SpecError


def clinic_copy(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A writable copy of the clinic spec folder and its parsed spec.yaml."""
    folder = tmp_path / "clinic"
    shutil.copytree(CLINIC_SPEC, folder)
    return folder, yaml.safe_load((folder / "spec.yaml").read_text())


def write_spec(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def problems_of(folder: Path) -> SpecError:
    with pytest.raises(SpecError) as caught:
        load_environment(folder)
    return caught.value


def test_the_reference_spec_is_valid() -> None:
    source = load_environment(CLINIC_SPEC)
    assert source.spec.name == "clinic" and source.handlers is not None
    assert {"patients", "doctors", "slots", "appointments", "invoices"} <= set(source.spec.seed)


def test_cross_field_problems_are_all_reported_with_their_paths(tmp_path: Path) -> None:
    folder, data = clinic_copy(tmp_path)
    data["entities"]["appointments"]["columns"]["status"]["default"] = "pending"
    data["tools"][2]["params"]["doctor_id"]["ref"] = "medics.doctor_id"
    data["tools"][3]["rules"][0]["reject_if"] = "SELECT 1 FROM slots WHERE slot_id = :slot"
    data["tools"][6]["handler"] = "move_appointment"
    data["tools"].append(dict(data["tools"][0]))
    path = write_spec(folder, data)

    error = problems_of(folder)

    assert error.source == str(path)
    found = dict(error.problems)
    assert "not in enum" in found["entities.appointments.columns.status.default"]
    assert "no entity 'medics'" in found["tools.2(list_free_slots).params.doctor_id"]
    assert ":slot" in found["tools.3(book_appointment).rules.0.reject_if"]
    assert "move_appointment" in found["tools.6(reschedule_appointment).handler"]
    assert "duplicate tool name" in found["tools.10(find_patient)"]
    message = str(error)
    assert message.startswith(f"{path}: {len(error.problems)} problem(s)")
    assert all(f"  {where}: {what}" in message for where, what in error.problems)


def test_schema_problems_are_all_reported_with_their_paths(tmp_path: Path) -> None:
    folder, data = clinic_copy(tmp_path)
    data["name"] = "Clinic!"
    data["entities"]["patients"]["columns"]["email"]["type"] = "text"
    del data["tools"][0]["description"]
    data["tools"][1]["effect"] = "upsert"
    write_spec(folder, data)

    locations = {where for where, _ in problems_of(folder).problems}

    assert {"name", "entities.patients.columns.email.type", "tools.0.description", "tools.1.effect"} <= locations


def test_seed_rows_that_break_the_schema_are_named_by_row(tmp_path: Path) -> None:
    folder, data = clinic_copy(tmp_path)
    (folder / "seed.py").unlink()
    data["seed"] = {
        "doctors": [{"doctor_id": "doc_001", "name": "Dr. A", "specialty": "astrology"}],
        "slots": [
            {
                "slot_id": "slot_0001",
                "doctor_id": "doc_404",
                "starts_at": "2026-03-03T10:00:00Z",
                "duration_minutes": 30,
            }
        ],
    }
    write_spec(folder, data)

    found = dict(problems_of(folder).problems)

    assert "astrology" in found["seed.doctors.0.specialty"]
    assert "doc_404" in found["seed.slots.0.doctor_id"]


def test_unparsable_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    folder, _ = clinic_copy(tmp_path)
    (folder / "spec.yaml").write_text("name: clinic\ntools: [unclosed\n")

    error = problems_of(folder)

    assert error.source == str(folder / "spec.yaml")
    assert "not valid YAML" in str(error) and "line" in str(error)


def test_a_failing_seed_builder_names_seed_py(tmp_path: Path) -> None:
    folder, _ = clinic_copy(tmp_path)
    (folder / "seed.py").write_text("def build(rng, now):\n    raise KeyError('doctors')\n")

    error = problems_of(folder)

    assert error.source == str(folder / "seed.py")
    assert "KeyError" in str(error)


def test_handlers_that_do_not_parse_are_reported_with_their_line(tmp_path: Path) -> None:
    folder, _ = clinic_copy(tmp_path)
    (folder / "handlers.py").write_text("def reschedule_appointment(db, appointment_id, slot_id)\n    return {}\n")

    error = problems_of(folder)

    assert error.source == str(folder / "handlers.py")
    assert error.problems[0][0] == "line 1"


def test_each_tool_kind_owns_its_fields_and_says_which_is_wrong(tmp_path: Path) -> None:
    folder, data = clinic_copy(tmp_path)
    tools = data["tools"]
    tools[0]["effect"] = "read"  # the old spelling of search/get
    tools[1]["writes"] = ["doctors"]  # a search changes nothing
    del tools[7]["key"]  # cancel_appointment: an update names its row
    del tools[6]["handler"]  # reschedule_appointment: a custom tool calls a handler
    write_spec(folder, data)

    found = dict(problems_of(folder).problems)

    assert "use one of search, get, create, update, delete, custom" in found["tools.0.effect"]
    assert "`search` without a key, `get` with one" in found["tools.0.effect"]
    assert "Extra inputs" in found["tools.1.writes"]
    assert "Field required" in found["tools.7.key"]
    assert "Field required" in found["tools.6.handler"]


def test_only_writes_to_one_row_bind_id(tmp_path: Path) -> None:
    folder, data = clinic_copy(tmp_path)
    data["tools"][2]["rules"] = [{"reject_if": "SELECT 1 WHERE :id IS NULL", "message": "never", "example": {}}]
    write_spec(folder, data)

    found = dict(problems_of(folder).problems)

    assert ":id" in found["tools.2(list_free_slots).rules.0.reject_if"]


def test_a_list_passed_as_separated_text_is_refused(tmp_path: Path) -> None:
    """A string param whose description says it holds comma- or semicolon-separated items is a list in
    disguise: the spec must declare it an array (items: true)."""
    folder, data = clinic_copy(tmp_path)
    data["tools"][2]["params"]["doctor_id"]["description"] = "Doctor ids, comma-separated"
    write_spec(folder, data)

    found = dict(problems_of(folder).problems)

    assert "array param (items: true)" in found["tools.2(list_free_slots).params.doctor_id"]
    data["tools"][2]["params"]["doctor_id"] |= {"items": True}
    write_spec(folder, data)
    assert load_environment(folder).spec.tools[2].params["doctor_id"].items


def test_kinds_derive_changed_tables_hints_and_results() -> None:
    spec = load_environment(CLINIC_SPEC).spec
    book, cancel, get, reschedule = (
        spec.tool(n) for n in ("book_appointment", "cancel_appointment", "get_slot", "reschedule_appointment")
    )
    assert book.changed_tables == ["appointments", "slots"]
    assert get.changed_tables == [] and get.hints().read_only_hint
    assert cancel.hints().destructive_hint and cancel.hints().idempotent_hint
    assert not book.hints().idempotent_hint and not book.hints().destructive_hint
    assert reschedule.hints().destructive_hint and reschedule.changed_tables == ["appointments", "slots"]
    assert spec.tool("list_free_slots").result(spec) == RowsResult("slots", 25)
    assert reschedule.result(spec) == RowResult("appointments")
    # The key must exist in its entity; a write's foreign-key column is checked too.
    assert get.checked_ref(spec, "slot_id") == "slots.slot_id"
    assert book.checked_ref(spec, "patient_id") == "patients.patient_id"
    assert spec.tool("find_patient").checked_ref(spec, "email") is None
