"""envfarm as an OpenEnv environment (`pip install "envfarm[openenv]"`, openenv-core 0.3).

`EnvfarmEnvironment` is OpenEnv's `Environment`: `reset` opens a task's episode (a fresh copy of the seed)
and returns the system prompt, the user's opening and the task's tools as OpenAI functions; `step` takes the
model's turn, either tool calls (each answered by the episode) or words to the user (answered by the simulated
user); when the user is done, the observation is `done` with the reward `envfarm eval` gives the episode.
Each episode is a `envfarm.clients.driven.DrivenEpisode`. Serve it with OpenEnv's own server:
`uvicorn --factory envfarm.clients.openenv_env:app_from_env` (`ENVFARM_TASKS=tasks.jsonl`), one episode per
WebSocket session; `reset` takes `task` (a task's JSON) or picks `tasks[seed % len(tasks)]`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, Field

from envfarm.clients.driven import DrivenEpisode
from envfarm.clients.tasks import Task, load_tasks


class ToolCall(BaseModel):
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class EnvfarmAction(Action):  # type: ignore[misc]
    """The model's turn: tool calls, or (with none) words to the user."""

    tool_calls: list[ToolCall] = Field(default_factory=list)
    content: str = ""


class EnvfarmObservation(Observation):  # type: ignore[misc]
    """What the model reads next: the opening (at reset), tool results, or the user's reply."""

    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list, description="at reset: the task's tools")
    task_id: str = ""


class EnvfarmEnvironment(Environment[EnvfarmAction, EnvfarmObservation, State]):  # type: ignore[misc]
    """One envfarm episode at a time (one instance per OpenEnv session)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every episode is its own copy of the seed

    def __init__(self, tasks: list[Task] | None = None, farm: Path | None = None) -> None:
        super().__init__()
        self.tasks = tasks or []
        self.farm = farm
        self.episode: DrivenEpisode | None = None
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EnvfarmObservation:
        raise NotImplementedError("envfarm episodes are async: use reset_async (OpenEnv's server does)")

    def step(self, action: EnvfarmAction, timeout_s: float | None = None, **kwargs: Any) -> EnvfarmObservation:
        raise NotImplementedError("envfarm episodes are async: use step_async (OpenEnv's server does)")

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, task: str | None = None, **kwargs: Any
    ) -> EnvfarmObservation:
        if self.episode is not None:
            await self.episode.close()
        if task is not None:
            chosen = Task.model_validate_json(task)
        elif self.tasks:
            chosen = self.tasks[(seed or 0) % len(self.tasks)]
        else:
            raise ValueError("reset needs a task: pass `task` (a task's JSON) or serve a tasks file")
        self.episode = await DrivenEpisode.start(chosen, farm=self.farm)
        self._state = State(episode_id=episode_id or chosen.id, step_count=0)
        return EnvfarmObservation(messages=self.episode.opening, tools=self.episode.tools, task_id=chosen.id)

    async def step_async(
        self, action: EnvfarmAction, timeout_s: float | None = None, **kwargs: Any
    ) -> EnvfarmObservation:
        if self.episode is None:
            raise ValueError("step before reset: there is no episode")
        self._state.step_count += 1
        episode = self.episode
        if action.tool_calls:
            messages = [
                {"role": "tool", "name": call.name, "content": await episode.call_tool(call.name, call.arguments)}
                for call in action.tool_calls
            ]
            return EnvfarmObservation(messages=messages, task_id=episode.task.id)
        reply = await episode.say(action.content)
        if reply is not None:
            return EnvfarmObservation(messages=[{"role": "user", "content": reply}], task_id=episode.task.id)
        scored = await episode.finish()
        self.episode = None
        assert scored.score is not None
        return EnvfarmObservation(
            done=True,
            reward=scored.score.reward,
            task_id=scored.task_id,
            metadata={"success": scored.score.success, "error": scored.score.error},
        )

    @property
    def state(self) -> State:
        return self._state


def app_from_env() -> Any:
    """OpenEnv's server over the tasks in $ENVFARM_TASKS (optional) and the farm in $ENVFARM_HOME."""
    tasks = load_tasks(Path(os.environ["ENVFARM_TASKS"])) if os.environ.get("ENVFARM_TASKS") else []
    farm = Path(os.environ["ENVFARM_HOME"]) if os.environ.get("ENVFARM_HOME") else None
    return make_app(tasks, farm)


def make_app(tasks: list[Task], farm: Path | None = None) -> Any:
    """OpenEnv's FastAPI app over `tasks`, one `EnvfarmEnvironment` per session."""
    return create_app(lambda: EnvfarmEnvironment(tasks, farm), EnvfarmAction, EnvfarmObservation, env_name="envfarm")
