"""Access that holds across bearer tokens, over real HTTP on loopback (issue 26): each break an attacker
found with `serve --all --token tokA=noah... --token tokB=maria... --token tokC`, as a test, in both
protocol eras where the era matters (2026-07-28 sessionless, and 2025 sessions: `mode="legacy"`)."""

from __future__ import annotations

import hashlib
import importlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EPISODE, MARIA, NOAH, REPO, state

from envfarm.clients.connect import Era, FarmProcess, farm_process, http_client, shared_http_client
from envfarm.servers.clinic.server import DEFINITION as CLINIC
from envfarm.servers.runtime.control import ERROR_KIND_META_KEY, ControlError, EpisodeClient
from envfarm.servers.runtime.episodes import (
    EXPIRED_KEY_BYTES,
    EXPIRED_KEYS_SHARE,
    MAX_EPISODE_ID,
    EpisodeBudget,
    EpisodeStore,
)

NOAH_TOKEN, MARIA_TOKEN, PLAIN_TOKEN = "tok-a-noah", "tok-b-maria", "tok-c-plain"
TOKEN_ITEMS = f"{NOAH_TOKEN}={NOAH},{MARIA_TOKEN}={MARIA},{PLAIN_TOKEN}"
FELIX = "felix.patel@example.com"  # a third mailbox, no token's principal
ERAS: list[Era] = ["auto", "legacy"]
LEGACY_HEADERS = {"mcp-protocol-version": "2025-11-25", "accept": "application/json, text/event-stream"}


def owner(token: str) -> str:
    """The owner digest the host gives a token (`Access.caller`)."""
    return hashlib.sha256(token.encode()).hexdigest()[:32]


def kind(result: object) -> str | None:
    return (getattr(result, "meta", None) or {}).get(ERROR_KIND_META_KEY)


def text(value: Any) -> str:
    """Everything a result says, as one string to search."""
    return json.dumps(value, default=lambda v: v.model_dump(mode="json", by_alias=True))


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def token_farm(mail_farm: Path) -> Iterator[FarmProcess]:
    """`serve --all` of mail and clinic with two bound tokens (Noah, Maria) and one unbound."""
    with farm_process(mail_farm, token=TOKEN_ITEMS) as farm:
        yield farm


@pytest.mark.parametrize("mode", ERAS)
async def test_requests_without_an_episode_id_get_their_own_tokens_episode(token_farm: FarmProcess, mode: Era) -> None:
    """Was: one default episode shared by every token. tokA's mail showed in tokC's list and in tokB's
    diff, and tokB's `reset {}` wiped tokA's work."""
    url, subject = token_farm.url("mail"), unique("from-noah")
    async with (
        shared_http_client(token=NOAH_TOKEN) as noah_http,
        shared_http_client(token=MARIA_TOKEN) as maria_http,
        shared_http_client(token=PLAIN_TOKEN) as plain_http,
        http_client(url, noah_http, mode) as noah,
        http_client(url, maria_http, mode) as maria,
        http_client(url, plain_http, mode) as plain,
    ):
        message = {"to_emails": [MARIA, FELIX], "subject": subject, "body": "only in Noah's episode"}
        sent = await noah.call_tool("send_message", message)
        assert not sent.is_error, sent.content
        for other in (maria, plain):
            found = await other.call_tool("search_mail", {"text": subject})
            assert not found.is_error and subject not in text(found)
            seen = await state(other, rows=True)
            assert subject not in text(seen)
        assert (await state(plain)).principal == MARIA  # the server's default, not the last bound token's
        assert (await EpisodeClient(maria).reset()).principal == MARIA
        mine = await state(noah)
        assert subject in text(mine.diff) and mine.principal == NOAH  # Maria's reset left Noah's episode alone
        if mode == "auto":
            assert mine.episode == f"token:{owner(NOAH_TOKEN)}"
            assert (await state(plain)).episode == f"token:{owner(PLAIN_TOKEN)}"
        else:
            assert mine.episode and mine.episode.startswith("session:")
        # Naming another token's own episode is refused, by _meta, on tools and on the control plane.
        theirs = f"token:{owner(NOAH_TOKEN)}"
        refused = await plain.call_tool("search_mail", {"text": subject}, meta={EPISODE: theirs})
        assert refused.is_error and kind(refused) == "forbidden" and subject not in text(refused)
        for request in (EpisodeClient(plain, theirs).state, EpisodeClient(plain, theirs).reset):
            with pytest.raises(ControlError, match="forbidden: .* another token's own episode"):
                await request()


@pytest.mark.parametrize("mode", ERAS)
async def test_a_bound_tokens_state_holds_only_its_principals_rows(token_farm: FarmProcess, mode: Era) -> None:
    """Was: `envfarm/episode/state {"rows": true}` on Maria's own episode returned every mailbox's drafts."""
    episode = unique("scoped")
    async with (
        shared_http_client(token=MARIA_TOKEN) as maria_http,
        shared_http_client(token=PLAIN_TOKEN) as plain_http,
        http_client(token_farm.url("mail"), maria_http, mode) as maria,
        http_client(token_farm.url("mail"), plain_http, mode) as plain,
        http_client(token_farm.url("clinic"), maria_http, mode) as clinic,
    ):
        listed = await maria.call_tool("list_drafts", {"limit": 200}, meta={EPISODE: episode})
        drafts = (listed.structured_content or {})["drafts"]
        seen = await state(maria, episode, rows=True)
        rows = seen.state or {}
        assert seen.principal == MARIA and len(rows["drafts"]) == len(drafts) < 30
        for table in ("drafts", "conversations", "labels"):
            assert rows[table] and {r["mailbox_email"] for r in rows[table]} == {MARIA}, table
        threads = {c["thread_id"] for c in rows["conversations"]}
        assert {m["thread_id"] for m in rows["messages"]} <= threads
        assert len((await state(plain, unique("all"), rows=True)).state["drafts"]) == 30  # type: ignore[index]
        # The diff and hash are over the same rows: Maria's own new draft shows, and the hash is the
        # hash a reset to the seed answers her.
        assert seen.hash == (await EpisodeClient(maria, unique("again")).reset()).hash
        draft = {"body": "mine", "subject": unique("draft"), "to_emails": [FELIX]}
        assert not (await maria.call_tool("create_draft", draft, meta={EPISODE: episode})).is_error
        after = await state(maria, episode)
        assert [d["subject"] for d in after.diff["drafts"].added] == [draft["subject"]]
        # On a server that does not know her she sees nothing: refused, as her tool calls are.
        for request in (EpisodeClient(clinic, unique("c")).state, EpisodeClient(clinic, unique("c")).reset):
            with pytest.raises(ControlError, match="forbidden: .* not a principal of clinic"):
                await request()


async def test_a_session_ends_only_for_the_token_that_opened_it(token_farm: FarmProcess) -> None:
    """Was: a `DELETE /mail/mcp` with another token's session id ended that session and closed its episode."""
    url, subject = token_farm.url("mail"), unique("kept")
    async with (
        shared_http_client(token=NOAH_TOKEN) as noah_http,
        shared_http_client(token=PLAIN_TOKEN) as plain_http,
        http_client(url, noah_http, "legacy") as noah,
        http_client(url, plain_http) as plain,
    ):
        sent = await noah.call_tool("send_message", {"to_emails": [FELIX], "subject": subject, "body": "b"})
        assert not sent.is_error
        episode = (await state(noah)).episode or ""
        session = episode.removeprefix("session:")
        assert session != episode
        headers = {**LEGACY_HEADERS, "mcp-session-id": session}
        ended = await plain_http.delete(url, headers=headers)
        assert ended.status_code == 404, ended.text
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_drafts", "arguments": {}}}
        used = await plain_http.post(url, headers=headers, json=call)
        assert used.status_code == 404 and subject not in used.text
        assert subject in text((await state(noah)).diff)  # the session and its episode are whole
        assert not (await noah.call_tool("list_drafts", {})).is_error
        with pytest.raises(ControlError, match="forbidden"):  # nor by its name
            await state(plain, episode)
        refused = await plain_http.post(url, headers={**headers, "mcp-session-id": "0" * 32}, json=call)
        assert refused.status_code == 404  # an unknown session: as refused as another token's
    async with shared_http_client(token=NOAH_TOKEN) as noah_http, http_client(url, noah_http) as later:
        with pytest.raises(ControlError, match="episode_expired"):  # its own DELETE (the client's exit) ended it
            await state(later, episode)


async def test_a_2026_era_request_cannot_name_a_session_by_its_header(token_farm: FarmProcess) -> None:
    """A 2026-era request has no session, so the SDK checks no session id on it: its `Mcp-Session-Id` header
    must not reach (or open first, and so take) a 2025 session's episode."""
    url, subject = token_farm.url("mail"), unique("planted")
    async with (
        shared_http_client(token=NOAH_TOKEN) as noah_http,
        shared_http_client(token=PLAIN_TOKEN) as plain_http,
        http_client(url, noah_http, "legacy") as noah,
    ):
        episode = (await state(noah)).episode or ""  # reading opens nothing: the session's episode is not open yet
        plain_http.headers["mcp-session-id"] = episode.removeprefix("session:")
        async with http_client(url, plain_http) as plain:
            assert plain.protocol_version == "2026-07-28"
            planted = await plain.call_tool("create_draft", {"body": "b", "subject": subject, "to_emails": [FELIX]})
            assert not planted.is_error
            assert (await state(plain)).episode == f"token:{owner(PLAIN_TOKEN)}"
        mine = await noah.call_tool("list_drafts", {"limit": 200})
        assert not mine.is_error and subject not in text(mine)
        assert (await state(noah)).diff == {}


@pytest.mark.parametrize("mode", ERAS)
async def test_episode_ids_have_a_length_limit(token_farm: FarmProcess, mode: Era) -> None:
    """Was: 600 closed episodes with 1 MB `_meta` ids took the host from 125 to 510 MB with none open."""
    huge = "x" * (1 << 20)
    async with shared_http_client(token=PLAIN_TOKEN) as http, http_client(token_farm.url("mail"), http, mode) as client:
        longest = unique(mode).ljust(MAX_EPISODE_ID, "y")
        assert not (await client.call_tool("list_drafts", {}, meta={EPISODE: longest})).is_error
        assert (await EpisodeClient(client, longest).close()).closed
        before = token_farm.rss_mb()
        for _ in range(60):
            refused = await client.call_tool("list_drafts", {}, meta={EPISODE: huge})
            assert refused.is_error and kind(refused) == "invalid_arguments"
            assert f"1,048,576 characters long; the limit is {MAX_EPISODE_ID}" in text(refused)
            assert len(text(refused)) < 2000  # the id is not echoed back
            for request in (EpisodeClient(client, huge).reset, EpisodeClient(client, huge).close):
                with pytest.raises(ControlError, match=f"invalid_arguments: .* the limit is {MAX_EPISODE_ID}"):
                    await request()
        assert token_farm.rss_mb() - before < 40
    url = f"{token_farm.base_url}/mail/episodes/{'z' * (MAX_EPISODE_ID + 1)}/mcp"
    async with shared_http_client(token=PLAIN_TOKEN) as http:
        assert (await http.post(url, json={})).status_code == 404  # no such URL: longer than an id may be


def test_remembered_closed_ids_are_digests_counted_against_the_budget() -> None:
    budget = EpisodeBudget(max_mb=1, ttl_s=None)
    store = EpisodeStore(CLINIC.seed(), budget=budget)
    assert budget.max_expired == (1 << 20) // EXPIRED_KEYS_SHARE // EXPIRED_KEY_BYTES
    ids = [f"{n:04d}-" + "i" * (MAX_EPISODE_ID - 5) for n in range(2 * budget.max_expired)]
    for key in ids:
        store.named(key)
        assert store.close(key)
    assert budget.expired_bytes == budget.max_expired * EXPIRED_KEY_BYTES <= budget.max_bytes // EXPIRED_KEYS_SHARE
    assert len(store) == 0 and budget.bytes == 0
    with pytest.raises(LookupError, match="was closed"):
        store.named(ids[-1])  # the newest are remembered, the oldest forgotten
    store.named(ids[0])
    assert len(store) == 1


@pytest.mark.parametrize("mode", ERAS)
async def test_closing_through_the_per_episode_url_closes_that_episode(token_farm: FarmProcess, mode: Era) -> None:
    """Was: `envfarm/episode/close` on `/<name>/episodes/<id>/mcp` answered `closed: false`, even for its owner."""
    episode = unique("by-url")
    url = token_farm.url("mail", episode)
    async with (
        shared_http_client(token=NOAH_TOKEN) as noah_http,
        shared_http_client(token=PLAIN_TOKEN) as plain_http,
        http_client(url, noah_http, mode) as noah,
        http_client(url, plain_http, mode) as plain,
    ):
        draft = {"body": "b", "subject": "s", "to_emails": [FELIX]}
        assert not (await noah.call_tool("create_draft", draft)).is_error
        with pytest.raises(ControlError, match="forbidden"):  # not for another token
            await EpisodeClient(plain).close()
        closed = await EpisodeClient(noah).close()
        assert closed.closed and closed.episode == episode
        with pytest.raises(ControlError, match="episode_expired"):
            await state(noah)
        expired = await noah.call_tool("list_drafts", {})
        assert expired.is_error and kind(expired) == "episode_expired"
        assert (await EpisodeClient(noah).reset()).episode == episode  # a reset opens it again


def test_every_user_servers_scopes_filter_its_state() -> None:
    """What a bound token's state holds is the server's scopes run over every table: on each shipped server
    with scopes, they run as state filters and show the default principal a part of each scoped table."""
    from envfarm.servers.runtime.database import snapshot
    from envfarm.servers.runtime.registry import load_registry

    checked = 0
    for name in (entry.name for entry in load_registry(REPO).servers):
        definition = importlib.import_module(f"envfarm.servers.{name}.server").DEFINITION
        principal = definition.principal
        if principal is None or not principal.scopes:
            continue
        seed = definition.seed()
        everything, seen = snapshot(seed), snapshot(seed, principal.scopes, principal.default)
        assert seen.keys() == everything.keys(), name
        for table, rows in seen.items():
            assert all(row in everything[table] for row in rows), (name, table)
        assert any(len(seen[t]) < len(everything[t]) for t in principal.scopes), name
        checked += 1
    assert checked >= 5
