"""Deeper chains that stay needed and motivated: `Catalog.reach` is the size of the largest plan the topology
sampler can build (goals are weighted by it, so an inflated reach favours goals whose plans are short), a shallow
plan is carried on by a follow-up more often, and a refusal's check is a chain (the asker, their own rows, the row
by its code) rather than two lookups side by side."""

from __future__ import annotations

import random

import pytest
from conftest import REPO

from envfarm.clients.audit import chain_depth, rows_of
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.deepen import asker_row, own_rows_reads
from envfarm.clients.graph import OutField, Param, ToolSpec, build_graph
from envfarm.clients.grounding import ServerWorld
from envfarm.clients.sampling import Bind, Catalog, Step, TopologySampler, Unresolvable, linked_steps
from envfarm.clients.synthesize import SynthesisOptions, synthesize


def _id(name: str, table: str, required: bool = True, of: str = "") -> Param:
    """An id input on a column of `table` that names a row of `of` (its own table when not given)."""
    return Param(name=name, required=required, ref=f"{of or table}.{name}", column=f"{table}.{name}", user_known=False)


def _out(name: str, table: str) -> OutField:
    return OutField(name=name, ref=f"{table}.{name}", entity=table, user_known=False)


def _desk() -> list[ToolSpec]:
    """A rental desk: find the driver by email, their rentals, the branches; a rental's extras; a catalog of
    extras; and writes on a rental. Lookups feed each other both ways (a rental names its driver), so a walk that
    reuses a remembered reach goes round in circles."""

    def tool(name: str, params: list[Param], outputs: list[OutField], read: bool = True) -> ToolSpec:
        return ToolSpec(server="desk", name=name, read_only=read, annotated=True, params=params, outputs=outputs)

    email = Param(name="email", column="drivers.email", user_known=True)
    return [
        tool("find_driver", [email], [_out("driver_id", "drivers")]),
        tool(
            "find_rental",
            [_id("driver_id", "rentals", False, "drivers"), _id("branch_id", "rentals", False, "branches")],
            [_out("rental_id", "rentals"), _out("driver_id", "drivers"), _out("branch_id", "branches")],
        ),
        tool("list_branches", [Param(name="city", column="branches.city")], [_out("branch_id", "branches")]),
        tool("list_extras", [Param(name="name", column="extras.name")], [_out("extra_id", "extras")]),
        tool("cancel_rental", [_id("rental_id", "rentals")], [_out("rental_id", "rentals")], read=False),
        tool(
            "add_extra",
            [_id("rental_id", "lines", of="rentals"), _id("extra_id", "lines", of="extras")],
            [_out("line_id", "lines"), _out("rental_id", "rentals")],
            read=False,
        ),
        tool(
            "change_dropoff",
            [_id("rental_id", "rentals"), _id("branch_id", "rentals", of="branches")],
            [_out("rental_id", "rentals")],
            read=False,
        ),
    ]


def _sampled_sizes(catalog: Catalog, spec: ToolSpec, seeds: int) -> set[int]:
    sampler = TopologySampler(catalog)
    sizes = set()
    for seed in range(seeds):
        steps: list[Step] = []
        try:
            sampler._need(random.Random(seed), steps, spec, 0, set(), 0)
        except Unresolvable:
            continue
        sizes.add(len({s.tool for s in steps}))  # a lookup made twice shows nothing new: pruned
    return sizes


def test_reach_is_the_largest_plan_the_sampler_builds() -> None:
    specs = _desk()
    catalog = Catalog(specs, build_graph(specs))
    reach = {s.name: catalog.reach(s) for s in specs}
    # cancel: the driver, their rentals, the cancel; add an extra: those and the extra looked up (each once)
    assert reach["cancel_rental"] == 3 and reach["add_extra"] == 4 and reach["find_driver"] == 1
    for spec in specs:
        sizes = _sampled_sizes(catalog, spec, 300)
        # never a plan longer than the reach, and the reach is a plan the sampler does build
        assert max(sizes) == reach[spec.name], (spec.name, sizes)


def test_producer_options_are_the_sampler_s_and_the_reach_s() -> None:
    specs = _desk()
    catalog = Catalog(specs, build_graph(specs))
    cancel = catalog.spec("desk", "cancel_rental")
    options = catalog.producer_options(cancel, cancel.param("rental_id"))
    assert [o[0].name for o in options] == ["find_rental"]
    assert catalog.producer_options(cancel, cancel.param("rental_id"), {options[0][0].key}) == []


def test_linked_steps_counts_the_group_of_a_step() -> None:
    steps = [
        Step(server="desk", tool="find_driver"),
        Step(server="desk", tool="find_rental", binds={"driver_id": Bind(step=0, fields=["driver_id"])}),
        Step(server="desk", tool="list_extras"),
        Step(server="desk", tool="cancel_rental", binds={"rental_id": Bind(step=1, fields=["rental_id"])}),
        Step(server="desk", tool="get_refund", binds={"rental_id": Bind(step=3, fields=["rental_id"])}),
    ]
    assert linked_steps(steps, 3) == 4 and linked_steps(steps, 0) == 4 and linked_steps(steps, 2) == 1


def test_a_shallow_plan_is_followed_more_often_than_a_deep_one() -> None:
    """Cancelling a rental (three linked steps) is carried on by a follow-up that reads what the cancellation made
    (its refund), at the deep follow odds; the odds are their own knob, so a sampler told 0 never follows. A read
    of the rental the cancel took (its extras) is never the follow-up: the writer would not ask it."""
    specs = [
        *(s for s in _desk() if s.name != "cancel_rental"),
        ToolSpec(
            server="desk",
            name="cancel_rental",
            read_only=False,
            annotated=True,
            params=[_id("rental_id", "rentals")],
            outputs=[_out("rental_id", "rentals"), _out("refund_id", "refunds")],
        ),
        ToolSpec(
            server="desk",
            name="get_refund",
            read_only=True,
            annotated=True,
            params=[_id("refund_id", "refunds")],
            outputs=[_out("refund_id", "refunds")],
        ),
        ToolSpec(
            server="desk",
            name="list_rental_extras",
            read_only=True,
            annotated=True,
            params=[_id("rental_id", "lines", of="rentals")],
            outputs=[_out("line_id", "lines")],
        ),
    ]
    catalog = Catalog(specs, build_graph(specs))

    never = TopologySampler(catalog, deep_follow_share=0.0, follow_share=0.0)
    always = TopologySampler(catalog, deep_follow_share=1.0, follow_share=0.0)
    shallow_cancels = 0
    for seed in range(50):
        a: list[Step] = []
        b: list[Step] = []
        never._goal(random.Random(seed), a, "desk", 0)
        always._goal(random.Random(seed), b, "desk", 0)
        assert not any(s.role == "follow" for s in a)
        goal = next(s for s in b if s.role == "goal")
        follows = [s for s in b if s.role == "follow"]
        if goal.tool == "cancel_rental":
            shallow_cancels += 1
            # the refund the cancellation made, read by the id it returned
            assert [(s.tool, s.binds["refund_id"].step) for s in follows] == [("get_refund", b.index(goal))]
    assert shallow_cancels >= 3


def _world() -> ServerWorld:
    return ServerWorld(
        server="desk",
        controlled=True,
        tables={
            "drivers": [{"driver_id": "drv_1", "email": "ana@example.com"}, {"driver_id": "drv_2", "email": "b@x.io"}],
            "rentals": [{"rental_id": "rnt_1", "driver_id": "drv_2", "branch_id": "br_1", "code": "RA100"}],
            "branches": [{"branch_id": "br_1", "city": "Vienna"}],
        },
        keys={"drivers": "driver_id", "rentals": "rental_id", "branches": "branch_id"},
    )


def test_own_rows_reads_lists_the_asker_s_rows_by_their_id() -> None:
    specs = _desk()
    found = own_rows_reads(specs, _world(), "rentals", {"driver_id": "drv_1", "email": "ana@example.com"})
    assert [(s.name, args) for s, args in found] == [("find_rental", {"driver_id": "drv_1"})]
    # a table no read lists by a person, or an asker row without their key: nothing to chain
    assert own_rows_reads(specs, _world(), "branches", {"driver_id": "drv_1"}) == []
    assert own_rows_reads(specs, _world(), "rentals", {"email": "ana@example.com"}) == []
    rows = [{"driver_id": "drv_2", "email": "b@x.io"}, {"driver_id": "drv_1", "email": "ana@example.com"}]
    output = {"drivers": rows}
    assert asker_row(output, "ana@example.com") == {"driver_id": "drv_1", "email": "ana@example.com"}
    assert asker_row(output, "") is None


@pytest.mark.slow
async def test_a_refusal_checks_the_asker_s_own_rows_before_the_row_by_its_code() -> None:
    """Over seeds on desks whose third-party rule makes refusals, every refusal's gold finds the asker, lists
    their own rows by the id that lookup returned (a chain), and finds the row by its code; the row is not among
    the asker's."""
    servers = ["car_rental", "library"]
    refusals = []
    async with Connections(farm_targets(REPO, servers)) as farm:
        for seed in (21, 22):
            synthesis = await synthesize(SynthesisOptions(servers=servers, n=4, seed=seed, refusal_share=1.0), farm)
            refusals += [t for t in synthesis.tasks if any(c.kind == "must_refuse" for c in t.policy_checks)]
    assert refusals
    for task in refusals:
        depth = chain_depth(task)
        assert len(task.gold_calls) == 3 and depth.depth == 3 and depth.feeds[1] == [0], task.id
        asker = asker_row(task.gold_calls[0].output, task.persona.email or "")
        assert asker is not None, task.id
        (listed,) = task.gold_calls[1].arguments.values()  # their own rows, by the id their lookup returned
        assert listed in asker.values()
        # the row the code finds carries someone else's id, never the asker's
        assert not any(listed in row.values() for row in rows_of(task.gold_calls[2].output)), task.id


def test_a_follow_up_never_works_on_the_row_the_goal_took_only_on_who_the_person_is() -> None:
    """After "book me the 10:00 slot", a follow-up may change the person's own record ("also, my phone has
    changed"), never read or write the slot the booking took ("join #sales; also archive #sales")."""

    def tool(name: str, params: list[Param], outputs: list[OutField], read: bool = True) -> ToolSpec:
        return ToolSpec(server="desk", name=name, read_only=read, annotated=True, params=params, outputs=outputs)

    email = Param(name="email", column="people.email", user_known=True)
    specs = [
        tool("find_person", [email], [_out("person_id", "people")]),
        tool("list_slots", [Param(name="day", column="slots.day")], [_out("slot_id", "slots")]),
        tool(
            "book",
            [_id("person_id", "bookings", of="people"), _id("slot_id", "bookings", of="slots")],
            [_out("booking_id", "bookings"), _out("person_id", "people"), _out("slot_id", "slots")],
            read=False,
        ),
        tool("get_slot", [_id("slot_id", "slots")], [_out("slot_id", "slots")]),
        tool("close_slot", [_id("slot_id", "slots")], [_out("slot_id", "slots")], read=False),
        tool("update_contact", [_id("person_id", "people")], [_out("person_id", "people")], read=False),
    ]
    catalog = Catalog(specs, build_graph(specs))
    sampler = TopologySampler(catalog)
    plan = [
        Step(server="desk", tool="find_person", identify=True),
        Step(server="desk", tool="list_slots", identify=True),
        Step(
            server="desk",
            tool="book",
            binds={"person_id": Bind(step=0, fields=["person_id"]), "slot_id": Bind(step=1, fields=["slot_id"])},
            role="goal",
        ),
    ]
    followed = set()
    for seed in range(40):
        steps = list(plan)
        sampler._follow(random.Random(seed), steps, 2, 0)
        followed |= {s.tool for s in steps[3:]}
    assert followed == {"update_contact"}
