"""Real transports: a stdio subprocess, streamable HTTP in both protocol eras against a running
`envfarm serve --all`, the farm host with several servers, and persistence across a kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ANNEX, EPISODE, FREE_SLOT, REPO, booking, reasons, state
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from envfarm.cli.farm import client_config
from envfarm.clients.connect import FarmProcess, free_port, http_client, shared_http_client
from envfarm.servers.runtime.registry import load_registry

PATIENT = "pat_dc63z3"


def unique(prefix: str) -> str:
    """Episode names are unique per test: the farm process is shared by the whole session."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_stdio_round_trip() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "envfarm.servers.clinic"], cwd=REPO)
    async with Client(params) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        booked = await client.call_tool("book_appointment", booking(FREE_SLOT, "over stdio"))
        listed = await client.call_tool("list_appointments", {"patient_id": PATIENT, "status": "booked"})
        exported = await state(client)
    assert {"find_patient", "book_appointment", "list_appointments"} <= tools
    assert not booked.is_error and "over stdio" in reasons(listed)
    assert exported.diff["appointments"].added == [booked.structured_content]


async def launch_from_config(entry: dict[str, Any], cwd: Path) -> tuple[set[str], CallToolResult]:
    """Start a server exactly as a desktop client would from its config entry (no PYTHONPATH, another folder)."""
    assert set(entry) <= {"type", "command", "args"}, entry
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=cwd)
    async with Client(params) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        found = await client.call_tool("find_patient", {"full_name": "lopez"})
    return tools, found


@pytest.mark.parametrize("client_name", ["claude", "cursor", "vscode"])
async def test_the_desktop_client_config_launches_the_server(client_name: str, tmp_path: Path) -> None:
    """What `envfarm config` prints is enough to start the server from anywhere, as a desktop client would."""
    config = client_config(load_registry(REPO), REPO, client_name, ["clinic"])
    entry = config["servers" if client_name == "vscode" else "mcpServers"]["clinic"]
    assert entry["args"] == ["-m", "envfarm.servers.clinic"]
    tools, found = await launch_from_config(entry, tmp_path)
    assert "find_patient" in tools
    assert not found.is_error and found.structured_content and found.structured_content["count"] >= 1


async def test_the_config_of_another_farm_launches_its_server(farm_root: Path, tmp_path: Path) -> None:
    """A farm built with --out is launched through `envfarm --farm DIR serve`, which imports it from DIR."""
    config = client_config(load_registry(farm_root), farm_root, "claude", [ANNEX])
    entry = config["mcpServers"][ANNEX]
    assert entry["args"] == ["-m", "envfarm.cli", "--farm", str(farm_root.resolve()), "serve", ANNEX]
    tools, found = await launch_from_config(entry, tmp_path)
    assert "find_patient" in tools and not found.is_error


async def test_http_2026_era_episodes_by_url_are_isolated(farm: FarmProcess) -> None:
    first, second = unique("url-a"), unique("url-b")
    async with (
        shared_http_client() as http,
        http_client(farm.url("clinic", first), http) as a,
        http_client(farm.url("clinic", second), http) as b,
    ):
        assert a.protocol_version == "2026-07-28"
        assert not (await a.call_tool("book_appointment", booking(FREE_SLOT, first))).is_error
        assert not (await b.call_tool("book_appointment", booking(FREE_SLOT, second))).is_error
        seen_a = reasons(await a.call_tool("list_appointments", {"patient_id": PATIENT}))
        seen_b = reasons(await b.call_tool("list_appointments", {"patient_id": PATIENT}))
        exported = await state(a)
    assert first in seen_a and second not in seen_a
    assert second in seen_b and first not in seen_b
    assert exported.episode == first


async def test_http_2026_era_episodes_by_meta_are_isolated(farm: FarmProcess) -> None:
    first, second = unique("meta-a"), unique("meta-b")
    async with shared_http_client() as http, http_client(farm.url("clinic"), http) as client:
        for name in (first, second):
            assert not (
                await client.call_tool("book_appointment", booking(FREE_SLOT, name), meta={EPISODE: name})
            ).is_error
        seen = {
            name: reasons(await client.call_tool("list_appointments", {"patient_id": PATIENT}, meta={EPISODE: name}))
            for name in (first, second)
        }
    assert first in seen[first] and second not in seen[first]
    assert second in seen[second] and first not in seen[second]


async def test_http_2025_era_sessions_are_isolated(farm: FarmProcess) -> None:
    first, second = unique("session-a"), unique("session-b")
    async with (
        shared_http_client(None) as http,
        http_client(farm.url("clinic"), http, "legacy") as a,
        http_client(farm.url("clinic"), http, "legacy") as b,
    ):
        assert a.protocol_version == "2025-11-25"
        # Concurrently, so both sessions are open and writing at the same time.
        async with anyio.create_task_group() as group:
            group.start_soon(a.call_tool, "book_appointment", booking(FREE_SLOT, first))
            group.start_soon(b.call_tool, "book_appointment", booking(FREE_SLOT, second))
        seen_a = reasons(await a.call_tool("list_appointments", {"patient_id": PATIENT}))
        seen_b = reasons(await b.call_tool("list_appointments", {"patient_id": PATIENT}))
        exported = await state(a)
    assert first in seen_a and second not in seen_a
    assert second in seen_b and first not in seen_b
    assert exported.episode.startswith("session:")


async def test_an_episode_url_reaches_the_handler_in_a_2025_era_session_and_a_forged_header_names_nothing(
    farm: FarmProcess,
) -> None:
    """The per-episode URL travels to the handler with the request (a context variable the SDK carries, as it
    carries the access token), also into a 2025-era session, whose messages the SDK handles in the session's
    own task. A client's own `x-envfarm-episode` header names no episode: the host reads none."""
    episode = unique("legacy-url")
    async with shared_http_client(None) as http, http_client(farm.url("clinic", episode), http, "legacy") as a:
        assert a.protocol_version == "2025-11-25"
        assert not (await a.call_tool("book_appointment", booking(FREE_SLOT, episode))).is_error
        assert (await state(a)).episode == episode
    async with shared_http_client() as forging:
        forging.headers["x-envfarm-episode"] = episode
        async with http_client(farm.url("clinic"), forging) as b:
            seen = reasons(await b.call_tool("list_appointments", {"patient_id": PATIENT}))
            assert (await state(b)).episode is None
    async with shared_http_client() as http, http_client(farm.url("clinic", episode), http) as c:
        kept = reasons(await c.call_tool("list_appointments", {"patient_id": PATIENT}))
    assert episode not in seen and episode in kept


async def test_a_2025_era_session_gets_no_get_stream_and_still_works(farm: FarmProcess) -> None:
    """A GET on an MCP endpoint opens no standalone SSE stream (nothing is ever sent outside a response): within
    a session it is an SSE body that ends at once with only a retry hint (the session's idle timeout), without
    one it is 405. The SDK's client carries on with its session, and DELETE still ends it."""
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    opening = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    async with shared_http_client(None) as http:
        opened = await http.post(
            farm.url("clinic"),
            headers=headers,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": opening},
        )
        session = {**headers, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        stream = await http.get(farm.url("clinic"), headers=session)
        by_url = await http.get(farm.url("clinic", unique("no-stream")), headers=session)
        sessionless = await http.get(farm.url("clinic"), headers=headers)
        index = await http.get(f"{farm.base_url}/")
        assert (await http.delete(farm.url("clinic"), headers=session)).status_code == 200
        async with http_client(farm.url("clinic"), http, "legacy") as client:
            booked = await client.call_tool("book_appointment", booking(FREE_SLOT, unique("no-stream")))
    for answer in (stream, by_url):
        assert answer.status_code == 200 and answer.headers["content-type"] == "text/event-stream"
        assert answer.text == f"retry: {30 * 60 * 1000}\n\n"
    assert sessionless.status_code == 405 and sessionless.headers["allow"] == "POST, DELETE"
    assert index.status_code == 200 and not booked.is_error


async def test_a_2025_era_client_asks_for_its_get_stream_once(farm: FarmProcess) -> None:
    """The SDK's client opens its GET stream after the handshake; told there is none for the session's idle
    timeout, it does not ask again a second later, as it did after a 405."""
    sent: list[str] = []

    async def record(request: Any) -> None:
        sent.append(request.method)

    async with shared_http_client() as http:
        http.event_hooks["request"].append(record)
        async with http_client(farm.url("clinic"), http, "legacy") as client:
            first = await client.call_tool("get_slot", {"slot_id": FREE_SLOT})
            await anyio.sleep(1.5)  # past the client's 1 s reconnection delay
            second = await client.call_tool("get_slot", {"slot_id": FREE_SLOT})
    assert not first.is_error and not second.is_error
    assert sent.count("GET") == 1 and sent.count("DELETE") == 1, sent


async def test_the_farm_host_serves_several_servers(farm: FarmProcess) -> None:
    episode = unique("shared-name")
    async with (
        shared_http_client() as http,
        http_client(farm.url("clinic", episode), http) as clinic,
        http_client(farm.url(ANNEX, episode), http) as annex,
    ):
        index = (await http.get(f"{farm.base_url}/")).json()
        assert index == {"servers": {"clinic": "/clinic/mcp", ANNEX: f"/{ANNEX}/mcp"}}
        assert clinic.server_info is not None and clinic.server_info.name == "clinic"
        assert annex.server_info is not None and annex.server_info.name == ANNEX
        assert len((await annex.list_tools()).tools) == len((await clinic.list_tools()).tools)
        await clinic.call_tool("book_appointment", booking(FREE_SLOT, episode))
        # The same episode name on another server is another episode.
        assert episode not in reasons(await annex.call_tool("list_appointments", {"patient_id": PATIENT}))
        assert (await state(annex)).diff == {}


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the listening sockets from Linux /proc")
def test_http_binds_loopback_unless_told_otherwise(farm: FarmProcess) -> None:
    """The farm fixture passes no --host: its listening socket must be 127.0.0.1 only."""
    port = int(farm.base_url.rsplit(":", 1)[1])
    listening = [
        line.split()[1] for line in Path("/proc/net/tcp").read_text().splitlines()[1:] if line.split()[3] == "0A"
    ]
    assert f"0100007F:{port:04X}" in listening
    assert not any(address.endswith(f":{port:04X}") and address != f"0100007F:{port:04X}" for address in listening)
    assert not any(
        line.split()[1].endswith(f":{port:04X}") for line in Path("/proc/net/tcp6").read_text().splitlines()[1:]
    )


def start_persistent(db: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "envfarm.servers.clinic", "--db", str(db), "--http", "--port", str(port)]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, "the persistent server exited"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1):
                return process
        except OSError:
            assert time.monotonic() < deadline, "the persistent server did not start"
            time.sleep(0.05)


def test_persistent_mode_survives_kill_9(tmp_path: Path) -> None:
    db, port = tmp_path / "clinic.sqlite", free_port()
    url = f"http://127.0.0.1:{port}/clinic/mcp"

    async def book() -> None:
        async with shared_http_client() as http, http_client(url, http) as client:
            assert not (await client.call_tool("book_appointment", booking(FREE_SLOT, "survives"))).is_error

    async def read() -> list[str]:
        async with shared_http_client() as http, http_client(url, http) as client:
            return reasons(await client.call_tool("list_appointments", {"patient_id": PATIENT}))

    process = start_persistent(db, port)
    try:
        anyio.run(book)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL
    process = start_persistent(db, port)
    try:
        assert "survives" in anyio.run(read)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_serving_freezes_start_up_objects_and_collects_young_garbage_less_often() -> None:
    """`serve_http` tunes the collector before it serves (see `tune_gc`); checked in this process, then undone."""
    import gc

    from envfarm.servers.runtime.http import GC_YOUNG_THRESHOLD, tune_gc

    threshold = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_freeze_count() > 1000 and gc.get_threshold() == (GC_YOUNG_THRESHOLD, *threshold[1:])
        assert not any(obj is tune_gc for obj in gc.get_objects())  # start-up objects are out of every collection
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
