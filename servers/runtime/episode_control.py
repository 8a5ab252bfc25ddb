"""The episodes extension a generated server carries: the control plane and the way into the call pipeline.

Episode control (reset, load a state, export state, hash and diff, close) is an MCP extension with its own
request methods (`control.Method`), so it never appears in the agent-facing tool list. The same extension
routes every `tools/call` to its episode: it is the SDK's `tools/call` interceptor (`intercept_tool_call`),
which hands the call to the server's `CallPipeline`.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Extension, MethodBinding
from mcp.shared.exceptions import MCPError

from envfarm.servers.runtime.arguments import bounded
from envfarm.servers.runtime.caller import Caller, identify
from envfarm.servers.runtime.control import (
    EXTENSION,
    CloseResult,
    EpisodeParams,
    Method,
    ResetParams,
    ResetResult,
    State,
    StateParams,
    StateResult,
    TableDiff,
)
from envfarm.servers.runtime.database import diff_states, read_principal, set_principal, snapshot, state_hash
from envfarm.servers.runtime.definition import ServerDefinition
from envfarm.servers.runtime.episodes import (
    ConnectionScope,
    EpisodeExpired,
    EpisodeForbidden,
    EpisodeIdInvalid,
    EpisodeStore,
    load_state,
)
from envfarm.servers.runtime.pipeline import CallPipeline, kind_of

MAX_CACHED_INSTRUCTIONS = 256
ControlContext = ServerRequestContext[ConnectionScope, Any]
EpisodeError = EpisodeExpired | EpisodeForbidden | EpisodeIdInvalid


def _control_error(exc: EpisodeError) -> MCPError:
    """An episode failure on the control plane: a JSON-RPC error naming its kind (as `pipeline.kind_of` does
    for tool results)."""
    return MCPError(types.INVALID_PARAMS, f"{kind_of(exc).value}: {exc}")


class EpisodeControl(Extension):
    """The control plane: `envfarm/episode/reset`, `envfarm/episode/state`, `envfarm/episode/close`; and every
    `tools/call`, handed to `calls` (the server's `CallPipeline`).

    A bearer token bound to a principal sees through it what its principal may see: state, diff and hash
    cover only the rows the server's scopes (`PrincipalDefinition.scopes`) show that principal, as the
    tools do; on a server that does not know its principal it is refused. Other callers see every row."""

    identifier = EXTENSION

    def __init__(
        self,
        store: EpisodeStore,
        definition: ServerDefinition,
        policy: str,
        known_principal: Callable[[str], bool],
        calls: CallPipeline,
    ) -> None:
        self._store = store
        self._definition = definition
        self._policy = policy
        self._known_principal = known_principal
        self._calls = calls
        self._instructions: dict[str | None, str] = {}  # per principal: the same text at every reset
        self._seed_views: dict[str, tuple[State, str]] = {}  # per principal: the seed rows it sees, and their hash

    async def intercept_tool_call(
        self, params: types.CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Every tool of a farm server runs through its call pipeline (`call_next`, the SDK's own handler, is
        never needed: a farm server has no other tools)."""
        return await self._calls(params, ctx)

    def _instructions_for(self, acting_for: str | None) -> str:
        text = self._instructions.get(acting_for)
        if text is None:
            text = self._definition.instructions(acting_for, self._policy)
            if len(self._instructions) < MAX_CACHED_INSTRUCTIONS:  # a loaded state may name anyone
                self._instructions[acting_for] = text
        return text

    def _check_principal(self, principal: str | None) -> None:
        declared = self._definition.principal
        if principal is None:
            return
        seed = self._store.seed
        if declared is None:
            raise MCPError(
                types.INVALID_PARAMS, f"{self._definition.name} acts for nobody in particular: omit principal"
            )
        if not declared.known(seed, principal):
            known = ", ".join(declared.examples(seed))
            where = f"{declared.table}.{declared.column}" if declared.table else "the declared staff"
            raise MCPError(types.INVALID_PARAMS, f"unknown principal {principal!r}: not one of {where} (e.g. {known})")

    def _caller(self, ctx: ControlContext, params: EpisodeParams) -> Caller:
        try:
            return identify(ctx, params.episode)
        except (EpisodeForbidden, EpisodeIdInvalid) as exc:
            raise _control_error(exc) from exc

    def _viewer(self, caller: Caller) -> str | None:
        """The principal whose rows this request sees (a bound token's), or None: every row."""
        declared = self._definition.principal
        bound = caller.principal
        if bound is None or declared is None:
            return None
        if not self._known_principal(bound):
            message = f"this bearer token acts for {bound!r}, who is not a principal of {self._definition.name}"
            raise _control_error(EpisodeForbidden(message))
        return bound

    def _visible(self, connection: sqlite3.Connection, viewer: str | None) -> State:
        """The episode's rows that `viewer` may see (None: all of them)."""
        scopes = self._definition.principal.scopes if viewer is not None and self._definition.principal else None
        return snapshot(connection, scopes, viewer)

    def _seed_view(self, viewer: str | None) -> tuple[State, str]:
        """The seed's rows `viewer` may see and their hash, computed once per principal."""
        store = self._store
        if viewer is None or self._definition.principal is None or not self._definition.principal.scopes:
            return store.seed_state, store.seed_hash
        view = self._seed_views.get(viewer)
        if view is None:
            state = self._visible(store.seed, viewer)
            view = (state, state_hash(state))
            if len(self._seed_views) < MAX_CACHED_INSTRUCTIONS:
                self._seed_views[viewer] = view
        return view

    async def _reset(self, ctx: ControlContext, params: ResetParams) -> ResetResult:
        if params.fresh and not params.episode:
            params = params.model_copy(update={"episode": f"ep-{secrets.token_urlsafe(18)}"})
        store = self._store
        caller = self._caller(ctx, params)
        viewer = self._viewer(caller)
        key, owner = caller.episode, caller.owner
        try:
            if key is not None:
                store.peek(key, owner)
        except EpisodeExpired:
            pass  # a reset opens an expired episode again, from the seed or the given state
        except (EpisodeForbidden, EpisodeIdInvalid) as exc:
            raise _control_error(exc) from exc
        if (bound := caller.principal) is not None and self._definition.principal is not None:
            if params.principal not in (None, bound):
                message = (
                    f"this bearer token acts for {bound!r}; it cannot reset an episode to act for {params.principal!r}"
                )
                raise _control_error(EpisodeForbidden(message))
            params = params.model_copy(update={"principal": bound})
        self._check_principal(params.principal)
        if store.persistent is not None and params.state is None and params.principal is None:
            raise MCPError(types.INVALID_PARAMS, "persistent mode: reset needs an explicit state or principal")
        # The new state is built aside (the persistent file loads in one transaction), so a state
        # that fails to load leaves the episode as it was.
        connection = store.persistent if store.persistent is not None else store.fork()
        if params.state is not None:
            try:
                load_state(connection, params.state)
            except ValueError as exc:
                store.release(connection)
                raise MCPError(types.INVALID_PARAMS, f"cannot load state: {bounded(str(exc))}") from exc
        if params.principal is not None:
            set_principal(connection, params.principal)
        if store.persistent is None:
            if key:
                store.replace(key, connection, owner)
            else:
                ctx.lifespan_context.replace(connection)
        loaded = params.state is not None or store.persistent is not None
        acting_for = read_principal(connection)
        return ResetResult(
            episode=key,
            hash=state_hash(self._visible(connection, viewer)) if loaded else self._seed_view(viewer)[1],
            principal=acting_for,
            instructions=self._instructions_for(acting_for),
        )

    async def _state(self, ctx: ControlContext, params: StateParams) -> StateResult:
        caller = self._caller(ctx, params)
        viewer = self._viewer(caller)
        try:
            connection = ctx.lifespan_context.existing(caller.episode, caller.owner)
        except (EpisodeExpired, EpisodeForbidden, EpisodeIdInvalid) as exc:
            raise _control_error(exc) from exc
        state = self._visible(connection, viewer)
        diff = diff_states(self._seed_view(viewer)[0], state) if params.diff else {}
        return StateResult(
            episode=caller.episode,
            hash=state_hash(state),
            principal=read_principal(connection) if viewer is None else viewer,
            diff={table: TableDiff(**changes) for table, changes in diff.items()},
            state=state if params.rows else None,
        )

    async def _close(self, ctx: ControlContext, params: EpisodeParams) -> CloseResult:
        """Close the named episode: the one the params, `_meta`, the per-episode URL, the session or the
        token name (the connection's own episode is not closed: it ends with the connection)."""
        store = self._store
        caller = self._caller(ctx, params)
        key = caller.episode
        try:
            closed = key is not None and store.persistent is None and store.close(key, caller.owner)
        except (EpisodeForbidden, EpisodeIdInvalid) as exc:
            raise _control_error(exc) from exc
        return CloseResult(episode=key, closed=closed, open_episodes=len(store))

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding(method=Method.RESET, params_type=ResetParams, handler=self._reset),
            MethodBinding(method=Method.STATE, params_type=StateParams, handler=self._state),
            MethodBinding(method=Method.CLOSE, params_type=EpisodeParams, handler=self._close),
        ]
