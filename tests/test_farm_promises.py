"""The farm-wide promises of principals, policies, honest lists and natural parameters, audited on every
published server (its spec.json, tools.json and verification report, and its live instructions over the
real MCP client): each server says whom it acts for and hides other people's private rows, every row of
every table is reachable by paging, the instructions state the date, time zone, principal and policy, and
no parameter is a list written as separated text."""

from __future__ import annotations

import importlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from envfarm.factory.spec import LIST_AS_TEXT

SERVERS_DIR = Path(__file__).resolve().parents[1] / "servers"
SERVERS = sorted(p.parent.name for p in SERVERS_DIR.glob("*/spec.json"))
# A user principal owning no private rows: every project, issue and comment is shared by the whole team.
SHARED_ROWS = {"project_tracker"}


def published(name: str, file: str) -> Any:
    return json.loads((SERVERS_DIR / name / file).read_text(encoding="utf-8"))


def test_the_farm_has_its_24_servers() -> None:
    assert len(SERVERS) >= 24


@pytest.mark.parametrize("name", SERVERS)
def test_whom_the_server_acts_for_and_what_is_private(name: str) -> None:
    """A user principal scopes its private rows and every tool passed the cross-principal check; staff
    act for customers after identifying them, as the instructions and an unenforced rule say."""
    spec = published(name, "spec.json")
    report = published(name, "verification.json")
    principal = spec["principal"]
    if principal["kind"] == "user":
        assert principal.get("scope") or name in SHARED_ROWS, f"{name}: a user with no private rows"
        if principal.get("scope"):
            outcomes = {t["tool"]: t["checks"].get("cross_principal") for t in report["tools"]}
            assert set(outcomes.values()) == {"passed"}, outcomes
    else:
        assert principal["customers"], f"{name}: staff must say how a customer is identified"
        governed = {tool for rule in spec.get("unenforced_rules") or [] for tool in rule["tools"]}
        writes = {t["name"] for t in spec["tools"] if t["effect"] not in ("search", "get")}
        assert governed & writes, f"{name}: no unenforced rule governs a write (identify, confirm)"


@pytest.mark.parametrize("name", SERVERS)
def test_every_row_of_every_table_is_reachable_by_paging(name: str) -> None:
    """No built-in spec excuses a table (`unlisted`), the verifier judged every table reachable (strict),
    and every paged list's pages added up to its total."""
    spec = published(name, "spec.json")
    report = published(name, "verification.json")
    assert not spec.get("unlisted"), f"{name}: unlisted {spec.get('unlisted')}"
    assert report["passed"]
    assert {f"reachable:{t}": "passed" for t in spec["entities"]}.items() <= report["checks"].items()
    assert not [a for a in report["advisories"] if "reachable" in json.dumps(a)]
    paged = {t["tool"]: t["checks"]["paging"] for t in report["tools"] if "paging" in t["checks"]}
    searches = {t["name"] for t in spec["tools"] if t["effect"] == "search"}
    assert searches <= set(paged) and set(paged.values()) == {"passed"}, paged


@pytest.mark.parametrize("name", SERVERS)
def test_every_list_pages_and_no_parameter_is_separated_text(name: str) -> None:
    """Each search takes limit and cursor and returns total, has_more and cursor; no string parameter is
    described as holding comma- or semicolon-separated items (lists are JSON arrays)."""
    spec = published(name, "spec.json")
    tools = published(name, "tools.json")["tools"]
    for tool in spec["tools"]:
        schema = tools[tool["name"]]
        inputs = schema["input_schema"].get("properties", {})
        if tool["effect"] == "search":
            outputs = schema["output_schema"]["properties"]
            assert {"limit", "cursor"} <= set(inputs) and {"total", "has_more", "cursor"} <= set(outputs), tool["name"]
        for pname, param in inputs.items():
            types = {param.get("type")} | {a.get("type") for a in param.get("anyOf", [])}
            if "array" not in types:
                assert not LIST_AS_TEXT.search(param.get("description", "")), f"{tool['name']}.{pname}"


@pytest.mark.parametrize("name", SERVERS)
async def test_the_instructions_state_the_date_time_zone_principal_and_policy(name: str) -> None:
    spec = published(name, "spec.json")
    principal = spec["principal"]
    server = importlib.import_module(f"envfarm.servers.{name}.server")
    async with Client(server.build()) as client:
        text = client.instructions or ""
    now = datetime.fromisoformat(spec["now"])
    assert f"Now: {now:%A} {now.day} {now:%B %Y, %H:%M} UTC" in text
    assert f"Time zone: {principal.get('time_zone', 'UTC')}." in text
    assert principal["default"] in text and principal["description"] in text
    policy = (SERVERS_DIR / name / "policy.md").read_text(encoding="utf-8").strip()
    assert policy and f"Policy:\n{policy}" in text
