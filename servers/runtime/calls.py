"""One tool call through the SDK, with its arguments checked once.

The SDK's `Tool.run` validates a call's arguments against the tool's pydantic argument model. The farm
checks more than that (undeclared names, the hardening checks of `arguments.py`) and words its own
`invalid_arguments` errors, and it used to do so in a separate step before the SDK's, validating every
call twice over and walking the schema a third time. Here `FarmTool.run` is that one check: names, the
SDK's own argument model (so what passes here is exactly what the SDK would pass), then the hardening
check compiled once per tool, and the handler gets the validated values. Output conversion stays the
SDK's own.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pydantic_core
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import UnexpectedToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from envfarm.servers.runtime import listing
from envfarm.servers.runtime.arguments import ArgumentCheck, bounded, preview
from envfarm.servers.runtime.control import ERROR_KIND_META_KEY, ErrorKind

# A PEP 578 audit event raised around every tool call, args (tool, "begin" | "end"): the verifier's coverage
# gate traces only between them (the SDK's JSON-RPC frames stay untraced). Free when nothing listens.
TOOL_CALL_EVENT = "envfarm.tool_call"


def error_result(message: str, kind: ErrorKind) -> CallToolResult:
    """An `isError` result the agent reads, with its kind in `_meta` for the driver."""
    return CallToolResult(
        content=[TextContent(type="text", text=bounded(message).encode("utf-8", "backslashreplace").decode("utf-8"))],
        is_error=True,
        _meta={ERROR_KIND_META_KEY: kind.value},
    )


def unknown_tool(name: str, known: list[str]) -> CallToolResult:
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

    def validate(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | CallToolResult:
        """The handler's keyword arguments, or the `invalid_arguments` error naming each bad one."""
        unknown = [key for key in arguments if key not in self._declared]
        if unknown:
            expected = ", ".join(self.declared) or "no arguments"
            names = ", ".join(preview(u) if len(u) > 40 else u for u in sorted(unknown)[:10])
            return error_result(
                f"{tool} does not take {names}; its parameters are: {expected}.", ErrorKind.INVALID_ARGUMENTS
            )
        try:
            model = self.model.model_validate(self.pre_parse(arguments))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            message = f"{tool} got invalid arguments ({problems}). Nothing was changed; fix them and call again."
            return error_result(message, ErrorKind.INVALID_ARGUMENTS)
        if bad := self.check.problems(arguments):
            message = f"{tool} got invalid arguments ({'; '.join(bad)}). Nothing was changed; fix them and call again."
            return error_result(message, ErrorKind.INVALID_ARGUMENTS)
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
    result. None for any other result (a dict, a list, an error result): the SDK converts those."""
    output_model = metadata.output_model if metadata.output_schema is not None else None
    if not (isinstance(output_model, type) and issubclass(output_model, BaseModel)) or metadata.wrap_output:
        return None
    if not isinstance(result, output_model):
        return None
    structured = result.model_dump(mode="json", by_alias=True)
    text = {"type": "text", "text": compact_json(structured)}
    return {"content": [text], "structuredContent": structured, "isError": False, "resultType": "complete"}


# Runs a tool function with validated arguments on the caller's episode: (function, request context, arguments).
ToolRunner = Callable[[Callable[..., Any], ServerRequestContext[Any, Any], dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class _Prepared:
    function: Callable[..., Any]
    metadata: FuncMetadata
    arguments: _Arguments


class FarmTool(Tool):
    """An SDK tool of a generated server. Listed from the schemas and description the factory shipped
    (`tools.json`), or derived at start; its function (`resolve`, which may import the tools module) and
    the SDK's argument model (`func_metadata`) are built on the first call: building ~400 of them up front
    was most of the farm's start-up. `fn` is the runner that calls the function on an episode."""

    fn: ToolRunner = Field(exclude=True)
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

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False, wire: bool = False
    ) -> Any:
        """As `Tool.run` (the same errors for the same failures), with the farm's one argument check,
        between the TOOL_CALL_EVENT audit events. `context` is the SDK's `Context` (a call through
        `MCPServer.call_tool`) or the request context itself (`FarmServer`'s handler, which builds no
        `Context`): the runner needs only the request. With `wire`, a structured result comes back as the
        result's wire dict (`structured_answer`), which the SDK sends as it is."""
        sys.audit(TOOL_CALL_EVENT, self.name, "begin")
        try:
            return await self._run(arguments, context, convert_result, wire)
        finally:
            sys.audit(TOOL_CALL_EVENT, self.name, "end")

    async def _run(self, arguments: dict[str, Any], context: Any, convert_result: bool, wire: bool = False) -> Any:
        request = context.request_context if isinstance(context, Context) else context
        try:
            prepared = self.prepared
            validated = prepared.arguments.validate(self.name, arguments)
        except MCPError:
            raise
        except Exception as exc:  # a validator that raises something else is a crash, as in the SDK
            raise UnexpectedToolError(f"Error executing tool {self.name}") from exc
        if isinstance(validated, CallToolResult):
            return validated
        try:  # the function's own failures are results already (the runner); this is the output conversion
            result = await self.fn(prepared.function, request, validated)
            if not convert_result:
                return result
            if wire and (answer := structured_answer(prepared.metadata, result)) is not None:
                return answer
            converted = prepared.metadata.convert_result(result)
            if (
                isinstance(converted, CallToolResult)
                and converted.structured_content is not None
                and isinstance(result, BaseModel)
            ):  # the text beside the structured content is its compact JSON, as on the wire (`structured_answer`)
                converted.content = [TextContent(type="text", text=compact_json(converted.structured_content))]
            return converted
        except MCPError:
            raise
        except Exception as exc:
            raise UnexpectedToolError(f"Error executing tool {self.name}") from exc
