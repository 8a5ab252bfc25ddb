"""The episode control plane: one typed protocol that the runtime serves and every client speaks.

Episode control (back to the seed, load a state, read the state with its hash and diff, close) is
an MCP extension with its own request methods, so it never shows up in the agent's tool list. This
module is the single place that names those methods and the `_meta` keys; the runtime binds the
methods (`servers/runtime/episode_control.py`) and everything else (the verifier, the bench, the tests, the
driver in `clients/`) talks through `EpisodeClient`.

It imports nothing from the rest of the runtime, so a client can use it without loading a server.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, cast

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field

EXTENSION = "io.envfarm/episodes"
EPISODE_META_KEY = "envfarm/episode"
ERROR_KIND_META_KEY = "envfarm/error"

State = dict[str, list[dict[str, Any]]]
"""Rows per table, each table in primary-key order."""

# The control plane's models are built on their first use, not on import: a server answers its first
# `tools/list` before any of them is needed, and building them was ~5 ms of a server's own start-up.
DEFERRED = ConfigDict(defer_build=True)


class Method(StrEnum):
    RESET = "envfarm/episode/reset"
    STATE = "envfarm/episode/state"
    CLOSE = "envfarm/episode/close"


class ErrorKind(StrEnum):
    """Why a tool call failed, carried in `_meta["envfarm/error"]` of an `isError` result."""

    REJECTED = "rejected"  # a business rule or unknown id: the agent's mistake, state unchanged
    INVALID_ARGUMENTS = "invalid_arguments"  # undeclared, missing or ill-typed arguments
    SERVER_ERROR = "server_error"  # the environment broke: never the agent's fault
    EPISODE_EXPIRED = "episode_expired"  # the named episode was closed or evicted: its state is gone
    FORBIDDEN = "forbidden"  # the named episode belongs to another bearer token, or the token's principal is not here


class EpisodeParams(types.RequestParams):
    model_config = DEFERRED
    episode: str | None = Field(None, description="the episode handle; none means the connection's own episode")


class ResetParams(EpisodeParams):
    state: State | None = Field(None, description="rows to load instead of the seed, per table")
    fresh: bool = Field(
        default=False, description="open a new episode with an unguessable server-made id (returned as `episode`)"
    )
    principal: str | None = Field(
        None, description="whom the episode acts for (a user's id or email, a staff member); none: the server's default"
    )


class StateParams(EpisodeParams):
    rows: bool = Field(True, description="include every table's rows, not only hash and diff")
    diff: bool = Field(default=True, description="include the diff against the seed (false: the hash is enough)")


class TableDiff(BaseModel):
    model_config = DEFERRED
    added: list[dict[str, Any]] = Field(default_factory=list)
    removed: list[dict[str, Any]] = Field(default_factory=list)
    updated: list[dict[str, Any]] = Field(default_factory=list, description="{key, before, after} per changed row")


class ResetResult(types.Result):
    model_config = DEFERRED
    episode: str | None = None
    hash: str
    principal: str | None = Field(None, description="whom the episode acts for (None: a server without principals)")
    instructions: str | None = Field(None, description="the episode's instructions: date, time zone, principal, policy")


class StateResult(types.Result):
    model_config = DEFERRED
    episode: str | None = None
    hash: str
    principal: str | None = None
    diff: dict[str, TableDiff] = Field(description="per changed table, against the seed")
    state: State | None = None


class CloseResult(types.Result):
    model_config = DEFERRED
    episode: str | None = None
    closed: bool
    open_episodes: int


class ControlError(Exception):
    """A control or tool request that got no usable answer: the server hung, died, or refused it."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def error_kind(result: types.CallToolResult) -> ErrorKind | None:
    """The failure kind of a tool result (None for success or a server that does not say)."""
    kind = (result.meta or {}).get(ERROR_KIND_META_KEY)
    return ErrorKind(kind) if isinstance(kind, str) and kind in ErrorKind._value2member_map_ else None


class EpisodeClient:
    """Tool calls and control requests on one entered `mcp.Client`, all addressed to one episode.

    Calls go out as raw requests, so a result that breaks its own output schema comes back as
    evidence instead of a client-side exception. Every request has a timeout; a hang, a dead
    server or a JSON-RPC error raises `ControlError` naming what happened.
    """

    def __init__(self, client: Client, episode: str | None = None, *, timeout: float = 30.0) -> None:
        self.client = client
        self.episode = episode
        self.timeout = timeout

    def _meta(self) -> types.RequestParamsMeta | None:
        return cast(types.RequestParamsMeta, {EPISODE_META_KEY: self.episode}) if self.episode else None

    async def _send(self, request: Any, result_type: Any) -> Any:
        try:
            return await self.client.session.send_request(
                request, result_type, request_read_timeout_seconds=self.timeout
            )
        except MCPError as exc:
            if exc.error.code == types.REQUEST_TIMEOUT:
                raise ControlError("timeout", f"no answer within {self.timeout:g} s") from exc
            raise ControlError("protocol", f"JSON-RPC error {exc.error.code}: {exc.error.message}") from exc
        except Exception as exc:
            raise ControlError("protocol", f"{type(exc).__name__}: {exc}") from exc

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        params = types.CallToolRequestParams(name=name, arguments=arguments or {}, _meta=self._meta())
        result: types.CallToolResult = await self._send(types.CallToolRequest(params=params), types.CallToolResult)
        return result

    async def reset(self, state: State | None = None, principal: str | None = None) -> ResetResult:
        """Back to the seed, or to `state` (tables not named keep the seed's rows), acting for
        `principal` (None: the server's default)."""
        params = ResetParams(episode=self.episode, state=state, principal=principal)
        request = types.Request(method=Method.RESET, params=params)
        result: ResetResult = await self._send(request, ResetResult)
        return result

    async def state(self, *, rows: bool = False, diff: bool = True) -> StateResult:
        request = types.Request(method=Method.STATE, params=StateParams(episode=self.episode, rows=rows, diff=diff))
        result: StateResult = await self._send(request, StateResult)
        return result

    async def close(self) -> CloseResult:
        request = types.Request(method=Method.CLOSE, params=EpisodeParams(episode=self.episode))
        result: CloseResult = await self._send(request, CloseResult)
        return result
