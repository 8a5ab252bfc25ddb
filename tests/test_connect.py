"""The connection harness in `clients/`: our servers (in-process, stdio) with isolated episodes,
a foreign server from an `mcpServers` config with one process per episode, and the ways a server
can fail (it does not start, it hangs) reported as errors instead of waits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import FREE_SLOT, REPO, booking

from envfarm.clients.connect import Connections, farm_targets, load_server_configs
from envfarm.servers.runtime.control import ControlError

TODO_SERVER = Path(__file__).parent / "foreign" / "todo_server.py"


def write_config(path: Path, servers: dict[str, object]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def test_episodes_on_our_servers_are_isolated_and_observable() -> None:
    async with Connections(farm_targets(REPO, ["clinic"])) as farm:
        async with farm.episode("clinic", "a") as a, farm.episode("clinic", "b") as b:
            assert a.controlled and {t.name for t in a.tools} >= {"book_appointment", "list_appointments"}
            booked = await a.call_tool("book_appointment", booking(FREE_SLOT, "isolated"))
            assert not booked.is_error, booked.content
            state_a, state_b = await a.state(), await b.state()
            assert state_a is not None and state_b is not None
            assert [row["reason"] for row in state_a.diff["appointments"].added] == ["isolated"]
            assert state_b.diff == {}
        async with farm.episode("clinic", "a") as again:  # a new episode with the same name starts from the seed
            fresh = await again.state()
            assert fresh is not None and fresh.diff == {}


async def test_our_server_over_stdio() -> None:
    async with Connections(farm_targets(REPO, ["clinic"], "stdio")) as farm, farm.episode("clinic", "s") as episode:
        result = await episode.call_tool("search_doctors", {"specialty": "cardiology"})
        assert not result.is_error and result.structured_content["doctors"]


async def test_a_foreign_server_gets_a_fresh_process_per_episode(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"todo": {"command": sys.executable, "args": [str(TODO_SERVER)]}})
    async with Connections(load_server_configs(config)) as farm:
        assert {t.name for t in await farm.tools("todo")} == {
            "search_projects",
            "list_project_tasks",
            "add_task",
            "complete_task",
        }
        async with farm.episode("todo", "one") as one:
            assert not one.controlled and await one.state() is None
            added = await one.call_tool("add_task", {"project_id": "prj_7f3a", "title": "Paint it"})
            assert not added.is_error, added.content
            listed = await one.call_tool("list_project_tasks", {"project_id": "prj_7f3a"})
            assert len(listed.structured_content["tasks"]) == 2
        async with farm.episode("todo", "two") as two:
            listed = await two.call_tool("list_project_tasks", {"project_id": "prj_7f3a"})
            assert len(listed.structured_content["tasks"]) == 1  # the first episode's write is gone


async def test_a_server_that_does_not_start_is_reported(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "mcp.json", {"dead": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}}
    )
    async with Connections(load_server_configs(config), timeout=10) as farm:
        with pytest.raises(ControlError, match="dead"):
            await farm.tools("dead")


async def test_a_hanging_tool_call_times_out(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "mcp.json", {"todo": {"command": sys.executable, "args": [str(TODO_SERVER), "--hang"]}}
    )
    async with Connections(load_server_configs(config), timeout=2) as farm, farm.episode("todo", "h") as episode:
        with pytest.raises(ControlError, match="timeout"):
            await episode.call_tool("search_projects", {})


def test_a_broken_config_names_the_entry_and_the_problem(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"ok": {"command": "x"}, "bad": {"args": ["y"]}})
    with pytest.raises(ValueError, match=r"mcpServers\.bad: .*exactly one of `command`"):
        load_server_configs(config)
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(ValueError, match="junk.json: cannot read"):
        load_server_configs(tmp_path / "junk.json")


async def test_an_unknown_server_name_is_a_lookup_error() -> None:
    async with Connections({}) as farm:
        with pytest.raises(LookupError, match="no server named 'nope'"):
            await farm.tools("nope")
