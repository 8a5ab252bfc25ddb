"""An envfarm episode driven from outside: a trainer's loop holds the model, envfarm's rollout holds the episode.

Trainers (verl's agent loop, an OpenEnv server) call in with what the model did, one step at a time;
envfarm's own rollout loop (`envfarm.clients.rollout.Rollout`) runs the episode as it always does: a fresh copy of the
seed per episode, the simulated user, the same limits, the same trajectory. The `_Bridge` is that rollout's
policy: each action it plays is one the trainer's model took, and it hands back what the rollout answered
(a tool result, or the user's next message). When the user is done, the trajectory is scored by
`envfarm.clients.scoring.Scorer`, exactly as `envfarm eval` scores it.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from uuid import uuid4

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import Action, AgentTool, ToolCallRequest
from envfarm.clients.rollout import Limits, Rollout, RolloutOptions, task_servers
from envfarm.clients.scoring import Scorer
from envfarm.clients.tasks import Task
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import ScriptedUser


class _Bridge:
    """The rollout's policy and agent; its actions are the trainer's model's."""

    name = "trainer"

    def __init__(self) -> None:
        self.names: dict[tuple[str, str], str] = {}
        self.tools: list[AgentTool] = []
        self.opening: list[dict[str, Any]] = []
        self.actions: asyncio.Queue[Action] = asyncio.Queue()
        self.answer: asyncio.Future[dict[str, Any]] | None = None
        self.acted = False
        self.ready = asyncio.Event()  # set once the rollout has named its tools and opened the chat
        self.done: asyncio.Future[Trajectory] = asyncio.get_running_loop().create_future()

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> _Bridge:
        self.names = {(t.server, t.tool): t.name for t in tools}
        self.tools = tools
        return self

    async def aclose(self) -> None:
        return None

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        if not self.acted:
            self.opening = list(messages)
            self.ready.set()
        # Every call but the first follows an action of ours: its last message is what envfarm answered.
        elif self.answer is not None and not self.answer.done():
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


class DrivenEpisode:
    """One episode of one task, stepped by a trainer. Open it with `await DrivenEpisode.start(...)` in the
    task that will also `close()` it (the farm's connections belong to that task)."""

    def __init__(self, task: Task, bridge: _Bridge, runner: asyncio.Task[Trajectory], stack: AsyncExitStack) -> None:
        self.task = task
        self._bridge = bridge
        self._runner = runner
        self._stack = stack
        self._lock = asyncio.Lock()
        self.trajectory: Trajectory | None = None

    @classmethod
    async def start(
        cls, task: Task, *, farm: Path | None = None, calibrated: bool = True, limits: Limits | None = None
    ) -> DrivenEpisode:
        from envfarm.servers.runtime.registry import default_farm_root

        stack = AsyncExitStack()
        connections = await stack.enter_async_context(
            Connections(farm_targets(farm or default_farm_root(), task_servers(task), "memory"))
        )
        for server in task_servers(task):
            await connections.tools(server)
        bridge = _Bridge()
        options = RolloutOptions(limits=limits or Limits(wall_time_s=3600), calibrated=calibrated)
        rollout = Rollout(task, bridge, ScriptedUser(), connections, options=options)  # type: ignore[arg-type]

        async def run() -> Trajectory:
            try:
                trajectory = await rollout.run()
            except BaseException as exc:
                bridge.done.set_exception(exc)
                raise
            finally:
                bridge.ready.set()  # a rollout that failed before it began must not strand a step
            bridge.done.set_result(trajectory)
            return trajectory

        episode = cls(task, bridge, asyncio.ensure_future(run()), stack)
        await bridge.ready.wait()
        return episode

    @property
    def opening(self) -> list[dict[str, Any]]:
        """The system prompt and the user's first message."""
        return self._bridge.opening

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The task's tools as OpenAI functions, under the names the episode knows them by."""
        return [tool.openai() for tool in self._bridge.tools]

    def name_of(self, server: str, tool: str) -> str:
        return self._bridge.names.get((server, tool), f"{server}__{tool}")

    async def call_tool(self, name: str, arguments: dict[str, Any] | str) -> str:
        """Run one call the model made; the text it reads back (an unknown name gets the episode's error)."""
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        async with self._lock:
            answer = await self._bridge.take(
                Action(tool_calls=[ToolCallRequest(id=f"call_{uuid4().hex[:8]}", name=name, arguments=raw)])
            )
        return str(answer.get("content") or "") if answer is not None else "Error: the episode has ended."

    async def say(self, content: str) -> str | None:
        """The model's words to the user; the user's reply, or None when the user is done."""
        async with self._lock:
            answer = await self._bridge.take(Action(content=content))
        if answer is not None and answer.get("role") == "user":
            return str(answer.get("content") or "")
        return None

    async def finish(self) -> Trajectory:
        """The scored trajectory (once the user is done), closing the episode."""
        if self.trajectory is None:
            self.trajectory = await Scorer()(await self._runner)
            await self.close()
        return self.trajectory

    async def close(self) -> None:
        if not self._runner.done():
            self._runner.cancel()
        await asyncio.gather(self._runner, return_exceptions=True)
        await self._stack.aclose()
