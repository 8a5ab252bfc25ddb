"""State preconditions a built-in policy states are enforced by its server, on every seed row they apply to.

A policy sentence ("Issued invoices cannot be edited") that the tools do not enforce makes gold tasks wrong:
the writer grounds a goal on a row the policy forbids acting on, the server accepts it, and the task teaches
the breach. Each test walks every seed row the rule is about, through the real MCP client, so a server that
enforces the rule for one status (paid) and not another (sent) fails.
"""

from __future__ import annotations

import importlib
from typing import Any

from mcp import Client

from envfarm.clients.graph import output_of


async def _rows(client: Client, tool: str, key: str, **arguments: Any) -> list[dict[str, Any]]:
    """Every row a search lists, over all its pages."""
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = output_of(await client.call_tool(tool, {**arguments, "limit": 200, "cursor": cursor}))
        rows += page[key]
        cursor = page.get("cursor")
        if not page.get("has_more"):
            return rows


def _server(name: str) -> Any:
    return importlib.import_module(f"envfarm.servers.{name}.server").build()


async def test_no_issued_invoice_takes_a_new_line_and_a_draft_does() -> None:
    """invoicing policy: "Issued invoices cannot be edited" (sent, partially paid, paid and void alike)."""
    async with Client(_server("invoicing")) as client:
        invoices = await _rows(client, "list_invoices", "invoices")
        items = await _rows(client, "search_catalog", "catalog_items")
        statuses = {i["status"] for i in invoices}
        assert {"draft", "sent"} <= statuses, statuses
        for invoice in invoices:
            call = {"invoice_id": invoice["invoice_id"], "item_id": items[0]["item_id"], "quantity": 1.0}
            result = await client.call_tool("add_invoice_line", call)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            if invoice["status"] == "draft":
                assert not result.is_error, (invoice["number"], text)
            else:
                assert result.is_error and "issued invoices cannot be edited" in text, (invoice["number"], text)


async def test_a_credit_note_never_exceeds_the_open_balance() -> None:
    """invoicing policy: "payments and credit notes cannot exceed the open balance". A credit of a cent more
    than the balance due is refused on every open invoice; one of exactly the balance settles it."""
    async with Client(_server("invoicing")) as client:
        invoices = await _rows(client, "list_invoices", "invoices")
        open_ = [i for i in invoices if i["status"] in ("sent", "partially_paid") and i["balance_due"] > 0]
        assert open_
        for invoice in open_:
            over = {"invoice_id": invoice["invoice_id"], "amount": round(invoice["balance_due"] + 0.01, 2)}
            result = await client.call_tool("issue_credit_note", {**over, "reason": "Billing error"})
            assert result.is_error, invoice["number"]
            assert "cannot exceed the open balance" in " ".join(getattr(c, "text", "") for c in result.content)
        exact = {"invoice_id": open_[0]["invoice_id"], "amount": open_[0]["balance_due"], "reason": "Billing error"}
        assert not (await client.call_tool("issue_credit_note", exact)).is_error
        settled = output_of(await client.call_tool("get_invoice", {"invoice_id": open_[0]["invoice_id"]}))
        assert settled["status"] == "paid" and settled["balance_due"] == 0


async def test_a_patient_gets_at_most_one_appointment_a_day() -> None:
    """clinic policy: "a patient has at most one appointment a day", for a new booking and for a move."""
    async with Client(_server("clinic")) as client:
        patients = await _rows(client, "find_patient", "patients")
        refused = 0
        for patient in patients:
            booked = await _rows(client, "list_appointments", "appointments", patient_id=patient["patient_id"])
            for appointment in [a for a in booked if a["status"] == "booked"]:
                slot = output_of(await client.call_tool("get_slot", {"slot_id": appointment["slot_id"]}))
                day = slot["starts_at"][:10]
                free = await _rows(client, "list_free_slots", "slots", doctor_id=slot["doctor_id"])
                same_day = [s for s in free if s["starts_at"][:10] == day and s["is_free"] and s["starts_at"] > day]
                for other in same_day[:1]:
                    call = {"patient_id": patient["patient_id"], "slot_id": other["slot_id"], "reason": "checkup"}
                    result = await client.call_tool("book_appointment", call)
                    text = " ".join(getattr(c, "text", "") for c in result.content)
                    assert result.is_error and "at most one appointment a day" in text, text
                    refused += 1
        assert refused >= 3


async def test_a_due_date_is_never_extended_into_the_past() -> None:
    """An extension gives the client time from today on: a new due date later than the old one but before today
    (an overdue invoice moved to another passed day) is refused on every open invoice; today is accepted."""
    async with Client(_server("invoicing")) as client:
        invoices = await _rows(client, "list_invoices", "invoices")
        today = "2026-04-13"
        overdue = [i for i in invoices if i["status"] in ("sent", "partially_paid") and i["due_on"] < "2026-04-12"]
        assert overdue
        for invoice in overdue:
            call = {"invoice_id": invoice["invoice_id"], "due_on": "2026-04-12"}
            result = await client.call_tool("extend_due_date", call)
            assert result.is_error and "is in the past" in " ".join(getattr(c, "text", "") for c in result.content)
        assert not (
            await client.call_tool("extend_due_date", {"invoice_id": overdue[0]["invoice_id"], "due_on": today})
        ).is_error
