"""What the heuristic reads without a model, as a weak agent would: days said in words, a code by its shape or
the word before it, the name a person gives as their own, the rules a service's instructions state, and whose
record a row is. Each is what a model would read too; without them the sampled heuristic solved 0.7% of the
seed 7309 episodes, and every task's solve rate sat near 0."""

from __future__ import annotations

from typing import Any

from conftest import REPO

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import (
    AgentTool,
    HeuristicAgent,
    HeuristicPolicy,
    ServiceRules,
    agent_tools,
    example_shape,
    proper_names,
    service_rules,
    speakers,
    spoken_days,
    system_prompt,
)
from envfarm.clients.tasks import Task


def test_days_said_in_words_are_read_in_order_with_their_times() -> None:
    assert spoken_days("one adult from 14 May to 18 May", 2026) == ["2026-05-14", "2026-05-18"]
    assert spoken_days("May 3rd, 2027 or 2026-01-02", 2026) == ["2027-05-03", "2026-01-02"]
    # a time belongs to the day said before it, however it is joined to it
    assert spoken_days("move it from Monday 20 April at 11:00 to Monday 27 April, from 11:00 to 11:45", 2026) == [
        "2026-04-20T11:00:00Z",
        "2026-04-27T11:00:00Z",
        "2026-04-27T11:45:00Z",
    ]
    assert spoken_days("the 1:1 on 31 February, or 2026-05-01T09:30:00Z", 2026) == ["2026-05-01T09:30:00Z"]
    assert spoken_days("on 14 May", None) == []  # no year known, none assumed


def test_a_code_is_found_by_the_shape_its_example_gives_or_the_word_said_before_it() -> None:
    shape = example_shape("Exact invoice number, e.g. INV-1012")
    assert shape is not None and shape.findall("pay INV-1038 by LC-200525") == ["INV-1038"]
    assert example_shape("How many, e.g. 3") is None
    agent = HeuristicPolicy().agent(Task.model_construct(id="t"), [])
    assert isinstance(agent, HeuristicAgent)
    said = "I filled up 36-MA-18, odometer 284328 km. The barcode is 31200004485 and my card is LC-201446."
    plate = {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Part of the registration plate"}
    barcode = {"type": "string", "description": "The barcode printed on the copy"}
    assert agent._from_text("barcode", barcode, said) == "31200004485"
    assert agent._from_text("card_number", {"type": "string", "description": "Library card number"}, said) == (
        "LC-201446"
    )
    assert agent._from_text("plate", plate, "the van with plate 48-TG-30, please") == "48-TG-30"
    # a code said after no word of the parameter's is not taken for it
    assert agent._from_text("plate", plate, said) is None
    seats = {"type": "integer", "description": "Number of seats"}
    assert agent._from_text("seats", seats, "3 seats on RA85596") == "3"
    amount = {"type": "number", "description": "Credit amount"}
    assert agent._from_text("amount", amount, "a $1,470.40 credit on INV-1008") == "1470.40"
    assert agent._from_text("odometer_km", {"type": "integer"}, said) == "284328"


def test_the_speakers_own_name_is_theirs_and_a_things_name_is_not_theirs() -> None:
    text = "Hi there, Anya here. Can I borrow Letters from the Front at the Grand Vienna? It's Diego Rossi, too."
    assert speakers(text) == ["Anya", "Diego Rossi"]
    assert [name for name, _ in proper_names(text)] == ["Letters from the Front", "Grand Vienna"]
    agent = HeuristicPolicy().agent(Task.model_construct(id="t"), [])
    assert isinstance(agent, HeuristicAgent)
    person = {"type": "string", "description": "Part of the member's full name"}
    title = {"type": "string", "description": "Part of the title"}
    assert agent._from_text("full_name", person, text) == "Diego Rossi"
    assert agent._from_text("title", title, text) in ("Letters from the Front", "Grand Vienna")
    assert agent._from_text("reason", {"type": "string"}, "It's because of a medical leave.") == "medical leave"


SECTION = """Hotel Group Front Desk.
Identify the customer first: a guest gives their full name and the reservation's confirmation details or email
Policy:
- Read back dates, room type and price before you book. Get an explicit yes first (not enforced by the tools).
- Quote before booking (quote_stay): loyalty discounts apply.
- Tell the guest the fee (get_cancellation_fee) before cancelling.
"""


def test_a_services_rules_are_read_from_its_instructions() -> None:
    rules = ServiceRules.of(SECTION, {"quote_stay", "get_cancellation_fee", "find_guest"})
    # 'full name and the reservation's confirmation details' names no fact it knows: that way is left out
    assert rules.confirm_writes and rules.identity == (("email",),)
    assert ("quote_stay", frozenset({"book"})) in rules.before
    assert ("get_cancellation_fee", frozenset({"cancel"})) in rules.before
    assert not ServiceRules.of("A chat workspace. Be kind.", set()).confirm_writes


async def test_the_farm_instructions_give_each_server_its_rules() -> None:
    servers = ["hotel", "team_chat", "library"]
    async with Connections(farm_targets(REPO, servers)) as farm:
        listed = {s: await farm.tools(s) for s in servers}
        instructions = {s: await farm.instructions(s) for s in servers}
    tools = agent_tools(listed, [(s, t.name) for s, ts in listed.items() for t in ts])
    rules = service_rules(system_prompt(instructions), tools)
    assert set(rules) == set(servers)
    assert rules["hotel"].identity == (("email",),) and rules["hotel"].confirm_writes
    assert {read for read, _ in rules["hotel"].before} == {"quote_stay", "get_cancellation_fee"}
    assert rules["library"].identity == (("card number",), ("email",))  # 'card number, or full name and email'
    assert rules["team_chat"].identity == ()


def test_the_fact_asked_for_is_the_first_missing_of_a_way_and_is_asked_once() -> None:
    agent = HeuristicPolicy().agent(Task.model_construct(id="t"), [])
    assert isinstance(agent, HeuristicAgent)
    payments = ServiceRules(False, (("email", "last four digits"),), ())
    assert agent._unproven(payments, "Remove my Visa ending 8462.") == "email"
    assert agent._unproven(payments, "Remove my Visa ending 8462; I'm ana@example.com.") is None
    library = ServiceRules(False, (("card number",), ("email",)), ())
    assert agent._unproven(library, "My card is LC-200525.") is None  # one way is enough
    assert agent._unproven(library, "Anya here.") == "card number"
    agent.asked.add("card number")
    assert agent._unproven(library, "Anya here.") is None


def _rows(*rows: dict[str, Any]) -> list[Any]:
    return [{"rows": list(rows)}]


def test_a_record_of_someone_else_is_refused_and_ones_own_is_not() -> None:
    agent = HeuristicPolicy().agent(Task.model_construct(id="t"), [])
    assert isinstance(agent, HeuristicAgent)
    said = "Good morning, it's Mateo Nakamura. Could we have until 18 May to pay your invoice INV-1038?"
    me = {"client_id": "cli_me", "contact_name": "Mateo Nakamura", "company_name": "Bluepeak"}
    theirs = {"invoice_id": "inv_1", "number": "INV-1038", "client_id": "cli_other"}
    mine = {"invoice_id": "inv_2", "number": "INV-1040", "client_id": "cli_me"}
    outputs = [*_rows(theirs, mine), *_rows(me)]
    assert agent._someone_elses({"invoice_id": "inv_1", "due_on": "2026-05-18"}, outputs, said) == "INV-1038"
    # whatever the call, the record they named by its code is someone else's
    assert agent._someone_elses({"client_id": "cli_me"}, outputs, said) == "INV-1038"
    own = said.replace("INV-1038", "INV-1040")
    assert agent._someone_elses({"invoice_id": "inv_2", "due_on": "2026-05-18"}, outputs, own) is None
    # a date the call takes that some other row also holds, or a list both name, is no one's record
    other_day = {"invoice_id": "inv_3", "client_id": "cli_other", "due_on": "2026-05-18"}
    assert (
        agent._someone_elses({"invoice_id": "inv_2", "due_on": "2026-05-18"}, [*_rows(other_day), *outputs], own)
        is None
    )
    listed = {"subscription_id": "sbn_9", "list_id": "lst_1", "client_id": "cli_other"}
    assert agent._someone_elses({"list_id": "lst_1"}, [*_rows(listed), *outputs], own) is None
    # without the person's own row found, nothing is judged
    assert agent._someone_elses({"invoice_id": "inv_1"}, _rows(theirs), said) is None
    # a card they give that is not the one on their own record is someone else's
    said_card = "Hello, Liam Lopez here. Please cancel my hold. My card number is LC-200525."
    liam = {"member_id": "mem_me", "full_name": "Liam Lopez", "card_number": "LC-201824"}
    assert agent._someone_elses({"hold_id": "hld_1"}, _rows(liam), said_card) == "LC-200525"
    assert agent._someone_elses({"hold_id": "hld_1"}, _rows(liam), said_card.replace("200525", "201824")) is None
    # and of two rows the request fits alike, the person's own is taken
    assert agent._from_outputs("invoice_id", outputs, said.replace("INV-1038", "my invoice")) == "inv_2"


def test_an_id_is_taken_from_the_record_it_is_the_id_of_before_a_row_that_refers_to_it() -> None:
    agent = HeuristicPolicy().agent(Task.model_construct(id="t"), [])
    assert isinstance(agent, HeuristicAgent)
    booking = {"booking_id": "tbk_1", "departure_id": "dep_old", "status": "cancelled"}
    departure = {"departure_id": "dep_new", "tour_id": "tour_1", "starts_at": "2026-04-29T09:00:00Z"}
    outputs = [*_rows(booking), *_rows(departure)]  # the booking was read last
    said = "Book the Wednesday 29 April departure for 4 of us."
    assert agent._from_outputs("departure_id", outputs, said) == "dep_old"
    assert agent._from_outputs("departure_id", outputs, said, keyed=True) == "dep_new"
    assert agent._from_outputs("departure_id", _rows(booking), said, keyed=True) is None
    # with no lookup of departures left to make, the call takes the one the booking names
    arguments, missing = agent._arguments(
        agent_tool("book_tour", {"departure_id": {"type": "string"}}, required=["departure_id"]), said, _rows(booking)
    )
    assert arguments == {"departure_id": "dep_old"} and missing == []


def agent_tool(name: str, properties: dict[str, Any], required: list[str]) -> AgentTool:
    schema = {"type": "object", "properties": properties, "required": required}
    return AgentTool(name=name, server="s", tool=name, description="", input_schema=schema, read_only=False)
