"""One tool call, start to end: arguments -> caller -> transaction -> handler -> result, or a typed error.

`CallPipeline` answers every `tools/call` of a generated server. It runs as the SDK's `tools/call`
interceptor (`Extension.intercept_tool_call`, see `episode_control.EpisodeExtension`): after the SDK has
validated the request's params, before the SDK would build its per-call `mcpserver.Context` that a farm
tool never uses (~7% of an in-process episode's CPU). The steps:

1. **arguments**: names the tool does not take, the SDK's own argument model of the function (so what passes
   here is exactly what the SDK would pass), then the hardening checks of `arguments.py`, compiled once
   per tool: one check, `InvalidArguments` naming each bad one;
2. **caller**: who calls and on which episode (`caller.identify`: the SDK's access-token context and the
   request context), the episode's connection, and the principal the call acts for;
3. **transaction**: BEGIN (a read-only tool on an in-memory episode opens none, see `_Plan.lazy`);
4. **handler**: the generated function `fn(db, **arguments)`, its stdout sent to stderr;
5. **result**: the handler's return value converted to the wire (`structured_answer`, else the SDK's own
   conversion) inside the transaction, then COMMIT: a result that cannot be sent changes nothing either.

Any exception on the way is turned into the agent's error result in one place, `failure`, by its type
(`kind_of`): a failed call is rolled back and changes nothing. Each step between `TOOL_CALL_EVENT` audit
events (the verifier's coverage gate traces only inside them).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable, Iterable
from contextlib import redirect_stdout
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pydantic_core
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import CallToolRequestParams, CallToolResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from envfarm.servers.runtime import listing
from envfarm.servers.runtime.arguments import ArgumentCheck, bounded, preview
from envfarm.servers.runtime.caller import identify
from envfarm.servers.runtime.control import ERROR_KIND_META_KEY, ErrorKind
from envfarm.servers.runtime.database import Database, Rejected, read_principal, set_principal
from envfarm.servers.runtime.definition import ServerDefinition
from envfarm.servers.runtime.episodes import (
    ConnectionScope,
    EpisodeExpired,
    EpisodeForbidden,
    EpisodeIdInvalid,
    EpisodeStore,
)

# A PEP 578 audit event raised around every tool call, args (tool, "begin" | "end"): the verifier's coverage
# gate traces only between them (the SDK's JSON-RPC frames stay untraced). Free when nothing listens.
TOOL_CALL_EVENT = "envfarm.tool_call"


class InvalidArguments(ValueError):
    """Arguments a tool does not take, or that fail its argument model or the hardening checks. The message
    names each bad one; the agent's to fix."""


def kind_of(exc: BaseException) -> ErrorKind:
    """Why a call failed, by what was raised: the farm's error kinds, in one table."""
    if isinstance(exc, Rejected | sqlite3.IntegrityError):
        return ErrorKind.REJECTED
    if isinstance(exc, EpisodeExpired):
        return ErrorKind.EPISODE_EXPIRED
    if isinstance(exc, EpisodeForbidden):
        return ErrorKind.FORBIDDEN
    if isinstance(exc, InvalidArguments | EpisodeIdInvalid | UnicodeEncodeError):
        return ErrorKind.INVALID_ARGUMENTS
    if isinstance(exc, sqlite3.OperationalError) and "too complex" in str(exc):
        return ErrorKind.INVALID_ARGUMENTS  # a LIKE pattern SQLite refuses: the search text's fault
    return ErrorKind.SERVER_ERROR


def error_result(message: str, kind: ErrorKind) -> CallToolResult:
    """An `isError` result the agent reads, with its kind in `_meta` for the driver."""
    return CallToolResult(
        content=[TextContent(type="text", text=bounded(message).encode("utf-8", "backslashreplace").decode("utf-8"))],
        is_error=True,
        _meta={ERROR_KIND_META_KEY: kind.value},
    )


def failure(tool: str, exc: BaseException) -> CallToolResult:
    """The one place an exception becomes the agent's error result: its kind (`kind_of`) and a message that
    says what to fix. Generated code is untrusted: anything it raises that is not a farm error is the
    environment's failure (`server_error`), never the agent's."""
    kind = kind_of(exc)
    if isinstance(exc, InvalidArguments | Rejected):
        message = str(exc)
    elif isinstance(exc, EpisodeExpired | EpisodeForbidden | EpisodeIdInvalid):
        message = f"{tool} was not run: {exc}"
    elif isinstance(exc, sqlite3.IntegrityError):
        message = f"{tool} was refused by a data constraint: {exc}. Nothing was changed."
    elif kind is ErrorKind.INVALID_ARGUMENTS:
        message = f"{tool} cannot search for that text ({exc}). Nothing was changed; use a shorter, plain text."
    else:
        message = f"{tool} failed inside the server ({type(exc).__name__}: {exc}). Nothing was changed."
    return error_result(message, kind)


def unknown_tool(name: str, known: Iterable[str]) -> CallToolResult:
    return error_result(
        f"Unknown tool {preview(name)}; the tools are: {', '.join(sorted(known))}.", ErrorKind.INVALID_ARGUMENTS
    )


class _Arguments:
    """A tool's argument model and what a call needs from it, read once."""

    def __init__(self, metadata: FuncMetadata, schema: dict[str, Any]) -> None:
        fields = metadata.arg_model.model_fields
        self.model = metadata.arg_model
        self.names = [(name, info.alias or name) for name, info in fields.items()]
        self.declared = [wire for _, wire in self.names]
        self._declared = set(self.declared)
        # Values the SDK's pre-parse would read as JSON text (a list sent as '["a"]'): not declared str.
        self.json_text = {
            key for name, info in fields.items() if info.annotation is not str for key in {name, info.alias or name}
        }
        self.check = ArgumentCheck(schema)

    def pre_parse(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """`FuncMetadata.pre_parse_json`, with the field lookup built once."""
        parsed = arguments
        for key, value in arguments.items():
            if key in self.json_text and isinstance(value, str):
                try:
                    decoded = json.loads(value)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(decoded, str | int | float):
                    parsed = dict(parsed) if parsed is arguments else parsed
                    parsed[key] = decoded
        return parsed

    def validate(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The handler's keyword arguments; raises `InvalidArguments` naming each bad one."""
        unknown = [key for key in arguments if key not in self._declared]
        if unknown:
            expected = ", ".join(self.declared) or "no arguments"
            names = ", ".join(preview(u) if len(u) > 40 else u for u in sorted(unknown)[:10])
            raise InvalidArguments(f"{tool} does not take {names}; its parameters are: {expected}.")
        try:
            model = self.model.model_validate(self.pre_parse(arguments))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise InvalidArguments(
                f"{tool} got invalid arguments ({problems}). Nothing was changed; fix them and call again."
            ) from None
        if bad := self.check.problems(arguments):
            raise InvalidArguments(
                f"{tool} got invalid arguments ({'; '.join(bad)}). Nothing was changed; fix them and call again."
            )
        values = model.__dict__
        return {wire: values[name] for name, wire in self.names}


def compact_json(value: Any) -> str:
    """A structured result's text copy: its JSON without indentation (the SDK indents it, a third more bytes)."""
    return pydantic_core.to_json(value).decode()


def structured_answer(metadata: FuncMetadata, result: Any) -> dict[str, Any] | None:
    """The `tools/call` result of a tool that returned its output model, as the wire dict: the structured
    content dumped once, and beside it, as the MCP spec asks for backwards compatibility, a text block with the
    same JSON, compact. The SDK's `convert_result` would validate the model it was given again, dump it twice
    (indented text, then the structured content), build a `CallToolResult` and dump that too; the SDK's
    handler sends a dict as it is, after validating it against the protocol's result schema as it does any
    result. None for any other result (a dict, a list): the SDK converts those."""
    output_model = metadata.output_model if metadata.output_schema is not None else None
    if not (isinstance(output_model, type) and issubclass(output_model, BaseModel)) or metadata.wrap_output:
        return None
    if not isinstance(result, output_model):
        return None
    structured = result.model_dump(mode="json", by_alias=True)
    text = {"type": "text", "text": compact_json(structured)}
    return {"content": [text], "structuredContent": structured, "isError": False, "resultType": "complete"}


def answer(metadata: FuncMetadata, result: Any) -> dict[str, Any] | CallToolResult:
    """A handler's return value as the `tools/call` result: `structured_answer`, else the SDK's conversion
    (which validates the value against the output model: one that does not fit raises), with the text beside
    structured content compact as on the wire."""
    if (wire := structured_answer(metadata, result)) is not None:
        return wire
    converted = metadata.convert_result(result)
    if not isinstance(converted, CallToolResult):
        raise TypeError(f"a farm tool cannot answer {type(converted).__name__}")
    if converted.structured_content is not None and isinstance(result, BaseModel):
        converted.content = [TextContent(type="text", text=compact_json(converted.structured_content))]
    return converted


@dataclass(frozen=True)
class _Prepared:
    function: Callable[..., Any]
    metadata: FuncMetadata
    arguments: _Arguments


class FarmTool(Tool):
    """An SDK tool of a generated server, as `tools/list` shows it. Listed from the schemas and description the
    factory shipped (`tools.json`), or derived at start; its function (`resolve`, which may import the tools
    module) and the SDK's argument model (`func_metadata`) are built on the first call: building ~400 of them
    up front was most of the farm's start-up. `fn` is the server's `CallPipeline`."""

    fn: Callable[..., Any] = Field(exclude=True)
    resolve: Callable[[], Callable[..., Any]] = Field(exclude=True)
    fn_metadata: FuncMetadata | None = None  # type: ignore[assignment]
    listed_output_schema: dict[str, Any] | None = Field(default=None, exclude=True)

    @classmethod
    def derived(cls, resolve: Callable[[], Callable[..., Any]], **fields: Any) -> FarmTool:
        """A tool whose listing is derived now, as the SDK's `add_tool` would (no usable `tools.json`)."""
        function = resolve()
        metadata = listing.argument_metadata(function)
        return cls(
            resolve=resolve,
            parameters=metadata.arg_model.model_json_schema(by_alias=True),
            listed_output_schema=metadata.output_schema,
            description=listing.description(function),
            fn_metadata=metadata,
            **fields,
        )

    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        return self.listed_output_schema

    @cached_property
    def prepared(self) -> _Prepared:
        function = self.resolve()
        if self.fn_metadata is None:
            self.fn_metadata = listing.argument_metadata(function)
        return _Prepared(function, self.fn_metadata, _Arguments(self.fn_metadata, self.parameters))

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        """The SDK's other way in (`MCPServer.call_tool` with a request's `Context`): the same pipeline as a
        `tools/call` on the wire, answering a `CallToolResult`."""
        params = CallToolRequestParams(name=self.name, arguments=arguments)
        result = await self.fn(params, context.request_context)
        return result if isinstance(result, CallToolResult) else CallToolResult.model_validate(result)


@dataclass(frozen=True)
class _Plan:
    """A tool and how its calls run. `lazy`: a read-only tool on an in-memory episode opens no transaction: its
    reads see one private connection that nothing else writes, so BEGIN and COMMIT (2 of a read's ~4
    statements) bought nothing. The connection is put in sqlite3's deferred mode for the call instead, so a
    write it makes after all (INSERT, UPDATE, DELETE) still opens a transaction, rolled back if the call
    fails. A file (`--db`) keeps BEGIN IMMEDIATE."""

    tool: FarmTool
    lazy: bool


def _rollback(connection: sqlite3.Connection) -> None:
    if connection.in_transaction:
        connection.execute("ROLLBACK")
    connection.isolation_level = None  # back to autocommit after a read-only call's lazy transaction


class CallPipeline:
    """Every `tools/call` of one server (see the module docstring). `known_principal` tells whether a token's
    principal is one this server acts for; `keys` holds each table's key column once read (one per server)."""

    def __init__(
        self,
        definition: ServerDefinition,
        store: EpisodeStore,
        known_principal: Callable[[str], bool],
        keys: dict[str, str],
    ) -> None:
        self._definition = definition
        self._store = store
        self._known_principal = known_principal
        self._keys = keys
        self._scopes = definition.principal.scopes if definition.principal else {}
        self._has_principal = definition.principal is not None
        self._begin = "BEGIN IMMEDIATE" if store.persistent is not None else "BEGIN"
        self._plans: dict[str, _Plan] = {}

    def add(self, tool: FarmTool) -> None:
        lazy = tool.annotations is not None and tool.annotations.read_only_hint is True
        self._plans[tool.name] = _Plan(tool, lazy and self._store.persistent is None)

    async def __call__(self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        plan = self._plans.get(params.name)
        if plan is None:  # runs nothing of the server: no audit events
            return unknown_tool(params.name, self._plans)
        name = plan.tool.name
        sys.audit(TOOL_CALL_EVENT, name, "begin")
        try:
            return self._run(plan, params.arguments or {}, ctx)
        except Exception as exc:  # noqa: BLE001 - the one place a failed call becomes the agent's error result
            return failure(name, exc)
        finally:
            sys.audit(TOOL_CALL_EVENT, name, "end")

    def _run(
        self, plan: _Plan, arguments: dict[str, Any], ctx: ServerRequestContext[ConnectionScope, Any]
    ) -> dict[str, Any] | CallToolResult:
        definition = self._definition
        prepared = plan.tool.prepared
        values = prepared.arguments.validate(plan.tool.name, arguments)
        caller = identify(ctx)
        connection = ctx.lifespan_context.episode(caller.episode, caller.owner)
        principal: str | None = None
        if self._has_principal:
            principal = caller.principal
            if principal is None:
                principal = read_principal(connection)
            elif not self._known_principal(principal):
                raise EpisodeForbidden(
                    f"this bearer token acts for {principal!r}, who is not a principal of {definition.name}."
                )
            elif read_principal(connection) != principal:
                set_principal(connection, principal)  # the episode acts for the token's principal, as its state says
        if plan.lazy:
            connection.isolation_level = "DEFERRED"  # a write, if any, still opens the call's transaction
        else:
            connection.execute(self._begin)
        try:
            # Generated code must not write to stdout: on stdio that is the protocol stream.
            with redirect_stdout(sys.stderr):
                db = Database(
                    connection,
                    definition.now,
                    definition.id_formats,
                    principal,
                    self._scopes,
                    definition.id_namespace,
                    self._keys,
                )
                result = prepared.function(db, **values)
            converted = answer(prepared.metadata, result)
            if plan.lazy:
                connection.isolation_level = None  # commits what a write opened (none for a well-behaved read)
            else:
                connection.execute("COMMIT")
        except BaseException:
            _rollback(connection)
            raise
        return converted
