"""What a written row combines fits what the service's own rows combine (`envfarm.clients.datafit`): two places
the seed never puts in one row (a car picked up in Austin and dropped in Vienna, returned far from its drop-off),
a second row in a state a person holds one at a time (a trip started while another is in progress), a reason
naming a kind of thing the row has none of ("Returned hardware" on consulting lines), a date before the row it
belongs to, another row's reference; and a later write retiring what an earlier one used (pin a message, then
archive its channel). Each is read from small seeds here; the audit's `data` check reports them."""

from __future__ import annotations

from envfarm.clients.audit import Auditor, ServerFacts
from envfarm.clients.datafit import (
    crossed_places,
    dated_before_parent,
    leap_from_before,
    outlying_amount,
    retires_what_was_used,
    reused_reference,
    row_conflicts,
    second_in_state,
    second_of_a_thing,
    unfit_reason,
    unusual_pairing,
)
from envfarm.clients.grounding import ServerWorld
from envfarm.clients.tasks import ExpectedState, GoldCall, Persona, Provenance, Task, Turn
from envfarm.servers.runtime.control import TableDiff

CITIES = ["Austin", "Austin", "Vienna", "Vienna", "Boston", "Boston"]
BRANCHES = [{"branch_id": f"br_{i}", "name": f"{c} {i}", "city": c} for i, c in enumerate(CITIES)]
# every seed rental is dropped off in its pickup city but one (1 of 11: a rare one-way does not make them normal)
RENTALS = [
    {"rental_id": f"rnt_{i}", "driver_id": "drv_1", "pickup_branch_id": f"br_{a}", "dropoff_branch_id": f"br_{b}"}
    for i, (a, b) in enumerate([(0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4), (0, 0), (2, 2), (4, 4), (1, 1), (0, 4)])
]
CAR_KEYS = {"branches": "branch_id", "rentals": "rental_id"}


def test_a_rental_picked_up_in_austin_and_dropped_in_vienna_crosses_places_the_seed_never_combines() -> None:
    tables = {"branches": BRANCHES, "rentals": RENTALS}
    far = {"rental_id": "rnt_9", "driver_id": "drv_1", "pickup_branch_id": "br_0", "dropoff_branch_id": "br_2"}
    found = crossed_places(far, "rentals", tables, CAR_KEYS)
    assert found is not None and "Austin" in found and "Vienna" in found
    near = {**far, "dropoff_branch_id": "br_1"}  # the airport to downtown of one city
    assert crossed_places(near, "rentals", tables, CAR_KEYS) is None
    # where the service's rows span cities as a rule (a parcel's sender and recipient), so may the new one
    spread = [{**r, "dropoff_branch_id": f"br_{(int(r['pickup_branch_id'][-1]) + 2) % 6}"} for r in RENTALS]
    assert crossed_places(far, "rentals", {"branches": BRANCHES, "rentals": spread}, CAR_KEYS) is None


def test_a_return_far_from_the_drop_off_is_flagged_only_when_the_write_sets_the_return() -> None:
    returned = [{**r, "return_branch_id": r["dropoff_branch_id"]} for r in RENTALS]
    tables = {"branches": BRANCHES, "rentals": returned}
    seed = {**returned[0], "return_branch_id": None}
    diff = {"rentals": TableDiff(updated=[{"key": "rnt_0", "before": {"return_branch_id": None},
                                           "after": {"return_branch_id": "br_2"}}])}  # fmt: skip
    assert [r for r, _ in row_conflicts(diff, {**tables, "rentals": [seed, *returned[1:]]}, CAR_KEYS, set(), None)] == [
        "places the service never combines"
    ]
    # a change to another column of a seed row that already spans two cities is not this write's doing
    odd = {**returned[10], "return_branch_id": "br_0"}
    assert crossed_places(odd, "rentals", tables, CAR_KEYS, changed=["status"]) is None


DRIVERS = [{"driver_id": f"drv_{i}", "email": f"d{i}@x.com"} for i in range(8)]
TRIPS = [{"trip_id": f"trp_{i}", "driver_id": f"drv_{i}", "status": "in_progress"} for i in range(5)] + [
    {"trip_id": f"trp_{i}", "driver_id": "drv_1", "status": "scheduled"} for i in range(5, 11)
]
FLEET_KEYS = {"drivers": "driver_id", "trips": "trip_id"}


def test_starting_a_trip_while_the_drivers_other_trip_is_in_progress_is_a_second_one_at_a_time() -> None:
    tables = {"drivers": DRIVERS, "trips": TRIPS}
    second = {"trip_id": "trp_5", "driver_id": "drv_1", "status": "in_progress"}
    found = second_in_state(second, "trips", tables, FLEET_KEYS, changed=["status"])
    assert found is not None and "trp_1" in found
    free = {"trip_id": "trp_9", "driver_id": "drv_6", "status": "in_progress"}  # drv_6 drives nothing now
    assert second_in_state(free, "trips", tables, FLEET_KEYS, changed=["status"]) is None
    # many scheduled trips per driver: scheduling another is normal
    assert second_in_state({**second, "status": "scheduled"}, "trips", tables, FLEET_KEYS) is None


ITEMS = [
    {"item_id": f"itm_{i}", "name": n, "kind": k, "unit": u}
    for i, (n, k, u) in enumerate(
        [("Consulting hour", "service", "hour"), ("Data migration", "service", "each"),
         ("Docking station", "product", "each"), ("Cloud hosting", "subscription", "month"),
         ("Design day", "service", "day"), ("Laptop", "product", "each")]
    )
]  # fmt: skip
INVOICES = [{"invoice_id": "inv_1", "number": "INV-1035"}, {"invoice_id": "inv_2", "number": "INV-1036"}]
LINES = [
    {"line_id": "iln_1", "invoice_id": "inv_1", "item_id": "itm_0"},
    {"line_id": "iln_2", "invoice_id": "inv_1", "item_id": "itm_1"},
    {"line_id": "iln_3", "invoice_id": "inv_2", "item_id": "itm_2"},
]
BILL = {"catalog_items": ITEMS, "invoices": INVOICES, "invoice_lines": LINES}
BILL_KEYS = {"catalog_items": "item_id", "invoices": "invoice_id", "invoice_lines": "line_id"}


def test_returned_hardware_fits_an_invoice_with_a_product_line_and_not_one_of_consulting_only() -> None:
    found = unfit_reason({"invoice_id": "inv_1", "reason": "Returned hardware"}, BILL, BILL_KEYS)
    assert found is not None and "catalog_items.kind" in found
    assert unfit_reason({"invoice_id": "inv_2", "reason": "Returned hardware"}, BILL, BILL_KEYS) is None
    # hours billed twice: the consulting invoice bills hours, the hardware one does not
    assert unfit_reason({"invoice_id": "inv_1", "reason": "Hours billed twice"}, BILL, BILL_KEYS) is None
    assert unfit_reason({"invoice_id": "inv_2", "reason": "Hours billed twice"}, BILL, BILL_KEYS) is not None
    # a reason naming no kind of thing, and one word that names a choice (a branch), are no claim
    assert unfit_reason({"invoice_id": "inv_1", "reason": "Discount agreed after delivery"}, BILL, BILL_KEYS) is None
    assert unfit_reason({"invoice_id": "inv_1", "reason": "Laptop"}, BILL, BILL_KEYS) is None


PAID = [
    {"payment_id": f"pmt_{i}", "invoice_id": "inv_1", "reference": f"REF-{i}00", "received_on": f"2026-03-1{i}"}
    for i in range(5)
]
ISSUED = [{"invoice_id": "inv_1", "issued_on": "2026-03-01"}, {"invoice_id": "inv_2", "issued_on": "2026-03-21"}]
PAY_KEYS = {"invoices": "invoice_id", "payments": "payment_id"}


def test_a_payment_received_before_its_invoice_was_issued_or_under_anothers_reference_does_not_fit() -> None:
    tables = {"invoices": ISSUED, "payments": PAID}
    early = {"payment_id": "pmt_9", "invoice_id": "inv_2", "reference": "REF-900", "received_on": "2026-02-05"}
    found = dated_before_parent(early, "payments", tables, PAY_KEYS)
    assert found == "received_on 2026-02-05 before invoices.issued_on 2026-03-21"
    assert dated_before_parent({**early, "received_on": "2026-04-01"}, "payments", tables, PAY_KEYS) is None
    assert reused_reference({**early, "reference": "REF-100"}, "payments", tables, PAY_KEYS) == (
        "reference REF-100 (as pmt_1)"
    )
    assert reused_reference(early, "payments", tables, PAY_KEYS) is None


def _call(tool: str, args: dict[str, object], output: dict[str, object]) -> GoldCall:
    return GoldCall(server="team_chat", tool=tool, arguments=args, output=output, is_write=True)


PIN = _call("pin_message", {"message_id": "msg_1"}, {"message_id": "msg_1", "channel_id": "ch_1", "is_pinned": True})
ARCHIVE = _call("archive_channel", {"channel_id": "ch_1"}, {"channel_id": "ch_1", "is_archived": True})
ARCHIVED = {
    "channels": TableDiff(updated=[{"key": "ch_1", "before": {"is_archived": 0}, "after": {"is_archived": 1}}]),
    "messages": TableDiff(updated=[{"key": "msg_1", "before": {"is_pinned": 0}, "after": {"is_pinned": 1}}]),
}
CHAT_KEYS = {"team_chat": {"channels": "channel_id", "messages": "message_id"}}


def test_pinning_a_message_then_archiving_its_channel_retires_what_the_pin_used() -> None:
    assert retires_what_was_used([PIN, ARCHIVE], {"team_chat": ARCHIVED}, CHAT_KEYS) == (
        "pin_message then archive_channel: channels ch_1"
    )
    # archiving a channel the pin never touched, or archiving alone, is no such thing
    other = _call("archive_channel", {"channel_id": "ch_2"}, {"channel_id": "ch_2", "is_archived": True})
    moved = {
        "channels": TableDiff(updated=[{"key": "ch_2", "before": {"is_archived": 0}, "after": {"is_archived": 1}}])
    }
    assert retires_what_was_used([PIN, other], {"team_chat": moved}, CHAT_KEYS) is None
    assert retires_what_was_used([ARCHIVE], {"team_chat": ARCHIVED}, CHAT_KEYS) is None


def test_the_audit_data_check_reports_a_write_retiring_what_an_earlier_one_used() -> None:
    world = ServerWorld(
        server="team_chat",
        controlled=True,
        tables={"channels": [{"channel_id": "ch_1"}], "messages": [{"message_id": "msg_1", "channel_id": "ch_1"}]},
        keys=CHAT_KEYS["team_chat"],
    )
    auditor = Auditor([], {"team_chat": world}, {"team_chat": ServerFacts()})
    task = Task(
        id="t",
        servers=["team_chat"],
        tools=[],
        persona=Persona(name="Daniel Ahmed", email="daniel.ahmed@example.com"),
        opening_message="Pin Priya's message in #ml-experiments, then archive the channel.",
        turns=[Turn(message="Pin Priya's message in #ml-experiments, then archive the channel.", gold_calls=[0, 1])],
        gold_calls=[PIN, ARCHIVE],
        expected_state={"team_chat": ExpectedState(diff=ARCHIVED)},
        provenance=Provenance(sampler="topology", seed=0),
    )
    details = [f.detail for f in auditor.data(task)]
    assert details == [
        "a later write retires what an earlier one used: pin_message then archive_channel: channels ch_1"
    ]


CATEGORIES = [{"category_id": f"cat_{n}", "name": n} for n in ("office", "air", "training")]
LINES_BY_MERCHANT = [
    {"line_id": f"lin_{i}", "category_id": f"cat_{c}", "merchant": m}
    for i, (m, c) in enumerate(
        [("Paper & Co", "office"), ("Paper & Co", "office"), ("Northjet", "air"), ("Northjet", "air"),
         ("Skyway", "air"), ("Skyway", "air"), ("DevConf", "training"), ("DevConf", "training"),
         ("Inkwell", "office"), ("Inkwell", "office"), ("Bookhub", "training"), ("Bookhub", "training"),
         ("Railco", "air"), ("Railco", "air")]
    )
]  # fmt: skip
EXPENSE_KEYS = {"categories": "category_id", "expense_lines": "line_id"}


def test_a_merchant_the_seed_always_files_under_air_travel_does_not_fit_an_office_supplies_line() -> None:
    tables = {"categories": CATEGORIES, "expense_lines": LINES_BY_MERCHANT}
    fixed = {**LINES_BY_MERCHANT[0], "merchant": "Northjet"}
    found = unusual_pairing(fixed, "expense_lines", tables, EXPENSE_KEYS, changed=["merchant"])
    assert found == "merchant 'Northjet' (category_id: seen cat_air, here cat_office)"
    assert (
        unusual_pairing({**fixed, "merchant": "Inkwell"}, "expense_lines", tables, EXPENSE_KEYS, ["merchant"]) is None
    )
    # a write that leaves the merchant as it is says nothing of it
    assert unusual_pairing(fixed, "expense_lines", tables, EXPENSE_KEYS, changed=["amount"]) is None
    # where merchants spread over categories, the seed says nothing of where one belongs
    mixed = [
        {**r, "category_id": f"cat_{('office', 'air', 'training')[i % 3]}"} for i, r in enumerate(LINES_BY_MERCHANT)
    ]
    assert (
        unusual_pairing(fixed, "expense_lines", {**tables, "expense_lines": mixed}, EXPENSE_KEYS, ["merchant"]) is None
    )


def test_forty_data_migrations_on_an_invoice_are_far_past_any_seed_invoice_and_three_are_not() -> None:
    lines = [
        {"line_id": f"iln_{i}", "invoice_id": "inv_1", "item_id": "itm_1", "quantity": q}
        for i, q in enumerate((1, 1, 2, 1, 2))
    ]
    tables = {**BILL, "invoice_lines": lines}
    new = {"line_id": "iln_9", "invoice_id": "inv_2", "item_id": "itm_1", "quantity": 40.0}
    assert outlying_amount(new, "invoice_lines", tables, BILL_KEYS) == (
        "quantity 40 (catalog_items itm_1: at most 2 over 5 rows)"
    )
    assert outlying_amount({**new, "quantity": 3.0}, "invoice_lines", tables, BILL_KEYS) is None
    # an item the seed bills too seldom (no line of itm_2) says nothing of how many are usual
    assert outlying_amount({**new, "item_id": "itm_2"}, "invoice_lines", tables, BILL_KEYS) is None


def test_an_onboarding_package_at_the_price_of_another_line_is_far_below_every_seed_line_and_a_discount_is_not() -> (
    None
):
    lines = [
        {"line_id": f"iln_{i}", "invoice_id": f"inv_{i}", "item_id": "itm_4", "unit_price": p}
        for i, p in enumerate((2500.0, 2500.0, 2400.0, 2500.0, 2500.0))
    ]
    tables = {**BILL, "invoice_lines": lines}
    cheap = {"line_id": "iln_9", "invoice_id": "inv_7", "item_id": "itm_4", "unit_price": 48.0}
    assert outlying_amount(cheap, "invoice_lines", tables, BILL_KEYS) == (
        "unit_price 48 (catalog_items itm_4: at least 2400 over 5 rows)"
    )
    # an agreed discount is a share of the price, not another line's price
    assert outlying_amount({**cheap, "unit_price": 2000.0}, "invoice_lines", tables, BILL_KEYS) is None
    # a small count is no outlier: only money is read as too low
    few = [{**r, "quantity": 20} for r in lines]
    assert (
        outlying_amount(
            {**cheap, "unit_price": 2500.0, "quantity": 1}, "invoice_lines", {**tables, "invoice_lines": few}, BILL_KEYS
        )
        is None
    )


def test_a_price_dropped_from_12_to_273_leaps_from_the_rows_own_and_a_cut_to_9_does_not() -> None:
    before = {"listing_id": "lst_1", "asking_price": 12.0, "minimum_price": 9.0}
    assert leap_from_before(before, {"asking_price": 273.0}) == "asking_price 12 -> 273"
    assert leap_from_before(before, {"asking_price": 2.0}) == "asking_price 12 -> 2"
    assert leap_from_before(before, {"asking_price": 9.0}) is None
    # a count many times its own is no amount of money: ten tickets instead of one is a plain change
    assert leap_from_before({"quantity": 1}, {"quantity": 10}) is None
    # an amount the write never gave follows the data (a subtotal falling with the line removed from it)
    assert leap_from_before({"subtotal": 3408.0}, {"subtotal": 8.0}, given=[]) is None
    assert leap_from_before({"subtotal": 3408.0}, {"subtotal": 8.0}, given=[8.0]) == "subtotal 3408 -> 8"
    diff = {"listings": {"updated": [{"key": "lst_1", "before": before, "after": {"asking_price": 273.0}}]}}
    tables = {"listings": [before]}
    found = row_conflicts(diff, tables, {"listings": "listing_id"}, set(), None, written={"lst_1", 273.0})
    assert found == [("an amount many times the row's own", "listings lst_1: asking_price 12 -> 273")]


def test_a_second_line_of_an_item_an_invoice_bills_already_repeats_it_where_the_seed_never_does() -> None:
    lines = [
        {"line_id": f"iln_{i}", "invoice_id": f"inv_{i // 2}", "item_id": f"itm_{i % 6}", "unit_price": 10.0}
        for i in range(8)
    ]
    tables = {**BILL, "invoice_lines": lines}
    again = {"line_id": "iln_9", "invoice_id": "inv_0", "item_id": "itm_0", "unit_price": 48.0}
    assert second_of_a_thing(again, "invoice_lines", tables, BILL_KEYS) is lines[0]
    assert second_of_a_thing({**again, "item_id": "itm_3"}, "invoice_lines", tables, BILL_KEYS) is None
    # a voided line is no line the invoice bills
    voided = [{**lines[0], "status": "void"}, *lines[1:]]
    assert second_of_a_thing(again, "invoice_lines", {**tables, "invoice_lines": voided}, BILL_KEYS) is None
    # where the seed bills an item twice on one invoice, a second line is the service's way
    doubled = [*lines, {**lines[1], "line_id": "iln_8"}]
    assert second_of_a_thing(again, "invoice_lines", {**tables, "invoice_lines": doubled}, BILL_KEYS) is None


MERCHANTS = [
    {"merchant_id": f"mer_{i}", "name": n, "category": c}
    for i, (n, c) in enumerate(
        [("Redwood Cinema", "entertainment"), ("Highland Streaming", "entertainment"), ("Oakridge Vet", "health"),
         ("Northwind Software", "software"), ("Brightside Pharmacy", "health"), ("Copperline Cafe", "restaurant"),
         ("Pinecrest Coworking", "software"), ("Harbor Noodle Bar", "restaurant")]
    )
]  # fmt: skip
SUBSCRIPTIONS = [
    {"subscription_id": f"sub_{i}", "merchant_id": m, "plan_name": p}
    for i, (m, p) in enumerate(
        [("mer_0", "Premium streaming")] * 4 + [("mer_1", "Premium streaming")] * 2 + [("mer_3", "Pro plan")] * 5
    )
]
PAYMENT_KEYS = {"merchants": "merchant_id", "subscriptions": "subscription_id"}


def test_a_plan_the_seed_sells_only_at_entertainment_merchants_does_not_fit_a_vet_clinic() -> None:
    tables = {"merchants": MERCHANTS, "subscriptions": SUBSCRIPTIONS}
    added = {"subscription_id": "sub_new", "merchant_id": "mer_2", "plan_name": "Premium streaming"}
    found = unusual_pairing(added, "subscriptions", tables, PAYMENT_KEYS)
    assert found == "plan_name 'Premium streaming' (merchants.category: seen entertainment, here health)"
    # at a streaming service the plan fits; a plan seen too few times says nothing
    assert unusual_pairing({**added, "merchant_id": "mer_1"}, "subscriptions", tables, PAYMENT_KEYS) is None
    few = {**tables, "subscriptions": SUBSCRIPTIONS[:3] + SUBSCRIPTIONS[4:]}  # 5 of them, still at 2 merchants
    assert unusual_pairing(added, "subscriptions", few, PAYMENT_KEYS) is not None
    assert unusual_pairing(added, "subscriptions", {**few, "subscriptions": SUBSCRIPTIONS[:4]}, PAYMENT_KEYS) is None
    # five of one merchant's own plan say nothing of what sort of merchant sells it
    assert unusual_pairing({**added, "plan_name": "Pro plan"}, "subscriptions", tables, PAYMENT_KEYS) is None
    # a plan filed under merchants of several sorts says nothing of where it belongs
    spread = [*SUBSCRIPTIONS, {"subscription_id": "sub_x", "merchant_id": "mer_5", "plan_name": "Premium streaming"}]
    assert unusual_pairing(added, "subscriptions", {**tables, "subscriptions": spread}, PAYMENT_KEYS) is None
