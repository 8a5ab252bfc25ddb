"""Turn a generated server definition into a live `MCPServer`.

A generated `server.py` builds a `ServerDefinition` (`definition.py`) and calls `build_server`. The server
is the SDK's own `MCPServer`, with the farm's parts plugged into its public surfaces: each tool a `FarmTool`
(listed from the schemas the factory shipped), the episodes extension (`episode_control.EpisodeControl`:
the control plane, and the `tools/call` interceptor that hands every call to the server's
`pipeline.CallPipeline`), the episode store as the lifespan's state, and the policy and spec resources.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import cache, partial
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import FunctionResource, TextResource
from opentelemetry import trace

from envfarm.servers.runtime import listing
from envfarm.servers.runtime.database import primary_keys
from envfarm.servers.runtime.definition import ServerDefinition, ToolDefinition
from envfarm.servers.runtime.episode_control import EpisodeControl
from envfarm.servers.runtime.episodes import (
    DEFAULT_MAX_EPISODES,
    ConnectionScope,
    EpisodeBudget,
    EpisodeStore,
    open_persistent,
)
from envfarm.servers.runtime.pipeline import CallPipeline, FarmTool

__all__ = [  # what generated server.py files import from here
    "DEFAULT_MAX_EPISODES",
    "EpisodeBudget",
    "ServerDefinition",
    "ToolDefinition",
    "build_server",
]


def tracing_installed() -> bool:
    """Whether an OpenTelemetry tracer provider is installed (the API alone answers with a proxy)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def drop_idle_tracing(server: MCPServer) -> None:
    """The SDK wraps every request in an OpenTelemetry span, a no-op until a tracer provider is installed that
    still cost ~10% of an in-process episode's CPU (`envfarm bench`). The farm keeps it only when a provider
    is installed by the time the server is built (as `opentelemetry-instrument` does), and otherwise takes
    the SDK's documented opt-out: remove it from the server's public `middleware` list. The class lives in a
    private SDK module, so it is recognized by name rather than imported."""
    if not tracing_installed():
        server.middleware[:] = [m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]


def build_server(
    definition: ServerDefinition,
    *,
    db_file: Path | None = None,
    max_episodes: int = DEFAULT_MAX_EPISODES,
    budget: EpisodeBudget | None = None,
) -> MCPServer:
    """A ready `MCPServer` for `definition`: isolated in-memory episodes, or one file with `db_file`.
    Servers sharing one `budget` (the farm host) share one memory budget for their named episodes."""
    default = definition.principal.default if definition.principal else None
    seed = definition.seed()
    persistent = open_persistent(db_file, seed) if db_file is not None else None
    store = EpisodeStore(seed, max_episodes=max_episodes, persistent=persistent, budget=budget)
    policy = definition.policy()

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[ConnectionScope]:
        yield ConnectionScope(store)

    @cache
    def known_principal(principal: str) -> bool:
        """Whether a token's principal is one this server acts for (the seed never changes)."""
        return definition.principal is not None and definition.principal.known(store.seed, principal)

    keys = primary_keys(store.seed)  # table -> key column (`Database.require`, opaque ids), read once
    calls = CallPipeline(definition, store, known_principal, keys)
    shipped = listing.load(definition.directory)
    declared = definition.tool_definitions(shipped[0] if shipped else None)
    modules = {definition.tool_module(tool) for tool in declared}
    listed = {m for m in modules if shipped and listing.defined_in(m, shipped[1])}
    tools: list[FarmTool] = []
    for tool in declared:
        fields: dict[str, Any] = {
            "fn": calls,
            "resolve": partial(definition.function, tool),
            "name": tool.name,
            "title": tool.title,
            "is_async": True,
            "context_kwarg": "ctx",
            "annotations": tool.annotations,
        }
        schemas = shipped[0].tools.get(tool.name) if shipped and definition.tool_module(tool) in listed else None
        if schemas is None or schemas.description is None:  # not shipped, or stale: derive it all now
            farm_tool = FarmTool.derived(**fields)
        else:
            farm_tool = FarmTool(
                parameters=schemas.input_schema,
                listed_output_schema=schemas.output_schema,
                description=schemas.description,
                **fields,
            )
        calls.add(farm_tool)
        tools.append(farm_tool)
    server = MCPServer(
        definition.name,
        title=definition.title,
        description=definition.description,
        version=definition.version,
        instructions=definition.instructions(default, policy),
        log_level="WARNING",
        lifespan=lifespan,
        extensions=[EpisodeControl(store, definition, policy, known_principal, calls)],
        tools=list(tools),
    )
    drop_idle_tracing(server)
    if policy:
        server.add_resource(
            TextResource(
                uri=f"envfarm://{definition.name}/policy",
                name="policy",
                title=f"{definition.title}: policy",
                description="What the agent may and may not do here (also in the instructions).",
                mime_type="text/markdown",
                text=policy,
            )
        )
        server.add_resource(
            _spec_resource(
                definition,
                "policy_rules",
                "policy/rules",
                "rules left to the agent",
                "The policy rules the tools do not enforce ({id, rule, tools} as JSON): tasks grade them.",
                lambda: json.dumps({"unenforced_rules": definition.policy_rules()}, indent=1),
            )
        )
    server.add_resource(
        _spec_resource(
            definition,
            "intents",
            "intents",
            "intents",
            "How a person asks for each tool and names a row ({tools, refer} as JSON).",
            lambda: definition.intents().model_dump_json(indent=1, exclude_defaults=True),
        )
    )
    return server


def _spec_resource(
    definition: ServerDefinition, name: str, path: str, title: str, description: str, render: Callable[[], str]
) -> FunctionResource:
    """A JSON resource made from spec.json when first asked for, then kept: parsing every server's spec.json
    (2 MB for the farm) at start cost the farm host ~30 ms of its ~200 ms of own start-up work."""
    text = cache(render)

    async def read() -> str:
        return text()

    return FunctionResource(
        uri=f"envfarm://{definition.name}/{path}",
        name=name,
        title=f"{definition.title}: {title}",
        description=description,
        mime_type="application/json",
        fn=read,
    )
