"""The writer's voice where the seed-7373 annotation found template seams: a reason said as a form ('Why? No
longer relevant.'), a listed question only partly claimed ('price, group size and meeting point'), a read that
shows nothing an earlier call had not (a get after a search that returned every asked field)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO

from envfarm.clients.audit import FILED_REASON, HEAD_NOUNS, SCHEMA_TAIL, Auditor, mentions, repeated_phrase
from envfarm.clients.speech import say_slot
from envfarm.clients.tasks import Claim, GoldCall, Persona, Provenance, Task, Turn
from envfarm.clients.writing import AGAIN, _unasked, because, casual, hear_line, put, said_once, said_reason

REASONS = [
    "No longer relevant",
    "Too many emails",
    "Never signed up",
    "Content not useful",
    "Left it at a restaurant",
    "Took an equivalent algorithms course at a community college",
    "Prerequisite taken concurrently in Spring 2026",
    "Quarter-end calls",
    "Duplicate charge",
    "Moving to another provider",
    "lost",
]


@pytest.mark.parametrize("reason", REASONS)
@pytest.mark.parametrize(
    ("phrasing", "slot"),
    [
        ("I want out of my Weekly Digest subscription. Why? {reason}.", "{reason}"),
        ("I'd like to request a prerequisite override for HIST 210: {reason}.", "{reason}"),
        ("Please cancel my Careers subscription. {reason}", "{reason}"),
        ("We need to call off the standup. Reason: {cancel_reason}.", "{cancel_reason}"),
        ("I have to cancel booking TB-1 - {reason}.", "{reason}"),
        ("Please cancel booking TB-1 ({reason}).", "{reason}"),
    ],
)
def test_a_reason_in_a_form_field_is_said_as_a_clause(reason: str, phrasing: str, slot: str) -> None:
    said = said_reason(phrasing, slot, reason)
    assert said is not None
    text, words = said
    assert " because " in text and words.startswith("because "), text
    assert not any(mark in text for mark in ("Why?", "Reason:", ": ", "(")), text
    assert mentions(text, reason), text  # the value a gold write takes is still in the user's words


@pytest.mark.parametrize("reason", REASONS)
def test_a_reason_after_a_question_is_a_sentence_of_its_own(reason: str) -> None:
    said = said_reason("Can you lock my card right away? {reason}.", "{reason}", reason)
    assert said is not None
    text, _ = said
    after = text.split("? ", 1)[1]
    assert after[:1].isupper() and mentions(text, reason), text


def test_reason_clauses_read_as_a_person_says_them() -> None:
    assert because("No longer relevant") == "because it's no longer relevant"
    assert because("Too many emails") == "because I get too many emails"
    assert because("Left it at a restaurant") == "because I left it at a restaurant"
    assert because("Content not useful") == "because I find the content not useful"
    assert because("Change of plans") == "because of a change of plans"
    assert because("Quarter-end calls") == "because of quarter-end calls"
    assert because("see the note from last week") is None  # a note, no reason: the phrasing does not fit


def test_a_reason_after_for_stays_as_said() -> None:
    assert said_reason("I'd like to book the 10:00 slot for {reason}.", "{reason}", "Annual checkup") is None


def _asking(message: str, claims: list[Claim], calls: list[GoldCall] | None = None) -> Task:
    return Task(
        id="t",
        servers=["tour_booking"],
        tools=[],
        persona=Persona(name="Emma Rossi"),
        opening_message=message,
        turns=[Turn(message=message)],
        gold_calls=calls or [],
        claims=claims,
        provenance=Provenance(sampler="hand", seed=0),
    )


HOURS = Claim(text="states how many hours it lasts: 11.00", values=["11.00"], field="duration_hours")
GROUP = Claim(text="states the largest group size: 30", values=["30"], field="max_group")
PRICE = Claim(text="states the price: 79.00", values=["79.00"], field="price")
POINT = Claim(text="states the meeting point: Gresham hotel steps", values=["Gresham hotel steps"], field="meet")
PICKUP = Claim(text="states the pickup time: Monday 13 April at 11:00", values=["Monday 13 April at 11:00"])


@pytest.mark.parametrize(
    ("message", "claims", "unanswered"),
    [
        ("Could you tell me more about the Cliffs tour: price, group size and meeting point?", [GROUP, HOURS], True),
        ("Could you tell me more about the Cliffs tour: price, group size and meeting point?", [GROUP, PRICE], True),
        (
            "Could you tell me more about the Cliffs tour: price, group size and meeting point?",
            [GROUP, PRICE, POINT],
            False,
        ),
        ("When do I pick up and return the car?", [PICKUP], True),
        ("When do I pick up the car?", [PICKUP], False),
        ("I'd also like to know the price and the unit it's sold by, please.", [PRICE], True),
        ("How much have I spent through my wallet, after refunds?", [PRICE], False),
        ("While you're at it, what's the price of the Cliffs tour?", [PRICE], False),
    ],
)
def test_each_thing_a_question_lists_needs_a_claim(message: str, claims: list[Claim], unanswered: bool) -> None:
    found = Auditor._unanswered(_asking(message, claims))
    assert bool(found) is unanswered, [f.detail for f in found]


def test_a_yes_no_claim_answers_a_yes_no_question_in_other_words() -> None:
    """'Do you still take my plan?' is answered by 'whether you accept it' (a yes/no claim): not unanswered, not
    off-request; the same claim beside a question that is no yes/no ('What are the copays?') is off-request."""
    from envfarm.clients.audit import off_request

    accepted = Claim(text="states whether you accept it: yes", values=["true"], field="accepted", kind="yes_no")
    task = _asking("Do you still take the Lakeshore Student Plan?", [accepted])
    assert Auditor._unanswered(task) == [] and off_request(task) == []
    assert off_request(_asking("What are the copays under the Lakeshore Student Plan?", [accepted])) == [accepted]


def test_the_writer_does_not_ask_again_for_what_the_question_asks_in_other_words() -> None:
    assert _unasked([PRICE], "Does it have Sourdough loaf in stock, and what does it cost?") == []
    status = Claim(text="states the status: done", values=["done"], field="status")
    assert _unasked([status], 'Where does "Migrate user table" stand?') == []
    ready = Claim(text="states whether it's ready: waiting", values=["waiting"], field="status")
    assert _unasked([ready], "Also, is my hold ready to pick up? Card LC-201423.") == []


def test_depth_fails_for_a_get_that_shows_nothing_the_search_had_not() -> None:
    tour = {"tour_id": "tr_1", "title": "Cliffs of Moher Day Trip", "price": 79.0, "max_group": 30}
    search = GoldCall(
        server="tour_booking", tool="search_tours", arguments={"city": "Dublin"}, output={"tours": [tour]}
    )
    get = GoldCall(server="tour_booking", tool="get_tour", arguments={"tour_id": "tr_1"}, output=tour, uses=[0])
    claims = [Claim(text="states the price: 79.00", values=["79.0"], field="price")]
    padded = _asking("What does the Cliffs of Moher Day Trip cost?", claims, [search, get])
    assert [f.check for f in Auditor.depth(padded)] == ["depth"]
    fuller = dict(tour, meeting_point="Gresham hotel steps")
    claims.append(
        Claim(text="states the meeting point: Gresham", values=["Gresham hotel steps"], field="meeting_point")
    )
    needed = _asking(
        "Where do we meet for the Cliffs of Moher Day Trip?",
        claims,
        [search, get.model_copy(update={"output": fuller})],
    )
    assert Auditor.depth(needed) == []


def test_a_reason_done_to_a_thing_is_said_with_of_and_keeps_its_words() -> None:
    """'because hours billed twice' and 'because the discount agreed after delivery' (seed 11) read as broken
    clauses: something done to a noun is 'because of ...'; what happened of itself stays a clause."""
    assert because("Hours billed twice") == "because of hours billed twice"
    assert because("Discount agreed after delivery") == "because of the discount agreed after delivery"
    assert because("Driver cancelled") == "because the driver cancelled"  # a person did it (seed 2718)
    # said by the traveller: "my booking ... because the traveller cancelled" speaks of someone else (seed 9151)
    assert because("Traveller cancelled") is None
    assert because("Plans changed") == "because plans changed"
    assert because("Item arrived damaged") == "because the item arrived damaged"


@pytest.mark.parametrize(
    "reason", ["Cancelled by the operator", "Trip postponed", "Meeting cancelled", "Order shipped"]
)
def test_a_reason_no_customer_gives_or_that_garbles_with_its_words_whole_is_not_said(reason: str) -> None:
    """Seed 4501: 'because it was cancelled by the operator' in the traveller's voice (the business's reason, for a
    departure still scheduled) and 'because of the trip postponed' (a noun and a bare participle). With the value's
    words kept whole neither reads as a person; the writer tries another phrasing or drops the task."""
    assert because(reason) is None
    assert said_reason("Please cancel booking TB-1 ({reason}).", "{reason}", reason) is None


RENTAL = [
    ("pickup_at", "the pickup time", "2026-05-07T10:00:00Z"),
    ("return_due_at", "the return time", "2026-05-12T10:00:00Z"),
    ("daily_rate", "the daily rate", 74.0),
]
PLAN = [
    ("accepted", "whether you accept it", True),
    ("generic_copay", "the generic copay", 5.0),
    ("brand_copay", "the brand-name copay", 25.0),
]
QUOTE = [
    ("copay", "what I'd pay", 45.0),
    ("insurance_pays", "what insurance pays", 12.0),
    ("coverage_note", "any note", "x"),
]
ORDER = [
    ("service_type", "the kind of work", "engine"),
    ("status", "whether it's finished", "done"),
    ("cost", "the cost", 9.0),
]
DRUG = [("requires_prescription", "whether it needs a prescription", False), ("unit_price", "the price per unit", 4.0)]
INVOICE = [("number", "the invoice number", "INV-1"), ("due_on", "the due date", "2026-05-01")]
SPENDING = [
    ("net_spent", "the net amount spent", 204.22),
    ("total_refunded", "the total of my refunds", 0.0),
    ("on_hold", "the amount still on hold", 12.09),
]
TOUR = [("meeting_point", "the meeting point", "Piazza del Duomo"), ("duration_hours", "how many hours it lasts", 3.0)]
CLASSES = [("classes_booked", "how many classes I have booked", 2), ("weekly_allowance", "the allowance", 3)]


@pytest.mark.parametrize(
    ("question", "options", "asked"),
    [
        ("When is my rental due back?", RENTAL, ["return_due_at"]),
        ("Could you check booking? When do I pick up and return the car?", RENTAL, ["pickup_at", "return_due_at"]),
        ("How many classes have I booked, and how many does my plan allow?", CLASSES, [f for f, *_ in CLASSES]),
        ("Please cancel my booking.", RENTAL, []),  # no question: asks nothing
        # a plural asks for every value it covers; a singular only the one it names
        ("What are the copays under my plan?", PLAN, ["generic_copay", "brand_copay"]),
        ("Do you still take my plan? What would my copay be for generics?", PLAN, ["accepted", "generic_copay"]),
        # 'how much would I pay' is the copay, though no word of it says 'copay'; each 'how much' its own amount
        (
            "Before you fill it, how much would I pay, and how much would insurance pay?",
            QUOTE,
            ["copay", "insurance_pays"],
        ),
        # a yes/no question is answered by the yes/no field, not by what the thing it names happens to share
        ("Is there still an open workshop order on the truck?", ORDER, ["status"]),
        # 'is anything missing?' is not 'whether it is ready' (its answer would read the other way round)
        ("Is anything missing from the report before I send it in?", [("ready", "whether it's ready", False)], []),
        ("How much is it, and can I buy it without a prescription?", DRUG, ["unit_price", "requires_prescription"]),
        # 'total' says an amount, not of what: 'my total spending' is the net spent, not the total of refunds
        ("Could you tell me my total spending and how much is still on hold?", SPENDING, ["net_spent", "on_hold"]),
        ("How much have I paid in refunds?", SPENDING, ["total_refunded"]),
        # 'where' asks a place: the meeting point, though no word of it says 'start'
        ("Where does  start, and how long does it take?", TOUR, ["meeting_point", "duration_hours"]),
        # a request put as a question asks for no value ('dated' is not 'the due date')
        ("Could you start an invoice for Redwood dated 31 January?", INVOICE, []),
    ],
)
def test_a_question_asks_for_the_fields_it_means(question: str, options: list, asked: list[str]) -> None:
    from envfarm.clients.writing import asked_fields

    assert asked_fields(question, options) == asked


def test_a_question_about_what_is_left_is_answered_by_the_difference() -> None:
    """'How many seats are left?' asked of capacity and seats taken: the claim is the difference (the intent's
    `hear` names `capacity - enrolled_count`), never the capacity ('the number of seats')."""
    from envfarm.clients.audit import has_field, value_of
    from envfarm.clients.writing import asked_fields

    row = {"capacity": 30, "enrolled_count": 27, "fee": 12.5, "paid": 2.25}
    assert value_of(row, "capacity - enrolled_count") == 3
    assert value_of(row, "fee - paid") == 10.25
    assert value_of(row, "capacity - waitlist") is None and not has_field(row, "capacity - waitlist")
    options = [
        ("capacity - enrolled_count", "how many seats are left", 3),
        ("capacity", "the number of seats", 30),
        ("enrolled_count", "how many are enrolled", 27),
    ]
    assert asked_fields("How many seats are left in ?", options) == ["capacity - enrolled_count"]
    assert asked_fields("How many seats does it have?", options) == ["capacity"]
    refills = [
        ("refills_authorized - fills_used", "how many refills I have left", 2),
        ("refills_authorized", "how many refills I'm allowed", 5),
        ("fills_used", "how many fills I've used", 3),
    ]
    question = "Could you check how many refills I have left on my prescriptions?"
    assert asked_fields(question, refills) == ["refills_authorized - fills_used"]


def test_the_speakers_own_email_leaves_no_dangling_preposition() -> None:
    """'Can you open a cart at FreshCart Dublin on my account under?' (seed 12): the email went, 'under' stayed."""
    from envfarm.clients.writing import self_phrase

    email = "keiko.nakamura@example.com"
    assert self_phrase(f"my account under {email}", "Keiko Nakamura", email) == "my account"
    assert self_phrase(f"my wallet under {email}", "Keiko Nakamura", email) == "my wallet"


def test_the_scripted_user_gives_a_held_back_fact_in_its_own_words() -> None:
    """'My owner email is ...', 'My kind is pre_trip.': a fact is given as its description says it; a date stays
    as the record has it, under the description's label."""
    from envfarm.clients.users import _said

    assert _said("owner_email", "a@example.com", "my email is a@example.com") == "My email is a@example.com."
    assert _said("kind", "pre_trip", "the kind is pre-trip") == "The kind is pre-trip."
    assert _said("date_of_birth", "1988-03-12", "my date of birth is 12 March 1988") == (
        "My date of birth is 1988-03-12."
    )
    assert _said("card_number", "LC-1", None) == "My card number is LC-1."


def test_no_intent_has_a_person_ask_for_a_column_by_its_name() -> None:
    """'the credits earned', 'the amount refunded' (seed 2718): a `hear` phrase that is a column's name in a schema's
    shape (a participle, a preposition or a unit last) reads as a database, even written into an intent. Every
    built-in spec's `hear` is checked with the audit's own rule."""
    found = []
    for path in sorted((REPO / "servers").glob("*/spec.json")):
        spec = json.loads(path.read_text())
        columns = {c for e in spec.get("entities", {}).values() for c in e.get("columns", {})}
        phrases = {c.replace("_", " ") for c in columns if "_" in c and c.split("_")[-1] not in HEAD_NOUNS}
        for tool in spec.get("tools", []):
            for field, words in ((tool.get("intent") or {}).get("hear") or {}).items():
                found += [
                    f"{path.parent.name}.{tool['name']}.{field}: {words!r}"
                    for phrase in phrases
                    if SCHEMA_TAIL.search(phrase)
                    and re.search(rf"\b(?:the|my|your|our) {re.escape(phrase)}\b(?! \w)", words.lower())
                ]
    assert found == []


def test_a_slot_whose_value_ends_in_the_phrasing_s_next_word_says_it_once() -> None:
    assert put("the copays under the {name} plan?", "{name}", "Lakeshore Student Plan") == (
        "the copays under the Lakeshore Student Plan?"
    )
    assert put("the {name} plan", "{name}", "Gold") == "the Gold plan"
    assert put("the {name} planet", "{name}", "Red Plan") == "the Red Plan planet"


@pytest.mark.parametrize("reason", ["Returned hardware", "Discount agreed after delivery", "Hours billed twice"])
@pytest.mark.parametrize(
    "phrasing",
    [
        'Can you credit $50.00 on INV-1001? Please record the reason as "{reason}".',
        'We were promised a $50.00 credit on INV-1001 for "{reason}". Please issue it.',
        'I have to cancel HB1; please note "{reason}" as the reason.',
    ],
)
def test_a_reason_filed_as_a_quoted_value_is_said_as_a_reason(reason: str, phrasing: str) -> None:
    said = said_reason(phrasing, "{reason}", reason)
    assert said is not None
    text, _ = said
    assert '"' not in text and not FILED_REASON.search(text), text
    assert mentions(text, reason), text  # the words the gold write takes stay whole


def test_casual_lowers_a_catalog_name_only_mid_sentence_and_only_when_it_is_no_name() -> None:
    common = frozenset({"child", "cast"})
    assert casual("Child seat", "Could I have the ", common) == "child seat"
    assert casual("Cast iron pan set", "the offer on the ", common) == "cast iron pan set"
    assert casual("Child seat", "", common) == "Child seat"  # it starts the sentence
    assert casual("Child seat", 'add "', common) == "Child seat"  # typed inside quotes
    assert casual("Lisbon hub", "drop it at the ", common) == "Lisbon hub"  # a name
    assert casual("Vltava Dinner Cruise", "book the ", common) == "Vltava Dinner Cruise"  # a title


def test_a_row_named_twice_in_one_message_is_named_the_short_way_the_second_time() -> None:
    long = "#general in the Northwind workspace"
    refs = {("team_chat", "channels", "ch_1"): long, (AGAIN, long, None): "the #general channel"}
    message = f"Join {long} for me. Also, post “Hi all” in {long}."
    assert said_once(message, refs) == f"Join {long} for me. Also, post “Hi all” in the #general channel."


def test_asking_to_hear_twice_in_one_turn_never_repeats_a_sign_off() -> None:
    import random

    for seed in range(20):
        rng = random.Random(seed)
        first = hear_line(rng, "chatty", "the total", ["Please book it."])
        second = hear_line(rng, "chatty", "the fee", ["Please book it.", first])
        assert repeated_phrase(f"{first} {second}") is None, (first, second)


def test_a_lookup_key_held_back_says_what_it_belongs_to() -> None:
    """'my name is Marketing' (a cost center's name, seed 9400) and 'the city is Austin' (a branch's city, seed
    6173) name no thing: held back, they say whose name it is and what is where."""
    from envfarm.clients.graph import ToolSpec
    from envfarm.clients.speech import ask_for
    from envfarm.clients.writing import lookup_fact

    centers = ToolSpec(server="expenses", name="list_cost_centers", read_only=True)
    branches = ToolSpec(server="car_rental", name="list_branches", read_only=True)
    named = lookup_fact(centers, "name", "Marketing", "name", "my")
    assert named.description == "my cost center name is Marketing"
    placed = lookup_fact(branches, "city", "Austin", "city")
    assert placed.description == "the branch is in Austin"
    assert ask_for([placed]) == "Could you tell me where the branch is, please?"
    assert lookup_fact(branches, "email", "a@example.com", "email", "my").description == "my email is a@example.com"


def test_asking_to_hear_after_a_please_never_says_please_again() -> None:
    import random

    for seed in range(20):
        line = hear_line(random.Random(seed), "polite", "the total", ["I'd like 4 seats on the Porto walk, please."])
        assert "please" not in line.lower(), line


def test_an_identifying_detail_the_policy_calls_details_is_held_back_by_its_own_name() -> None:
    """Hotel policy: 'the reservation's confirmation details'; held back, 'my confirmation code is HB1' (seed
    9401 read 'my reservation's confirmation details are HB96691')."""
    from types import SimpleNamespace

    from envfarm.clients.grounding import IdentityValue
    from envfarm.clients.synthesize import identity_hidden

    task = _asking("Hi, this is Maria Lopez. Please cancel my stay.", [])
    code = IdentityValue(
        server="hotel",
        table="reservations",
        column="confirmation_code",
        phrase="the reservation's confirmation details",
        value="HB1",
        own=False,
    )
    card = code.model_copy(update={"column": "last4", "phrase": "the last four digits of a card on file", "value": "1"})
    found = identity_hidden(task, SimpleNamespace(identification=[code, card]))  # type: ignore[arg-type]
    assert [f.description for f in found] == [
        "my confirmation code is HB1",
        "the last four digits of my card on file are 1",
    ]


def test_a_possessive_of_a_name_ending_in_s_takes_only_an_apostrophe() -> None:
    text = "Subscribe me to {merchant}'s Premium streaming."
    assert put(text, "{merchant}", "Silverleaf Books") == "Subscribe me to Silverleaf Books' Premium streaming."
    assert put(text, "{merchant}", "Bluepeak Fitness") == "Subscribe me to Bluepeak Fitness's Premium streaming."
    assert because("Service outage compensation") == "because it's service outage compensation"
    assert because("Injury recovery") == "because of an injury recovery"  # never 'a injury'
    assert because("Change of plans") == "because of a change of plans"


def test_a_place_two_rows_share_is_named_once_and_a_bare_name_keeps_its_capital() -> None:
    message = "Could you move my stay at the Central Oslo from 4 May to room 301 at the Central Oslo?"
    assert said_once(message, {}) == "Could you move my stay at the Central Oslo from 4 May to room 301?"
    store = "Could you put 3 peas at FreshCart Lisbon in the cart I started at FreshCart Lisbon on 10 April?"
    assert said_once(store, {}) == "Could you put 3 peas at FreshCart Lisbon in the cart I started on 10 April?"
    kept = "Join #general in the Northwind workspace and #random in the Northwind workspace."
    assert said_once(kept, {}) == kept  # 'in the Northwind' goes on ('workspace'): not a place phrase of its own
    assert casual("Onboarding flow", 'move the "Migrate" task in ', frozenset({"onboarding"})) == "Onboarding flow"


def test_a_code_said_again_after_my_thing_is_said_as_my_thing() -> None:
    message = "My card is LC-201213. Also, I've got a new phone number. Could you change it on my card LC-201213?"
    assert said_once(message, {}) == (
        "My card is LC-201213. Also, I've got a new phone number. Could you change it on my card?"
    )
    twice = "Can I check out the copy on my card LC-201853? Also, could you change it on my card LC-201853?"
    assert (
        said_once(twice, {}) == "Can I check out the copy on my card LC-201853? Also, could you change it on my card?"
    )
    # a code said once, or again without 'my <thing>' before it, stays as said
    kept = "Please move the due date of INV-1037 to 3 May; INV-1037 is the March one."
    assert said_once(kept, {}) == kept


def test_a_question_no_field_answers_is_found_so_no_task_asks_it() -> None:
    """Seed 9907: "where does the Wawel Castle and Old Town start, and how long does it take?" was claimed on the
    hours alone, so any answer to 'where' passed. A clause asking for a value that no field answers is reported
    (the writer then drops the phrasing); a yes/no that rightly claims nothing is not."""
    from envfarm.clients.writing import unanswered_questions

    hours = TOUR[1:]
    assert unanswered_questions("Where does  start, and how long does it take?", TOUR) == []
    assert unanswered_questions("Where does  start, and how long does it take?", hours) == ["Where does  start"]
    assert unanswered_questions("Where does my claim stand?", ORDER) == []  # its status
    assert unanswered_questions("When does it start?", TOUR) == ["When does it start?"]  # no date among them
    assert unanswered_questions("Is anything missing from the report?", [("ready", "whether it's ready", 0)]) == []
    assert unanswered_questions("Please cancel my booking.", hours) == []


def _claims_writer(status: str) -> tuple[object, object]:
    """An offline writer over one read (`list_claims`) asked in phrasings with no slot, and its grounding
    with the claim's status `status`."""
    from envfarm.clients.graph import OutField, ToolSpec, build_graph
    from envfarm.clients.grounding import Grounded, PersonaRecord
    from envfarm.clients.sampling import Catalog, Chain, Step
    from envfarm.clients.writing import OfflineWriter
    from envfarm.servers.runtime.intents import Intent, ServerIntents

    spec = ToolSpec(
        server="pharmacy",
        name="list_claims",
        description="List the insurance claims of a fill.",
        read_only=True,
        outputs=[OutField(name="claim_id", entity="claims"), OutField(name="status", entity="claims")],
    )
    intent = Intent(
        asks="customer",
        say=["Was the insurance claim for my last fill approved?", "Has my last insurance claim been approved?"],
        hear={"status": "whether the claim was approved"},
    )
    catalog = Catalog([spec], build_graph([spec]), {"pharmacy": ServerIntents(tools={"list_claims": intent})})
    grounded = Grounded(
        chain=Chain(steps=[Step(server="pharmacy", tool="list_claims", role="goal")], sampler="topology"),
        persona=PersonaRecord(name="Tomas Chen", email="tomas@example.com"),
        calls=[
            GoldCall(
                server="pharmacy",
                tool="list_claims",
                arguments={},
                output={"claims": [{"claim_id": "clm_rc6ps3", "status": status}], "count": 1},
            )
        ],
        sources=[{}],
        targets=[None],
        expected={},
    )
    return OfflineWriter(catalog), grounded


def test_a_question_whose_answer_the_user_says_is_not_asked() -> None:
    """Seed 1201, task 3: "Was the insurance claim for the prescription 610026 you filled on 5 March approved?"
    asks the claim's status, but its answer ('approved') is a word of the question, so the claim on it echoed
    what the user says and was removed: the question stayed with no claim to check it, and any answer passed.
    The writer drops such a task; a status the question does not say ('rejected') is claimed."""
    import random

    from envfarm.clients.grounding import Drop

    writer, grounded = _claims_writer("rejected")
    request = writer.write(random.Random(0), grounded, "terse")
    assert [c.field for c in request.claims] == ["status"], request
    writer, grounded = _claims_writer("approved")
    with pytest.raises(Drop) as dropped:
        writer.write(random.Random(0), grounded, "terse")
    assert dropped.value.reason == "a question no claim checks"


def test_a_request_to_hear_back_what_the_user_said_is_left_out() -> None:
    """Seed 1201: "Can you put me on the run from Seville to Faro ...? Oh, and can you tell me the planned
    arrival?" kept the question after its claim echoed what the user said and was removed. A sentence asking to
    hear back a change is left out where no claim of it stays; the change itself is still asked for."""
    import random

    from envfarm.clients.graph import OutField, ToolSpec, build_graph
    from envfarm.clients.grounding import Grounded, PersonaRecord
    from envfarm.clients.sampling import Catalog, Chain, Step
    from envfarm.clients.writing import OfflineWriter
    from envfarm.servers.runtime.intents import Intent, ServerIntents

    def written(months: int) -> list[str]:
        spec = ToolSpec(
            server="gym",
            name="renew_plan",
            read_only=False,
            outputs=[OutField(name="plan_id", entity="plans"), OutField(name="months", type="integer")],
        )
        intent = Intent(
            asks="customer",
            say=["Please renew my plan for 12 months.", "Renew my plan for 12 months, please."],
            hear={"months": "how many months it runs"},
        )
        catalog = Catalog([spec], build_graph([spec]), {"gym": ServerIntents(tools={"renew_plan": intent})})
        grounded = Grounded(
            chain=Chain(steps=[Step(server="gym", tool="renew_plan", role="goal")], sampler="topology"),
            persona=PersonaRecord(name="Tomas Chen", email="tomas@example.com"),
            calls=[
                GoldCall(
                    server="gym",
                    tool="renew_plan",
                    arguments={},
                    output={"plan_id": "pln_8d2k4x", "months": months},
                    is_write=True,
                )
            ],
            sources=[{}],
            targets=[None],
            expected={},
        )
        request = OfflineWriter(catalog).write(random.Random(0), grounded, "terse")
        return [*request.turns, *(c.text for c in request.claims)]

    kept = written(11)
    assert "months it runs" in kept[0] and kept[1:] == ["confirms how many months it runs: 11"], kept
    assert written(12) == ["It's Tomas Chen. Please renew my plan for 12 months."]


def test_a_value_that_ends_a_sentence_takes_the_phrasings_stop_once() -> None:
    """'with the debit memo with reason code Priority account: call before any change..' (an imported seed)."""
    text = "Please file it, with reason code {code}."
    assert put(text, "{code}", "Call before any change.") == "Please file it, with reason code Call before any change."
    assert put(text, "{code}", "Is it late?") == "Please file it, with reason code Is it late?"
    assert put(text, "{code}", "VIP") == "Please file it, with reason code VIP."
    question = "Could you file it? It is reason code {code}?"
    assert put(question, "{code}", "Call first.") == "Could you file it? It is reason code Call first?"
    quoted = "I need to close the note that says “{text}”."
    assert put(quoted, "{text}", "Call first.") == "I need to close the note that says “Call first.”"


@pytest.mark.parametrize(
    ("value", "coded", "said"),
    [
        ("pass_fail", True, "pass fail"),  # an enum's code, which the agent maps back through the schema
        ("tomas_ahmed", False, "tomas_ahmed"),  # a username a create stores as given: said as written
        ("2026-05-04T10:00:00Z", False, "Monday 4 May at 10:00"),
    ],
)
def test_a_slot_unfolds_only_a_code(value: str, coded: bool, said: str) -> None:
    assert say_slot(value, None, coded) == said
