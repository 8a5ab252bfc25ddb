"""Tool listings derived once, by the factory, instead of at every start.

Adding a tool to the SDK derives its argument model and its input and output JSON schemas from the
function's signature: about 4 ms a tool, most of the farm host's start-up for ~400 tools. The factory
writes the schemas and descriptions into `tools.json` beside the code; the runtime lists those, and
imports the tools module and builds a tool's argument model on its first call. The file names the
sha256 of the tools.py it was derived from and the pydantic and mcp versions: if any of them differs
(a hand edit, a mutant, an upgrade) the file is ignored and everything is derived at start as before,
so a listing never disagrees with the code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Callable, Iterable
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pydantic
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from pydantic import BaseModel, Field

SCHEMAS_FILE = "tools.json"
TOOLS_MODULE = "tools.py"
SPEC_FILE = "spec.json"


class ToolSchemas(BaseModel):
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    description: str | None = Field(default=None, description="the tool's docstring, as the server lists it")


class Listing(BaseModel):
    """What `tools.json` holds: the schemas per tool, and what they were derived from."""

    tools_sha256: str = Field(description="sha256 of the tools.py the schemas were derived from")
    pydantic: str
    mcp: str
    declared: list[dict[str, Any]] = Field(
        default_factory=list,
        description="spec.json's tools as registering them needs (name, effect, title, writes, annotations), "
        "taken at build so a start does not parse the whole spec (like server.py's code, a spec edited after "
        "the build takes effect with the next build)",
    )
    tools: dict[str, ToolSchemas]


@cache
def _versions() -> tuple[str, str]:
    return pydantic.VERSION, version("mcp")


def description(function: Callable[..., Any]) -> str:
    """What a tool's listing says it does: its function's docstring."""
    return inspect.cleandoc(function.__doc__ or "")


def argument_metadata(function: Callable[..., Any], structured_output: bool = True) -> FuncMetadata:
    """The SDK's argument model (and output schema) of a tool function `fn(db, **arguments)`."""
    db_parameter = next(iter(inspect.signature(function).parameters))
    return func_metadata(function, skip_names=[db_parameter], structured_output=structured_output)


DECLARED_KEYS = ("name", "effect", "title", "writes", "annotations")


def derive(functions: Iterable[Callable[..., Any]], tools_py: Path) -> Listing:
    """The listing of `functions` (all defined in `tools_py`), as the SDK derives it when a tool is added,
    with the tools spec.json beside it declares."""
    tools: dict[str, ToolSchemas] = {}
    for function in functions:
        metadata = argument_metadata(function)
        schemas = ToolSchemas(
            input_schema=metadata.arg_model.model_json_schema(by_alias=True),
            output_schema=metadata.output_schema,
            description=description(function),
        )
        tools[function.__name__] = schemas
    pydantic_version, mcp_version = _versions()
    sha = hashlib.sha256(tools_py.read_bytes()).hexdigest()
    spec_json = tools_py.parent / SPEC_FILE
    spec = json.loads(spec_json.read_text(encoding="utf-8")) if spec_json.is_file() else {}
    declared = [{key: tool[key] for key in DECLARED_KEYS if key in tool} for tool in spec.get("tools") or []]
    return Listing(tools_sha256=sha, pydantic=pydantic_version, mcp=mcp_version, declared=declared, tools=tools)


def load(directory: Any) -> tuple[Listing, Path] | None:
    """The listing shipped in `directory` and the tools.py it holds for, or None when there is none or it
    no longer matches that tools.py or the installed pydantic and mcp."""
    listing_file, tools_py = directory / SCHEMAS_FILE, directory / TOOLS_MODULE
    if not (listing_file.is_file() and tools_py.is_file()):
        return None
    listing = Listing.model_validate_json(listing_file.read_bytes())
    if (listing.pydantic, listing.mcp) != _versions():
        return None
    if listing.tools_sha256 != hashlib.sha256(tools_py.read_bytes()).hexdigest():
        return None
    return listing, Path(str(tools_py)).resolve()


def defined_in(module: str, tools_py: Path) -> bool:
    """Whether the module called `module` is the file `tools_py`, found without importing it."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        file = getattr(loaded, "__file__", None)
    else:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return False
        file = spec.origin if spec is not None else None
    return file is not None and Path(file).resolve() == tools_py
