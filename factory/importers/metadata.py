"""`envfarm import metadata`: EnvFactory-style tool metadata becomes a spec.

The input is what EnvFactory and many tool catalogues hold: `{class_name, description, tools: [{name,
description, input_schema, output_schema}]}` (or a list of them). It says what each tool takes and
returns, not what state lies behind it, so:

- **offline** (the default, deterministic) the state model is inferred from the names: a tool's verb
  says its effect (`get_`/`list_`/`search_` read, `create_`/`add_`/`book_` create, `update_`/`edit_`
  update, `delete_`/`remove_` delete) and the rest of its name the entity; the tools are restated as
  REST operations and imported like an OpenAPI document (`envfarm.factory.importers.openapi`), so outputs become
  columns, `<entity>_id` inputs keys and foreign keys, and seed rows come from the schemas. A tool
  whose verb says nothing about its effect (`cancel_`, `approve_`, `transfer_`, ...) is listed in
  IMPORT.md as not inferred, with the reason;
- **with a model** (`--model openai:MODEL`), the model writes the whole spec and the handlers those
  tools need, starting from the offline draft, and the verify-and-revise loop runs in a throwaway farm in
  the build folder; the converged spec folder is what is written (`envfarm.factory.generate.growth.
  import_metadata_with_model`, which builds on this module).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from envfarm.factory.importers.openapi import (
    ImportResult,
    OpenAPIError,
    SkippedOperation,
    import_document,
    plural,
    safe_name,
    singular,
    snake,
)
from envfarm.factory.spec import SpecError, read_document
from envfarm.servers.runtime.vocabulary import READ_VERBS

LIST = {"list", "search", "find", "query"}
CREATE = {"create", "add", "book", "place", "make", "new", "register", "submit", "schedule", "post", "insert", "open"}
UPDATE = {"update", "edit", "modify", "change", "set", "rename", "patch"}
DELETE = {"delete", "remove", "drop", "erase"}


class ToolMetadata(BaseModel):
    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    output_schema: dict[str, Any] | None = None


class EnvironmentMetadata(BaseModel):
    """EnvFactory's description of one environment class."""

    class_name: str
    description: str = ""
    tools: list[ToolMetadata] = Field(min_length=1)


def load_metadata(path: Path) -> list[EnvironmentMetadata]:
    """One environment or a list of them; a malformed file is an `OpenAPIError` naming file and field."""
    try:
        data = read_document(path)
    except SpecError as exc:
        raise OpenAPIError(str(exc)) from exc
    except OSError as exc:
        raise OpenAPIError(f"{path}: {exc.strerror or exc}") from exc
    items = data if isinstance(data, list) else [data]
    found = []
    for n, item in enumerate(items):
        try:
            found.append(EnvironmentMetadata.model_validate(item))
        except ValidationError as exc:
            where = "; ".join(f"[{n}].{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:10])
            raise OpenAPIError(f"{path}: not EnvFactory metadata: {where}") from exc
    return found


def _words(name: str) -> list[str]:
    return snake(name).split("_")


def to_openapi(meta: EnvironmentMetadata) -> tuple[dict[str, Any], list[SkippedOperation]]:
    """The tools restated as REST operations (verb -> method, noun -> collection), and the tools whose
    effect the name does not say."""
    paths: dict[str, dict[str, Any]] = {}
    skipped: list[SkippedOperation] = []
    components: dict[str, Any] = {}
    meta = meta.model_copy(update={"tools": [_hoisted(t, components) for t in meta.tools]})
    for tool in meta.tools:
        words = _words(tool.name)
        verb, noun_words = words[0], words[1:] or ["record"]
        one = singular("_".join(noun_words))
        table = plural(one)
        inputs = tool.input_schema or {"type": "object", "properties": {}}
        props: dict[str, Any] = inputs.get("properties") or {}
        required = set(inputs.get("required") or [])
        key = next((p for p in props if snake(p) in (f"{one}_id", "id", f"{one.rsplit('_', 1)[-1]}_id")), None)
        op: dict[str, Any] = {"operationId": tool.name, "description": tool.description or tool.name.replace("_", " ")}
        output = tool.output_schema or {}
        method, path = "", f"/{table}"
        if verb in READ_VERBS:
            listing = verb in LIST or key is None
            if listing and output.get("type") != "array" and not _holds_array(output):
                output = {"type": "array", "items": output or {"type": "object", "properties": {}}}
            method, path = ("get", f"/{table}") if listing else ("get", f"/{table}/{{{key}}}")
            op["parameters"] = _params(props, required, key if not listing else None)
        elif verb in CREATE:
            method = "post"
            op["requestBody"] = {"content": {"application/json": {"schema": inputs}}}
            output = output or inputs
        elif verb in UPDATE or verb in DELETE:
            if key is None:
                skipped.append(_skip(tool, f"`{verb}` names no `{one}_id` input: the row it changes is unknown"))
                continue
            method, path = ("patch" if verb in UPDATE else "delete"), f"/{table}/{{{key}}}"
            op["parameters"] = _params(props, required, key, only_key=True)
            if verb in UPDATE:
                body = {k: v for k, v in props.items() if k != key}
                op["requestBody"] = {
                    "content": {"application/json": {"schema": {"type": "object", "properties": body}}}
                }
        else:
            skipped.append(
                _skip(tool, f"the verb `{verb}` does not say what it changes: needs a model (--model) or a handler")
            )
            continue
        if output:
            op["responses"] = {"200": {"description": "ok", "content": {"application/json": {"schema": output}}}}
        else:
            op["responses"] = {"204": {"description": "done"}}
        slot = paths.setdefault(path, {})
        if method in slot:
            skipped.append(
                _skip(tool, f"the same operation as {slot[method]['operationId']} ({method.upper()} {path})")
            )
            continue
        slot[method] = op
    document = {
        "openapi": "3.0.0",
        "info": {"title": meta.class_name, "description": meta.description},
        "paths": paths,
        "components": {"schemas": components},
    }
    return document, skipped


def _hoisted(tool: ToolMetadata, components: dict[str, Any]) -> ToolMetadata:
    """A tool whose schemas' own `$defs` (JSON Schema, as MCP listings carry them) are moved into the
    document's components, with their refs rewritten, so a record type keeps its name."""
    schemas: dict[str, Any] = {}
    for field in ("input_schema", "output_schema"):
        schema = getattr(tool, field)
        if not schema:
            continue
        defs = {**(schema.get("$defs") or {}), **(schema.get("definitions") or {})}
        rest = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
        text = (
            json.dumps(rest)
            .replace('"#/$defs/', '"#/components/schemas/')
            .replace('"#/definitions/', '"#/components/schemas/')
        )
        for dname, definition in defs.items():
            dtext = json.dumps(definition).replace('"#/$defs/', '"#/components/schemas/')
            components.setdefault(dname, json.loads(dtext.replace('"#/definitions/', '"#/components/schemas/')))
        schemas[field] = json.loads(text)
    return tool.model_copy(update=schemas)


def _holds_array(schema: dict[str, Any]) -> bool:
    return any((p or {}).get("type") == "array" for p in (schema.get("properties") or {}).values())


def _params(props: dict[str, Any], required: set[str], key: str | None, only_key: bool = False) -> list[dict[str, Any]]:
    params = []
    for pname, schema in props.items():
        if pname == key:
            params.append(
                {
                    "name": pname,
                    "in": "path",
                    "required": True,
                    "schema": schema,
                    "description": schema.get("description", ""),
                }
            )
        elif not only_key:
            params.append(
                {
                    "name": pname,
                    "in": "query",
                    "required": pname in required,
                    "schema": schema,
                    "description": schema.get("description", ""),
                }
            )
    return params


def _skip(tool: ToolMetadata, reason: str) -> SkippedOperation:
    return SkippedOperation(method="tool", path=tool.name, operation_id=tool.name, reason=reason)


def import_metadata_offline(meta: EnvironmentMetadata, path: Path, name: str | None = None) -> ImportResult:
    """What can be inferred without a model: a spec of the CRUD tools, and a report of the rest."""
    document, skipped = to_openapi(meta)
    if not document["paths"]:
        raise OpenAPIError(
            f"{path}: {meta.class_name}: no tool has a verb that says its effect; "
            + "; ".join(f"{s.path}: {s.reason}" for s in skipped)
        )
    result = import_document(document, path, name or safe_name(meta.class_name), 0, "EnvFactory metadata", skipped)
    result.report.notes.append(
        "inferred offline from tool names and schemas; the tools listed as skipped need a model "
        "(`envfarm import metadata FILE --model openai:MODEL`) or hand-written handlers"
    )
    return result
