"""envfarm under OpenEnv's own server (`pip install -e ".[openenv]"`): recorded episodes replayed over
OpenEnv's WebSocket protocol end with the reward `envfarm eval` gives them, for a solved and a failed one."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from conftest import REPO
from handmade import handmade_tasks

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.run import evaluate
from envfarm.clients.scoring import Scorer
from envfarm.clients.trajectory import Trajectory

pytest.importorskip("openenv.core.env_server.http_server", reason="openenv-core is the `openenv` extra")
from fastapi.testclient import TestClient

from envfarm.clients.openenv_env import make_app


async def _recorded() -> list[Trajectory]:
    async with Connections(farm_targets(REPO, ["clinic"])) as connections:
        tasks = await handmade_tasks(connections)
        return await evaluate(tasks, connections, show_progress=False)


def _send(ws: Any, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    ws.send_text(json.dumps({"type": kind, "data": data}))
    answer: dict[str, Any] = json.loads(ws.receive_text())
    assert answer["type"] == "observation", answer
    return answer["data"]


def test_recorded_episodes_replay_over_openenv_to_the_eval_reward() -> None:
    recorded = [t for t in anyio.run(_recorded) if t.calibrated and t.stop_reason == "done"]
    client = TestClient(make_app([t.task for t in recorded], farm=REPO))
    rewards: dict[str, list[float]] = {}
    with client, client.websocket_connect("/ws") as ws:
        for trajectory in recorded:
            expected = anyio.run(Scorer(), trajectory).score
            assert expected is not None
            opened = _send(ws, "reset", {"task": trajectory.task.model_dump_json()})["observation"]
            assert opened["messages"] == trajectory.messages[:2] and opened["task_id"] == trajectory.task_id
            assert {t["function"]["name"] for t in opened["tools"]} == set(trajectory.tool_map)
            later = trajectory.messages[2:]
            for n, message in enumerate(later):
                if message["role"] != "assistant":
                    continue
                if message.get("tool_calls"):
                    calls = [
                        {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                        for c in message["tool_calls"]
                    ]
                    got = _send(ws, "step", {"tool_calls": calls})["observation"]["messages"]
                    answers = [m["content"] for m in later[n + 1 :] if m["role"] == "tool"][: len(calls)]
                    assert [m["content"] for m in got] == answers
                    continue
                step = _send(ws, "step", {"content": message.get("content") or ""})
                if step["done"]:
                    assert step["reward"] == pytest.approx(expected.reward), trajectory.id
                    rewards.setdefault(trajectory.policy, []).append(step["reward"])
                    break
                reply = next(m for m in later[n + 1 :] if m["role"] == "user")
                assert step["observation"]["messages"] == [{"role": "user", "content": reply["content"]}]
            else:
                pytest.fail(f"{trajectory.id}: the episode never ended")
    assert rewards["oracle"] and all(r == 1.0 for r in rewards["oracle"])
    assert any(r < 1.0 for r in rewards["heuristic"])
