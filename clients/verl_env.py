"""envfarm as a verl multi-turn environment (`pip install "envfarm[verl]"`; verl 0.7, whose tool agent loop
has the interaction system).

verl's tool agent loop drives the model; envfarm's own rollout loop (`clients.rollout.Rollout`) drives the
episode. A `_Bridge` joins the two: it is the rollout's policy, and its actions are what verl's model did.

- `EnvfarmInteraction` (verl's `BaseInteraction`, named in the export's `*.interaction.yaml`):
  `start_interaction` opens the task's episode (a fresh copy of the seed per rollout) and its simulated user;
  `generate_response` hands the model's words to the user and returns the user's reply; when the user is
  done it scores the episode with `clients.scoring.Scorer`, exactly as `envfarm eval` does, and returns that
  reward as the turn score; `finalize_interaction` closes the episode.
- `EnvfarmTool` (verl's `BaseTool`, one per tool in the export's `*.tools.yaml`): runs a call on the episode
  of its rollout, found by verl's `agent_data.request_id` through `agent_data.interaction`.
- `clients.verl_agent.EnvfarmAgentLoop` offers each row only its task's tools.
- The reward function is `clients.verl_reward.compute_score`.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

from verl.interactions.base import BaseInteraction
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse

from clients.connect import Connections, farm_targets
from clients.policies import Action, AgentTool, ToolCallRequest
from clients.rollout import Limits, Rollout, RolloutOptions, task_servers
from clients.scoring import Scorer
from clients.tasks import Task
from clients.trajectory import Trajectory
from clients.users import ScriptedUser


class _Bridge:
    """One verl rollout seen from envfarm: the policy's agent whose actions verl's model takes. Each action
    waits for what envfarm's rollout answered (a tool result, or the user's next message)."""

    name = "verl"

    def __init__(self, task: Task) -> None:
        self.task = task
        self.names: dict[tuple[str, str], str] = {}
        self.actions: asyncio.Queue[Action] = asyncio.Queue()
        self.answer: asyncio.Future[dict[str, Any]] | None = None
        self.acted = False
        self.ready = asyncio.Event()  # set once the rollout has named its tools
        self.done: asyncio.Future[Trajectory] = asyncio.get_running_loop().create_future()

    def agent(self, task: Task, tools: list[AgentTool]) -> _Bridge:
        self.names = {(t.server, t.tool): t.name for t in tools}
        self.ready.set()
        return self

    async def aclose(self) -> None:
        return None

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        # Every call but the first follows an action of ours: its last message is what envfarm answered.
        if self.acted and self.answer is not None and not self.answer.done():
            self.answer.set_result(messages[-1])
        action = await self.actions.get()
        self.acted = True
        return action

    async def take(self, action: Action) -> dict[str, Any] | None:
        """Play `action`; the message envfarm answered with, or None when the episode ended instead."""
        self.answer = asyncio.get_running_loop().create_future()
        await self.actions.put(action)
        waiting: set[asyncio.Future[Any]] = {self.answer, self.done}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        return self.answer.result() if self.answer.done() else None


@dataclass
class _Session:
    bridge: _Bridge
    runner: asyncio.Task[Trajectory]
    stack: AsyncExitStack
    score: float = 0.0
    trajectory: Trajectory | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class EnvfarmInteraction(BaseInteraction):  # type: ignore[misc]
    """The simulated user and the reward of envfarm tasks, for verl's tool agent loop.

    config: `farm` (a farm folder; None: the installed farm), `user` ('scripted'), `wall_time_s`."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.farm = Path(config["farm"]) if config.get("farm") else None
        self.limits = Limits(wall_time_s=float(config.get("wall_time_s", 3600)))
        self.sessions: dict[str, _Session] = {}
        self.scorer = Scorer()

    def _farm_root(self) -> Path:
        from servers.runtime.registry import default_farm_root

        return self.farm or default_farm_root()

    async def start_interaction(self, instance_id: str | None = None, **kwargs: Any) -> str:
        instance_id = instance_id or uuid4().hex
        task = Task.model_validate_json(kwargs["task"])
        stack = AsyncExitStack()
        connections = await stack.enter_async_context(
            Connections(farm_targets(self._farm_root(), task_servers(task), "memory"))
        )
        for server in task_servers(task):
            await connections.tools(server)
        bridge = _Bridge(task)
        options = RolloutOptions(limits=self.limits, calibrated=bool(kwargs.get("calibrated", True)))
        rollout = Rollout(task, bridge, ScriptedUser(), connections, options=options)  # type: ignore[arg-type]

        async def run() -> Trajectory:
            try:
                trajectory = await rollout.run()
            except BaseException as exc:
                bridge.done.set_exception(exc)
                raise
            finally:
                bridge.ready.set()  # a rollout that failed before naming its tools must not strand a call
            bridge.done.set_result(trajectory)
            return trajectory

        self.sessions[instance_id] = _Session(bridge, asyncio.ensure_future(run()), stack)
        return instance_id

    async def call_tool(self, instance_id: str, server: str, tool: str, arguments: dict[str, Any]) -> str:
        """Run one call of the model on this rollout's episode; the text the model reads back."""
        session = self.sessions[instance_id]
        await session.bridge.ready.wait()
        name = session.bridge.names.get((server, tool), f"{server}__{tool}")
        async with session.lock:
            call = ToolCallRequest(id=f"call_{uuid4().hex[:8]}", name=name, arguments=json.dumps(arguments))
            answer = await session.bridge.take(Action(tool_calls=[call]))
        return str(answer.get("content") or "") if answer is not None else "Error: the episode has ended."

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        session = self.sessions[instance_id]
        said: dict[str, Any] = next((m for m in reversed(messages) if m["role"] == "assistant"), {})
        async with session.lock:
            answer = await session.bridge.take(Action(content=str(said.get("content") or "")))
        if answer is not None and answer.get("role") == "user":
            return False, str(answer.get("content") or ""), 0.0, {}
        scored = await self.scorer(await session.runner)
        assert scored.score is not None
        session.trajectory, session.score = scored, scored.score.reward
        # verl 0.7's loop never calls finalize_interaction: the episode closes here, in the task that opened it.
        await session.stack.aclose()
        return True, "", session.score, {"success": scored.score.success}

    async def calculate_score(self, instance_id: str | None = None, **kwargs: Any) -> float:
        if instance_id is None:
            return 0.0
        return self.sessions[instance_id].score

    async def finalize_interaction(self, instance_id: str | None = None, **kwargs: Any) -> None:
        session = self.sessions.pop(instance_id, None) if instance_id is not None else None
        if session is None:
            return
        if not session.runner.done():
            session.runner.cancel()
        await asyncio.gather(session.runner, return_exceptions=True)
        await session.stack.aclose()


class EnvfarmTool(BaseTool):  # type: ignore[misc]
    """One farm tool for verl; config: `server`, `tool` (its name on the server)."""

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        agent_data = kwargs.get("agent_data")
        interaction = getattr(agent_data, "interaction", None)
        if agent_data is None or not isinstance(interaction, EnvfarmInteraction):
            return ToolResponse(text="Error: envfarm tools run inside an envfarm interaction."), 0.0, {}
        text = await interaction.call_tool(
            agent_data.request_id, self.config["server"], self.config["tool"], parameters
        )
        return ToolResponse(text=text), 0.0, {}
