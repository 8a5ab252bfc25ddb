"""What a gold write puts into the data fits the data there (`envfarm.clients.datafit`): a new row copying
another's measured amounts, one over the person's own time span, a date moved into the past, a reason the linked
rows belie, an in-person note about a row in another city; the audit's `data` check fails each, including a write
on a row its lookup only points at, and synthesis over several seeds keeps none of them."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from envfarm.clients.audit import Auditor, ServerFacts
from envfarm.clients.datafit import (
    ahead_of_its_day,
    clock_day,
    contradicted_value,
    copied_row,
    expired_record,
    far_in_person,
    moved_into_past,
    outlying_span,
    overlapping_own,
    past_its_cap,
    repeated_errand,
    row_conflicts,
    twin_row,
)
from envfarm.clients.graph import Param, ToolSpec
from envfarm.clients.grounding import Drop, ServerWorld, new_record_names, one_row_values, recombined
from envfarm.clients.tasks import ExpectedState, GoldCall, Persona, Provenance, Task, Turn
from envfarm.servers.runtime.control import TableDiff

FILL = {"log_id": "ful_1", "vehicle_id": "veh_1", "driver_id": "drv_2", "station": "Cepsa Merida"}
LOGS = [
    {**FILL, "liters": 67.4, "cost": 112.27, "odometer_km": 1000, "filled_at": "2026-04-01T09:00:00Z"},
    {**FILL, "log_id": "ful_2", "liters": 50.5, "cost": 80.8, "odometer_km": 1500, "filled_at": "2026-04-05T09:00:00Z"},
]


def test_a_new_fill_with_another_logs_litres_and_cost_is_a_copy_and_one_of_its_own_is_not() -> None:
    new = {**LOGS[0], "log_id": "ful_9", "driver_id": "drv_1", "odometer_km": 2000, "filled_at": "2026-04-13"}
    assert copied_row(new, LOGS, "log_id") is LOGS[0]
    assert copied_row({**new, "liters": 61.2, "cost": 101.93}, LOGS, "log_id") is None
    # one price said twice (amount, amount captured) is one amount: a price list's 26.50 is everyone's
    charge = {"charge_id": "ch_9", "amount": 26.5, "amount_captured": 26.5, "description": "Visit"}
    assert copied_row(charge, [{**charge, "charge_id": "ch_1"}], "charge_id") is None


@pytest.mark.parametrize("seed", range(8))
def test_one_row_values_gives_a_new_row_its_own_amounts_in_the_same_proportion(seed: int) -> None:
    spec = ToolSpec(
        server="fleet",
        name="log_fuel",
        read_only=False,
        params=[Param(name=n, type=t, required=True) for n, t in (("vehicle_id", "string"), ("liters", "number"))]
        + [Param(name="cost", type="number", required=True), Param(name="station", type="string", required=True)],
    )
    world = ServerWorld(server="fleet", controlled=True, tables={"fuel_logs": LOGS}, keys={"fuel_logs": "log_id"})
    args = {"vehicle_id": "veh_1", "liters": 1.5, "cost": 2.5, "station": "x"}
    source = {"vehicle_id": "output", "liters": "seed", "cost": "seed", "station": "seed"}
    one_row_values(random.Random(seed), world, spec, args, source, {})
    assert copied_row({**args, "log_id": "ful_9"}, LOGS, "log_id") is None
    row = next(r for r in LOGS if r["station"] == args["station"])
    price = [r["cost"] / r["liters"] for r in LOGS]
    assert any(abs(args["cost"] / args["liters"] - p) < 0.01 for p in price), (args, row)


ACCOUNTS = [
    {"id": f"trad_{n}", "username": user, "broker": host, "login": label}
    for n, (user, host, label) in enumerate(
        [
            ("tomas_ahmed", "redwood.example.com", "Lakeshore Login"),
            ("omar_kowalski", "clearwater.example.com", "Sunhaven Login"),
            ("ines_moreau", "redwood.example.com", "Copper Login"),
        ]
    )
]


@pytest.mark.parametrize("seed", range(12))
def test_a_new_record_is_never_named_like_an_existing_one(seed: int) -> None:
    """A create drawing an existing account's username and login from the seed would add a second `tomas_ahmed`
    (a duplicate, and two rows "the account tomas_ahmed" names): both are made anew in their shape, from the words
    the data holds; a column no `refer` names by (the broker's host) and an update's values are kept."""
    spec = ToolSpec(
        server="trades",
        name="add_account",
        read_only=False,
        params=[Param(name=n, type="string") for n in ("username", "broker", "login", "name", "reason")],
    )
    world = ServerWorld(
        server="trades",
        controlled=True,
        tables={"accounts": ACCOUNTS, "notes": [{"id": "n1", "text": "Ask Pinecrest about Harbor fees"}]},
        keys={"accounts": "id", "notes": "id"},
    )
    naming = {"accounts": {"username", "login", "name", "reason"}}
    args = {k: ACCOUNTS[0][k] for k in ("username", "broker", "login")}
    source: dict[str, Any] = dict.fromkeys(args, "seed")
    new_record_names(random.Random(seed), world, spec, args, source, naming)
    assert args["broker"] == "redwood.example.com" and source["broker"] == "seed"
    usernames = {r["username"] for r in ACCOUNTS}
    assert args["username"] not in usernames and re.fullmatch(
        r"(tomas|omar|ines)_(ahmed|kowalski|moreau)", args["username"]
    )
    assert args["login"] in {"Pinecrest Login", "Harbor Login"}  # words the data holds, never 'Login Login'
    assert source["username"] == source["login"] == "free"
    for keyed in ({"id": "trad_0"}, {"account": "trad_0"}):  # an update keys its row, whatever the param's name
        update = {**keyed, "username": "tomas_ahmed"}
        new_record_names(random.Random(seed), world, spec, update, {"username": "seed"}, naming)
        assert update["username"] == "tomas_ahmed"
    # a text that says something is no name to remake ('Waiting to the new warehouse from legal.')
    said = {"login": "Waiting on the signed contract from legal."}
    world.tables["accounts"] = [*ACCOUNTS, {"id": "trad_9", **said}]
    new_record_names(random.Random(seed), world, spec, said, {"login": "seed"}, naming)
    assert said == {"login": "Waiting on the signed contract from legal."}
    # a name or a reason a row is named by may repeat: a payee of two customers, a second visit for the same reason
    world.tables["accounts"] = [*ACCOUNTS, {"id": "trad_8", "reason": "skin pain", "name": "Greenfield Energy"}]
    again = {"reason": "skin pain", "name": "Greenfield Energy"}
    new_record_names(random.Random(seed), world, spec, again, {"reason": "seed", "name": "seed"}, naming)
    assert again == {"reason": "skin pain", "name": "Greenfield Energy"}


def test_a_name_with_no_new_shape_drops_the_task() -> None:
    assert recombined("Lakeshore", {"Lakeshore", "Sunhaven"}, [], random.Random(0)) is None
    assert recombined("Solo", {"Solo"}, ["Harbor"], random.Random(0)) is None  # nothing tells values apart
    spec = ToolSpec(server="s", name="add", read_only=False, params=[Param(name="login", type="string")])
    world = ServerWorld(
        server="s", controlled=True, tables={"things": [{"id": "t1", "login": "Solo"}]}, keys={"things": "id"}
    )
    with pytest.raises(Drop, match="named like an existing one"):
        new_record_names(random.Random(0), world, spec, {"login": "Solo"}, {"login": "seed"}, {"things": {"login"}})


EVENTS = [
    {"event_id": "evt_1", "calendar_id": "cal_h", "organizer_email": "hugo@x.com", "status": "confirmed",
     "starts_at": "2026-04-23T09:30:00Z", "ends_at": "2026-04-23T10:30:00Z"},
]  # fmt: skip
INVITES = [{"invitation_id": "inv_1", "event_id": "evt_1", "email": "noah@x.com", "response": "accepted"}]
KEYS = {"events": "event_id", "invitations": "invitation_id"}


def test_a_meeting_over_one_the_person_is_invited_to_overlaps_their_own_and_a_declined_one_does_not() -> None:
    added = {**EVENTS[0], "event_id": "evt_9", "calendar_id": "cal_n", "organizer_email": "noah@x.com",
             "starts_at": "2026-04-23T10:00:00Z", "ends_at": "2026-04-23T10:30:00Z"}  # fmt: skip
    tables = {"events": EVENTS, "invitations": INVITES}
    assert overlapping_own(added, "events", tables, KEYS, {"noah@x.com"}) is EVENTS[0]
    assert overlapping_own(added, "events", tables, KEYS, {"maria@x.com"}) is None  # not hers
    declined = {"events": EVENTS, "invitations": [{**INVITES[0], "response": "declined"}]}
    assert overlapping_own(added, "events", declined, KEYS, {"noah@x.com"}) is None
    later = {**added, "starts_at": "2026-04-23T10:30:00Z", "ends_at": "2026-04-23T11:00:00Z"}
    assert overlapping_own(later, "events", tables, KEYS, {"noah@x.com"}) is None  # back to back is no overlap
    # a stay's arrival and departure bound it too
    stays = [{"res_id": "r1", "guest_id": "g1", "arrival_date": "2026-05-05", "departure_date": "2026-05-08",
              "status": "confirmed"}]  # fmt: skip
    guests = [{"guest_id": "g1", "email": "olga@x.com"}]
    new = {**stays[0], "res_id": "r9", "arrival_date": "2026-05-06", "departure_date": "2026-05-13"}
    found = overlapping_own(new, "stays", {"stays": stays, "guests": guests}, {"stays": "res_id", "guests": "guest_id"},
                            {"olga@x.com"})  # fmt: skip
    assert found is stays[0]


def test_a_change_that_moves_a_date_from_ahead_to_before_today_is_into_the_past() -> None:
    assert clock_day("13 April 2026 09:00") == "2026-04-13" and clock_day("soon") is None
    assert moved_into_past({"renews_on": "2026-04-21"}, {"renews_on": "2026-04-12"}, "2026-04-13") == "renews_on"
    assert moved_into_past({"renews_on": "2026-04-21"}, {"renews_on": "2026-04-13"}, "2026-04-13") is None
    assert moved_into_past({"due_on": "2026-04-01"}, {"due_on": "2026-03-30"}, "2026-04-13") is None  # already past
    diff = {"members": TableDiff(updated=[{"key": "m1", "before": {"renews_on": "2026-04-21"},
                                           "after": {"renews_on": "2026-04-12"}}])}  # fmt: skip
    assert row_conflicts(diff, {}, {}, set(), "2026-04-13") == [
        ("a date moved into the past", "members.renews_on of m1")
    ]


def tour(reasons: list[tuple[str, str]]) -> tuple[dict[str, list[dict[str, object]]], dict[str, str]]:
    """Departures, bookings on them and a refund per booking, with (refund reason, departure status) pairs."""
    tables: dict[str, list[dict[str, object]]] = {"departures": [], "bookings": [], "refunds": []}
    for i, (reason, status) in enumerate(reasons):
        tables["departures"].append({"departure_id": f"dep_{i}", "status": status})
        tables["bookings"].append({"booking_id": f"bk_{i}", "booking_ref": f"TB-{i:05d}", "departure_id": f"dep_{i}",
                                   "status": "cancelled"})  # fmt: skip
        tables["refunds"].append({"refund_id": f"rf_{i}", "booking_id": f"bk_{i}", "reason": reason})
    tables["departures"].append({"departure_id": "dep_x", "status": "scheduled"})
    tables["bookings"].append({"booking_id": "bk_x", "booking_ref": "TB-99999", "departure_id": "dep_x",
                               "status": "confirmed"})  # fmt: skip
    return tables, {"departures": "departure_id", "bookings": "booking_id", "refunds": "refund_id"}


def test_a_reason_the_seed_only_gives_for_cancelled_departures_is_belied_by_a_scheduled_one() -> None:
    operator, traveller = "cancelled by the operator", "traveller cancelled"
    tables, keys = tour([(operator, "cancelled")] * 6 + [(traveller, "scheduled")] * 5 + [(traveller, "completed")] * 3)
    why = contradicted_value({"booking_ref": "TB-99999", "reason": operator}, ["reason"], tables, keys)
    assert why is not None and "departures.status: seen cancelled, here scheduled" in why
    assert contradicted_value({"booking_ref": "TB-99999", "reason": traveller}, ["reason"], tables, keys) is None
    # too few rows to read anything from, or a state the other reasons share: no contradiction
    few, keys = tour([(operator, "cancelled")] * 3 + [(traveller, "scheduled")] * 5)
    assert contradicted_value({"booking_ref": "TB-99999", "reason": operator}, ["reason"], few, keys) is None
    shared, keys = tour([(operator, "cancelled")] * 6 + [(traveller, "cancelled")] * 6 + [(traveller, "scheduled")])
    assert contradicted_value({"booking_ref": "TB-99999", "reason": operator}, ["reason"], shared, keys) is None


def test_a_note_to_pick_up_in_person_from_another_city_is_far() -> None:
    tables = {
        "members": [{"member_id": "mem_1", "email": "hannah@x.com", "city": "Seattle"}],
        "listings": [{"listing_id": "lst_1", "seller_id": "mem_2", "city": "Toronto"},
                     {"listing_id": "lst_2", "seller_id": "mem_2", "city": "Seattle"}],
    }  # fmt: skip
    keys = {"members": "member_id", "listings": "listing_id"}
    who = {"hannah@x.com"}
    far = far_in_person({"listing_id": "lst_1", "message": "Can pick up this weekend."}, tables, keys, who)
    assert far == "listings in Toronto, the person in Seattle"
    assert far_in_person({"listing_id": "lst_2", "message": "Can pick up this weekend."}, tables, keys, who) is None
    assert far_in_person({"listing_id": "lst_1", "message": "Is it still available?"}, tables, keys, who) is None


def test_the_audit_fails_a_pin_of_the_thread_parent_of_the_message_the_lookup_found() -> None:
    reply = {"message_id": "msg_r", "text": "Can we settle it?", "thread_parent_id": "msg_p"}
    world = ServerWorld(
        server="team_chat", controlled=True, tables={"messages": [reply]}, keys={"messages": "message_id"}
    )
    auditor = Auditor([], {"team_chat": world}, {"team_chat": ServerFacts()})
    search = GoldCall(server="team_chat", tool="search_messages", arguments={"text": "Can we settle it?"},
                      output={"messages": [reply]}, is_write=False)  # fmt: skip

    def task(pinned: str) -> Task:
        pin = GoldCall(server="team_chat", tool="pin_message", arguments={"message_id": pinned},
                       output={"message_id": pinned}, is_write=True, uses=[0])  # fmt: skip
        return Task(id="t", servers=["team_chat"], persona=Persona(name="Ethan Singh"), opening_message="Pin it.",
                    turns=[Turn(message="Pin it.", gold_calls=[0, 1])], gold_calls=[search, pin],
                    expected_state={"team_chat": ExpectedState()}, tools=[],
                    provenance=Provenance(sampler="hand", seed=0))  # fmt: skip

    [finding] = auditor.data(task("msg_p"))
    assert finding.check == "data" and "pin_message.message_id is its thread_parent_id" in finding.detail
    assert auditor.data(task("msg_r")) == []


@pytest.mark.slow
async def test_synthesis_over_several_seeds_keeps_no_write_the_data_belies() -> None:
    """Fleet fills, calendar meetings, tour refunds, fitness freezes and team_chat pins over 3 seeds: every kept
    task passes an independently built auditor's `data` check, and fuel fills are still made (their amounts own)."""
    from conftest import REPO

    from envfarm.clients.audit import build_auditor
    from envfarm.clients.connect import Connections, farm_targets
    from envfarm.clients.synthesize import SynthesisOptions, synthesize

    servers = ["fleet", "calendar", "tour_booking", "fitness_club", "team_chat"]
    fills = 0
    async with Connections(farm_targets(REPO, servers)) as connections:
        auditor = await build_auditor(connections, servers)
        for seed in range(3):
            synthesis = await synthesize(SynthesisOptions(n=5, seed=seed, servers=servers), connections)
            assert [f for t in synthesis.tasks for f in auditor.data(t)] == []
            fills += sum(1 for t in synthesis.tasks for c in t.gold_calls if c.tool == "log_fuel")
    assert fills >= 1


# ---------------------------------------------------------------- every question has its claim, from its own turn


def _asked(task: Task) -> list[str]:
    from test_audit import auditor

    return [f.detail for f in auditor().claims(task) if f.detail.startswith("asks")]


def test_a_yes_no_question_needs_a_claim_on_what_it_asks_not_the_price_beside_it() -> None:
    from test_audit import good

    from envfarm.clients.tasks import Claim

    task = good()
    task.opening_message = task.turns[0].message = "Do I need a prescription for it? Could you tell me the price?"
    task.claims = [Claim(text="states the price: 12.00", values=["12.00"], field="price")]
    assert _asked(task) == ["asks 'Do I need a prescription for it?' and no claim checks the answer"]
    task.claims.append(Claim(text="states whether it needs a prescription: yes", values=["yes"], field="rx"))
    assert _asked(task) == []
    # the details the next sentence asks of it answer it ("Did you receive it? Tell me the amount it came to.")
    task.opening_message = task.turns[0].message = "Did you receive my payment? Tell me the price it came to."
    task.claims = task.claims[:1]
    assert _asked(task) == []


def test_a_when_question_of_turn_two_is_not_answered_by_a_date_turn_one_claims() -> None:
    from test_audit import good

    from envfarm.clients.tasks import Claim

    task = good()
    first = "Please cancel my follow-up. When was it booked?"
    task.opening_message = first
    task.turns = [Turn(message=first, gold_calls=[0, 2]), Turn(message="When does my plan renew?", gold_calls=[1])]
    task.gold_calls[2].output = {**task.gold_calls[2].output, "booked_at": "2026-02-20"}
    task.claims = [
        Claim(text="states when it was booked: Friday 20 February", values=["2026-02-20"], field="booked_at")
    ]
    assert _asked(task) == ["asks 'When does my plan renew?' and no claim checks the answer"]


def test_a_title_before_a_name_does_not_end_the_question() -> None:
    from test_audit import good

    from envfarm.clients.tasks import Claim

    task = good()
    task.opening_message = task.turns[0].message = "Is my refill from Dr. Elena Hughes ready? Tell me the price."
    task.claims = [
        Claim(text="states whether it is ready: picked up", values=["picked up"], field="status"),
        Claim(text="states the price: 18.00", values=["18.00"], field="price"),
    ]
    assert _asked(task) == []


def test_a_claim_the_user_never_asked_fails_the_claims_check() -> None:
    from test_audit import auditor, good

    from envfarm.clients.audit import off_request
    from envfarm.clients.tasks import Claim

    task = good()
    task.opening_message = task.turns[0].message = "How much is my follow-up on Wednesday 4 March?"
    task.claims = [
        Claim(text="states the amount: 80.00", values=["80.00"], field="amount"),
        Claim(text="states whether it is paid: open", values=["open"], field="status"),
    ]
    assert [c.text for c in off_request(task)] == ["states whether it is paid: open"]
    assert "claim on what the user never asked: states whether it is paid: open" in [
        f.detail for f in auditor().claims(task)
    ]
    task.opening_message = task.turns[0].message = "How much is my follow-up, and is it paid?"
    assert off_request(task) == []


def test_a_new_row_due_before_today_is_already_overdue() -> None:
    """An invoice backdated to 31 January is due 2 March: nobody makes a record that is overdue at birth."""
    late = {"invoices": TableDiff(added=[{"invoice_id": "inv_9", "issued_on": "2026-01-31", "due_on": "2026-03-02"}])}
    assert row_conflicts(late, {}, {"invoices": "invoice_id"}, set(), "2026-04-13") == [
        ("a new row already overdue", "invoices inv_9")
    ]
    timely = {"invoices": TableDiff(added=[{"invoice_id": "inv_9", "issued_on": "2026-03-31", "due_on": "2026-04-30"}])}
    assert row_conflicts(timely, {}, {"invoices": "invoice_id"}, set(), "2026-04-13") == []


def test_a_call_about_an_expired_record_ignores_the_data_unless_it_renews_it() -> None:
    tables = {
        "prescriptions": [
            {"rx_id": "rx_1", "rx_number": "610059", "expires_on": "2026-01-31"},
            {"rx_id": "rx_2", "rx_number": "610060", "expires_on": "2026-12-31"},
        ]
    }
    keys = {"prescriptions": "rx_id"}
    today = "2026-04-13"
    assert expired_record("quote_copay", {"rx_id": "rx_1"}, tables, keys, today) == (
        "prescriptions.expires_on 2026-01-31 of rx_1"
    )
    assert expired_record("quote_copay", {"rx_id": "rx_2"}, tables, keys, today) is None
    assert expired_record("renew_prescription", {"rx_id": "rx_1"}, tables, keys, today) is None
    assert expired_record("quote_copay", {"rx_id": "rx_1"}, tables, keys, None) is None


def test_a_second_visit_for_the_same_complaint_with_the_same_doctor_repeats_an_errand() -> None:
    keys = {"patients": "patient_id", "doctors": "doctor_id", "slots": "slot_id", "appointments": "appointment_id"}
    tables = {
        "patients": [{"patient_id": "pat_1", "full_name": "Olga Ahmed", "email": "olga@example.com"}],
        "doctors": [{"doctor_id": "doc_1", "full_name": "Dr. Weber"}, {"doctor_id": "doc_2", "full_name": "Dr. Li"}],
        "slots": [
            {"slot_id": "slt_1", "doctor_id": "doc_1", "starts_at": "2026-04-22T14:00:00Z"},
            {"slot_id": "slt_2", "doctor_id": "doc_1", "starts_at": "2026-04-16T10:00:00Z"},
            {"slot_id": "slt_3", "doctor_id": "doc_2", "starts_at": "2026-04-16T10:00:00Z"},
            {"slot_id": "slt_4", "doctor_id": "doc_1", "starts_at": "2025-06-01T10:00:00Z"},
        ],
        "appointments": [
            {
                "appointment_id": "apt_1",
                "patient_id": "pat_1",
                "slot_id": "slt_1",
                "reason": "Headaches",
                "status": "booked",
            }
        ],
    }
    who = {"olga@example.com", "Olga Ahmed"}
    new = {
        "appointment_id": "apt_9",
        "patient_id": "pat_1",
        "slot_id": "slt_2",
        "reason": "headaches",
        "status": "booked",
    }
    assert repeated_errand(new, "appointments", tables, keys, who, "2026-04-13") is tables["appointments"][0]
    # the same complaint with another doctor while the first visit is still ahead: the same errand
    assert repeated_errand({**new, "slot_id": "slt_3"}, "appointments", tables, keys, who, "2026-04-13") is not None
    # another complaint, or the first visit cancelled or a year back: a new errand
    assert repeated_errand({**new, "reason": "Back pain"}, "appointments", tables, keys, who, "2026-04-13") is None
    cancelled = {**tables, "appointments": [{**tables["appointments"][0], "status": "cancelled"}]}
    assert repeated_errand(new, "appointments", cancelled, keys, who, "2026-04-13") is None
    last_year = {**tables, "appointments": [{**tables["appointments"][0], "slot_id": "slt_4"}]}
    tables["slots"].append({"slot_id": "slt_5", "doctor_id": "doc_1", "starts_at": "2026-04-03T10:00:00Z"})
    ten_days_back = {**tables, "appointments": [{**tables["appointments"][0], "slot_id": "slt_5"}]}
    assert repeated_errand(new, "appointments", ten_days_back, keys, who, "2026-04-13") is None
    assert repeated_errand(new, "appointments", last_year, keys, who, "2026-04-13") is None
    found = row_conflicts({"appointments": {"added": [new]}}, tables, keys, who, "2026-04-13")
    assert ("a new row repeating an errand of the person's", "appointments apt_1") in found


def test_a_post_saying_word_for_word_what_another_member_said_in_the_channel_is_a_repeat() -> None:
    keys = {"channels": "channel_id", "members": "member_id", "messages": "message_id"}
    text = "Yes, the security training is settled: completion stays at 68%."
    tables = {
        "channels": [{"channel_id": "ch_1", "name": "help-it"}, {"channel_id": "ch_2", "name": "random"}],
        "members": [
            {"member_id": "mbr_1", "email": "lucas@example.com"},
            {"member_id": "mbr_2", "email": "o@example.com"},
        ],
        "messages": [{"message_id": "msg_1", "channel_id": "ch_1", "author_id": "mbr_2", "text": text}],
    }
    post = {"message_id": "msg_9", "channel_id": "ch_1", "author_id": "mbr_1", "text": text}
    who = {"lucas@example.com"}
    assert repeated_errand(post, "messages", tables, keys, who, "2026-04-13") is tables["messages"][0]
    assert repeated_errand({**post, "channel_id": "ch_2"}, "messages", tables, keys, who, "2026-04-13") is None
    # a short common text ("Thanks!") by someone else is no copy
    short = {**tables, "messages": [{**tables["messages"][0], "text": "Thanks!"}]}
    assert repeated_errand({**post, "text": "Thanks!"}, "messages", short, keys, who, "2026-04-13") is None


def test_a_meeting_carried_over_the_three_days_of_a_rental_is_a_span_far_past_the_seeds() -> None:
    events = [
        {
            "event_id": f"evt_{i}",
            "title": "1:1",
            "starts_at": f"2026-04-0{i}T09:00:00Z",
            "ends_at": f"2026-04-0{i}T10:30:00Z",
        }
        for i in range(1, 7)
    ]
    tables = {"events": events}
    three_days = {"event_id": "evt_9", "starts_at": "2026-05-09T14:00:00Z", "ends_at": "2026-05-12T14:00:00Z"}
    assert outlying_span(three_days, "events", tables) == (
        "starts_at-ends_at: 3.00 days (events: at most 0.06 over 6 rows)"
    )
    two_hours = {**three_days, "ends_at": "2026-05-09T16:00:00Z"}
    assert outlying_span(two_hours, "events", tables) is None
    # too few seed rows say nothing of how long such a row runs
    assert outlying_span(three_days, "events", {"events": events[:3]}) is None
    found = row_conflicts(
        {"events": {"updated": [{"key": "evt_1", "before": {}, "after": {"ends_at": "2026-04-04T09:00:00Z"}}]}},
        tables,
        {"events": "event_id"},
        set(),
        "2026-04-01",
    )
    assert [r for r, _ in found] == ["a span far past the seed's"]


def test_an_offer_above_the_asking_price_is_past_its_cap_and_a_vehicles_moving_odometer_is_no_cap() -> None:
    keys = {"listings": "listing_id", "offers": "offer_id"}
    listings = [{"listing_id": f"lst_{i}", "asking_price": 40.0 + i} for i in range(6)]
    offers = [
        {"offer_id": f"off_{i}", "listing_id": f"lst_{i}", "amount": 40.0 + i - (i % 3) * 2} for i in range(6)
    ]  # each at most the asking price, some at it
    tables = {"listings": listings, "offers": offers}
    above = {"offer_id": "off_9", "listing_id": "lst_1", "amount": 63.0}
    assert past_its_cap(above, "offers", tables, keys) == (
        "offers.amount 63.0 above listings.asking_price 41.0 (seed: at most 1.00 of it over 6 rows)"
    )
    assert past_its_cap({**above, "amount": 35.0}, "offers", tables, keys) is None
    # a parent number the write itself moves (an invoice's subtotal, a vehicle's odometer) follows its rows
    assert past_its_cap(above, "offers", tables, keys, {("listings", "lst_1"): {"asking_price"}}) is None
    # far below the parent's number everywhere (2 seats of a 30-seat departure): no cap read from the seed
    low = {"offers": [{**o, "amount": o["amount"] / 10} for o in offers], "listings": listings}
    assert past_its_cap(above, "offers", low, keys) is None


def test_a_trip_started_days_before_its_scheduled_day_is_ahead_of_its_day_and_a_cancellation_is_not() -> None:
    trip = {"trip_id": "trp_1", "scheduled_start": "2026-04-19T10:00:00Z", "actual_start": None, "status": "scheduled"}
    started = {"status": "in_progress", "actual_start": "2026-04-13T09:00:00Z"}
    assert ahead_of_its_day(trip, trip, started, "2026-04-13") == "actual_start today, scheduled_start 2026-04-19"
    assert ahead_of_its_day({**trip, "scheduled_start": "2026-04-13T12:00:00Z"}, trip, started, "2026-04-13") is None
    stay = {"res_id": "res_1", "arrival_date": "2026-05-19", "departure_date": "2026-05-21", "cancelled_at": None}
    cancelled = {"status": "cancelled", "cancelled_at": "2026-04-13T09:00:00Z"}
    assert ahead_of_its_day(stay, stay, cancelled, "2026-04-13") is None  # cancelling ahead is what one does
    checked_in = {"status": "checked_in", "checked_in_at": "2026-04-13T09:00:00Z"}
    assert ahead_of_its_day({**stay, "checked_in_at": None}, stay, checked_in, "2026-04-13") == (
        "checked_in_at today, arrival_date 2026-05-19"
    )


def test_a_change_to_a_paused_payment_that_leaves_it_paused_is_found() -> None:
    keys = {"scheduled_payments": "schedule_id"}
    payment = {"schedule_id": "sch_1", "amount": 154.29, "next_run_on": "2026-05-09", "status": "paused"}
    tables = {"scheduled_payments": [payment]}
    moved = {"key": "sch_1", "before": {"next_run_on": "2026-05-09"}, "after": {"next_run_on": "2026-05-16"}}
    found = row_conflicts({"scheduled_payments": {"updated": [moved]}}, tables, keys, set(), "2026-04-13")
    assert ("a change to a row on hold that leaves it on hold", "scheduled_payments sch_1: status paused") in found
    resumed = {**moved, "before": {"status": "paused"}, "after": {"status": "active"}}
    found = row_conflicts({"scheduled_payments": {"updated": [resumed]}}, tables, keys, set(), "2026-04-13")
    assert not [r for r, _ in found if "on hold" in r]


def test_a_second_monthly_rent_to_the_same_payee_is_a_repeat_though_the_payment_names_the_person_two_hops_away() -> (
    None
):
    keys = {
        "customers": "customer_id",
        "accounts": "account_id",
        "payees": "payee_id",
        "scheduled_payments": "schedule_id",
    }
    tables = {
        "customers": [{"customer_id": "cst_1", "email": "lina@example.com"}],
        "accounts": [{"account_id": "acc_1", "customer_id": "cst_1"}],
        "payees": [{"payee_id": "pay_1", "customer_id": "cst_1", "name": "Maple Properties"}],
        "scheduled_payments": [
            {
                "schedule_id": "sch_1",
                "account_id": "acc_1",
                "payee_id": "pay_1",
                "next_run_on": "2026-04-24",
                "memo": "Monthly rent",
            }
        ],
    }
    new = {
        "schedule_id": "sch_9",
        "account_id": "acc_1",
        "payee_id": "pay_1",
        "next_run_on": "2026-04-28",
        "memo": "Monthly rent",
    }
    who = {"lina@example.com"}
    found = repeated_errand(new, "scheduled_payments", tables, keys, who, "2026-04-13", written={"Monthly rent"})
    assert found is tables["scheduled_payments"][0]
    assert repeated_errand({**new, "memo": "Parking"}, "scheduled_payments", tables, keys, who, "2026-04-13") is None


@pytest.mark.parametrize("seed", range(20))
def test_the_data_checks_take_any_shape_of_row_without_raising(seed: int) -> None:
    """Imported servers hold lists, numbers and nulls where the built-in farm has text: each check answers (a
    finding or none) for any of them."""
    rng = random.Random(seed)
    shapes = [None, 0, 1.5, True, "", "x", "2026-04-13", "2026-04-20T10:00:00Z", ["a"], {"k": 1}, "paused", "x_1"]
    columns = ["thing_id", "status", "starts_at", "ends_at", "note", "amount", "scheduled_start", "title", "memo"]
    keys = {"things": "thing_id", "others": "other_id"}

    def row(key: str) -> dict:
        return {key: f"{key[:2]}_{rng.randint(0, 3)}", **{c: rng.choice(shapes) for c in rng.sample(columns, 6)}}

    tables = {"things": [row("thing_id") for _ in range(8)], "others": [row("other_id") for _ in range(8)]}
    diff = {
        "things": {
            "added": [row("thing_id") for _ in range(3)],
            "updated": [{"key": "th_1", "before": row("thing_id"), "after": row("thing_id")} for _ in range(3)],
        }
    }
    found = row_conflicts(diff, tables, keys, {"x"}, "2026-04-13", written={"x", "paused"})
    assert all(isinstance(reason, str) and isinstance(detail, str) for reason, detail in found)


def test_a_second_identical_line_on_an_invoice_is_a_twin_and_another_quantity_is_not() -> None:
    line = {"line_id": "iln_1", "invoice_id": "inv_1", "item_id": "itm_1", "quantity": 10.0, "unit_price": 12.0}
    added = {**line, "line_id": "iln_9"}
    assert twin_row(added, [line], "line_id") is line
    assert twin_row({**added, "quantity": 5.0}, [line], "line_id") is None
    assert twin_row({**added, "invoice_id": "inv_2"}, [line], "line_id") is None
    # no parent, or too little said beside it, is no evidence of a twin
    assert twin_row({"line_id": "iln_9", "quantity": 10.0, "unit_price": 12.0}, [line], "line_id") is None
    assert twin_row({**line, "status": "void"}, [{**line, "line_id": "iln_2", "status": "void"}], "line_id") is None
