"""envfarm as a verl multi-turn environment (`pip install "envfarm[verl]"`; verl 0.7, whose tool agent loop
has the interaction system). Each verl rollout is a `envfarm.clients.driven.DrivenEpisode`.

- `EnvfarmInteraction` (verl's `BaseInteraction`, named in the export's `*.interaction.yaml`):
  `start_interaction` opens the task's episode (a fresh copy of the seed per rollout) and its simulated user;
  `generate_response` hands the model's words to the user and returns the user's reply; when the user is
  done it scores the episode exactly as `envfarm eval` does and returns that reward as the turn score.
- `EnvfarmTool` (verl's `BaseTool`, one per tool in the export's `*.tools.yaml`): runs a call on the episode
  of its rollout, found by verl's `agent_data.request_id` through `agent_data.interaction`.
- `envfarm.clients.verl_agent.EnvfarmAgentLoop` offers each row only its task's tools.
- The reward function is `envfarm.clients.verl_reward.compute_score`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import uuid4

from verl.interactions.base import BaseInteraction
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse

from envfarm.clients.driven import DrivenEpisode
from envfarm.clients.rollout import Limits
from envfarm.clients.tasks import Task


class EnvfarmInteraction(BaseInteraction):  # type: ignore[misc]
    """The simulated user and the reward of envfarm tasks, for verl's tool agent loop.

    config: `farm` (a farm folder; None: the installed farm), `user` ('scripted'), `wall_time_s`."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.farm = Path(config["farm"]) if config.get("farm") else None
        self.limits = Limits(wall_time_s=float(config.get("wall_time_s", 3600)))
        self.sessions: dict[str, DrivenEpisode] = {}
        self.scores: dict[str, float] = {}

    async def start_interaction(self, instance_id: str | None = None, **kwargs: Any) -> str:
        instance_id = instance_id or uuid4().hex
        task = Task.model_validate_json(kwargs["task"])
        calibrated = bool(kwargs.get("calibrated", True))
        self.sessions[instance_id] = await DrivenEpisode.start(
            task, farm=self.farm, calibrated=calibrated, limits=self.limits
        )
        return instance_id

    async def call_tool(self, instance_id: str, server: str, tool: str, arguments: dict[str, Any]) -> str:
        """Run one call of the model on this rollout's episode; the text the model reads back."""
        episode = self.sessions[instance_id]
        return await episode.call_tool(episode.name_of(server, tool), arguments)

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        episode = self.sessions[instance_id]
        said: dict[str, Any] = next((m for m in reversed(messages) if m["role"] == "assistant"), {})
        reply = await episode.say(str(said.get("content") or ""))
        if reply is not None:
            return False, reply, 0.0, {}
        # verl 0.7's loop never calls finalize_interaction: the episode closes here, in the task that opened it.
        scored = await episode.finish()
        del self.sessions[instance_id]
        assert scored.score is not None
        self.scores[instance_id] = scored.score.reward
        return True, "", scored.score.reward, {"success": scored.score.success}

    async def calculate_score(self, instance_id: str | None = None, **kwargs: Any) -> float:
        return self.scores.get(instance_id or "", 0.0)

    async def finalize_interaction(self, instance_id: str | None = None, **kwargs: Any) -> None:
        episode = self.sessions.pop(instance_id or "", None)
        self.scores.pop(instance_id or "", None)
        if episode is not None:
            await episode.close()


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
