"""The tools every published server lists stay byte-for-byte what they were when the fixture was recorded.

`tests/data/tools_list.json` holds, per server, the sha256 of its whole `tools/list` result (as JSON, by
alias, without nulls) and of each tool's own entry. It was recorded from the farm as published before the
generated code moved its repetition into the runtime (page models, `Limit`/`Cursor`, `field()`): the
regenerated `tools.py` files must list exactly the same names, descriptions, schemas and annotations. A
change that means to alter a listing re-records the fixture (`python tests/test_tool_contract.py`) and
says so in its commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from envfarm.servers.runtime.farm import import_server
from envfarm.servers.runtime.registry import load_registry

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "data" / "tools_list.json"
SERVERS = [s.name for s in load_registry(REPO).servers]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def listing_hashes(name: str) -> dict[str, Any]:
    """The sha256 of `name`'s `tools/list` result as JSON and of each tool's entry, by tool name."""
    async with Client(import_server(REPO, name).build()) as client:
        result = await client.list_tools()
    return {
        "tools/list": _sha(result.model_dump_json(by_alias=True, exclude_none=True)),
        "tools": {t.name: _sha(t.model_dump_json(by_alias=True, exclude_none=True)) for t in result.tools},
    }


@pytest.mark.parametrize("name", SERVERS)
async def test_a_server_lists_the_recorded_tools_byte_for_byte(name: str) -> None:
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))[name]
    now = await listing_hashes(name)
    changed = sorted(t for t in recorded["tools"] if now["tools"].get(t) != recorded["tools"][t])
    assert list(now["tools"]) == list(recorded["tools"]), "the tools or their order changed"
    assert not changed, f"{name}: these tools list differently than recorded: {changed}"
    assert now["tools/list"] == recorded["tools/list"]


def record() -> None:
    """Write the fixture from the farm as it is now."""

    async def all_hashes() -> dict[str, Any]:
        return {name: await listing_hashes(name) for name in SERVERS}

    FIXTURE.write_text(json.dumps(anyio.run(all_hashes), indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    record()
    sys.exit(0)
