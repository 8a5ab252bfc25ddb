"""Turn a generated server definition into a live `MCPServer`.

Each tool function is a plain `fn(db, **arguments)`. The runtime registers it under its own
signature (minus `db`), finds the caller's episode, runs the call in one transaction, and turns
failures into `isError` results that tell the agent what to fix. A failed call changes nothing.

Episode control (reset, load a state, export state, hash and diff) is an MCP extension with its
own request methods, so it never appears in the agent-facing tool list.
"""

from __future__ import annotations

import inspect
import json
import secrets
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, redirect_stdout
from dataclasses import dataclass, field
from functools import cache
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, Extension, MCPServer, MethodBinding
from mcp.server.mcpserver.resources import TextResource
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError

from servers.runtime import listing
from servers.runtime.arguments import argument_problems, bounded, preview
from servers.runtime.control import (
    EPISODE_META_KEY,
    ERROR_KIND_META_KEY,
    EXTENSION,
    CloseResult,
    EpisodeParams,
    ErrorKind,
    Method,
    ResetParams,
    ResetResult,
    StateParams,
    StateResult,
    TableDiff,
)
from servers.runtime.database import (
    Database,
    Rejected,
    diff_states,
    read_principal,
    set_principal,
    snapshot,
    state_hash,
)
from servers.runtime.effects import Effect, effect_hints
from servers.runtime.episodes import (  # re-exported for generated server.py files
    DEFAULT_MAX_EPISODES,
    SEED_IMAGE,
    ConnectionScope,
    EpisodeBudget,
    EpisodeExpired,
    EpisodeForbidden,
    EpisodeStore,
    build_seed,
    load_state,
    open_memory,
    open_persistent,
    resolve_bound_principal,
    resolve_key,
    resolve_owner,
)
from servers.runtime.principal import PrincipalDefinition, render_instructions


@dataclass(frozen=True)
class ToolDefinition:
    """One tool as generated code declares it: the function and its effect. The annotations follow
    from the effect; `read_only` marks a custom tool that writes nothing, the other two override."""

    function: Callable[..., Any]
    effect: Effect
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None

    @property
    def name(self) -> str:
        return self.function.__name__

    @property
    def annotations(self) -> ToolAnnotations:
        hints = effect_hints(
            self.effect, read_only=self.read_only, destructive=self.destructive, idempotent=self.idempotent
        )
        return ToolAnnotations(**hints.model_dump())


@dataclass(frozen=True)
class ServerDefinition:
    """Everything a generated server is: identity, clock, schema, seed and tools.

    `directory` is the server's package folder, `importlib.resources.files("servers.<name>")` or a Path:
    schema.sql and seed.json are read from it, so a checkout and an installed wheel load alike.
    """

    name: str
    title: str
    description: str
    version: str
    now: str
    directory: Traversable
    id_formats: dict[str, str]
    id_namespace: str | None = None  # opaque ids (database.opaque_id) in this namespace; None: sequential
    tools: list[ToolDefinition] = field(default_factory=list)
    principal: PrincipalDefinition | None = None

    def schema_sql(self) -> str:
        return (self.directory / "schema.sql").read_text(encoding="utf-8")

    def policy(self) -> str:
        """The server's policy (policy.md beside the code), or "" when it has none."""
        path = self.directory / POLICY_FILE
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def instructions(self, acting_for: str | None, policy: str) -> str:
        return render_instructions(self.title, self.description, self.now, self.principal, acting_for, policy)

    def seed_rows(self) -> dict[str, list[dict[str, Any]]]:
        return json.loads((self.directory / "seed.json").read_text(encoding="utf-8"))

    def seed(self) -> sqlite3.Connection:
        """The seed database, from the image the factory ships (`seed.sqlite`); a folder without one
        (built by an older factory) has it built from schema.sql and seed.json."""
        image = self.directory / SEED_IMAGE
        default = self.principal.default if self.principal else None
        if not image.is_file():
            return build_seed(self.schema_sql(), self.seed_rows(), default)
        seed = open_memory(image.read_bytes())
        set_principal(seed, default)  # the image is the data alone; whom episodes act for is the definition's
        return seed


POLICY_FILE = "policy.md"
ControlContext = ServerRequestContext[ConnectionScope, Any]


def _error(message: str, kind: ErrorKind) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=bounded(message).encode("utf-8", "backslashreplace").decode("utf-8"))],
        is_error=True,
        _meta={ERROR_KIND_META_KEY: kind.value},
    )


def _rollback(connection: sqlite3.Connection) -> None:
    if connection.in_transaction:
        connection.execute("ROLLBACK")


class _Episodes:
    """Finds the connection a request works on."""

    def __init__(self, store: EpisodeStore) -> None:
        self.store = store

    def connection(self, meta: Any, request: Any, scope: ConnectionScope) -> tuple[str | None, sqlite3.Connection]:
        key = resolve_key(meta, request)
        if key is None:
            return None, scope.connection
        return key, self.store.named(key, resolve_owner(request))

    def existing(self, meta: Any, request: Any, scope: ConnectionScope) -> tuple[str | None, sqlite3.Connection]:
        """As `connection`, but a named episode never opened is read from the seed, not opened:
        reading a state must not cost an episode."""
        key = resolve_key(meta, request)
        if key is None:
            return None, scope.connection
        return key, self.store.peek(key, resolve_owner(request)) or self.store.seed


def _control_error(exc: EpisodeExpired | EpisodeForbidden) -> MCPError:
    kind = ErrorKind.EPISODE_EXPIRED if isinstance(exc, EpisodeExpired) else ErrorKind.FORBIDDEN
    return MCPError(types.INVALID_PARAMS, f"{kind.value}: {exc}")


class EpisodeControl(Extension):
    """The control plane: `envfarm/episode/reset`, `envfarm/episode/state`, `envfarm/episode/close`."""

    identifier = EXTENSION

    def __init__(self, episodes: _Episodes, definition: ServerDefinition, policy: str) -> None:
        self._episodes = episodes
        self._definition = definition
        self._policy = policy

    def _check_principal(self, principal: str | None) -> None:
        declared = self._definition.principal
        if principal is None:
            return
        seed = self._episodes.store.seed
        if declared is None:
            raise MCPError(types.INVALID_PARAMS, f"{self._definition.name} acts for nobody in particular: omit principal")
        if not declared.known(seed, principal):
            known = ", ".join(declared.examples(seed))
            where = f"{declared.table}.{declared.column}" if declared.table else "the declared staff"
            raise MCPError(
                types.INVALID_PARAMS, f"unknown principal {principal!r}: not one of {where} (e.g. {known})"
            )

    def _meta(self, ctx: ControlContext, params: EpisodeParams) -> dict[str, Any]:
        meta = dict(ctx.meta or {})
        if params.episode:
            meta[EPISODE_META_KEY] = params.episode
        return meta

    async def _reset(self, ctx: ControlContext, params: ResetParams) -> ResetResult:
        if params.fresh and not params.episode:
            params = params.model_copy(update={"episode": f"ep-{secrets.token_urlsafe(18)}"})
        store = self._episodes.store
        key = resolve_key(self._meta(ctx, params), ctx.request)
        owner = resolve_owner(ctx.request)
        if key is not None:
            try:
                store.peek(key, owner)
            except EpisodeForbidden as exc:
                raise _control_error(exc) from exc
            except EpisodeExpired:
                pass  # a reset opens an expired episode again, from the seed or the given state
        if (bound := resolve_bound_principal(ctx.request)) is not None and self._definition.principal is not None:
            if params.principal not in (None, bound):
                message = f"this bearer token acts for {bound!r}; it cannot reset an episode to act for {params.principal!r}"
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
                if connection is not store.persistent:
                    connection.close()
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
            hash=state_hash(snapshot(connection)) if loaded else store.seed_hash,
            principal=acting_for,
            instructions=self._definition.instructions(acting_for, self._policy),
        )

    async def _state(self, ctx: ControlContext, params: StateParams) -> StateResult:
        try:
            key, connection = self._episodes.existing(self._meta(ctx, params), ctx.request, ctx.lifespan_context)
        except (EpisodeExpired, EpisodeForbidden) as exc:
            raise _control_error(exc) from exc
        state = snapshot(connection)
        diff = diff_states(self._episodes.store.seed_state, state) if params.diff else {}
        return StateResult(
            episode=key,
            hash=state_hash(state),
            principal=read_principal(connection),
            diff={table: TableDiff(**changes) for table, changes in diff.items()},
            state=state if params.rows else None,
        )

    async def _close(self, ctx: ControlContext, params: EpisodeParams) -> CloseResult:
        try:
            closed = bool(params.episode) and self._episodes.store.close(params.episode or "", resolve_owner(ctx.request))
        except EpisodeForbidden as exc:
            raise _control_error(exc) from exc
        return CloseResult(episode=params.episode, closed=closed, open_episodes=len(self._episodes.store))

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding(method=Method.RESET, params_type=ResetParams, handler=self._reset),
            MethodBinding(method=Method.STATE, params_type=StateParams, handler=self._state),
            MethodBinding(method=Method.CLOSE, params_type=EpisodeParams, handler=self._close),
        ]


class StrictArguments(Extension):
    """Check a call's arguments before the tool runs: undeclared names (a misspelt filter must not be
    silently ignored) and values that do not fit the declared types. Either way the agent gets an
    `invalid_arguments` error naming each bad argument, rather than the SDK's raw validation dump.
    Validation is the SDK's own (same argument model), so what passes here passes there."""

    identifier = "io.envfarm/strict-arguments"

    def __init__(self) -> None:
        self._functions: dict[str, Callable[..., Any]] = {}
        self._metadata: dict[str, FuncMetadata] = {}
        self._schemas: dict[str, dict[str, Any]] = {}

    def add(self, name: str, function: Callable[..., Any]) -> None:
        self._functions[name] = function

    def metadata(self, name: str) -> FuncMetadata | None:
        """The argument model of a tool, built on its first call: building all of them up front
        doubled the farm's start-up time."""
        if name not in self._metadata and (function := self._functions.get(name)) is not None:
            self._metadata[name] = listing.argument_metadata(function, structured_output=False)
        return self._metadata.get(name)

    async def intercept_tool_call(
        self, params: types.CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        metadata = self.metadata(params.name)
        if metadata is None:
            known = ", ".join(sorted(self._functions))
            return _error(f"Unknown tool {preview(params.name)}; the tools are: {known}.", ErrorKind.INVALID_ARGUMENTS)
        arguments = params.arguments or {}
        declared = [f.alias or n for n, f in metadata.arg_model.model_fields.items()]
        unknown = sorted(set(arguments) - set(declared))
        if unknown:
            expected = ", ".join(declared) or "no arguments"
            names = ", ".join(preview(u) if len(u) > 40 else u for u in unknown[:10])
            return _error(f"{params.name} does not take {names}; its parameters are: {expected}.", ErrorKind.INVALID_ARGUMENTS)
        try:
            metadata.validate_arguments(arguments)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            message = f"{params.name} got invalid arguments ({problems}). Nothing was changed; fix them and call again."
            return _error(message, ErrorKind.INVALID_ARGUMENTS)
        if params.name not in self._schemas:
            self._schemas[params.name] = metadata.arg_model.model_json_schema()
        if bad := argument_problems(arguments, self._schemas[params.name]):
            message = f"{params.name} got invalid arguments ({'; '.join(bad)}). Nothing was changed; fix them and call again."
            return _error(message, ErrorKind.INVALID_ARGUMENTS)
        return await call_next(ctx)


def _tool_wrapper(tool: ToolDefinition, episodes: _Episodes, definition: ServerDefinition) -> Callable[..., Any]:
    """An async MCP tool with the function's signature (minus `db`) that runs it in one transaction."""
    function = tool.function
    now = definition.now
    id_formats = definition.id_formats
    scopes = definition.principal.scopes if definition.principal else {}
    has_principal = definition.principal is not None

    @cache
    def known_principal(principal: str) -> bool:
        """Whether a token's principal is one this server acts for (the seed never changes)."""
        return definition.principal is not None and definition.principal.known(episodes.store.seed, principal)

    async def call_tool(ctx: Context[ConnectionScope], **arguments: Any) -> Any:
        request = ctx.request_context
        try:
            _, connection = episodes.connection(request.meta, request.request, request.lifespan_context)
        except EpisodeExpired as exc:
            return _error(f"{tool.name} was not run: {exc}", ErrorKind.EPISODE_EXPIRED)
        except EpisodeForbidden as exc:
            return _error(f"{tool.name} was not run: {exc}", ErrorKind.FORBIDDEN)
        bound = resolve_bound_principal(request.request) if has_principal else None
        if bound is not None:
            if not known_principal(bound):
                return _error(
                    f"{tool.name} was not run: this bearer token acts for {bound!r}, who is not a principal of "
                    f"{definition.name}.",
                    ErrorKind.FORBIDDEN,
                )
            if read_principal(connection) != bound:
                set_principal(connection, bound)  # the episode acts for the token's principal, as its state says
        connection.execute("BEGIN IMMEDIATE" if episodes.store.persistent is not None else "BEGIN")
        try:
            # Generated code must not write to stdout: on stdio that is the protocol stream.
            with redirect_stdout(sys.stderr):
                principal = read_principal(connection) if has_principal else None
                db = Database(connection, now, id_formats, principal, scopes, definition.id_namespace)
                result = function(db, **arguments)
        except Rejected as exc:
            _rollback(connection)
            return _error(str(exc), ErrorKind.REJECTED)
        except sqlite3.IntegrityError as exc:
            _rollback(connection)
            return _error(f"{tool.name} was refused by a data constraint: {exc}. Nothing was changed.", ErrorKind.REJECTED)
        except (sqlite3.OperationalError, UnicodeEncodeError) as exc:
            _rollback(connection)
            if isinstance(exc, UnicodeEncodeError) or "too complex" in str(exc):
                message = f"{tool.name} cannot search for that text ({exc}). Nothing was changed; use a shorter, plain text."
                return _error(message, ErrorKind.INVALID_ARGUMENTS)
            message = f"{tool.name} failed inside the server ({type(exc).__name__}: {exc}). Nothing was changed."
            return _error(message, ErrorKind.SERVER_ERROR)
        except Exception as exc:  # noqa: BLE001 - generated code is untrusted: any failure is a server_error
            _rollback(connection)
            message = f"{tool.name} failed inside the server ({type(exc).__name__}: {exc}). Nothing was changed."
            return _error(message, ErrorKind.SERVER_ERROR)
        connection.execute("COMMIT")
        return result

    signature = inspect.signature(function, eval_str=True)
    parameters = [
        inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context),
        *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in list(signature.parameters.values())[1:]),
    ]
    call_tool.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    call_tool.__name__ = tool.name
    call_tool.__doc__ = function.__doc__
    return call_tool


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
    episodes = _Episodes(EpisodeStore(seed, max_episodes=max_episodes, persistent=persistent, budget=budget))
    policy = definition.policy()

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[ConnectionScope]:
        yield ConnectionScope(episodes.store)

    strict = StrictArguments()
    shipped = listing.load(definition.directory)
    tools: list[Tool] = []
    for tool in definition.tools:
        strict.add(tool.name, tool.function)
        wrapper = _tool_wrapper(tool, episodes, definition)
        description = inspect.cleandoc(tool.function.__doc__ or "")
        schemas = shipped[0].tools.get(tool.name) if shipped and listing.defined_in(tool.function, shipped[1]) else None
        if schemas is None:  # not shipped, or stale: the SDK derives the schemas now, as add_tool would
            tools.append(
                Tool.from_function(
                    wrapper,
                    name=tool.name,
                    title=tool.title,
                    description=description,
                    annotations=tool.annotations,
                    structured_output=True,
                )
            )
        else:
            tools.append(
                listing.PrebuiltTool(
                    fn=wrapper,
                    name=tool.name,
                    title=tool.title,
                    description=description,
                    parameters=schemas.input_schema,
                    listed_output_schema=schemas.output_schema,
                    is_async=True,
                    context_kwarg="ctx",
                    annotations=tool.annotations,
                )
            )
    server = MCPServer(
        definition.name,
        title=definition.title,
        description=definition.description,
        version=definition.version,
        instructions=definition.instructions(default, policy),
        log_level="WARNING",
        lifespan=lifespan,
        extensions=[EpisodeControl(episodes, definition, policy), strict],
        tools=tools,
    )
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
    return server
