"""Hostile input, in-memory over the real SDK: every bad argument is an `invalid_arguments` error that
names it, changes nothing, and stays short (issue 12)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import state
from mcp import Client

from servers.banking.server import build as build_banking
from servers.clinic.server import build as build_clinic
from servers.runtime.arguments import MAX_MESSAGE_CHARS
from servers.runtime.control import ERROR_KIND_META_KEY

ACCOUNT = "acc_0001"


def kind(result: Any) -> str | None:
    return (result.meta or {}).get(ERROR_KIND_META_KEY)


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _payee_of(client: Client) -> tuple[str, str]:
    """An active account and a payee saved by its owner (found over MCP, not hard-coded)."""
    payees = (await client.call_tool("list_payees", {"customer_id": "cst_0001"})).structured_content or {}
    accounts = (await client.call_tool("list_accounts", {})).structured_content or {}  # the default principal: cst_0001
    active = next(a["account_id"] for a in accounts["accounts"] if a["status"] == "active")
    return active, payees["payees"][0]["payee_id"]


@pytest.mark.parametrize("amount", ["Infinity", "1e309", 1e309, float("nan"), "-Infinity", 5e12])
async def test_non_finite_or_huge_numbers_are_refused_and_change_nothing(amount: Any) -> None:
    async with Client(build_banking()) as client:
        account, payee = await _payee_of(client)
        before = (await state(client)).hash
        result = await client.call_tool(
            "schedule_payment",
            {"account_id": account, "payee_id": payee, "amount": amount, "frequency": "once", "next_run_on": "2026-05-01"},
        )
        assert result.is_error and kind(result) == "invalid_arguments", text(result)
        assert "amount" in text(result)
        assert (await state(client)).hash == before


@pytest.mark.parametrize("day", ["2026-02-30", "9999-99-99", "2026-13-01"])
async def test_impossible_dates_are_refused(day: str) -> None:
    async with Client(build_banking()) as client:
        account, payee = await _payee_of(client)
        result = await client.call_tool(
            "schedule_payment",
            {"account_id": account, "payee_id": payee, "amount": 5, "frequency": "once", "next_run_on": day},
        )
        assert result.is_error and kind(result) == "invalid_arguments" and "next_run_on" in text(result)
        good = await client.call_tool(
            "schedule_payment",
            {"account_id": account, "payee_id": payee, "amount": 5, "frequency": "once", "next_run_on": "2026-05-01"},
        )
        assert not good.is_error, text(good)


async def test_impossible_times_are_refused() -> None:
    async with Client(build_banking()) as client:
        result = await client.call_tool("list_transactions", {"account_id": ACCOUNT, "posted_after": "2026-02-30T25:00"})
        assert result.is_error and kind(result) == "invalid_arguments" and "posted_after" in text(result)


@pytest.mark.parametrize(
    ("arguments", "names"),
    [
        ({"full_name": "x" * 50_000}, "full_name"),  # was "LIKE pattern too complex", a server_error
        ({"full_name": "lo\ud800pez"}, "lone surrogate"),  # was a UnicodeEncodeError, a server_error
    ],
)
async def test_oversized_or_invalid_text_is_invalid_arguments(arguments: dict[str, Any], names: str) -> None:
    async with Client(build_clinic()) as client:
        result = await client.call_tool("find_patient", arguments)
        assert result.is_error and kind(result) == "invalid_arguments", text(result)
        assert names in text(result)


async def test_error_messages_never_echo_a_huge_value() -> None:
    async with Client(build_clinic()) as client:
        unknown_id = await client.call_tool("get_invoice", {"invoice_id": "inv_" + "9" * 1_000_000})
        unknown_arg = await client.call_tool("find_patient", {"x" * 100_000: 1})
        unknown_tool = await client.call_tool("no_such_tool_" + "y" * 100_000, {})
    for result in (unknown_id, unknown_arg, unknown_tool):
        assert result.is_error and kind(result) in ("invalid_arguments", "rejected"), text(result)[:200]
        assert len(text(result)) <= MAX_MESSAGE_CHARS


@pytest.mark.parametrize("wildcard", ["%", "_", "!", "lo%ez"])
async def test_contains_searches_match_wildcards_literally(wildcard: str) -> None:
    async with Client(build_clinic()) as client:
        everyone = await client.call_tool("find_patient", {"full_name": ""})
        result = await client.call_tool("find_patient", {"full_name": wildcard})
    assert (everyone.structured_content or {})["count"] > 0
    assert not result.is_error and (result.structured_content or {})["count"] == 0


async def test_handler_searches_escape_wildcards_too() -> None:
    from servers.team_chat.server import build as build_chat

    async with Client(build_chat()) as client:
        members = (await client.call_tool("find_members", {})).structured_content or {}
        member = members["members"][0]["member_id"]
        plain = await client.call_tool("search_messages", {"member_id": member, "text": "e"})
        wild = await client.call_tool("search_messages", {"member_id": member, "text": "%"})
    found = (wild.structured_content or {})["messages"]
    assert not wild.is_error and 0 < len(found) < (plain.structured_content or {})["count"]
    assert all("%" in m["text"] for m in found)
