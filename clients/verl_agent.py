"""`envfarm_agent`: verl's tool agent loop, offering each rollout only its task's tools.

verl's own `tool_agent` loop offers every tool of its tool config to every row; for an export of the whole
farm that is ~345 tools, ~58k tokens of schemas in every prompt. This loop (named in the export's
`*.agent.yaml`, for `actor_rollout_ref.rollout.agent.agent_loop_config_path`) renders each prompt with the
schemas of the row's task only (its enabled tools, distractors included); a call of any other tool is
refused by the episode as an unknown tool.
"""

from __future__ import annotations

from typing import Any

from verl.experimental.agent_loop.agent_loop import register
from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop

from envfarm.clients.tasks import Task


def enabled_schemas(schemas: list[dict[str, Any]], tools: dict[str, Any], task: Task) -> list[dict[str, Any]]:
    """The schemas of the task's enabled tools (distractors included), in the config's order; every tool
    when the task names none."""
    if not task.tools:
        return schemas
    enabled = {(ref.server, ref.tool) for ref in task.tools}
    names = {
        name
        for name, tool in tools.items()
        if (getattr(tool, "config", {}).get("server"), getattr(tool, "config", {}).get("tool")) in enabled
    }
    return [schema for schema in schemas if schema["function"]["name"] in names]


@register("envfarm_agent")
class EnvfarmAgentLoop(ToolAgentLoop):  # type: ignore[misc]
    """verl's tool agent loop, offering each rollout only its task's tools (see the module)."""

    async def _handle_pending_state(self, agent_data: AgentData, sampling_params: dict[str, Any]) -> AgentState:
        task = Task.model_validate_json(agent_data.interaction_kwargs["task"])
        agent_data.prompt_ids = await self.apply_chat_template(
            agent_data.messages,
            tools=enabled_schemas(self.tool_schemas, self.tools, task),
            images=agent_data.image_data,
            videos=agent_data.video_data,
        )
        return AgentState.GENERATING
