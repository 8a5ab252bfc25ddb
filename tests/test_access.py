"""The HTTP host's access rules and the serve command line, on real subprocesses (issue 12): bearer
tokens own their episodes, a non-loopback bind needs a token and an allow-list, a 2025-era session's
episode ends with it, and bad serve options fail at start with a clear message."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import EPISODE, FREE_SLOT, MARIA, NOAH, REPO, booking, state
from mcp import Client

from envfarm.clients.connect import farm_process, free_port, http_client, shared_http_client
from envfarm.servers.runtime.access import Access, parse_tokens
from envfarm.servers.runtime.control import ERROR_KIND_META_KEY, ControlError, EpisodeClient

TOKENS = ("token-alice-123", "token-bob-456")


def envfarm(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envfarm.cli", *args],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def kind(result: object) -> str | None:
    return (getattr(result, "meta", None) or {}).get(ERROR_KIND_META_KEY)


async def test_with_tokens_an_episode_belongs_to_the_token_that_opened_it(farm_root: Path) -> None:
    with farm_process(farm_root, token=",".join(TOKENS)) as farm:
        url = farm.url("clinic")
        async with (
            shared_http_client() as anonymous,
            shared_http_client(token=TOKENS[0]) as alice_http,
            shared_http_client(token=TOKENS[1]) as bob_http,
            http_client(url, alice_http) as alice,
            http_client(url, bob_http) as bob,
        ):
            refused = await anonymous.get(f"{farm.base_url}/")
            assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer ")
            wrong = await anonymous.get(f"{farm.base_url}/", headers={"Authorization": "Bearer not-a-token"})
            assert wrong.status_code == 401
            booked = await alice.call_tool("book_appointment", booking(FREE_SLOT, "alice"), meta={EPISODE: "mine"})
            assert not booked.is_error
            stolen = await bob.call_tool("list_appointments", {"patient_id": "pat_dc63z3"}, meta={EPISODE: "mine"})
            assert stolen.is_error and kind(stolen) == "forbidden"
            with pytest.raises(ControlError, match="forbidden"):
                await state(bob, "mine")
            assert (await state(alice, "mine")).diff != {}


async def test_a_2025_era_sessions_episode_closes_with_the_session(farm_root: Path) -> None:
    with farm_process(farm_root) as farm:
        async with shared_http_client() as http:
            async with http_client(farm.url("clinic"), http, "legacy") as session:
                await session.call_tool("book_appointment", booking(FREE_SLOT, "session"))
                episode = (await state(session)).episode
            assert episode and episode.startswith("session:")
            async with http_client(farm.url("clinic"), http) as other:
                with pytest.raises(ControlError, match="episode_expired"):
                    await state(other, episode)


def test_a_non_loopback_bind_needs_a_token_and_an_allow_list() -> None:
    no_token = envfarm("serve", "--all", "--host", "0.0.0.0", "--port", str(free_port()))
    assert no_token.returncode == 2 and "--token" in no_token.stderr
    no_hosts = envfarm("serve", "--all", "--host", "0.0.0.0", "--port", str(free_port()), "--token", "t")
    assert no_hosts.returncode == 2 and "--allow-host" in no_hosts.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["serve", "--all", "--db", "x.sqlite"], "--all"),
        (["serve", "clinic", "--port", "8123"], "--http"),
    ],
)
def test_serve_options_that_cannot_work_fail_at_start(args: list[str], says: str) -> None:
    result = envfarm(*args)
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr


def test_db_refuses_an_empty_file_or_another_servers_database(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE guests (guest_id TEXT PRIMARY KEY)")
    for path, says in ((empty, "empty"), (foreign, "another database")):
        result = envfarm("serve", "clinic", "--db", str(path))
        assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr


def test_serve_says_serving_only_once_it_accepts_connections() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "envfarm.cli", "serve", "clinic", "--http", "--port", str(port)],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("serving clinic"), line
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:  # no retry: already up
            assert answer.status == 200
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_config_into_a_closed_pipe_prints_no_traceback() -> None:
    shell = f"{sys.executable} -m envfarm.cli config | head -c 10"
    result = subprocess.run(shell, check=False, shell=True, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.stdout.startswith("{") and "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


async def test_in_memory_clients_still_reach_their_own_episode() -> None:
    """Access rules are the HTTP host's: in-memory and stdio clients have no owner and are unaffected."""
    from envfarm.servers.clinic.server import build

    async with Client(build()) as client:
        assert not (await client.call_tool("book_appointment", booking(FREE_SLOT, "local"))).is_error


# ------------------------------------------------------------------ a token acts for its principal

BOUND = (f"tok-noah={NOAH}", "tok-plain")


def test_token_items_bind_a_principal_and_padding_stays_part_of_the_token() -> None:
    assert parse_tokens([f"a={NOAH}", " b ", "c==", ""]) == (("a", "b", "c=="), (("a", NOAH),))
    access = Access(tokens=("a", "b"), principals=(("a", NOAH),))
    assert access.caller("Bearer a") == (access.owner("Bearer a"), NOAH)
    assert access.caller("Bearer b") == (access.owner("Bearer b"), None) and access.caller("Bearer z") is None


async def test_access_is_the_sdks_token_verifier_and_keeps_no_raw_token() -> None:
    access = Access(tokens=("a", "b"), principals=(("a", NOAH),))
    bound, plain = await access.verify_token("a"), await access.verify_token("b")
    assert bound is not None and bound.client_id == access.owner("Bearer a") and bound.subject == NOAH
    assert plain is not None and plain.client_id == access.owner("Bearer b") and plain.subject is None
    assert bound.token != "a" and plain.token != "b"
    assert await access.verify_token("z") is None and await access.verify_token("") is None


async def test_over_http_a_bound_token_acts_as_its_principal_and_only_as_them(mail_farm: Path) -> None:
    with farm_process(mail_farm, token=",".join(BOUND)) as farm:
        async with (
            shared_http_client(token="tok-noah") as noah_http,
            shared_http_client(token="tok-plain") as plain_http,
            http_client(farm.url("mail"), noah_http) as noah,
            http_client(farm.url("mail"), plain_http) as plain,
            http_client(farm.url("clinic"), noah_http) as clinic,
        ):
            listed = await noah.call_tool("list_conversations", {"limit": 200}, meta={EPISODE: "n1"})
            rows = (listed.structured_content or {})["conversations"]
            assert rows and {c["mailbox_email"] for c in rows} == {NOAH}
            assert (await state(noah, "n1")).principal == NOAH
            with pytest.raises(ControlError, match=f"forbidden: this bearer token acts for '{NOAH}'"):
                await EpisodeClient(noah, "n1").reset(principal=MARIA)
            assert (await EpisodeClient(noah, "n2").reset()).principal == NOAH
            unbound = await plain.call_tool("list_conversations", {}, meta={EPISODE: "p1"})
            assert {c["mailbox_email"] for c in (unbound.structured_content or {})["conversations"]} == {MARIA}
            elsewhere = await clinic.call_tool("find_patient", {"full_name": "lopez"}, meta={EPISODE: "c1"})
            assert elsewhere.is_error and kind(elsewhere) == "forbidden"
            assert "not a principal of clinic" in elsewhere.content[0].text  # type: ignore[union-attr]
        async with shared_http_client(token="tok-plain") as http:  # the host's own header, forged: dropped
            http.headers["x-envfarm-principal"] = NOAH
            async with http_client(farm.url("mail"), http) as forging:
                result = await forging.call_tool("list_conversations", {}, meta={EPISODE: "p2"})
            assert {c["mailbox_email"] for c in (result.structured_content or {})["conversations"]} == {MARIA}
