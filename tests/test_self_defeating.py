"""Chains that defeat themselves are dropped: a later write that undoes an earlier goal (judged on state
diffs), details drawn from different rows of one table, and a reason the data contradicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envfarm.clients.coherence import addresses_self, mixed_rows, switches_to_current, unsupported_duplicate
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.effects import lifecycle_columns, undone
from envfarm.clients.graph import Param, ToolSpec
from envfarm.clients.synthesize import SynthesisOptions, synthesize
from envfarm.servers.runtime.control import TableDiff

REPO = Path(__file__).resolve().parents[1]


def _diff(**tables: dict[str, list[dict[str, Any]]]) -> dict[str, TableDiff]:
    return {t: TableDiff(**d) for t, d in tables.items()}


def test_a_session_booked_then_cancelled_by_a_later_write_is_undone() -> None:
    booked = {"session_id": "pts_1", "member_id": "mem_1", "status": "scheduled", "price": 60.0}
    after_book = _diff(pt_sessions={"added": [booked]})
    after_cancel = _diff(
        pt_sessions={"added": [{**booked, "status": "cancelled"}]},
        members={"updated": [{"key": "mem_1", "before": {"status": "active"}, "after": {"status": "cancelled"}}]},
    )
    found = undone([None, after_book, after_cancel], after_cancel, {"status"})
    assert [(u.call, u.table, u.how) for u in found] == [(1, "pt_sessions", "moved status on")]


def test_a_move_then_a_cancel_of_the_same_booking_is_undone_though_the_new_dates_stay() -> None:
    moved = {"key": "res_1", "before": {"arrival": "2026-05-01"}, "after": {"arrival": "2026-05-08"}}
    cancelled = {
        "key": "res_1",
        "before": {"arrival": "2026-05-01", "status": "confirmed"},
        "after": {"arrival": "2026-05-08", "status": "cancelled"},
    }
    after_move = _diff(reservations={"updated": [moved]})
    end = _diff(reservations={"updated": [cancelled]})
    found = undone([after_move, end], end, {"status"})
    assert [(u.call, u.how) for u in found] == [(0, "moved status on")]


def test_a_value_put_back_and_a_removed_row_are_undone() -> None:
    untrashed = _diff(
        conversations={"updated": [{"key": "c1", "before": {"folder": "trash"}, "after": {"folder": "inbox"}}]}
    )
    end: dict[str, TableDiff] = {}  # trashed again: the seed's state
    assert [u.how for u in undone([untrashed, end], end, set())] == ["reverted folder"]
    line = {"line_id": "l1", "invoice_id": "i1", "description": "Audit"}
    added = _diff(invoice_lines={"added": [line]})
    assert [u.how for u in undone([added, {}], {}, set())] == ["removed"]


def test_a_write_the_server_took_that_changed_nothing_is_reported() -> None:
    """Seats changed to the number booked, then the booking cancelled: the first goal asked for no change."""
    cancelled = {"key": "b1", "before": {"status": "confirmed"}, "after": {"status": "cancelled"}}
    end = _diff(bookings={"updated": [cancelled]})
    assert [(u.call, u.how) for u in undone([{}, end], end, {"status"})] == [(0, "changed nothing")]


def test_leaving_a_channel_then_joining_it_again_is_undone_under_a_new_key() -> None:
    membership = {"channel_member_id": "cm_1", "channel_id": "ch_1", "member_id": "m_1", "added_by": "m_9"}
    left = _diff(channel_members={"removed": [membership]})
    again = {"channel_member_id": "cm_2", "channel_id": "ch_1", "member_id": "m_1", "added_by": "m_1"}
    end = _diff(channel_members={"removed": [membership], "added": [again]})
    assert [(u.call, u.how) for u in undone([None, left, end], end, set())] == [(1, "added again")]
    elsewhere = _diff(channel_members={"removed": [membership], "added": [{**again, "channel_id": "ch_2"}]})
    assert undone([None, left, elsewhere], elsewhere, set()) == []


def test_numbers_that_grow_and_a_row_built_on_survive() -> None:
    """An invoice created then given a line: its total moves on, which is the point, not an undo."""
    invoice = {"invoice_id": "i9", "status": "draft", "total": 0.0, "notes": "PO 4471"}
    created = _diff(invoices={"added": [invoice]})
    line = {"line_id": "l9", "invoice_id": "i9", "quantity": 2.0}
    end = _diff(invoices={"added": [{**invoice, "total": 240.0}]}, invoice_lines={"added": [line]})
    assert undone([created, end], end, {"status"}) == []


def test_lifecycle_columns_come_from_enum_params_and_from_status_like_seed_values() -> None:
    spec = ToolSpec(server="s", name="list_orders", read_only=True, params=[Param(name="state", enum=["a", "b"])])
    rows = [
        {"id": f"o{i}", "phase": ["open", "closed", "partially_paid"][i % 3], "note": f"Note {i}"} for i in range(9)
    ]
    assert lifecycle_columns([spec], {"orders": rows}) == {"state", "phase"}


DISPUTES = [
    {"dispute_id": "d1", "reason": "not_received", "details": "Tracking has not moved for two weeks."},
    {"dispute_id": "d2", "reason": "damaged", "details": "The listing said like new but there are deep scratches."},
]


def test_a_reason_and_details_from_different_rows_are_mixed() -> None:
    mixed = {"sale_id": "s1", "reason": "not_received", "details": DISPUTES[1]["details"]}
    sources = {"sale_id": "output", "reason": "seed", "details": "seed"}
    assert mixed_rows(mixed, sources, {"disputes": DISPUTES}) == ("disputes", ["details", "reason"])
    one_story = {**mixed, "reason": "damaged"}
    assert mixed_rows(one_story, sources, {"disputes": DISPUTES}) is None
    said = {**sources, "details": "persona"}  # the user's own words are not drawn by the writer
    assert mixed_rows(mixed, said, {"disputes": DISPUTES}) is None


CHARGES = [
    {"charge_id": "ch1", "customer_id": "c1", "merchant_id": "m1", "method_id": "p1", "amount": 32.53},
    {"charge_id": "ch2", "customer_id": "c1", "merchant_id": "m1", "method_id": "p1", "amount": 32.53},
    {"charge_id": "ch3", "customer_id": "c1", "merchant_id": "m2", "method_id": "p1", "amount": 32.53},
]


def test_a_duplicate_needs_a_twin_charge() -> None:
    keys = {"charges": "charge_id"}
    tables = {"charges": CHARGES}
    assert unsupported_duplicate({"charge_id": "ch3", "reason": "duplicate"}, tables, keys) == "charges ch3"
    assert unsupported_duplicate({"charge_id": "ch1", "reason": "duplicate"}, tables, keys) is None
    assert unsupported_duplicate({"charge_id": "ch3", "reason": "requested_by_customer"}, tables, keys) is None


Rows = dict[str, list[dict[str, Any]]]


async def _replay(farm: Connections, task: Any) -> list[tuple[Any, Rows, Rows]]:
    """Replay the gold on fresh episodes: per write, (the call, the server's rows right after it, at the end)."""
    replayed: list[tuple[Any, Rows, Rows]] = []
    for server in task.servers:
        async with farm.episode(server, f"soak-{task.id}", principal=task.principal) as episode:
            after: list[tuple[Any, Rows]] = []
            for call in task.gold_calls:
                if call.server == server:
                    assert not (await episode.call_tool(call.tool, call.arguments)).is_error, call.tool
                    if call.is_write:
                        state = await episode.state(rows=True)
                        assert state is not None and state.state is not None
                        after.append((call, state.state))
            final = await episode.state(rows=True)
            assert final is not None and final.state is not None
            replayed += [(call, rows, final.state) for call, rows in after]
    return replayed


def _row(rows: Rows, output: dict[str, Any]) -> tuple[str, str] | None:
    """(table, key column) of the row a write returned: its key is in the output, and it shares the most
    columns with it (a subscription, not the list whose id it also carries)."""
    tables = [(t, next(iter(rs[0]))) for t, rs in rows.items() if rs and next(iter(rs[0])) in output]
    return max(tables, key=lambda tk: len(set(rows[tk[0]][0]) & set(output)), default=None)


def _changed_later(call: Any, after: Rows, final: Rows) -> list[str]:
    """Fields of the row a write returned whose text, flag or date differs between right after the write and
    the end (or the row came or went in between)."""
    output = call.output if isinstance(call.output, dict) else {}
    found = _row(after, output) or _row(final, output)
    if found is None:
        return []
    table, key = found
    then = next((r for r in after.get(table, []) if r[key] == output[key]), None)
    now = next((r for r in final.get(table, []) if r[key] == output[key]), None)
    if then is None or now is None:
        return [] if then is now else ["<presence>"]
    # Numbers move on (a total grows) and so do clocks (a reply bumps the thread's last message time).
    return [f for f, v in then.items() if not isinstance(v, int | float) and not _moment(v) and now.get(f) != v]


def _moment(value: Any) -> bool:
    return isinstance(value, str) and len(value) > 10 and value[:4].isdigit() and value[10:11] == "T"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
async def test_soak_no_kept_write_is_taken_back_and_no_reason_lacks_its_data(seed: int) -> None:
    """Over servers whose goals chain into their own undoing (subscribe then unsubscribe, untrash then trash,
    book then cancel) or whose reasons need data (a duplicate refund): every kept task's writes still show
    in the end state, and every "duplicate" has its twin."""
    servers = ["newsletter", "mail", "tour_booking", "payments"]
    async with Connections(farm_targets(REPO, servers)) as farm:
        for server in servers:
            synthesis = await synthesize(SynthesisOptions(n=8, seed=seed, servers=[server], max_servers=1), farm)
            for task in synthesis.tasks:
                for call, after, final in await _replay(farm, task):
                    changed = _changed_later(call, after, final)
                    assert not changed, (task.id, call.tool, changed)
                    if "duplicate" in json.dumps(call.arguments):
                        charges = final["charges"]
                        assert (
                            unsupported_duplicate(call.arguments, {"charges": charges}, {"charges": "charge_id"})
                            is None
                        )


def test_switching_to_the_plan_already_on_file_is_no_change_but_restating_it_unnamed_is_fine() -> None:
    tables = {
        "patients": [{"patient_id": "p1", "plan_id": "pl1", "member_number": "LA-1"}],
        "plans": [{"plan_id": "pl1", "name": "Lakeshore Student Plan"}, {"plan_id": "pl2", "name": "Greenfield Gold"}],
    }
    keys = {"patients": "patient_id", "plans": "plan_id"}
    same = {"patient_id": "p1", "plan_id": "pl1", "member_number": "GR-2"}
    said = "Could you switch my insurance to Lakeshore Student Plan? My member number is GR-2."
    row = {"patient_id": "p1", "plan_id": "pl1", "member_number": "GR-2"}
    assert switches_to_current(same, row, tables, keys, said) == "patients p1: plan_id"
    assert switches_to_current(same, row, tables, keys, "My member number is now GR-2.") is None
    other = {**same, "plan_id": "pl2"}
    assert switches_to_current(other, {**row, "plan_id": "pl2"}, tables, keys, "Switch me to Greenfield Gold.") is None
    # a row the write creates (a session paid from a package that names the same student) changes nothing old
    created = {"session_id": "s9", "patient_id": "p1", "plan_id": "pl1"}
    sessions = {**tables, "sessions": [{"session_id": "s1", "patient_id": "p2", "plan_id": "pl2"}]}
    assert switches_to_current(same, created, sessions, {**keys, "sessions": "session_id"}, said) is None


def test_a_drawn_text_that_speaks_to_the_writer_is_not_theirs_to_post() -> None:
    """Another member's message to Keiko, drawn as the text Keiko posts, would have her greet herself."""
    drawn = {"body": "Keiko, the usage report is in the shared doc now.", "channel_id": "ch_1"}
    sources = {"body": "seed", "channel_id": "output"}
    assert addresses_self(drawn, sources, "Keiko Andersen") == "body"
    assert addresses_self({"body": "Hi Keiko: done."}, sources, "Keiko Andersen") == "body"
    assert addresses_self(drawn, sources, "Omar Novak") is None
    assert addresses_self({"body": "Keikos are fine, thanks."}, sources, "Keiko Andersen") is None
    assert addresses_self(drawn, {"body": "free", "channel_id": "output"}, "Keiko Andersen") == "body"
    assert addresses_self(drawn, {"body": "persona"}, "Keiko Andersen") is None  # dictated by them: theirs
