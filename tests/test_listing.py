"""Shipped tool listings (`tools.json`): a server lists exactly what the SDK would derive at start, and a
listing that no longer matches its tools.py is ignored."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO
from mcp import Client

from envfarm.servers.runtime import listing
from envfarm.servers.runtime.farm import import_server
from envfarm.servers.runtime.registry import load_registry

SERVERS = [s.name for s in load_registry(REPO).servers]


async def listed(name: str) -> list[dict]:
    async with Client(import_server(REPO, name).build()) as client:
        return [tool.model_dump(by_alias=True) for tool in (await client.list_tools()).tools]


@pytest.mark.parametrize("name", SERVERS)
async def test_a_server_lists_the_shipped_schemas_exactly_as_the_sdk_derives_them(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert listing.load(import_server(REPO, name).DEFINITION.directory) is not None, "tools.json is stale or missing"
    shipped = await listed(name)
    monkeypatch.setattr(listing, "load", lambda directory: None)
    derived = await listed(name)
    assert shipped == derived and len(shipped) == len(import_server(REPO, name).DEFINITION.tool_definitions())


def test_a_listing_is_ignored_once_its_tools_py_changes(tmp_path: Path) -> None:
    folder = tmp_path / "clinic"
    shutil.copytree(REPO / "servers" / "clinic", folder, ignore=shutil.ignore_patterns("__pycache__"))
    assert listing.load(folder) is not None
    tools_py = folder / listing.TOOLS_MODULE
    tools_py.write_text(tools_py.read_text(encoding="utf-8") + "\n# edited by hand\n", encoding="utf-8")
    assert listing.load(folder) is None


async def test_a_prebuilt_tool_validates_and_runs_through_the_sdk() -> None:
    """The argument model is built on the first call; bad arguments still get the runtime's own error."""
    async with Client(import_server(REPO, "clinic").build()) as client:
        good = await client.call_tool("get_slot", {"slot_id": "slot_kv2sy6"})
        bad = await client.call_tool("get_slot", {"slot_id": 7})
    assert not good.is_error and (good.structured_content or {})["slot_id"] == "slot_kv2sy6"
    assert bad.is_error and "slot_id" in bad.content[0].text
