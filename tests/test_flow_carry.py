"""Cross-server turns joined by data, not by the person alone (`envfarm.clients.flow`): a later turn's input filled
from what an earlier turn found on another server, matched by meaning (a range, a city), said by what it is ("for the
same dates as that rental"), and accepted by the audit only where the turn refers to it so."""

from __future__ import annotations

import random

import pytest
from conftest import REPO

from envfarm.clients.audit import carried, mentions
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.flow import (
    Carry,
    aside,
    carries,
    flow_pairs,
    grain,
    inside,
    kind_of,
    matches,
    offers,
    refer_in,
    referring,
    refers,
    short_booking,
)
from envfarm.clients.graph import OutField, Param, ToolSpec, build_graph, load_intents, load_specs
from envfarm.clients.sampling import Catalog, Step, TopologySampler
from envfarm.clients.synthesize import SynthesisOptions, flowing_values, flows_between_turns, synthesize
from envfarm.clients.tasks import GoldCall, Persona, Provenance, Task, Turn
from envfarm.clients.writing import _named_within
from envfarm.servers.runtime.intents import slots

RENTAL = ToolSpec(
    server="car_rental",
    name="find_rental",
    read_only=True,
    outputs=[
        OutField(name="pickup_at", entity="Rentals"),
        OutField(name="return_due_at", entity="Rentals"),
        OutField(name="returned_at", entity="Rentals"),
        OutField(name="total", type="integer", entity="FindRentalResult"),
    ],
)
AGENDA = ToolSpec(
    server="calendar",
    name="get_agenda",
    read_only=True,
    params=[Param(name="starts_after", required=True), Param(name="starts_before", required=True)],
)
HOTELS = ToolSpec(
    server="hotel",
    name="search_hotels",
    read_only=True,
    outputs=[OutField(name="city", entity="Hotels"), OutField(name="arrival_date", entity="Reservations")],
)


def test_names_say_what_a_value_means_and_its_grain() -> None:
    assert (kind_of("pickup_at", "string"), grain("pickup_at")) == ("start", "datetime")
    assert (kind_of("return_due_at", "string"), grain("return_due_at")) == ("end", "datetime")
    assert (kind_of("starts_before", "string"), kind_of("starts_after", "string")) == ("end", "start")
    assert (kind_of("departure_date", "string"), grain("departure_date")) == ("end", "date")
    assert kind_of("city", "string") == "city"
    # what happened (a return), what is billed, and a bare date are not carried
    assert kind_of("returned_at", "string") is None
    assert kind_of("billing_city", "string") is None
    assert kind_of("total", "number") is None
    assert kind_of("spent_on", "string") is None


def test_a_rental_s_range_fills_an_agenda_window_from_one_row() -> None:
    [(params, group)] = matches(RENTAL, AGENDA)
    assert params == ["starts_after", "starts_before"]
    assert [(c.param, c.fields, c.kind, c.entity) for c in group] == [
        ("starts_after", ["pickup_at"], "start", "rental"),
        ("starts_before", ["return_due_at"], "end", "rental"),
    ]


def test_no_carry_across_grains_of_one_end_alone_or_of_a_city_into_a_write() -> None:
    dated = ToolSpec(
        server="hotel",
        name="quote_stay",
        read_only=True,
        params=[Param(name="arrival_date", required=True), Param(name="departure_date", required=True)],
    )
    assert matches(RENTAL, dated) == []  # date-times never become dates: the hour would be made up
    one_end = ToolSpec(server="fitness_club", name="book", read_only=False, params=[Param(name="starts_at")])
    assert matches(RENTAL, one_end) == []  # a second booking at the first one's hour is a clash
    listing = ToolSpec(server="marketplace", name="create_listing", read_only=False, params=[Param(name="city")])
    branches = ToolSpec(server="car_rental", name="list_branches", read_only=True, params=[Param(name="city")])
    assert matches(HOTELS, listing) == []
    assert [c.fields for _, group in matches(HOTELS, branches) for c in group] == [["city"]]


def test_a_carry_comes_from_an_earlier_turn_on_another_server_only() -> None:
    specs = {(s.server, s.name): s for s in (RENTAL, AGENDA)}

    def spec_of(server: str, tool: str) -> ToolSpec:
        return specs[server, tool]

    steps = [Step(server="car_rental", tool="find_rental", turn=0), Step(server="calendar", tool="get_agenda", turn=1)]
    assert [c.step for c in carries(spec_of, steps, AGENDA, 1)] == [0, 0]
    assert carries(spec_of, steps, AGENDA, 0) == []
    same_turn = [Step(server="car_rental", tool="find_rental", turn=1)]
    assert carries(spec_of, same_turn, AGENDA, 1) == []


def test_the_user_says_a_carried_range_as_what_it_is() -> None:
    phrasing = "Do you have a car at {branch_id} from {pickup_at:datetime} to {return_due_at:datetime}?"
    texts: dict[str, list[str]] = {}
    for slot in slots(phrasing):
        texts.setdefault(slot.name, []).append(slot.text)
    range_ = [
        Carry(param="pickup_at", step=0, fields=["starts_at"], kind="start", entity="event"),
        Carry(param="return_due_at", step=0, fields=["ends_at"], kind="end", entity="event"),
    ]
    said = refer_in(phrasing, texts, range_)
    assert said == "Do you have a car at {branch_id} for the same dates and times as that event?"
    assert refers(said)
    # a range whose slots have another slot between them is not one span: the phrasing is not used
    apart = "Add {title} on {starts_at:day}, in {room_id}, until {ends_at:time}."
    texts = {s.name: [s.text] for s in slots(apart)}
    starts = [c.model_copy(update={"param": p}) for c, p in zip(range_, ["starts_at", "ends_at"], strict=True)]
    assert refer_in(apart, texts, starts) is None
    assert referring(["city"], "hotel", "") == "the same city as that hotel"


def test_a_car_is_not_booked_for_the_half_hour_of_a_meeting() -> None:
    range_ = [
        Carry(param="pickup_at", step=0, fields=["starts_at"], kind="start"),
        Carry(param="return_due_at", step=0, fields=["ends_at"], kind="end"),
    ]
    short = {"pickup_at": "2026-04-28T10:00:00Z", "return_due_at": "2026-04-28T10:30:00Z"}
    long = {"pickup_at": "2026-04-28T10:00:00Z", "return_due_at": "2026-04-30T10:00:00Z"}
    assert short_booking(range_, short) and not short_booking(range_, long)
    window = [c.model_copy(update={"param": p}) for c, p in zip(range_, ["starts_after", "starts_before"], strict=True)]
    assert not short_booking(window, {"starts_after": short["pickup_at"], "starts_before": short["return_due_at"]})


def _carrying(message: str) -> Task:
    """Turn 1 finds a rental; turn 2 puts an event on the calendar over its dates, with `message`."""
    rental = {
        "rentals": [
            {"rental_id": "rnt_1", "pickup_at": "2026-05-01T09:00:00Z", "return_due_at": "2026-05-03T09:00:00Z"}
        ]
    }
    return Task(
        id="t",
        servers=["calendar", "car_rental"],
        tools=[],
        persona=Persona(name="Maria Lopez", email="maria@example.com"),
        opening_message="When is my rental RA1 due back?",
        turns=[Turn(message="When is my rental RA1 due back?", gold_calls=[0]), Turn(message=message, gold_calls=[1])],
        gold_calls=[
            GoldCall(server="car_rental", tool="find_rental", arguments={"confirmation_code": "RA1"}, output=rental),
            GoldCall(
                server="calendar",
                tool="create_event",
                arguments={
                    "title": "Road trip",
                    "starts_at": "2026-05-01T09:00:00Z",
                    "ends_at": "2026-05-03T09:00:00Z",
                },
                turn=1,
                is_write=True,
                uses=[0],
            ),
        ],
        provenance=Provenance(sampler="topology", seed=0),
    )


def test_the_audit_takes_an_unsaid_value_as_carried_only_where_the_turn_refers_to_it() -> None:
    referred = _carrying("Put Road trip on my calendar for the same dates and times as that rental.")
    assert carried(referred, 1, "2026-05-01T09:00:00Z")
    assert not carried(referred, 1, "2026-06-01T09:00:00Z")  # nothing earlier returned it
    silent = _carrying("Put Road trip on my calendar.")
    assert not carried(silent, 1, "2026-05-01T09:00:00Z")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    import asyncio

    servers = sorted(p.parent.name for p in (REPO / "servers").glob("*/server.json"))

    async def load() -> Catalog:
        async with Connections(farm_targets(REPO, servers)) as farm:
            specs = await load_specs(farm, servers)
            intents = {s: found for s in servers if (found := await load_intents(farm, s)) is not None}
        return Catalog(specs, build_graph(specs), intents)

    return asyncio.run(load())


def test_a_server_s_people_are_the_rows_its_people_search_finds(catalog: Catalog) -> None:
    """The keys naming a person are the own ids of what a search by email finds, never a key such a row holds
    (a member's `plan_id`); with them, the farm's pairs keep their rental, stay and event carries but no membership
    freeze moves a hotel stay."""
    assert catalog.people_keys("fitness_club") == {"member_id"} and catalog.people_keys("hotel") == {"guest_id"}
    servers = sorted(catalog.by_server)
    everyone = [(a, b) for i, a in enumerate(servers) for b in servers[i + 1 :]]
    people = {s: catalog.people_keys(s) for s in servers}
    assert ("fitness_club", "hotel") in flow_pairs(catalog.by_server, everyone)
    carrying = flow_pairs(catalog.by_server, everyone, people)
    assert ("fitness_club", "hotel") not in carrying and ("car_rental", "calendar") in carrying


@pytest.mark.slow
def test_plans_for_pairs_that_can_carry_mostly_carry_over_many_seeds(catalog: Catalog) -> None:
    """Over 120 seeds of the built-in farm's pairs that can carry a value: most plans carry one, and every
    carried input is bound to an earlier turn's step on the other server, a range's ends to one step."""
    servers = sorted(catalog.by_server)
    pairs = flow_pairs(catalog.by_server, [(a, b) for i, a in enumerate(servers) for b in servers[i + 1 :]])
    assert ("car_rental", "calendar") in pairs and ("hotel", "car_rental") in pairs
    sampler = TopologySampler(catalog)
    planned = carrying = 0
    for seed in range(120):
        rng = random.Random(f"flow:{seed}")
        first, second = rng.choice(pairs)
        try:
            chain = sampler.sample(rng, [first, second])
        except Exception:  # noqa: BLE001 - a pair with no plan within the caps is not what is measured
            continue
        planned += 1
        bound = [
            (step, name, bind)
            for step in chain.steps
            if step.turn == 1
            for name, bind in step.binds.items()
            if chain.steps[bind.step].turn == 0 and not bind.own
        ]
        carried_here = False
        for step, name, bind in bound:
            source = chain.steps[bind.step]
            assert source.server == first and step.server == second
            kind = kind_of(name, catalog.spec(step.server, step.tool).param(name).type)
            if kind in ("start", "end"):
                other = [n for n, b in step.binds.items() if n != name and kind_of(n, "string") in ("start", "end")]
                assert other and all(step.binds[n].step == bind.step for n in other), (step.tool, step.binds)
            carried_here |= kind is not None
        carrying += carried_here
    assert planned >= 60
    assert carrying / planned >= 0.4, f"{carrying}/{planned} plans carry a value"


@pytest.mark.slow
async def test_written_tasks_that_carry_say_so_and_pass_the_audit() -> None:
    """Tasks written on servers that can carry (a hotel's or a tour's city to a branch or hotel search, a rental's
    dates to a calendar), at two seeds: some cross-server tasks carry more than the person, a turn that refers to a
    carried value does not restate it, and the same seed gives the same bytes."""
    servers = ["calendar", "car_rental", "hotel", "tour_booking"]
    crossing = []
    async with Connections(farm_targets(REPO, servers)) as farm:
        for seed in (3, 11):
            synthesis = await synthesize(SynthesisOptions(n=8, seed=seed, servers=servers), farm)
            crossing += [t for t in synthesis.tasks if len(t.servers) > 1]
        again = await synthesize(SynthesisOptions(n=8, seed=11, servers=servers), farm)
    assert [t.model_dump_json() for t in again.tasks] == [t.model_dump_json() for t in synthesis.tasks]
    assert crossing, "no cross-server task"
    flowing = [t for t in crossing if flows_between_turns(t, beyond_identity=True)]
    # 2 of 6 here (a farm of four servers, 16 tasks); the built-in farm's share is measured by `envfarm tasks`
    assert flowing, f"none of {len(crossing)} cross-server tasks carries more than the person"
    for task in crossing:
        if not any(refers(turn.message) for turn in task.turns[1:]):
            continue
        values = [v for v in flowing_values(task) if v not in (task.persona.name, task.persona.email)]
        later = " ".join(t.message for t in task.turns[1:])
        assert values and not all(mentions(later, v) for v in values), "the carried value is restated, not carried"


def _said(phrasing: str, range_: list[Carry]) -> str | None:
    texts: dict[str, list[str]] = {}
    for slot in slots(phrasing):
        texts.setdefault(slot.name, []).append(slot.text)
    return refer_in(phrasing, texts, range_)


def _range(start: str, end: str, entity: str = "rental") -> list[Carry]:
    return [
        Carry(param=start, step=0, fields=["pickup_at"], kind="start", entity=entity),
        Carry(param=end, step=0, fields=["return_due_at"], kind="end", entity=entity),
    ]


def test_a_range_keeps_the_preposition_that_fits_it() -> None:
    """A booking moved "to" a span is moved "to the same dates" (never "to for the same dates"); one made "from",
    "between", "on" or "starting" a span is "for" them; the audit reads every such turn as referring."""
    stay = _range("arrival_date", "departure_date")
    moved = _said("I need to move {res_id} to {arrival_date:date} - {departure_date:date}.", stay)
    assert moved == "I need to move {res_id} to the same dates as that rental."
    pushed = _said(
        "Can we push {event_id} to {starts_at:day}, {starts_at:time} to {ends_at:time}?", _range("starts_at", "ends_at")
    )
    assert pushed == "Can we push {event_id} to the same dates and times as that rental?"
    quoted = _said("Do you have a room at the {hotel_id.name} from {arrival_date:date} to {departure_date:date}?", stay)
    assert quoted == "Do you have a room at the {hotel_id.name} for the same dates as that rental?"
    started = _said(
        "Add {title} to {calendar_id} starting {starts_at:datetime} until {ends_at:time}.",
        _range("starts_at", "ends_at"),
    )
    assert started == "Add {title} to {calendar_id} for the same dates and times as that rental."
    listed = _said("Is anything free for {adults} of us, {arrival_date:day} to {departure_date:day}?", stay)
    assert listed == "Is anything free for {adults} of us, for the same dates as that rental?"
    for said in (moved, pushed, quoted, started, listed):
        assert said is not None and refers(said) and " to for " not in said and "for for" not in said


def test_a_range_said_with_words_of_its_own_is_not_one_span() -> None:
    """ "to arrive {a} and leave {b}" and "picking up {a}" have no place for "the same dates": the phrasing is
    not used, never "to arrive for the same dates"."""
    stay = _range("arrival_date", "departure_date")
    assert _said("Can we change {res_id} to arrive {arrival_date:day} and leave {departure_date:day}?", stay) is None
    assert (
        _said(
            "Can I book it, picking up {pickup_at:day} until {return_due_at:day}?", _range("pickup_at", "return_due_at")
        )
        is None
    )


STAY_MOVE = ToolSpec(
    server="hotel",
    name="change_reservation_dates",
    read_only=False,
    params=[
        Param(name="res_id"),
        Param(name="arrival_date", required=True),
        Param(name="departure_date", required=True),
    ],
)


def test_a_tool_s_answer_is_named_by_the_row_its_id_names_never_by_the_row_it_acts_on() -> None:
    """`freeze_membership` answers with a freeze (`freeze_id`, its first and last day): its dates are "the same
    dates as that freeze", never "as that membership" (a membership's dates are not a stay)."""
    frozen = ToolSpec(
        server="fitness_club",
        name="freeze_membership",
        read_only=False,
        outputs=[
            OutField(name="freeze_id", entity="FreezeMembershipResult", user_known=False),
            OutField(name="member_id", entity="FreezeMembershipResult", user_known=False),
            OutField(name="starts_on", entity="FreezeMembershipResult"),
            OutField(name="ends_on", entity="FreezeMembershipResult"),
            OutField(name="renews_on", entity="FreezeMembershipResult"),
        ],
    )
    [(_, group)] = matches(frozen, STAY_MOVE)
    assert {c.entity for c in group} == {"freeze"}
    # ... though where `member_id` is known to name the person, a freeze refers to nobody and nothing else: its
    # dates are no stay ("move my hotel stay to the same dates as that freeze", after one for parental leave)
    assert matches(frozen, STAY_MOVE, frozenset({"member_id"})) == []
    assert offers(frozen) and not offers(frozen, frozenset({"member_id"}))
    rented = RENTAL.model_copy(
        update={
            "outputs": [
                OutField(name="rental_id", entity="Rentals", user_known=False),
                OutField(name="driver_id", entity="Rentals", user_known=False),
                OutField(name="vehicle_id", entity="Rentals", user_known=False),
                *RENTAL.outputs,
            ]
        }
    )
    assert matches(rented, AGENDA, frozenset({"driver_id"}))  # a rental puts the person in a vehicle
    moved = ToolSpec(
        server="hotel",
        name="change_reservation_dates",
        read_only=False,
        outputs=[
            OutField(name="res_id", entity="ChangeReservationDatesResult", user_known=False),
            OutField(name="arrival_date", entity="ChangeReservationDatesResult"),
            OutField(name="departure_date", entity="ChangeReservationDatesResult"),
        ],
    )
    terms = ToolSpec(
        server="course_registration",
        name="list_terms",
        read_only=True,
        params=[Param(name="starts_on", required=True), Param(name="ends_on", required=True)],
    )
    [(_, group)] = matches(moved, terms)
    assert {c.entity for c in group} == {"reservation"}  # never "the same dates as that date"


def test_a_sub_period_of_a_row_is_not_carried_as_the_row_s_dates() -> None:
    """A membership's `freeze_starts_on`/`freeze_ends_on` are a freeze within it, not the membership's own span: no
    range is carried from them (nor offered for a pair); a row's own span named with its noun still is."""
    membership = ToolSpec(
        server="fitness_club",
        name="get_membership",
        read_only=True,
        outputs=[
            OutField(name="freeze_starts_on", entity="Membership"),
            OutField(name="freeze_ends_on", entity="Membership"),
            OutField(name="trial_ends_on", entity="Membership"),
        ],
    )
    assert matches(membership, STAY_MOVE) == []
    assert offers(membership) == set()
    rental = ToolSpec(
        server="car_rental",
        name="get_rental",
        read_only=True,
        outputs=[
            OutField(name="rental_starts_on", entity="Rental"),
            OutField(name="rental_ends_on", entity="Rental"),
        ],
    )
    assert [c.entity for _, group in matches(rental, STAY_MOVE) for c in group] == ["rental", "rental"]


def test_a_window_searched_inside_a_carried_range_is_during_it() -> None:
    """A search bounded after/before a rental finds what lies inside it: "classes during that rental", and a lookup's
    aside is "It's during that rental." (never "It's for the same dates and times as that rental"); the audit reads
    both as referring."""
    window = _range("starts_after", "starts_before")
    asked = _said(
        "Are there any {category} classes between {starts_after:datetime} and {starts_before:datetime}?", window
    )
    assert asked == "Are there any {category} classes during that rental?"
    agenda = _said("What's on {calendar_id} from {starts_after:datetime} to {starts_before:datetime}?", window)
    assert agenda == "What's on {calendar_id} during that rental?"
    assert aside(window[0]) == "It's during that rental."
    assert aside(_range("arrival_date", "departure_date", "freeze")[0]) == "It's for the same dates as that freeze."
    assert aside(Carry(param="city", step=0, fields=["city"], kind="city", entity="hotel")) == (
        "It's in the same city as that hotel."
    )
    for said in (asked, agenda, aside(window[0])):
        assert said is not None and refers(said) and "It's for the same" not in said
    referred = _carrying("Can you book me into the Morning Vinyasa Flow? It's during that rental.")
    assert carried(referred, 1, "2026-05-01T09:00:00Z")


def test_a_row_named_by_its_date_and_hour_inside_the_window_needs_no_aside() -> None:
    """ "the 09:15 Morning Vinyasa Flow on Monday 13 April" names its class inside the rental already: the writer
    adds nothing for the window; a class named without its hour, or outside the window, still needs it."""
    classes = {"classes": [{"class_id": "cls_1", "title": "Morning Vinyasa Flow", "starts_at": "2026-04-13T09:15:00Z"}]}
    after, before = "2026-04-12T10:00:00Z", "2026-04-15T10:00:00Z"
    named = "Can you book me into the 09:15 Morning Vinyasa Flow on Monday 13 April?"
    assert inside("2026-04-13T09:15:00Z", after, before) and inside("2026-04-13", "2026-04-13", "2026-04-20")
    assert not inside("2026-04-16T09:15:00Z", after, before) and not inside("Morning", after, before)
    assert _named_within(named, classes, after, before)
    assert not _named_within(
        "Can you book me into the Morning Vinyasa Flow on Monday 13 April?", classes, after, before
    )
    assert not _named_within(named, classes, "2026-04-14T10:00:00Z", "2026-04-16T10:00:00Z")


def test_a_city_carried_into_a_search_is_not_said_where_the_request_names_the_row() -> None:
    """Seed 6421: "could you book the Howth Coastal Hike ...? It's in the same city as that branch." The city
    only narrowed the search for a tour the request names by its title: the aside is a seam, so it is left out."""
    from envfarm.clients.writing import _names_a_row

    found = {"tours": [{"tour_id": "tour_1", "title": "Howth Coastal Hike", "city": "Dublin"}], "count": 1}
    assert _names_a_row("Could you book the Thursday 16 April departure of the Howth Coastal Hike?", found)
    assert not _names_a_row("Could you book a tour for 4 of us?", found)
    assert not _names_a_row("Could you book tour_1?", found)  # an id is no name of the row's own
