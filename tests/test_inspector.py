"""A third-party client, the MCP Inspector CLI, lists and calls a generated server's tools over stdio.

Needs `npx` and the npm registry (the first run downloads the Inspector); skipped where npx is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

NPX = shutil.which("npx")

pytestmark = [
    pytest.mark.inspector,
    pytest.mark.slow,
    pytest.mark.skipif(NPX is None, reason="npx is not installed"),
]


SERVERS = sorted(p.parent.name for p in (REPO / "servers").glob("*/spec.json"))


def inspector(*args: str, python: str = sys.executable, cwd: Path = REPO, server: str = "clinic") -> dict[str, Any]:
    """Run the Inspector CLI against `<python> -m envfarm.servers.<server>` (started in `cwd`) and parse what
    it prints."""
    assert NPX is not None
    command = [NPX, "-y", "@modelcontextprotocol/inspector", "--cli", python, "-m", f"envfarm.servers.{server}", *args]
    done = subprocess.run(command, check=False, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_inspector_lists_the_generated_tools() -> None:
    spec = json.loads((REPO / "servers" / "clinic" / "spec.json").read_text())
    listed = inspector("--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert list(tools) == [tool["name"] for tool in spec["tools"]]
    assert tools["find_patient"]["annotations"]["readOnlyHint"] is True
    assert "outputSchema" in tools["book_appointment"]


def test_the_inspector_calls_a_tool() -> None:
    result = inspector("--method", "tools/call", "--tool-name", "find_patient", "--tool-arg", "full_name=lopez")
    assert result.get("isError") is not True
    assert result["structuredContent"]["count"] >= 1


@pytest.mark.parametrize("server", SERVERS)
def test_the_inspector_lists_and_calls_every_server(server: str) -> None:
    """Every published server, over stdio: the Inspector lists its tools in spec order and calls its first
    list that needs no argument, which answers one page with its total."""
    spec = json.loads((REPO / "servers" / server / "spec.json").read_text())
    listed = inspector("--method", "tools/list", server=server)
    assert [tool["name"] for tool in listed["tools"]] == [tool["name"] for tool in spec["tools"]]
    search = next(
        t["name"]
        for t in spec["tools"]
        if t["effect"] == "search" and not any(p.get("required") for p in t["params"].values())
    )
    result = inspector("--method", "tools/call", "--tool-name", search, server=server)
    assert result.get("isError") is not True, result
    assert result["structuredContent"]["total"] >= result["structuredContent"]["count"]
