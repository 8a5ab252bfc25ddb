"""Intents in the spec: who asks for a tool, how a person asks, what they want back, how they name a row.
The spec check names every slot, field or phrasing that does not fit the tool or table it belongs to."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO

from envfarm.factory.source import load_environment
from envfarm.factory.spec import SpecError
from envfarm.servers.runtime.intents import Slot, slots

HOTEL_SPEC = REPO / "factory" / "specs" / "hotel"


def hotel_copy(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path / "hotel"
    shutil.copytree(HOTEL_SPEC, folder)
    return folder, yaml.safe_load((folder / "spec.yaml").read_text())


def problems_after(tmp_path: Path, change: Any) -> list[tuple[str, str]]:
    folder, data = hotel_copy(tmp_path)
    change(data)
    (folder / "spec.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(SpecError) as caught:
        load_environment(folder)
    return caught.value.problems


def tool(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in data["tools"] if t["name"] == name)


def test_slots_are_parsed_with_their_follow_and_format() -> None:
    found = slots("move {res_id} to {arrival_date:%b %d}, at the {hotel_id.name}")
    assert found == [
        Slot("res_id", None, None, "{res_id}"),
        Slot("arrival_date", None, "%b %d", "{arrival_date:%b %d}"),
        Slot("hotel_id", "name", None, "{hotel_id.name}"),
    ]
    for bad in ("an {unclosed slot", "a {Bad Name}", "a {date:fortnight}"):
        with pytest.raises(ValueError):
            slots(bad)


def test_the_hotel_spec_carries_intents_for_every_write() -> None:
    spec = load_environment(HOTEL_SPEC).spec
    writes = [t for t in spec.tools if not t.hints().read_only_hint]
    assert writes and all(t.intent is not None for t in writes)
    assert all(e.refer for e in spec.entities.values())


def test_a_say_slot_must_name_a_param_of_the_tool(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        tool(data, "cancel_reservation")["intent"]["say"][0] = "Cancel {booking} please ({cancel_reason})."

    problems = problems_after(tmp_path, change)
    assert any("cancel_reservation" in at and "has no param 'booking'" in why for at, why in problems), problems


def test_a_followed_slot_must_reach_a_column_of_the_referenced_row(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["entities"]["reservations"]["refer"][0] = "my stay at the {hotel_id.title}"
        tool(data, "cancel_reservation")["intent"]["say"][0] = "Cancel {res_id}: {cancel_reason.text}"

    problems = dict(problems_after(tmp_path, change))
    assert "has no column 'title'" in problems["entities.reservations.refer.0"]
    assert any("'cancel_reason' references no table" in why for why in problems.values()), problems


def test_hear_names_fields_the_tool_returns(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        tool(data, "get_cancellation_fee")["intent"]["hear"]["refund"] = "the refund"

    problems = dict(problems_after(tmp_path, change))
    assert "returns no field 'refund'" in problems["tools.17(get_cancellation_fee).intent.hear.refund"]


def test_a_tool_a_person_asks_for_needs_two_phrasings(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        tool(data, "check_in")["intent"]["say"] = ["Check me in for {res_id}."]

    assert "needs two or more `say` phrasings" in json.dumps(problems_after(tmp_path, change))


def test_a_reference_never_says_an_id(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["entities"]["reservations"]["refer"] = ["my stay {res_id}", "my stay at {hotel_id}"]
        data["entities"]["rooms"]["refer"] = ["a room of type {type_id.hotel_id}"]

    problems = dict(problems_after(tmp_path, change))
    assert "is an id" in problems["entities.reservations.refer.0"]
    assert "is an id" in problems["entities.reservations.refer.1"]
    assert "room_types.hotel_id is an id" in problems["entities.rooms.refer.0"]


def test_a_key_given_twice_in_spec_yaml_is_refused_with_its_line(tmp_path: Path) -> None:
    folder, _ = hotel_copy(tmp_path)
    path = folder / "spec.yaml"
    text = path.read_text()
    path.write_text(text.replace("    intent:\n", "    intent: {asks: internal}\n    intent:\n", 1))
    with pytest.raises(SpecError) as caught:
        load_environment(folder)
    assert "duplicate key 'intent'" in str(caught.value) and "line" in str(caught.value)


def test_a_write_without_an_intent_is_refused_and_a_read_may_go_without(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        tool(data, "check_in").pop("intent")
        tool(data, "quote_stay").pop("intent")  # a read: optional

    problems = dict(problems_after(tmp_path, change))
    assert list(problems) == ["tools.9(check_in).intent"], problems
    assert "a write needs an intent" in problems["tools.9(check_in).intent"]
