"""Gold writes that see the persona's existing rows (the blind annotation of seed 7373, DATA-BLIND and
BAD-HIDDEN): a reading that only rises is drawn beyond the latest one, a create on top of a live row is
caught, and a detail only the staff side knows is never the customer's. Hand-made rows, no servers."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from envfarm.clients.coherence import overlapping_row
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.graph import OutField, Param, ToolSpec, build_graph
from envfarm.clients.grounding import (
    ArgSource,
    ServerWorld,
    acted_rows,
    beyond_readings,
    latest_reading,
    one_row_values,
    past_current_reading,
    pointed_rows,
    same_place,
    staff_side,
)
from envfarm.clients.sampling import Catalog
from envfarm.clients.synthesize import SynthesisOptions, synthesize

Row = dict[str, Any]
REPO = Path(__file__).resolve().parents[1]


def _fuel_logs() -> list[Row]:
    rows: list[Row] = []
    for v, start in (("veh_1", 560000), ("veh_2", 465000), ("veh_3", 120000)):
        for day, km in ((1, 0), (4, 380), (10, 415)):
            rows.append(
                {
                    "log_id": f"fl_{v}_{day}",
                    "vehicle_id": v,
                    "logged_at": f"2026-04-{day:02d}T08:00:00Z",
                    "odometer_km": start + km,
                    "liters": 300.0 - day,  # not a reading: falls
                    "station": "Galp Alverca",
                }
            )
    return rows


def test_an_odometer_rising_per_vehicle_is_a_reading_and_litres_are_not() -> None:
    rows = _fuel_logs()
    assert latest_reading(rows, "odometer_km", "vehicle_id", "veh_1") == (560415.0, 380.0)
    assert latest_reading(rows, "liters", "vehicle_id", "veh_1") is None
    # two vehicles with readings are not evidence enough (a column that rose by chance)
    assert latest_reading([r for r in rows if r["vehicle_id"] != "veh_3"], "odometer_km", "vehicle_id", "veh_1") is None


def test_a_fuel_log_copying_the_latest_odometer_is_moved_beyond_it_over_many_seeds() -> None:
    rows = _fuel_logs()
    for seed in range(50):
        args: dict[str, Any] = {"vehicle_id": "veh_2", "odometer_km": 465415, "liters": 120.0}
        source: dict[str, ArgSource] = {"vehicle_id": "output", "odometer_km": "seed", "liters": "seed"}
        beyond_readings(random.Random(seed), {"fuel_logs": rows}, args, source)
        assert 465415 < args["odometer_km"] <= 465415 + 570 and isinstance(args["odometer_km"], int)
        assert source["odometer_km"] == "free" and args["liters"] == 120.0
    ahead: dict[str, Any] = {"vehicle_id": "veh_2", "odometer_km": 470000}
    beyond_readings(random.Random(0), {"fuel_logs": rows}, ahead, {"odometer_km": "persona"})
    assert ahead["odometer_km"] == 470000  # a reading already beyond the latest stays
    mine: dict[str, Any] = {"vehicle_id": "veh_3", "odometer_km": 120380}  # the persona's own earlier log
    beyond_readings(random.Random(0), {"fuel_logs": rows}, mine, {"odometer_km": "persona"})
    assert mine["odometer_km"] > 120415


def _event(event_id: str, start: str, end: str, status: str = "confirmed") -> Row:
    return {
        "event_id": event_id,
        "calendar_id": "cal_grace",
        "title": "1:1 Grace / Daniel",
        "starts_at": f"2026-04-30T{start}:00Z",
        "ends_at": f"2026-04-30T{end}:00Z",
        "status": status,
    }


def test_an_event_on_top_of_a_live_one_in_the_same_calendar_overlaps() -> None:
    seed = [_event("evt_1", "09:30", "10:30"), _event("evt_2", "14:00", "15:00", "cancelled")]
    new = {**_event("evt_9", "10:00", "11:00"), "title": "1:1 Grace / Lucas"}
    assert overlapping_row(new, seed, "event_id") == seed[0]
    assert overlapping_row(_event("evt_9", "10:30", "11:00"), seed, "event_id") is None  # back to back
    assert overlapping_row(_event("evt_9", "14:00", "15:00"), seed, "event_id") is None  # that one is cancelled
    assert overlapping_row({**new, "calendar_id": "cal_other"}, seed, "event_id") is None


def _invoice(invoice_id: str, issued: str, status: str = "draft", client: str = "cli_north") -> Row:
    return {"invoice_id": invoice_id, "client_id": client, "issued_on": issued, "status": status, "total": 0.0}


def test_a_second_draft_of_the_same_date_for_the_same_client_duplicates_it() -> None:
    seed = [_invoice("inv_1", "2026-04-11"), _invoice("inv_2", "2026-04-02", "paid"), _invoice("inv_3", "2026-04-05")]
    seed += [_invoice(f"inv_p{i}", "2026-03-0{i}", "paid", f"cli_{i}") for i in range(1, 6)]
    assert overlapping_row(_invoice("inv_9", "2026-04-11"), seed, "invoice_id") == seed[0]
    assert overlapping_row(_invoice("inv_9", "2026-04-12"), seed, "invoice_id") is None
    assert overlapping_row(_invoice("inv_9", "2026-04-11", client="cli_south"), seed, "invoice_id") is None


def test_a_message_in_the_same_thread_the_same_day_is_new_content() -> None:
    seed = [
        {
            "message_id": f"m{i}",
            "thread_id": "thr_1",
            "sent_on": "2026-04-03",
            "kind": "reply",
            "body": f"Text {i} about a thing",
        }
        for i in range(4)
    ]
    new = {**seed[0], "message_id": "m9", "body": "Thanks, I will update the deck tonight."}
    assert overlapping_row(new, seed, "message_id") is None


def _fill_spec() -> ToolSpec:
    return ToolSpec(
        server="pharmacy",
        name="fill_prescription",
        description="Fill a prescription",
        read_only=False,
        params=[
            Param(name="rx_id", type="string", required=True, ref="prescriptions.rx_id", user_known=False),
            Param(name="pharmacist", type="string", required=True),
            Param(name="reason", type="string", required=True),
            Param(name="quantity", type="integer", required=True),
        ],
    )


def test_a_required_detail_no_way_of_asking_names_is_the_staffs() -> None:
    source: dict[str, ArgSource] = {"rx_id": "output", "pharmacist": "seed", "reason": "free", "quantity": "seed"}
    assert staff_side(_fill_spec(), {"rx_id"}, source) == ["pharmacist"]
    assert staff_side(_fill_spec(), {"rx_id", "pharmacist"}, source) == []  # a way of asking names it
    assert staff_side(_fill_spec(), {"rx_id"}, {**source, "pharmacist": "output"}) == []  # a lookup gave it


def test_a_quote_whose_price_depends_on_the_guest_is_sampled_with_the_guest_lookup() -> None:
    find_guest = ToolSpec(
        server="hotel",
        name="find_guest",
        description="Find a guest",
        read_only=True,
        params=[Param(name="email", type="string", required=True)],
        outputs=[OutField(name="guest_id", entity="Guest", ref="guests.guest_id", user_known=False)],
    )
    room = Param(name="type_id", type="string", required=True, ref="room_types.type_id", user_known=False)
    guest = Param(name="guest_id", type="string", ref="guests.guest_id", user_known=False)
    quote = ToolSpec(
        server="hotel",
        name="quote_stay",
        description="Price a stay",
        read_only=True,
        params=[room, guest.model_copy(update={"description": "Guest id from find_guest, for their loyalty discount"})],
    )
    plain = quote.model_copy(update={"name": "list_stays", "params": [room, guest]})
    catalog = Catalog([find_guest, quote, plain], build_graph([find_guest, quote, plain]))
    assert [p.name for p in catalog.lookups(quote)] == ["type_id", "guest_id"]
    assert [p.name for p in catalog.lookups(plain)] == ["type_id"]  # a mere filter stays optional


def _rental_world() -> ServerWorld:
    vehicles = [{"vehicle_id": f"veh_{i}", "plate": f"AB-{i}", "odometer_km": 20000 + 17000 * i} for i in range(5)]
    rentals = [
        {"rental_id": f"rnt_{i}", "vehicle_id": f"veh_{i}", "odometer_out": 20000 + 17000 * i, "daily_rate": 50.0}
        for i in range(5)
    ]
    return ServerWorld(
        server="car_rental",
        controlled=True,
        tables={"vehicles": vehicles, "rentals": rentals},
        keys={"vehicles": "vehicle_id", "rentals": "rental_id"},
    )


def _return_spec() -> ToolSpec:
    return ToolSpec(
        server="car_rental",
        name="return_vehicle",
        description="Return a car",
        read_only=False,
        params=[
            Param(name="rental_id", type="string", required=True, ref="rentals.rental_id", user_known=False),
            Param(name="odometer_km", type="integer", required=True, description="Odometer reading at return in km"),
            Param(name="days", type="integer", description="Days charged"),
        ],
    )


def test_a_reading_drawn_from_another_car_goes_on_from_the_car_of_the_rental_over_many_seeds() -> None:
    world = _rental_world()
    # the rental the write keys, then the vehicle it points at
    assert [(r.get("rental_id"), r["vehicle_id"]) for r in acted_rows(world, {"rental_id": "rnt_1"})] == [
        ("rnt_1", "veh_1"),
        (None, "veh_1"),
    ]
    for seed in range(50):
        # 88000 is veh_4's odometer: a return 51,000 km after pickup
        args: dict[str, Any] = {"rental_id": "rnt_1", "odometer_km": 88000, "days": 3}
        source: dict[str, ArgSource] = {"rental_id": "output", "odometer_km": "seed", "days": "seed"}
        past_current_reading(random.Random(seed), world, _return_spec(), args, source)
        assert 37000 < args["odometer_km"] <= 37000 + 370 and isinstance(args["odometer_km"], int)
        assert args["days"] == 3  # not a reading
    said: dict[str, Any] = {"rental_id": "rnt_1", "odometer_km": 37400}
    past_current_reading(random.Random(0), world, _return_spec(), said, {"odometer_km": "persona"})
    assert said["odometer_km"] == 37400  # what the user said, beyond the pickup reading, stays
    same: dict[str, Any] = {"rental_id": "rnt_1", "odometer_km": 37000}
    past_current_reading(random.Random(0), world, _return_spec(), same, {"odometer_km": "persona"})
    assert same["odometer_km"] > 37000  # the reading at pickup again is no new reading


def test_the_details_of_a_write_come_from_one_row_of_the_same_merchant_over_many_seeds() -> None:
    subscriptions = [
        {"subscription_id": f"sub_{i}", "customer_id": f"cus_{i % 3}", "merchant_id": f"mer_{i % 4}"}
        | {"plan_name": f"Plan {i % 4}", "amount": 10.0 + i % 4}
        for i in range(12)
    ]
    world = ServerWorld(
        server="payments",
        controlled=True,
        tables={"subscriptions": subscriptions, "customers": [{"customer_id": "cus_0"}]},
        keys={"subscriptions": "subscription_id", "customers": "customer_id"},
    )
    spec = ToolSpec(
        server="payments",
        name="create_subscription",
        description="Subscribe",
        read_only=False,
        params=[
            Param(name="customer_id", type="string", required=True, ref="customers.customer_id", user_known=False),
            Param(name="merchant_id", type="string", required=True, user_known=False),
            Param(name="plan_name", type="string", required=True),
            Param(name="amount", type="number", required=True),
        ],
    )
    mine = {"subscriptions": [r for r in subscriptions if r["customer_id"] == "cus_0"], "customers": []}
    for seed in range(40):
        rng = random.Random(seed)
        args: dict[str, Any] = {
            "customer_id": "cus_0",
            "merchant_id": "mer_2",
            "plan_name": f"Plan {rng.randrange(4)}",
            "amount": 10.0 + rng.randrange(4),
        }
        source: dict[str, ArgSource] = dict.fromkeys(args, "seed") | {"customer_id": "output", "merchant_id": "output"}
        one_row_values(rng, world, spec, args, source, mine)
        assert (args["plan_name"], args["amount"]) == ("Plan 2", 12.0)  # mer_2's plan at mer_2's price


def test_a_second_subscription_to_a_plan_the_customer_already_pays_is_a_duplicate() -> None:
    held = [
        {"subscription_id": f"sub_{i}", "customer_id": f"cus_{i}", "plan_name": f"Plan {i}", "status": "active"}
        for i in range(6)
    ]
    held.append({"subscription_id": "sub_x", "customer_id": "cus_1", "plan_name": "Plan 9", "status": "cancelled"})
    new = {"subscription_id": "sub_new", "customer_id": "cus_1", "plan_name": "Plan 1", "status": "active"}
    assert overlapping_row(new, held, "subscription_id") == held[1]
    assert overlapping_row({**new, "plan_name": "Plan 2"}, held, "subscription_id") is None
    assert overlapping_row({**new, "plan_name": "Plan 9"}, held, "subscription_id") is None  # that one is cancelled


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
async def test_soak_kept_writes_fit_the_persona_data(seed: int) -> None:
    """Over the servers of the seed-7373 DATA-BLIND findings, every kept task's gold: a reading goes on from the
    car's own (never repeats it, never jumps by another car's odometer), a fuel bill costs what fuel costs, a
    new subscription is to no plan the customer already pays, a cart is at a store of the customer's city, an
    order goes to a new address in its own city, a task with no write the desk's identification rule governs
    holds back no code of some other row, and a book named by its title is not looked up by an ISBN."""
    servers = ["fleet", "car_rental", "payments", "grocery_delivery", "hotel", "library"]
    async with Connections(farm_targets(REPO, servers)) as farm:
        seeds = {s: json.loads((REPO / "servers" / s / "seed.json").read_text()) for s in servers}
        for server in servers:
            synthesis = await synthesize(SynthesisOptions(n=10, seed=seed, servers=[server], max_servers=1), farm)
            rows = seeds[server]
            for task in synthesis.tasks:
                for call in task.gold_calls:
                    args = call.arguments
                    if call.tool in ("log_fuel", "return_vehicle"):
                        vehicle = args.get("vehicle_id") or next(
                            r["vehicle_id"] for r in rows["rentals"] if r["rental_id"] == args["rental_id"]
                        )
                        before = next(v["odometer_km"] for v in rows["vehicles"] if v["vehicle_id"] == vehicle)
                        assert before < args["odometer_km"] <= before * 1.02 + 1000, (task.id, args)
                    if call.tool == "log_fuel":
                        assert 0.5 <= args["cost"] / args["liters"] <= 4, (task.id, args)
                    if call.tool == "create_subscription":
                        held = {
                            r["plan_name"]
                            for r in rows["subscriptions"]
                            if r["customer_id"] == args["customer_id"] and r["status"] not in ("cancelled", "canceled")
                        }
                        assert args["plan_name"] not in held, (task.id, args)
                    if call.tool == "update_delivery_instructions" and "delivery_address" in args:
                        order = next(o for o in rows["orders"] if o["order_id"] == args["order_id"])
                        city = order["delivery_address"].rsplit(", ", 1)[1]
                        assert args["delivery_address"].endswith(f", {city}"), (task.id, args)
                    if call.tool == "open_cart":
                        city = next(s["city"] for s in rows["stores"] if s["store_id"] == args["store_id"])
                        home = next(c["address"] for c in rows["customers"] if c["customer_id"] == args["customer_id"])
                        assert home.endswith(f", {city}"), (task.id, args, home)
                said = " ".join([task.opening_message, *(t.message for t in task.turns)])
                for title in rows.get("titles", []):
                    isbn = f"the isbn is {title['isbn']}"
                    assert not (title["title"] in said and any(h.description == isbn for h in task.hidden_facts)), (
                        task.id
                    )
                if server == "hotel" and not any(c.is_write for c in task.gold_calls):
                    assert not any("confirmation" in h.description for h in task.hidden_facts), task.id


def test_the_rows_a_persona_points_at_are_the_stores_of_their_carts() -> None:
    stores = [{"store_id": f"sto_{c}", "city": c} for c in ("Lisbon", "Toronto", "Berlin")]
    carts = [{"cart_id": "crt_1", "customer_id": "cus_1", "store_id": "sto_Toronto", "status": "open"}]
    world = ServerWorld(
        server="grocery_delivery",
        controlled=True,
        tables={"stores": stores, "carts": carts, "customers": [{"customer_id": "cus_1"}]},
        keys={"stores": "store_id", "carts": "cart_id", "customers": "customer_id"},
    )
    mine = {"customers": [{"customer_id": "cus_1"}], "carts": carts}
    assert pointed_rows(world, mine) == {"stores": [stores[1]]}
    assert pointed_rows(world, {"customers": [{"customer_id": "cus_1"}]}) == {}


def test_a_new_address_for_an_order_is_in_the_city_the_order_is_delivered_in_over_many_seeds() -> None:
    orders = [
        {"order_id": f"ord_{i}", "store_id": f"sto_{i % 2}", "delivery_address": f"{i} Main Street, {city}"}
        for i, city in enumerate(["Seattle", "Lisbon", "Seattle", "Lisbon", "Seattle", "Lisbon"])
    ]
    world = ServerWorld(server="grocery", controlled=True, tables={"orders": orders}, keys={"orders": "order_id"})
    for seed in range(30):
        args: dict[str, Any] = {"order_id": "ord_0", "delivery_address": "3 Main Street, Lisbon"}
        same_place(random.Random(seed), world, args, {"order_id": "output", "delivery_address": "seed"})
        assert args["delivery_address"] in {"2 Main Street, Seattle", "4 Main Street, Seattle"}
    said: dict[str, Any] = {"order_id": "ord_0", "delivery_address": "9 Elm Street, Lisbon"}
    same_place(random.Random(0), world, said, {"delivery_address": "persona"})
    assert said["delivery_address"] == "9 Elm Street, Lisbon"  # the user's own words stay
