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


def test_hear_may_name_a_difference_of_two_fields_the_tool_returns(tmp_path: Path) -> None:
    """'the seats left' where the server gives capacity and seats booked: `a - b` of two returned fields is
    accepted; a part it does not return is named."""

    def change(data: dict[str, Any]) -> None:
        hear = tool(data, "get_cancellation_fee")["intent"]["hear"]
        hear["fee - fee"] = "nothing"
        hear["fee - refund"] = "what I'd get back"

    problems = dict(problems_after(tmp_path, change))
    assert "tools.17(get_cancellation_fee).intent.hear.fee - fee" not in problems
    assert "returns no field 'refund'" in problems["tools.17(get_cancellation_fee).intent.hear.fee - refund"]


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
    # a key followed one step further is said as its own table names the row ('a room of type ... at the Harbor
    # View Lisbon'), so it is refused only where that table has no `refer` phrasing
    assert "entities.rooms.refer.0" not in problems

    def unnamed(data: dict[str, Any]) -> None:
        change(data)
        data["entities"]["hotels"]["refer"] = []

    assert (
        "room_types.hotel_id is an id" in dict(problems_after(tmp_path / "unnamed", unnamed))["entities.rooms.refer.0"]
    )


def test_words_may_say_the_codes_of_a_text_column_but_not_of_a_number(tmp_path: Path) -> None:
    """Meeting days stored as 'MWF' (a text column, no enum) are said 'Mondays, Wednesdays and Fridays'; words on a
    number column say nothing a number does not."""

    def change(data: dict[str, Any]) -> None:
        data["entities"]["rooms"]["words"] = {"number": {"101": "the corner room"}}
        data["entities"]["hotels"]["words"] = {"stars": {"3": "three stars"}}

    problems = dict(problems_after(tmp_path, change))
    assert "entities.rooms.words.number" not in problems
    assert "neither an enum nor a boolean" in problems["entities.hotels.words.stars"]


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


def test_a_coded_say_slot_needs_words_for_every_value(tmp_path: Path) -> None:
    """`{payment_method}` holds a code (`company_invoice`): without words for every value a person would be
    made to say it raw, so the check names the slot and the values missing."""

    def change(data: dict[str, Any]) -> None:
        tool(data, "check_out")["intent"]["words"] = {"payment_method": {"card": "card", "cash": "cash"}}

    problems = problems_after(tmp_path, change)
    assert any("check_out" in at and "{payment_method}" in why and "company_invoice" in why for at, why in problems), (
        problems
    )


def test_a_coded_refer_slot_needs_its_tables_words(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        del data["entities"]["folio_charges"]["words"]

    problems = problems_after(tmp_path, change)
    assert any("folio_charges.refer" in at and "{category}" in why for at, why in problems), problems


def test_words_name_values_the_column_can_hold(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["entities"]["folio_charges"]["words"]["category"]["coffee"] = "coffee"
        tool(data, "check_out")["intent"]["words"]["tip"] = {"yes": "yes"}

    problems = problems_after(tmp_path, change)
    assert any("folio_charges.words.category.coffee" in at for at, _ in problems), problems
    assert any("check_out" in at and "no param 'tip'" in why for at, why in problems), problems


def test_boolean_words_are_keyed_true_and_false_however_yaml_reads_them() -> None:
    from envfarm.servers.runtime.intents import Intent, ServerIntents, word_for

    intent = Intent.model_validate(
        yaml.safe_load('asks: user\nsay: ["a {x}", "b {x}"]\nwords: {x: {true: "with a full tank", false: "low"}}')
    )
    assert intent.words == {"x": {"true": "with a full tank", "false": "low"}}
    assert word_for(intent.words, "x", True) == "with a full tank"
    assert word_for(intent.words, "x", 0) == "low"  # SQLite's 0/1 for a boolean column
    assert word_for(intent.words, "y", True) is None
    served = ServerIntents.model_validate({"words": {"t": {"c": {True: "yes please"}}}})
    assert served.words == {"t": {"c": {"true": "yes please"}}}


def test_every_built_in_spec_words_every_coded_slot() -> None:
    """All built-in specs pass the words check, and each has what its users say for a code it holds."""
    from envfarm.factory.spec import EnvironmentSpec, intent_problems, read_document

    worded = 0
    for path in sorted((REPO / "factory" / "specs").glob("*/spec.yaml")):
        spec = EnvironmentSpec.model_validate(read_document(path))
        assert intent_problems(spec) == [], (path.parent.name, intent_problems(spec)[:3])
        worded += sum(bool(e.words) for e in spec.entities.values())
        worded += sum(bool(t.intent and t.intent.words) for t in spec.tools)
        for said in [*(w for e in spec.entities.values() for w in e.words.values())]:
            assert all(v.strip() and "_" not in v for v in said.values()), (path.parent.name, said)
    assert worded >= 24


def test_the_served_intents_carry_the_tables_words_for_a_param_that_fills_a_column() -> None:
    """A param that fills an enum column has its table's words in the served intent (no copy in the spec)."""
    from envfarm.servers.runtime.definition import _worded

    entities = {"holds": {"words": {"pickup_branch": {"Central": "the Central branch"}}, "columns": {}}}
    tool_ = {
        "entity": "holds",
        "params": {"pickup_branch": {"type": "string"}},
        "intent": {"asks": "user", "say": ["Hold it at {pickup_branch}.", "At {pickup_branch}, please."]},
    }
    assert _worded(tool_, entities)["words"] == {"pickup_branch": {"Central": "the Central branch"}}


def test_a_derived_or_proposed_specs_codes_are_humanized_never_said_raw() -> None:
    """`import openapi` and `propose` fall back on the values humanized for a coded slot nobody worded; words
    already written are kept."""
    from envfarm.factory.spec import humanized, with_default_words

    assert humanized("not_received") == "not received"
    assert humanized("inStock") == "in stock"
    assert humanized("USD") == "USD"
    assert humanized(True) == "yes"
    data: dict[str, Any] = {
        "entities": {
            "sales": {
                "refer": ["the {status} sale"],
                "columns": {"status": {"type": "string", "enum": ["on_hold", "done"]}},
                "words": {"status": {"done": "finished"}},
            }
        },
        "tools": [
            {
                "name": "dispute",
                "entity": "sales",
                "params": {"reason": {"type": "string", "enum": ["not_received"]}, "full": {"type": "boolean"}},
                "intent": {"asks": "user", "say": ["Dispute it: {reason}, {full}.", "Again: {reason}."]},
            }
        ],
    }
    with_default_words(data)
    assert data["entities"]["sales"]["words"] == {"status": {"done": "finished", "on_hold": "on hold"}}
    assert data["tools"][0]["intent"]["words"] == {
        "reason": {"not_received": "not received"},
        "full": {"true": "yes", "false": "no"},
    }


def test_a_person_names_their_own_things_in_the_first_person() -> None:
    from envfarm.clients.writing import first_person, self_phrase

    name, email = "Emma Dubois", "emma.dubois@example.com"
    assert self_phrase("the card of Emma Dubois (emma.dubois@example.com)", name, email) == "my card"
    assert self_phrase("Emma Dubois's team calendar", name, email) == "my team calendar"
    assert self_phrase("the Emma Dubois calendar", name, email) == "my calendar"
    assert self_phrase("driver Emma Dubois", name, email) == "me"
    assert (
        self_phrase("the card of Ivan Mensah (ivan@example.com)", name, email)
        == "the card of Ivan Mensah (ivan@example.com)"
    )
    assert first_person("This is Emma Dubois. I did the check.", name, email) == "I did the check."
    assert first_person("I'm Emma Dubois, here to collect it.", name, email) == "I'm here to collect it."
    assert first_person("Log it by driver Emma Dubois; it passed.", name, email) == "Log it by me; it passed."
    assert "Emma Dubois" in first_person("What else is Emma Dubois selling?", name, email)  # left: the writer drops it
