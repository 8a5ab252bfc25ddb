"""Principals, policies, honest lists and array parameters, on the published mail server (in-process,
over the real MCP client): the agent acts for one person, sees only their rows, reads the date and
the policy in the instructions, pages through every list, and passes lists as arrays."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from envfarm.servers.mail.server import build
from envfarm.servers.runtime.control import ControlError, EpisodeClient

MARIA = "maria.patel@example.com"
NOAH = "noah.moreau@example.com"
NOAHS_CONVERSATION = "cnv_rvh3f9"


def data(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_the_instructions_state_the_date_time_zone_principal_and_policy() -> None:
    async with Client(build()) as client:
        text = client.instructions or ""
        assert "Monday 13 April 2026, 09:00 UTC (10:00 in Europe/Lisbon)" in text
        assert "Time zone: Europe/Lisbon" in text and MARIA in text and "Policy:" in text
        assert "private records do not exist for you" in text
        resources = await client.list_resources()
        [policy] = [r for r in resources.resources if r.name == "policy"]
        read = await client.read_resource(policy.uri)
        assert "get a clear yes" in read.contents[0].text  # type: ignore[union-attr]
        [rules] = [r for r in resources.resources if r.name == "policy_rules"]
        listed = json.loads((await client.read_resource(rules.uri)).contents[0].text)["unenforced_rules"]  # type: ignore[union-attr]
        names = {t.name for t in (await client.list_tools()).tools}
        assert listed and all(r["id"] and r["rule"] and set(r["tools"]) <= names for r in listed)
        reset = await EpisodeClient(client, "as-noah").reset(principal=NOAH)
        assert reset.principal == NOAH and reset.instructions and f"You act for {NOAH}" in reset.instructions


async def test_another_principals_rows_do_not_exist() -> None:
    async with Client(build()) as client:
        maria = EpisodeClient(client, "maria")
        listed = data(await maria.call_tool("list_conversations", {"limit": 200}))
        assert listed["total"] == len(listed["conversations"]) > 0
        assert {c["mailbox_email"] for c in listed["conversations"]} == {MARIA}
        refused = await maria.call_tool("archive_conversation", {"conversation_id": NOAHS_CONVERSATION})
        assert refused.is_error and "Unknown conversation_id" in refused.content[0].text  # type: ignore[union-attr]
        assert (await maria.state()).diff == {}
        noah = EpisodeClient(client, "noah")
        await noah.reset(principal=NOAH)
        archived = data(await noah.call_tool("archive_conversation", {"conversation_id": NOAHS_CONVERSATION}))
        assert archived["folder"] == "archive" and (await noah.state()).principal == NOAH


async def test_an_unknown_principal_is_refused_with_examples() -> None:
    async with Client(build()) as client:
        with pytest.raises(ControlError, match="unknown principal 'nobody@example.com'.*mailboxes.email"):
            await EpisodeClient(client, "x").reset(principal="nobody@example.com")


async def test_lists_page_through_every_row_in_the_documented_order() -> None:
    async with Client(build()) as client:
        episode = EpisodeClient(client, "paging")
        everything = data(await episode.call_tool("list_conversations", {"limit": 200}))["conversations"]
        seen: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = data(await episode.call_tool("list_conversations", {"limit": 5, "cursor": cursor}))
            assert page["count"] == len(page["conversations"]) <= 5 and page["total"] == len(everything)
            seen += page["conversations"]
            cursor = page["cursor"]
            assert page["has_more"] == (cursor is not None)
            if not page["has_more"]:
                break
        assert seen == everything
        times = [c["last_message_at"] for c in seen]
        assert times == sorted(times, reverse=True)  # "newest first" is true
        first = data(await episode.call_tool("list_conversations", {"limit": 5}))
        other = await episode.call_tool("list_conversations", {"folder": "inbox", "cursor": first["cursor"]})
        assert other.is_error and "another list or other filters" in other.content[0].text  # type: ignore[union-attr]


async def test_array_parameters_are_checked_per_item_and_a_reply_goes_to_the_thread() -> None:
    async with Client(build()) as client:
        episode = EpisodeClient(client, "arrays")
        bad = await episode.call_tool(
            "create_draft", {"to_emails": [NOAH, "nobody@example.com"], "subject": "Hi", "body": "Hello"}
        )
        assert bad.is_error and "nobody@example.com" in bad.content[0].text  # type: ignore[union-attr]
        wrong = await episode.call_tool("create_draft", {"to_emails": f"{NOAH}, x", "subject": "Hi", "body": "Hello"})
        assert wrong.is_error and "to_emails" in wrong.content[0].text  # type: ignore[union-attr]
        draft = data(await episode.call_tool("create_draft", {"thread_id": "thr_esxwe2", "body": "Works for me."}))
        assert draft["mailbox_email"] == MARIA and draft["to_emails"] and MARIA not in draft["to_emails"]
        sent = data(await episode.call_tool("send_draft", {"draft_id": draft["draft_id"]}))
        assert sent["sender_email"] == MARIA and sent["to_emails"] == draft["to_emails"]


# Servers whose user principal owns no private rows yet: every row is shared within the organisation
# (a project tracker).
SHARED_ROWS = {"project_tracker"}


def test_every_tool_of_every_server_with_private_rows_passed_the_cross_principal_check() -> None:
    """The published reports: a call made again as another principal neither returned nor changed the
    first one's private rows, for every tool of every server whose principal owns rows."""
    import json
    from pathlib import Path

    servers = Path(__file__).resolve().parents[1] / "servers"
    checked = set()
    for spec_file in sorted(servers.glob("*/spec.json")):
        principal = json.loads(spec_file.read_text(encoding="utf-8")).get("principal") or {}
        if principal.get("kind") != "user":
            continue
        name = spec_file.parent.name
        if not principal.get("scope"):
            assert name in SHARED_ROWS, f"{name} acts for a user but declares no private rows (principal.scope)"
            continue
        report = json.loads((spec_file.parent / "verification.json").read_text(encoding="utf-8"))
        outcomes = {t["tool"]: t["checks"].get("cross_principal") for t in report["tools"]}
        assert set(outcomes.values()) == {"passed"}, f"{name}: {outcomes}"
        checked.add(name)
    assert {"mail", "banking", "docs_drive", "team_chat", "marketplace", "calendar"} <= checked


async def test_calendar_shows_other_peoples_meetings_as_busy_time_only() -> None:
    """Calendar: a meeting is seen by its organizer and invitees; anyone else sees only when it blocks a
    person (free/busy) or a room (busy intervals), never its id, title or invitees."""
    from envfarm.servers.calendar.server import build as build_calendar

    daniel = "daniel.ahmed@example.com"
    async with Client(build_calendar()) as client:
        organizer = EpisodeClient(client, "daniel")
        await organizer.reset(principal=daniel)
        [meeting] = data(
            await organizer.call_tool("search_events", {"title": "retrospective", "organizer_email": daniel})
        )["events"]
        window = {"starts_at": meeting["starts_at"], "ends_at": meeting["ends_at"]}
        own_room = data(await organizer.call_tool("check_room_availability", {"room_id": meeting["room_id"], **window}))
        assert [e["event_id"] for e in own_room["conflicts"]] == [meeting["event_id"]]

        noah = EpisodeClient(client, "noah")
        hidden = await noah.call_tool("get_event", {"event_id": meeting["event_id"]})
        assert hidden.is_error and "Unknown event_id" in hidden.content[0].text  # type: ignore[union-attr]
        listed = data(await noah.call_tool("search_events", {"title": "retrospective", "limit": 200}))["events"]
        assert listed and meeting["event_id"] not in {e["event_id"] for e in listed}
        room = data(await noah.call_tool("check_room_availability", {"room_id": meeting["room_id"], **window}))
        assert room["available"] is False and room["conflicts"] == []
        assert room["busy"] == [f"{meeting['starts_at']}/{meeting['ends_at']}"]
        busy = data(
            await noah.call_tool(
                "get_free_busy",
                {"emails": [daniel], "starts_after": meeting["starts_at"], "starts_before": meeting["ends_at"]},
            )
        )
        assert busy["busy"][daniel] == [[meeting["starts_at"], meeting["ends_at"]]]
        assert meeting["event_id"] not in json.dumps(busy) + json.dumps(room)
        refused = await noah.call_tool("cancel_event", {"event_id": meeting["event_id"], "cancel_reason": "x"})
        assert refused.is_error and (await noah.state()).diff == {}
