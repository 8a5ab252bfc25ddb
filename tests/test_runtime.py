"""The shared runtime, in-memory: isolation, failed calls change nothing, the control plane, and the
agent-facing tool list. Transports (stdio, HTTP, the farm host, persistence) are in test_transports.py."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EPISODE, FREE_SLOT, booking, close, reasons, reset, state
from mcp import Client
from mcp.server.mcpserver import Extension, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from envfarm.bench.hotpath import counted_statements
from envfarm.factory.spec import EnvironmentSpec
from envfarm.servers.clinic.server import DEFINITION, build
from envfarm.servers.runtime.control import ERROR_KIND_META_KEY, ControlError, TableDiff
from envfarm.servers.runtime.database import Database, Rejected
from envfarm.servers.runtime.episode_control import EpisodeControl
from envfarm.servers.runtime.episodes import EpisodeExpired, EpisodeForbidden, EpisodeIdInvalid
from envfarm.servers.runtime.pipeline import InvalidArguments, failure, kind_of
from envfarm.servers.runtime.server import ServerDefinition, ToolDefinition, build_server

PATIENT = "pat_dc63z3"


def kind(result: Any) -> str | None:
    return (result.meta or {}).get(ERROR_KIND_META_KEY)


async def test_the_tool_list_holds_only_domain_tools_with_all_four_annotations() -> None:
    spec = EnvironmentSpec.model_validate({**json.loads((DEFINITION.directory / "spec.json").read_text()), "seed": {}})
    async with Client(build()) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == [t.name for t in spec.tools]
    for tool in tools:
        assert tool.annotations is not None
        declared = tool.annotations.model_dump(
            include={"read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"}
        )
        assert declared == spec.tool(tool.name).hints().model_dump(), tool.name
        assert tool.output_schema is not None, f"{tool.name} has no output schema"


async def test_listed_schemas_advertise_entity_links_for_the_driver() -> None:
    """Data flow is discoverable over MCP alone: which param takes which entity key, and which output
    property produces it."""
    async with Client(build()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    slots = tools["list_free_slots"]
    doctor_id = slots.input_schema["properties"]["doctor_id"]
    assert doctor_id["x-envfarm-ref"] == "doctors.doctor_id"
    assert doctor_id["x-envfarm-column"] == "slots.doctor_id"
    assert doctor_id["x-envfarm-user-known"] is False
    starts_after = slots.input_schema["properties"]["starts_after"]
    assert starts_after["x-envfarm-column"] == "slots.starts_at" and starts_after["x-envfarm-user-known"] is True
    assert "x-envfarm-ref" not in starts_after
    assert slots.output_schema is not None
    slot = slots.output_schema["$defs"]["Slot"]["properties"]
    assert slot["doctor_id"]["x-envfarm-ref"] == "doctors.doctor_id"
    assert slot["slot_id"]["x-envfarm-ref"] == "slots.slot_id" and slot["slot_id"]["x-envfarm-user-known"] is False
    assert (
        slot["starts_at"] == {**slot["starts_at"], "x-envfarm-user-known": True}
        and "x-envfarm-ref" not in slot["starts_at"]
    )
    # A get's key refers to its own entity; a custom tool's explicit ref is advertised without a column.
    assert tools["get_slot"].input_schema["properties"]["slot_id"]["x-envfarm-ref"] == "slots.slot_id"
    new_slot = tools["reschedule_appointment"].input_schema["properties"]["slot_id"]
    assert new_slot == {**new_slot, "x-envfarm-ref": "slots.slot_id", "x-envfarm-user-known": False}
    assert "x-envfarm-column" not in new_slot
    # What a user says in their own words is marked as such.
    assert tools["find_patient"].input_schema["properties"]["full_name"]["x-envfarm-user-known"] is True


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_two_concurrent_in_memory_sessions_are_isolated(mode: str) -> None:
    server = build()
    async with Client(server, mode=mode) as first, Client(server, mode=mode) as second:
        # Both book the same slot: with a shared state the second booking would be refused.
        assert not (await first.call_tool("book_appointment", booking(FREE_SLOT, "first"))).is_error
        assert not (await second.call_tool("book_appointment", booking(FREE_SLOT, "second"))).is_error
        mine = await first.call_tool("list_appointments", {"patient_id": PATIENT, "status": "booked"})
        theirs = await second.call_tool("list_appointments", {"patient_id": PATIENT, "status": "booked"})
        assert "first" in reasons(mine) and "second" not in reasons(mine)
        assert "second" in reasons(theirs) and "first" not in reasons(theirs)


async def test_named_episodes_on_one_connection_are_isolated() -> None:
    async with Client(build()) as client:
        seed_hash = (await state(client)).hash
        for name in ("a", "b"):
            result = await client.call_tool("book_appointment", booking(FREE_SLOT, name), meta={EPISODE: name})
            assert not result.is_error, result.content
        for name, other in (("a", "b"), ("b", "a")):
            seen = reasons(await client.call_tool("list_appointments", {"patient_id": PATIENT}, meta={EPISODE: name}))
            assert name in seen and other not in seen
        assert (await state(client)).hash == seed_hash  # the connection's own episode saw none of it
        assert (await state(client, "a")).hash == (await state(client, "a")).hash != seed_hash


FAILED_CALLS = [
    pytest.param("book_appointment", {"patient_id": PATIENT}, "invalid_arguments", "slot_id", id="missing-argument"),
    pytest.param("get_slot", {"slot_id": 7}, "invalid_arguments", "slot_id", id="wrong-type"),
    pytest.param("search_doctors", {"specialty": "astrology"}, "invalid_arguments", "specialty", id="not-in-enum"),
    pytest.param("find_patient", {"name": "lopez"}, "invalid_arguments", "full_name", id="undeclared-argument"),
    pytest.param("book_appointment", booking(FREE_SLOT, "x", "pat_9999"), "rejected", "pat_9999", id="unknown-id"),
    pytest.param(
        "cancel_appointment",
        {"appointment_id": "apt_pz2v99", "cancel_reason": "busy"},
        "rejected",
        "not booked",
        id="broken-rule",
    ),
    pytest.param(
        "reschedule_appointment",
        {"appointment_id": "apt_ctfy96", "slot_id": "slot_aer4e9"},
        "rejected",
        "same doctor",
        id="broken-rule-custom",
    ),
    pytest.param(
        "pay_invoice", {"invoice_id": "inv_ms4fr3", "amount": 1.0}, "rejected", "amount", id="broken-rule-update"
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "error_kind", "names"), FAILED_CALLS)
async def test_a_failed_call_is_an_error_result_and_changes_nothing(
    tool: str, arguments: dict[str, Any], error_kind: str, names: str
) -> None:
    async with Client(build()) as client:
        assert not (await client.call_tool("book_appointment", booking(FREE_SLOT, "before"))).is_error
        before = await state(client)
        result = await client.call_tool(tool, arguments)
        after = await state(client)
        assert result.is_error and kind(result) == error_kind
        assert names in result.content[0].text  # the message names what to fix
        assert after.hash == before.hash
        # Nothing hidden changed either: the next id handed out is the one it would have been.
        # (another patient: the first booking gave pat_dc63z3 an appointment that day, and one a day is the rule)
        booked = await client.call_tool("book_appointment", booking("slot_nbb5i4", "after", "pat_fwvfb2"))
        assert booked.structured_content is not None and booked.structured_content["appointment_id"] == "apt_j9fuj7"


# A server whose tools write and then fail, as buggy or rule-breaking handlers do.
def book_then_crash(db: Database, reason: str) -> dict[str, Any]:
    """Write a row, then fail with a bug."""
    db.insert(
        "appointments",
        {"appointment_id": db.next_id("appointments"), "patient_id": PATIENT, "slot_id": FREE_SLOT, "reason": reason},
    )
    raise ZeroDivisionError("division by zero")


def book_then_reject(db: Database, reason: str) -> dict[str, Any]:
    """Write a row, then refuse the call."""
    db.execute("UPDATE slots SET is_free = 0 WHERE slot_id = ?", (FREE_SLOT,))
    db.reject(f"Cannot book for {reason!r} today.")
    return {}


def book_twice(db: Database, reason: str) -> dict[str, Any]:
    """Insert the same key twice: a constraint violation after a successful write."""
    row = {"appointment_id": "apt_9000", "patient_id": PATIENT, "slot_id": FREE_SLOT, "reason": reason}
    db.insert("appointments", row)
    db.insert("appointments", row)
    return row


FAILING = ServerDefinition(
    name="failing",
    title="Failing handlers",
    description="Tools that write and then fail.",
    version="1.0.0",
    now=DEFINITION.now,
    directory=DEFINITION.directory,
    id_formats=DEFINITION.id_formats,
    tools=[ToolDefinition(function=f, effect="custom") for f in (book_then_crash, book_then_reject, book_twice)],
)


@pytest.mark.parametrize(
    ("tool", "error_kind", "names"),
    [
        ("book_then_crash", "server_error", "ZeroDivisionError"),
        ("book_then_reject", "rejected", "today"),
        ("book_twice", "rejected", "UNIQUE"),
    ],
)
async def test_a_handler_failing_after_a_write_rolls_the_write_back(tool: str, error_kind: str, names: str) -> None:
    async with Client(build_server(FAILING)) as client:
        before = await state(client)
        result = await client.call_tool(tool, {"reason": "checkup"})
        after = await state(client)
    assert result.is_error and kind(result) == error_kind and names in result.content[0].text
    assert after.hash == before.hash and after.diff == {}


class Booked(BaseModel):
    appointment_id: str


def book_and_answer_wrongly(db: Database, reason: str) -> Booked:
    """Write a row, then return what the output model cannot hold."""
    db.insert(
        "appointments",
        {"appointment_id": db.next_id("appointments"), "patient_id": PATIENT, "slot_id": FREE_SLOT, "reason": reason},
    )
    return {"appointment": 1}  # type: ignore[return-value]


async def test_a_result_that_breaks_its_output_model_is_a_server_error_and_changes_nothing() -> None:
    """The result is converted inside the call's transaction: a write whose answer cannot be sent is undone."""
    definition = dataclasses.replace(FAILING, name="wrong", tools=[ToolDefinition(book_and_answer_wrongly, "create")])
    async with Client(build_server(definition)) as client:
        before = await state(client)
        result = await client.call_tool("book_and_answer_wrongly", {"reason": "checkup"})
        after = await state(client)
    assert result.is_error and kind(result) == "server_error" and "ValidationError" in result.content[0].text  # type: ignore[union-attr]
    assert after.hash == before.hash and after.diff == {}


@pytest.mark.parametrize(
    ("raised", "error_kind", "names"),
    [
        (Rejected("No such slot."), "rejected", "No such slot."),
        (sqlite3.IntegrityError("UNIQUE constraint failed"), "rejected", "data constraint: UNIQUE"),
        (EpisodeExpired("episode e was closed"), "episode_expired", "get_slot was not run: episode e was closed"),
        (EpisodeForbidden("episode e belongs to another token"), "forbidden", "was not run"),
        (EpisodeIdInvalid("the episode id is too long"), "invalid_arguments", "was not run"),
        (InvalidArguments("get_slot does not take x"), "invalid_arguments", "does not take x"),
        (UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"), "invalid_arguments", "shorter"),
        (sqlite3.OperationalError("LIKE or GLOB pattern too complex"), "invalid_arguments", "shorter"),
        (sqlite3.OperationalError("disk I/O error"), "server_error", "OperationalError: disk I/O error"),
        (ZeroDivisionError("division by zero"), "server_error", "ZeroDivisionError"),
        (MCPError(-32602, "a protocol error from generated code"), "server_error", "MCPError"),
    ],
)
def test_every_failure_becomes_one_typed_error_result(raised: Exception, error_kind: str, names: str) -> None:
    """The one place exceptions become error results: each farm error has its kind; anything else generated
    code raises (a protocol error included) is the environment's failure, never a JSON-RPC error."""
    result = failure("get_slot", raised)
    assert result.is_error and kind(result) == error_kind and kind_of(raised).value == error_kind
    assert names in result.content[0].text  # type: ignore[union-attr]


async def test_the_server_is_the_sdks_own_and_calls_go_through_its_public_interceptor() -> None:
    """No subclass overriding the SDK's private handlers: the episodes extension intercepts `tools/call` (an
    unknown tool gets the farm's answer listing the tools, not the SDK's "Unknown tool")."""
    server = build()
    assert type(server) is MCPServer
    assert EpisodeControl.intercept_tool_call is not Extension.intercept_tool_call
    async with Client(server) as client:
        unknown = await client.call_tool("no_such_tool", {})
    assert unknown.is_error and kind(unknown) == "invalid_arguments"
    assert "the tools are: book_appointment, cancel_appointment" in unknown.content[0].text  # type: ignore[union-attr]


# The same handlers declared read-only: such a call opens no transaction, yet a write it makes after all is
# still undone when the call fails (sqlite3's deferred mode opens one at the first write).
READ_ONLY_FAILING = dataclasses.replace(
    FAILING,
    name="failing_reads",
    tools=[ToolDefinition(function=t.function, effect="custom", read_only=True) for t in FAILING.tools],
)


def book_quietly(db: Database, reason: str) -> dict[str, Any]:
    """A read-only tool that writes (a generated-code bug the verifier catches): the write stays, as before."""
    db.execute("UPDATE slots SET is_free = 0 WHERE slot_id = ?", (FREE_SLOT,))
    return {"reason": reason}


@pytest.mark.parametrize(
    ("tool", "error_kind", "names"),
    [
        ("book_then_crash", "server_error", "ZeroDivisionError"),
        ("book_then_reject", "rejected", "today"),
        ("book_twice", "rejected", "UNIQUE"),
    ],
)
async def test_a_read_only_tool_failing_after_a_write_rolls_the_write_back(
    tool: str, error_kind: str, names: str
) -> None:
    async with Client(build_server(READ_ONLY_FAILING)) as client:
        before = await state(client)
        result = await client.call_tool(tool, {"reason": "checkup"})
        after = await state(client)
        again = await client.call_tool(tool, {"reason": "checkup"})  # the connection is back in autocommit
    assert result.is_error and kind(result) == error_kind and names in result.content[0].text
    assert after.hash == before.hash and after.diff == {}
    assert again.is_error and kind(again) == error_kind


async def test_a_read_only_tool_that_writes_and_succeeds_keeps_its_write() -> None:
    definition = dataclasses.replace(
        FAILING, name="quiet", tools=[ToolDefinition(book_quietly, "custom", read_only=True)]
    )
    async with Client(build_server(definition)) as client:
        assert not (await client.call_tool("book_quietly", {"reason": "x"})).is_error
        after = await state(client)
    assert after.diff["slots"].updated == [{"key": FREE_SLOT, "before": {"is_free": 1}, "after": {"is_free": 0}}]


async def test_a_read_runs_its_own_sql_only_and_a_write_one_transaction() -> None:
    """The principal is read once per episode (never: a fork knows it), a read-only call opens no transaction,
    a write opens one; the text beside structured content is its compact JSON."""
    with counted_statements() as counts:
        async with Client(build()) as client:
            await reset(client)
            counts.clear()
            read = await client.call_tool("get_slot", {"slot_id": FREE_SLOT})
            assert dict(counts) == {"SELECT": 1}, dict(counts)
            counts.clear()
            assert not (await client.call_tool("book_appointment", booking(FREE_SLOT, "count"))).is_error
            assert counts["BEGIN"] == 1 and counts["COMMIT"] == 1, dict(counts)
            principal = await client.call_tool("list_appointments", {"patient_id": PATIENT})
    assert read.structured_content is not None and not principal.is_error
    assert read.content[0].text == json.dumps(read.structured_content, separators=(",", ":"))  # type: ignore[union-attr]


async def test_state_export_reports_hash_rows_and_diff_against_the_seed() -> None:
    async with Client(build()) as client:
        seed = await state(client, rows=True)
        booked = await client.call_tool("book_appointment", booking(FREE_SLOT, "export"))
        exported = await state(client, rows=True)
    assert seed.diff == {} and set(seed.state) == {"patients", "doctors", "slots", "appointments", "invoices"}
    assert exported.hash != seed.hash
    assert exported.diff["appointments"].added == [booked.structured_content]
    assert exported.diff["slots"].updated == [{"key": FREE_SLOT, "before": {"is_free": 1}, "after": {"is_free": 0}}]
    assert set(exported.diff) == {"appointments", "slots"}
    assert len(exported.state["appointments"]) == len(seed.state["appointments"]) + 1


async def test_reset_returns_an_episode_to_the_seed() -> None:
    async with Client(build()) as client:
        seed_hash = (await state(client, "e")).hash
        await client.call_tool("book_appointment", booking(FREE_SLOT, "gone"), meta={EPISODE: "e"})
        assert (await state(client, "e")).hash != seed_hash
        assert (await reset(client, "e")).hash == seed_hash
        assert "gone" not in reasons(
            await client.call_tool("list_appointments", {"patient_id": PATIENT}, meta={EPISODE: "e"})
        )
        # The connection's own episode resets the same way.
        await client.call_tool("book_appointment", booking(FREE_SLOT, "gone"))
        assert (await reset(client)).hash == seed_hash == (await state(client)).hash


async def test_reset_loads_a_given_initial_state() -> None:
    async with Client(build()) as client:
        rows = (await state(client, rows=True)).state
        invoices = [{**row, "status": "paid"} if row["invoice_id"] == "inv_ms4fr3" else row for row in rows["invoices"]]
        target = next(row for row in invoices if row["invoice_id"] == "inv_ms4fr3")
        loaded = await reset(client, "given", {"invoices": invoices})
        exported = await state(client, "given")
        invoice = await client.call_tool(
            "get_invoice", {"appointment_id": target["appointment_id"]}, meta={EPISODE: "given"}
        )
        paying = await client.call_tool(
            "pay_invoice", {"invoice_id": "inv_ms4fr3", "amount": target["amount"]}, meta={EPISODE: "given"}
        )
    assert loaded.hash == exported.hash
    assert exported.diff == {
        "invoices": TableDiff(
            updated=[{"key": "inv_ms4fr3", "before": {"status": "open"}, "after": {"status": "paid"}}],
        )
    }
    assert invoice.structured_content is not None and invoice.structured_content["status"] == "paid"
    assert paying.is_error and "already paid" in paying.content[0].text


async def test_an_invalid_initial_state_is_refused_and_changes_nothing() -> None:
    async with Client(build()) as client:
        await client.call_tool("book_appointment", booking(FREE_SLOT, "kept"), meta={EPISODE: "e"})
        before = (await state(client, "e")).hash
        with pytest.raises(ControlError, match="unknown tables"):
            await reset(client, "e", {"no_such_table": []})
        with pytest.raises(ControlError, match=r"state\.appointments\[0\]"):
            await reset(client, "e", {"appointments": [{"appointment_id": "apt_1", "patient_id": None}]})
        assert (await state(client, "e")).hash == before


async def test_closing_an_episode_frees_it() -> None:
    async with Client(build()) as client:
        seed_hash = (await state(client)).hash
        await client.call_tool("book_appointment", booking(FREE_SLOT, "closed"), meta={EPISODE: "e"})
        closed = await close(client, "e")
        assert closed.closed is True and closed.open_episodes == 0
        # A closed name answers episode_expired rather than silently starting over from the seed ...
        expired = await client.call_tool("list_appointments", {"patient_id": PATIENT}, meta={EPISODE: "e"})
        assert expired.is_error and kind(expired) == "episode_expired"
        with pytest.raises(ControlError, match="episode_expired"):
            await state(client, "e")
        # ... until a reset opens it again, from the seed.
        assert (await reset(client, "e")).hash == seed_hash
        assert (await state(client, "e")).hash == seed_hash


async def test_replaying_the_same_calls_gives_the_same_outputs_and_hash() -> None:
    calls = [
        ("book_appointment", booking(FREE_SLOT, "replay")),
        ("cancel_appointment", {"appointment_id": "apt_c4p5y6", "cancel_reason": "moved"}),
        ("pay_invoice", {"invoice_id": "inv_ms4fr3", "amount": 1.0}),
    ]
    runs = []
    for _ in range(2):
        async with Client(build()) as client:
            outputs = [(await client.call_tool(name, args)).model_dump(exclude={"meta"}) for name, args in calls]
            runs.append((outputs, (await state(client)).hash))
    assert runs[0] == runs[1]


async def test_persistent_mode_keeps_state_in_a_wal_file(tmp_path: Path) -> None:
    path = tmp_path / "clinic.sqlite"
    async with Client(build(db_file=path)) as client:
        assert not (await client.call_tool("book_appointment", booking(FREE_SLOT, "kept"))).is_error
        with pytest.raises(ControlError, match="explicit state"):
            await reset(client)
    async with Client(build(db_file=path)) as client:
        assert "kept" in reasons(await client.call_tool("list_appointments", {"patient_id": PATIENT}))
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_annotations_follow_from_the_effect_with_overrides() -> None:
    def noop(db: Database) -> dict[str, Any]:
        return {}

    def hints(tool: ToolDefinition) -> tuple[bool | None, ...]:
        a = tool.annotations
        return a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint

    assert hints(ToolDefinition(noop, "search")) == (True, False, True, False)
    assert hints(ToolDefinition(noop, "create")) == (False, False, False, False)
    assert hints(ToolDefinition(noop, "delete")) == (False, True, True, False)
    assert hints(ToolDefinition(noop, "custom")) == (False, True, False, False)
    assert hints(ToolDefinition(noop, "custom", read_only=True)) == (True, False, True, False)
    # A read-only tool is never destructive, whatever the override says.
    assert hints(ToolDefinition(noop, "get", destructive=True, idempotent=False)) == (True, False, False, False)


# In a child process: audit hooks cannot be removed, so this one must not outlive the test.
WINDOWED_CALLS = """
import json, sys, anyio
from mcp import Client
from envfarm.factory.verify.coverage_gate import CallWindow
from envfarm.servers.clinic.server import build
from envfarm.servers.runtime.pipeline import TOOL_CALL_EVENT

seen = []
class Collector:
    def pause(self): seen.append("pause")
    def resume(self): seen.append("resume")

sys.addaudithook(lambda event, args: seen.append(list(args)) if event == TOOL_CALL_EVENT else None)
sys.addaudithook(CallWindow(Collector()))

async def main():
    async with Client(build()) as client:
        await client.call_tool("get_slot", {"slot_id": sys.argv[1]})
        seen.append("between")
        await client.call_tool("get_slot", {"slot_id": "slot_unknown"})
        await client.call_tool("no_such_tool", {})

anyio.run(main)
print(json.dumps(seen))
"""


def test_the_coverage_gate_traces_only_from_a_calls_begin_to_its_end() -> None:
    """Every tool call, refused or not, is framed by the audit events; the gate's window traces from the
    start until the first call ends, then only inside calls (an unknown tool runs nothing of the server)."""
    run = subprocess.run(
        [sys.executable, "-c", WINDOWED_CALLS, FREE_SLOT], check=True, capture_output=True, text=True, timeout=300
    )
    assert json.loads(run.stdout) == [
        ["get_slot", "begin"],
        ["get_slot", "end"],
        "pause",
        "between",
        ["get_slot", "begin"],
        "resume",
        ["get_slot", "end"],
        "pause",
    ]


def test_request_spans_stay_on_only_where_a_tracer_provider_is_installed() -> None:
    """The SDK's OpenTelemetry middleware is a no-op without a tracer provider yet costs CPU on every request:
    a server built without one drops it; a process that installed one (here the API's own no-op provider,
    set in a child process: a provider can be set once per process) keeps its spans."""
    import subprocess
    import sys

    from mcp.server._otel import OpenTelemetryMiddleware

    assert not any(isinstance(m, OpenTelemetryMiddleware) for m in build().middleware)
    probe = (
        "from opentelemetry import trace\n"
        "trace.set_tracer_provider(trace.NoOpTracerProvider())\n"
        "from mcp.server._otel import OpenTelemetryMiddleware\n"
        "from envfarm.servers.clinic.server import build\n"
        "print(sum(isinstance(m, OpenTelemetryMiddleware) for m in build().middleware))\n"
    )
    kept = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert kept.stdout.strip() == "1"
