"""Turn a generated server definition into a live `MCPServer`.

Each tool function is a plain `fn(db, **arguments)`. The runtime registers it under its own
signature (minus `db`), finds the caller's episode, runs the call in one transaction, and turns
failures into `isError` results that tell the agent what to fix. A failed call changes nothing.

Episode control (reset, load a state, export state, hash and diff) is an MCP extension with its
own request methods, so it never appears in the agent-facing tool list.
"""

from __future__ import annotations

import importlib
import json
import logging
import secrets
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, redirect_stdout
from dataclasses import dataclass, field
from functools import cache, partial
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Extension, MCPServer, MethodBinding
from mcp.server.mcpserver.resources import FunctionResource, TextResource
from mcp.server.mcpserver.tools.base import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations
from opentelemetry import trace

from envfarm.servers.runtime import listing
from envfarm.servers.runtime.arguments import bounded
from envfarm.servers.runtime.calls import FarmTool, ToolRunner, error_result, unknown_tool
from envfarm.servers.runtime.control import (
    EPISODE_META_KEY,
    EXTENSION,
    CloseResult,
    EpisodeParams,
    ErrorKind,
    Method,
    ResetParams,
    ResetResult,
    State,
    StateParams,
    StateResult,
    TableDiff,
)
from envfarm.servers.runtime.database import (
    Database,
    Rejected,
    diff_states,
    read_principal,
    set_principal,
    snapshot,
    state_hash,
)
from envfarm.servers.runtime.effects import Effect, effect_hints
from envfarm.servers.runtime.episodes import (  # re-exported for generated server.py files
    DEFAULT_MAX_EPISODES,
    SEED_IMAGE,
    ConnectionScope,
    EpisodeBudget,
    EpisodeExpired,
    EpisodeForbidden,
    EpisodeIdInvalid,
    EpisodeStore,
    build_seed,
    load_state,
    open_memory,
    open_persistent,
    resolve_bound_principal,
    resolve_key,
    resolve_owner,
)
from envfarm.servers.runtime.intents import Intent, ServerIntents, slots
from envfarm.servers.runtime.principal import PrincipalDefinition, render_instructions


@dataclass(frozen=True)
class ToolDefinition:
    """One tool as generated code declares it: the function (or its name in the server's
    `tools_module`, imported on the first call) and its effect. The annotations follow from the
    effect; `read_only` marks a custom tool that writes nothing, the other two override."""

    function: Callable[..., Any] | str
    effect: Effect
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None

    @property
    def name(self) -> str:
        return self.function if isinstance(self.function, str) else self.function.__name__

    @property
    def annotations(self) -> ToolAnnotations:
        hints = effect_hints(
            self.effect, read_only=self.read_only, destructive=self.destructive, idempotent=self.idempotent
        )
        return ToolAnnotations(**hints.model_dump())


def _worded(tool: dict[str, Any], entities: dict[str, Any]) -> dict[str, Any]:
    """A tool's intent with the words its slots use, its own or its tables': a param that fills an enum column
    is said in that table's words, a `{param.column}` slot in the referenced table's."""
    intent = dict(tool["intent"])
    words = dict(intent.get("words") or {})
    params = tool.get("params") or {}
    entity = entities.get(tool.get("entity") or "") or {}
    for phrasing in intent.get("say") or []:
        for slot in slots(phrasing):
            key = f"{slot.name}.{slot.follow}" if slot.follow else slot.name
            param = params.get(slot.name) or {}
            if key in words or not param:
                continue
            if slot.follow:
                column = (entity.get("columns") or {}).get(param.get("column") or slot.name) or {}
                ref = param.get("ref") or column.get("ref") or ""
                keyed = slot.name == tool.get("key")  # a get/update/delete's key names a row of its own table
                table = entity if keyed else entities.get(str(ref).partition(".")[0]) or {}
                found = (table.get("words") or {}).get(slot.follow)
            else:
                found = (entity.get("words") or {}).get(param.get("column") or slot.name)
            if found:
                words[key] = found
    if words:
        intent["words"] = words
    return intent


@dataclass(frozen=True)
class ServerDefinition:
    """Everything a generated server is: identity, clock, schema, seed and tools.

    `directory` is the server's package folder, `importlib.resources.files("envfarm.servers.<name>")` or a Path:
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
    tools_module: str | None = None  # where tools named by a string live, e.g. "envfarm.servers.clinic.tools"

    def function(self, tool: ToolDefinition) -> Callable[..., Any]:
        """The function of `tool`. A tool named by a string is looked up in `tools_module`, imported
        now: a farm host lists every tool from the shipped `tools.json` and imports a server's tools
        (its pydantic models, a third of the farm's start-up) only when one is first called."""
        if not isinstance(tool.function, str):
            return tool.function
        if self.tools_module is None:
            raise LookupError(f"{self.name}: the tool {tool.function!r} is named, but no tools_module is given")
        function: Callable[..., Any] = getattr(importlib.import_module(self.tools_module), tool.function)
        return function

    def tool_module(self, tool: ToolDefinition) -> str:
        """The name of the module defining `tool`'s function, without importing it."""
        return (self.tools_module or "") if isinstance(tool.function, str) else tool.function.__module__

    def schema_sql(self) -> str:
        return (self.directory / "schema.sql").read_text(encoding="utf-8")

    def policy(self) -> str:
        """The server's policy (policy.md beside the code), or "" when it has none."""
        path = self.directory / POLICY_FILE
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def _spec_document(self) -> dict[str, Any]:
        """spec.json beside the code, parsed; {} when the folder has none (a server built without one)."""
        path = self.directory / SPEC_FILE
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def policy_rules(self) -> list[dict[str, Any]]:
        """The policy rules the tools leave to the agent (`unenforced_rules` of spec.json beside the code),
        so a task synthesizer can grade them over MCP; [] when the folder has none."""
        rules = self._spec_document().get("unenforced_rules") or []
        return [{"id": r["id"], "rule": r["rule"], "tools": list(r.get("tools") or [])} for r in rules]

    def intents(self) -> ServerIntents:
        """Every tool's intent and every table's reference phrasings (from spec.json beside the code), so a
        task writer can say what a person wants in their words; empty when the folder has none."""
        spec = self._spec_document()
        entities = spec.get("entities") or {}
        return ServerIntents(
            tools={
                t["name"]: Intent.model_validate(_worded(t, entities))
                for t in spec.get("tools") or []
                if t.get("intent")
            },
            refer={name: e["refer"] for name, e in entities.items() if e.get("refer")},
            words={name: e["words"] for name, e in entities.items() if e.get("words")},
        )

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
            return build_seed(self.schema_sql(), self.seed_rows(), default, self.id_namespace)
        seed = open_memory(image.read_bytes())
        set_principal(seed, default)  # the image is the data alone; whom episodes act for is the definition's
        return seed


logger = logging.getLogger(__name__)
POLICY_FILE = "policy.md"
SPEC_FILE = "spec.json"
MAX_CACHED_INSTRUCTIONS = 256
ControlContext = ServerRequestContext[ConnectionScope, Any]


def _rollback(connection: sqlite3.Connection) -> None:
    if connection.in_transaction:
        connection.execute("ROLLBACK")
    connection.isolation_level = None  # back to autocommit after a read-only call's lazy transaction


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


EpisodeError = EpisodeExpired | EpisodeForbidden | EpisodeIdInvalid


def _error_kind(exc: EpisodeError) -> ErrorKind:
    if isinstance(exc, EpisodeExpired):
        return ErrorKind.EPISODE_EXPIRED
    return ErrorKind.FORBIDDEN if isinstance(exc, EpisodeForbidden) else ErrorKind.INVALID_ARGUMENTS


def _control_error(exc: EpisodeError) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"{_error_kind(exc).value}: {exc}")


class EpisodeControl(Extension):
    """The control plane: `envfarm/episode/reset`, `envfarm/episode/state`, `envfarm/episode/close`.

    A bearer token bound to a principal sees through it what its principal may see: state, diff and hash
    cover only the rows the server's scopes (`PrincipalDefinition.scopes`) show that principal, as the
    tools do; on a server that does not know its principal it is refused. Other callers see every row."""

    identifier = EXTENSION

    def __init__(
        self, episodes: _Episodes, definition: ServerDefinition, policy: str, known_principal: Callable[[str], bool]
    ) -> None:
        self._episodes = episodes
        self._definition = definition
        self._policy = policy
        self._known_principal = known_principal
        self._instructions: dict[str | None, str] = {}  # per principal: the same text at every reset
        self._seed_views: dict[str, tuple[State, str]] = {}  # per principal: the seed rows it sees, and their hash

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
        seed = self._episodes.store.seed
        if declared is None:
            raise MCPError(
                types.INVALID_PARAMS, f"{self._definition.name} acts for nobody in particular: omit principal"
            )
        if not declared.known(seed, principal):
            known = ", ".join(declared.examples(seed))
            where = f"{declared.table}.{declared.column}" if declared.table else "the declared staff"
            raise MCPError(types.INVALID_PARAMS, f"unknown principal {principal!r}: not one of {where} (e.g. {known})")

    def _viewer(self, ctx: ControlContext) -> str | None:
        """The principal whose rows this request sees (a bound token's), or None: every row."""
        declared = self._definition.principal
        bound = resolve_bound_principal(ctx.request)
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
        store = self._episodes.store
        if viewer is None or self._definition.principal is None or not self._definition.principal.scopes:
            return store.seed_state, store.seed_hash
        view = self._seed_views.get(viewer)
        if view is None:
            state = self._visible(store.seed, viewer)
            view = (state, state_hash(state))
            if len(self._seed_views) < MAX_CACHED_INSTRUCTIONS:
                self._seed_views[viewer] = view
        return view

    def _meta(self, ctx: ControlContext, params: EpisodeParams) -> dict[str, Any]:
        meta = dict(ctx.meta or {})
        if params.episode:
            meta[EPISODE_META_KEY] = params.episode
        return meta

    async def _reset(self, ctx: ControlContext, params: ResetParams) -> ResetResult:
        if params.fresh and not params.episode:
            params = params.model_copy(update={"episode": f"ep-{secrets.token_urlsafe(18)}"})
        store = self._episodes.store
        viewer = self._viewer(ctx)
        owner = resolve_owner(ctx.request)
        try:
            key = resolve_key(self._meta(ctx, params), ctx.request)
            if key is not None:
                store.peek(key, owner)
        except EpisodeExpired:
            pass  # a reset opens an expired episode again, from the seed or the given state
        except (EpisodeForbidden, EpisodeIdInvalid) as exc:
            raise _control_error(exc) from exc
        if (bound := resolve_bound_principal(ctx.request)) is not None and self._definition.principal is not None:
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
        viewer = self._viewer(ctx)
        try:
            key, connection = self._episodes.existing(self._meta(ctx, params), ctx.request, ctx.lifespan_context)
        except (EpisodeExpired, EpisodeForbidden, EpisodeIdInvalid) as exc:
            raise _control_error(exc) from exc
        state = self._visible(connection, viewer)
        diff = diff_states(self._seed_view(viewer)[0], state) if params.diff else {}
        return StateResult(
            episode=key,
            hash=state_hash(state),
            principal=read_principal(connection) if viewer is None else viewer,
            diff={table: TableDiff(**changes) for table, changes in diff.items()},
            state=state if params.rows else None,
        )

    async def _close(self, ctx: ControlContext, params: EpisodeParams) -> CloseResult:
        """Close the named episode: the one the params, `_meta`, the per-episode URL, the session or the
        token name (the connection's own episode is not closed: it ends with the connection)."""
        store = self._episodes.store
        try:
            key = resolve_key(self._meta(ctx, params), ctx.request)
            closed = key is not None and store.persistent is None and store.close(key, resolve_owner(ctx.request))
        except (EpisodeForbidden, EpisodeIdInvalid) as exc:
            raise _control_error(exc) from exc
        return CloseResult(episode=key, closed=closed, open_episodes=len(store))

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding(method=Method.RESET, params_type=ResetParams, handler=self._reset),
            MethodBinding(method=Method.STATE, params_type=StateParams, handler=self._state),
            MethodBinding(method=Method.CLOSE, params_type=EpisodeParams, handler=self._close),
        ]


class FarmServer(MCPServer):
    """The SDK's server, answering a call to an unknown tool with the farm's `invalid_arguments` error
    that lists the tools (the SDK's says only "Unknown tool").

    The SDK wraps every request in an OpenTelemetry span, a no-op until a tracer provider is installed
    that still cost ~10% of an in-process episode's CPU (`envfarm bench`). The farm keeps it only when a
    provider is installed by the time the server is built (as `opentelemetry-instrument` does), and drops it
    otherwise (the SDK's documented opt-out: remove it from the server's middleware list)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not tracing_installed():
            lowlevel = self._lowlevel_server
            lowlevel.middleware = [m for m in lowlevel.middleware if not isinstance(m, OpenTelemetryMiddleware)]

    async def _handle_call_tool(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        """The SDK's `tools/call` handler, minus the `mcpserver.Context` it builds for every call (~7% of an
        in-process episode's CPU) that a farm tool never uses: a `FarmTool` runs on the request context, with
        the SDK's answers to its failures. Other tools, and unknown names, take the SDK's way."""
        tool = self._tool_manager.get_tool(params.name)
        if not isinstance(tool, FarmTool):
            return await super()._handle_call_tool(ctx, params)
        try:
            return await tool.run(params.arguments or {}, ctx, convert_result=True, wire=True)
        except MCPError:
            raise
        except Exception as exc:  # UnexpectedToolError: the SDK's handler logs it and answers an error result
            logger.exception("Tool %r raised an unexpected exception", params.name)
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._tool_manager.get_tool(name) is None:
            return unknown_tool(name, [tool.name for tool in self._tool_manager.list_tools()])
        return await super().call_tool(name, arguments, context)


def tracing_installed() -> bool:
    """Whether an OpenTelemetry tracer provider is installed (the API alone answers with a proxy)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _tool_runner(
    tool: ToolDefinition,
    episodes: _Episodes,
    definition: ServerDefinition,
    known_principal: Callable[[str], bool],
    keys: dict[str, str],
) -> ToolRunner:
    """Runs a tool function with checked arguments on the caller's episode, in one transaction.
    `known_principal` tells whether a token's principal is one this server acts for, `keys` each table's
    key column once read (one of each per server)."""
    now = definition.now
    id_formats = definition.id_formats
    scopes = definition.principal.scopes if definition.principal else {}
    has_principal = definition.principal is not None
    # A read-only tool on an in-memory episode opens no transaction: its reads see one private connection that
    # nothing else writes, so BEGIN and COMMIT (2 of a read's ~4 statements) bought nothing. The connection is
    # put in sqlite3's deferred mode for the call instead, so a write it makes after all (INSERT, UPDATE,
    # DELETE) still opens a transaction, rolled back if the call fails. A file (`--db`) keeps BEGIN IMMEDIATE.
    lazy = tool.annotations.read_only_hint is True and episodes.store.persistent is None

    async def call_tool(function: Callable[..., Any], request: ControlContext, arguments: dict[str, Any]) -> Any:
        try:
            _, connection = episodes.connection(request.meta, request.request, request.lifespan_context)
        except (EpisodeExpired, EpisodeForbidden, EpisodeIdInvalid) as exc:
            return error_result(f"{tool.name} was not run: {exc}", _error_kind(exc))
        bound = resolve_bound_principal(request.request) if has_principal else None
        if bound is not None:
            if not known_principal(bound):
                return error_result(
                    f"{tool.name} was not run: this bearer token acts for {bound!r}, who is not a principal of "
                    f"{definition.name}.",
                    ErrorKind.FORBIDDEN,
                )
            if read_principal(connection) != bound:
                set_principal(connection, bound)  # the episode acts for the token's principal, as its state says
            principal: str | None = bound
        else:
            principal = read_principal(connection) if has_principal else None
        if lazy:
            connection.isolation_level = "DEFERRED"  # a write, if any, still opens the call's transaction
        else:
            connection.execute("BEGIN IMMEDIATE" if episodes.store.persistent is not None else "BEGIN")
        try:
            # Generated code must not write to stdout: on stdio that is the protocol stream.
            with redirect_stdout(sys.stderr):
                db = Database(connection, now, id_formats, principal, scopes, definition.id_namespace, keys)
                result = function(db, **arguments)
        except Rejected as exc:
            _rollback(connection)
            return error_result(str(exc), ErrorKind.REJECTED)
        except sqlite3.IntegrityError as exc:
            _rollback(connection)
            return error_result(
                f"{tool.name} was refused by a data constraint: {exc}. Nothing was changed.", ErrorKind.REJECTED
            )
        except (sqlite3.OperationalError, UnicodeEncodeError) as exc:
            _rollback(connection)
            if isinstance(exc, UnicodeEncodeError) or "too complex" in str(exc):
                message = (
                    f"{tool.name} cannot search for that text ({exc}). Nothing was changed; use a shorter, plain text."
                )
                return error_result(message, ErrorKind.INVALID_ARGUMENTS)
            message = f"{tool.name} failed inside the server ({type(exc).__name__}: {exc}). Nothing was changed."
            return error_result(message, ErrorKind.SERVER_ERROR)
        except Exception as exc:  # noqa: BLE001 - generated code is untrusted: any failure is a server_error
            _rollback(connection)
            message = f"{tool.name} failed inside the server ({type(exc).__name__}: {exc}). Nothing was changed."
            return error_result(message, ErrorKind.SERVER_ERROR)
        if lazy:
            connection.isolation_level = None  # commits what a write opened (none for a well-behaved read)
        else:
            connection.execute("COMMIT")
        return result

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

    @cache
    def known_principal(principal: str) -> bool:
        """Whether a token's principal is one this server acts for (the seed never changes)."""
        return definition.principal is not None and definition.principal.known(episodes.store.seed, principal)

    keys: dict[str, str] = {}  # table -> key column, read on a table's first new opaque id (Database._key_column)
    shipped = listing.load(definition.directory)
    modules = {definition.tool_module(tool) for tool in definition.tools}
    listed = {m for m in modules if shipped and listing.defined_in(m, shipped[1])}
    tools: list[Tool] = []
    for tool in definition.tools:
        fields: dict[str, Any] = {
            "fn": _tool_runner(tool, episodes, definition, known_principal, keys),
            "resolve": partial(definition.function, tool),
            "name": tool.name,
            "title": tool.title,
            "is_async": True,
            "context_kwarg": "ctx",
            "annotations": tool.annotations,
        }
        schemas = shipped[0].tools.get(tool.name) if shipped and definition.tool_module(tool) in listed else None
        if schemas is None or schemas.description is None:  # not shipped, or stale: derive it all now
            tools.append(FarmTool.derived(**fields))
        else:
            tools.append(
                FarmTool(
                    parameters=schemas.input_schema,
                    listed_output_schema=schemas.output_schema,
                    description=schemas.description,
                    **fields,
                )
            )
    server = FarmServer(
        definition.name,
        title=definition.title,
        description=definition.description,
        version=definition.version,
        instructions=definition.instructions(default, policy),
        log_level="WARNING",
        lifespan=lifespan,
        extensions=[EpisodeControl(episodes, definition, policy, known_principal)],
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
