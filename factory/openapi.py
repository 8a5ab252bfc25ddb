"""`envfarm import openapi`: an OpenAPI description becomes a spec folder, deterministically, no model.

The mapping (what a real API's description says -> what our spec declares):
- **resources -> entities**: every component schema an operation reads or writes as a record becomes a
  table; its scalar properties become typed columns (snake_case), a nested object of scalars is
  flattened one level (`estimate.value` -> `estimate_value`), arrays and deeper objects are kept as
  JSON text. The key is `id`, else `<resource>Id`, else the path parameter that names a row, else a
  synthetic `id`. A column named like another resource's key (`pet_id`, `task_id`) is a foreign key.
- **operations -> tools**: GET of many records -> `search` (query parameters that name a column become
  filters, a parent path parameter a required filter); GET `/x/{key}` -> `get`; POST to a collection ->
  `create` (body properties -> params, parent path parameters -> the foreign key); PUT/PATCH (and a
  POST to `/x/{key}`) -> `update`; DELETE `/x/{key}` -> `delete`. What is not a record operation (login,
  file upload, bulk input, maps and singletons) is skipped and the report says why.
- **actions on a record** (`POST /x/{key}:cancel`, `/x/{key}/favorite`) -> an `update` that sets the state the
  verb names: the status enum's participle (`cancelled`) or a flag column (`favorited`); else skipped.
- **RPC-style operations** (named in the request, not the path: `X-Amz-Target: Svc.CreateThing`, `?Action=`,
  Swagger 2.0's `/#CreateThing`) map by name and shapes: the verb is the effect (`Create`, `Describe`/`Get`,
  `List`, `Update`/`Modify`/`Set`, `Delete`, a state change like `Stop`), the noun the table (its schema, else
  the record the response carries), the input field the reads and writes name a row by its key.
- **pagination -> ours**: page/limit/offset/cursor parameters are dropped; a search returns at most
  `limit` rows (the page-size parameter's maximum or default).
- **auth -> ours**: security schemes and auth header parameters are dropped: our servers act for the
  episode's principal, which the runtime sets; no tool takes credentials.
- **seed**: rows generated from the schemas (enums, formats, examples, names), deterministic per seed.

The result is a normal spec folder (`spec.yaml` plus `IMPORT.md` saying what was mapped and what was
not); `envfarm build` publishes it through the same verifier as any other.
"""

from __future__ import annotations

import copy
import html
import json
import keyword
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, Field

from envfarm.factory import fakedata
from envfarm.factory.source import POLICY_NAME
from envfarm.factory.spec import (
    LIST_AS_TEXT,
    RESERVED_PARAMS,
    SQL_KEYWORDS,
    SpecError,
    parse_spec,
    read_document,
    with_default_words,
)
from envfarm.servers.runtime.registry import Source

FARM_NOW = "2026-04-13T09:00:00Z"
METHODS = ("get", "post", "put", "patch", "delete")
SEED_ROWS = 6
PAGINATION = {
    "limit",
    "offset",
    "page",
    "page_size",
    "pagesize",
    "per_page",
    "cursor",
    "start",
    "size",
    "skip",
    "top",
    "page_token",
    "next_token",
    "count",
    "starting_after",
    "ending_before",
    "marker",
    "next_marker",
    "max_records",
    "max_results",
    "max_items",
}
# Query parameters that carry credentials or shape the response, never an input of the operation itself
# (Google's global parameters among them): a computed read's lookup table does not key on them.
NOT_INPUTS = {
    "access_token",
    "api_key",
    "apikey",
    "key",
    "oauth_token",
    "token",
    "auth_token",
    "authorization",
    "client_secret",
    "signature",
    "quota_user",
    "user_ip",
    "pretty_print",
    "fields",
    "alt",
    "callback",
    "output_format",
    "response_format",
    "format",
}
AUTH_WORDS = ("login", "logout", "signin", "signout", "sign_in", "sign_out", "token", "oauth", "auth", "session")
# RPC-style APIs name the operation, not the resource, in the request: a header (`X-Amz-Target: Svc.Op`), a
# query parameter (`?Action=Op`) or a path fragment (`/#Op`, how Swagger 2.0 restates the AWS protocols).
RPC_SELECTORS = {"action", "x_amz_target"}
# An RPC operation's first word -> the record effect it has on the table its other words name.
RPC_VERBS = {
    **dict.fromkeys(("create", "add", "register", "allocate", "import", "launch", "put"), "create"),
    **dict.fromkeys(("get", "describe", "read", "fetch", "lookup", "retrieve"), "get"),
    **dict.fromkeys(("list", "search", "query", "scan", "find"), "search"),
    **dict.fromkeys(("delete", "remove", "deregister", "destroy"), "delete"),
    **dict.fromkeys(("update", "modify", "set", "change", "edit", "replace"), "update"),
    **dict.fromkeys(("tag", "untag"), "tag"),
}
# Verbs of an operation that answers its input with something computed, no stored record (`DetectSentiment`).
COMPUTE_VERBS = {
    "calculate",
    "compute",
    "estimate",
    "detect",
    "validate",
    "analyze",
    "analyse",
    "translate",
    "convert",
    "predict",
    "recognize",
    "classify",
    "extract",
    "summarize",
    "preview",
    "simulate",
    "evaluate",
    "decode",
    "check",
}
# First words of an operation that reads, whatever its method (`POST /charitysearch`: "Get summary data").
READ_VERBS = {
    "get",
    "search",
    "find",
    "list",
    "lookup",
    "retrieve",
    "fetch",
    "query",
    "show",
    "describe",
} | COMPUTE_VERBS
# Verbs whose RPC operation, given no key of its record, starts a new one (`StartQueryExecution`, `RunJob`).
STARTS = {"start", "run", "submit", "request", "initiate", "launch"}
# Verbs of an action on one record (`POST /orders/{id}:cancel`, `StopInstance`): an update of its state.
ACTION_VERBS = {
    "cancel",
    "stop",
    "start",
    "enable",
    "disable",
    "reboot",
    "restart",
    "reset",
    "approve",
    "reject",
    "accept",
    "decline",
    "activate",
    "deactivate",
    "archive",
    "unarchive",
    "restore",
    "suspend",
    "resume",
    "pause",
    "unpause",
    "close",
    "reopen",
    "open",
    "lock",
    "unlock",
    "complete",
    "confirm",
    "verify",
    "publish",
    "unpublish",
    "terminate",
    "retry",
    "acknowledge",
    "abort",
    "favorite",
    "unfavorite",
    "star",
    "unstar",
    "pin",
    "unpin",
    "block",
    "unblock",
    "mute",
    "unmute",
    "follow",
    "unfollow",
    "like",
    "unlike",
    "submit",
    "void",
    "finalize",
    "refund",
    "capture",
    "resolve",
    "ship",
    "deliver",
    "expire",
    "revoke",
    "hide",
    "unhide",
    "flag",
    "unflag",
    "mark",
    "read",
    "unread",
}
# Names the generated code uses for itself: a column or param with one of these names gets a suffix.
# Pydantic's own attribute names too (`schema`, `json`, `copy`): a row model field of that name shadows one and
# the server warns on stderr at import.
RESERVED = {"now", "db", "args", "row", "rows", "current", "new_id", "result", "self", "cls", *RESERVED_PARAMS} | {
    name for name in dir(BaseModel) if not name.startswith("_")
}
ID_FORMAT_UUID = "00000000-0000-4000-8000-{:012d}"


class OpenAPIError(Exception):
    """The document cannot be imported at all (not OpenAPI, no paths); the message names the file."""


class MappedOperation(BaseModel):
    """One operation of the document and the tool it became."""

    method: str
    path: str
    operation_id: str | None = None
    tool: str
    effect: str
    entity: str


class SkippedOperation(BaseModel):
    method: str
    path: str
    operation_id: str | None = None
    reason: str


class ImportReport(BaseModel):
    """What an import mapped, what it skipped and why, and what it could not carry over."""

    source: str
    format: str
    title: str
    entities: dict[str, str] = Field(default_factory=dict, description="table -> the schema it came from")
    tools: list[MappedOperation] = Field(default_factory=list)
    skipped: list[SkippedOperation] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def markdown(self) -> str:
        lines = [f"# Imported from {self.source}", "", f"{self.title} ({self.format}).", ""]
        lines += ["## Entities", "", "| table | from schema |", "|---|---|"]
        lines += [f"| `{t}` | `{s}` |" for t, s in self.entities.items()]
        lines += ["", "## Tools", "", "| operation | tool | effect | entity |", "|---|---|---|---|"]
        lines += [f"| `{o.method.upper()} {o.path}` | `{o.tool}` | {o.effect} | `{o.entity}` |" for o in self.tools]
        if self.skipped:
            lines += ["", "## Skipped operations", "", "| operation | why |", "|---|---|"]
            lines += [f"| `{s.method.upper()} {s.path}` | {s.reason} |" for s in self.skipped]
        if self.notes:
            lines += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


class ImportResult(BaseModel):
    """A spec document (validated), its policy.md and the report of how it was made."""

    spec: dict[str, Any]
    report: ImportReport
    policy: str = Field(default="", description="policy.md drafted from the document")


# Fields of a page of records rather than of a record: `{items: [X], total, has_more, cursor}` is a page of X.
PAGE_FIELDS = frozenset(
    {
        "count",
        "total",
        "total_count",
        "has_more",
        "cursor",
        "next_cursor",
        "next",
        "previous",
        "next_page_token",
        "page",
        "page_size",
        "per_page",
        "limit",
        "offset",
    }
)


def snake(name: str) -> str:
    """`petId` -> `pet_id`, `Time-Entries` -> `time_entries`; a valid lower_snake_case identifier."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    text = re.sub(r"_+", "_", text)
    if not text:
        text = "field"
    if text[0].isdigit():
        text = f"n_{text}"
    return text


def safe_name(name: str) -> str:
    """A snake name that is not a Python or SQL keyword or a name the generated code uses itself."""
    text = snake(name)
    return f"{text}_value" if keyword.iskeyword(text) or text in SQL_KEYWORDS or text in RESERVED else text


def plural(word: str) -> str:
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word if word.endswith("ss") is False and word.endswith("s") else word + "es"
    return word + "s"


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 3:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def first_paragraph(text: str | None, limit: int = 300) -> str:
    """The first paragraph of a markdown description, as plain text on one line."""
    if not text or not isinstance(text, str):
        return ""
    para = re.split(r"\n\s*\n", text.strip())[0]
    para = html.unescape(re.sub(r"<[^<>]*>", " ", para))  # HTML in a description (`<BR />`, links): its text
    para = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", para)  # [text](url) -> text
    para = re.sub(r"[`*#>]", "", para)
    para = re.sub(r"\S{100,}", "", para)  # a word no line can hold (a long URL): a docstring cannot wrap it
    para = re.sub(r"\s+([.,;:!?])", r"\1", " ".join(para.split()))  # no space left before punctuation
    return para if len(para) <= limit else para[: limit - 3].rsplit(" ", 1)[0] + "..."


class _Doc:
    """The document with local `$ref`s resolved on demand (a cycle ends as an empty schema)."""

    def __init__(self, data: dict[str, Any], source: str) -> None:
        self.data = data
        self.source = source

    def lookup(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise OpenAPIError(f"{self.source}: external $ref {ref!r} is not supported (bundle the document first)")
        node: Any = self.data
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise OpenAPIError(f"{self.source}: $ref {ref!r} points at nothing")
            node = node[part]
        return node

    def deref(self, node: Any, seen: tuple[str, ...] = ()) -> tuple[str | None, dict[str, Any]]:
        """(the component name the node refers to, if any; the resolved node)."""
        name = None
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                return ref.rsplit("/", 1)[-1], {}
            seen = (*seen, ref)
            name = ref.rsplit("/", 1)[-1]
            node = self.lookup(ref)
        return name, node if isinstance(node, dict) else {}

    def schema(self, node: Any) -> tuple[str | None, dict[str, Any]]:
        """A schema with `allOf` merged and the first object alternative of `oneOf`/`anyOf` taken."""
        name, schema = self.deref(node)
        if "allOf" in schema:
            merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
            for part in schema["allOf"]:
                part_name, part_schema = self.schema(part)
                name = name or part_name
                merged["properties"].update(part_schema.get("properties") or {})
                merged["required"] += part_schema.get("required") or []
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            merged["properties"].update(rest.pop("properties", {}) or {})
            merged["required"] += rest.pop("required", []) or []
            schema = {**rest, **merged}
        for alternative in ("oneOf", "anyOf"):
            if alternative in schema and "properties" not in schema:
                options = [self.schema(o) for o in schema[alternative]]
                objects = [o for o in options if _type(o[1]) == "object"]
                if objects:
                    return name or objects[0][0], objects[0][1]
                real = [o for o in options if _type(o[1]) != "null"]
                if real:
                    return name or real[0][0], {**real[0][1], "nullable": True}
        return name, schema


def _type(schema: dict[str, Any]) -> str | None:
    """The schema's JSON type (3.1 `type: [x, "null"]` -> x); `properties` alone means object."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and "properties" in schema:
        return "object"
    if kind is None and "items" in schema:
        return "array"
    return kind


def _nullable(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return bool(schema.get("nullable")) or (isinstance(kind, list) and "null" in kind)


def _scalar(schema: dict[str, Any]) -> bool:
    return _type(schema) in ("string", "integer", "number", "boolean") or (_type(schema) is None and "enum" in schema)


LIST_TEXT = "(the API's list, as comma-separated text)"  # a list column's note; its seed values follow it


class _Column(BaseModel):
    name: str
    type: str
    description: str
    enum: list[str] | None = None
    ref: str | None = None
    json_text: str | None = None  # "list" (an array of scalars) or "nested data", kept as text
    format: str | None = None
    example: Any = None
    minimum: float | None = None
    maximum: float | None = None
    source: str = ""  # the property path in the document


class _Entity(BaseModel):
    table: str
    schema_name: str
    description: str
    columns: dict[str, _Column] = Field(default_factory=dict)
    primary_key: str = ""
    id_format: str = ""
    parents: dict[str, str] = Field(default_factory=dict, description="column -> parent table")
    added_key: bool = False
    seed_rows: int = SEED_ROWS  # one for the answer of a read that takes no input


def _column_type(schema: dict[str, Any]) -> tuple[str, str | None]:
    kind, fmt = _type(schema), schema.get("format")
    if kind == "integer":
        return "integer", fmt
    if kind == "number":
        return "number", fmt
    if kind == "boolean":
        return "boolean", fmt
    if kind == "string" and fmt == "date":
        return "date", fmt
    if kind == "string" and fmt == "date-time":
        return "datetime", fmt
    return "string", fmt


class _Importer:
    def __init__(self, doc: _Doc, name: str, report: ImportReport) -> None:
        self.doc = doc
        self.name = name
        self.report = report
        self.entities: dict[str, _Entity] = {}  # table -> entity
        self.by_schema: dict[str, str] = {}  # schema name -> table
        self.collections: dict[str, str] = {}  # collection path -> table
        self.tools: list[dict[str, Any]] = []
        self.tool_names: set[str] = set()
        self.limits: dict[str, int] = {}
        self.renamed: set[str] = set()  # properties whose column was renamed (noted once each in IMPORT.md)
        self.nouns: dict[str, str] = {}  # an RPC operation's noun (`named_query`) -> the table it names
        self.rpc_keys: dict[str, list[str]] = {}  # table -> the columns RPC reads and writes name a row by
        self.noun_candidates: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}  # noun -> (rank, schema)
        self.noun_keys: dict[str, list[str]] = {}  # noun -> required input fields of its keyed operations
        self.path_params: dict[tuple[str, str], dict[str, Any]] = {}  # (path, name) -> its path parameter
        self.asked: dict[str, str] = {}  # tool -> the operation's summary (else description): how its intent asks
        self.item_keys: dict[str, list[str]] = {}  # table -> the path parameters its item paths name a row by

    # ---- schemas -> entities -------------------------------------------------------------------

    def record_of(self, node: Any, fallback: str, depth: int = 0) -> tuple[str | None, dict[str, Any], bool] | None:
        """The record schema a body or response carries: (schema name, schema, many), unwrapping
        arrays, `{items: [X], pagination}` collections and `{x: X}` envelopes; None if no record."""
        if depth > 4:  # a schema that contains itself (`children: [Category]`) ends here
            return None
        name, schema = self.doc.schema(node)
        kind = _type(schema)
        if kind == "array":
            inner = self.record_of(schema.get("items") or {}, fallback, depth + 1)
            return (inner[0], inner[1], True) if inner else None
        if kind != "object":
            return None
        props = schema.get("properties") or {}
        resolved = {p: self.doc.schema(s) for p, s in props.items()}
        arrays = [
            p
            for p, (_, s) in resolved.items()
            if _type(s) == "array" and _type(self.doc.schema(s.get("items") or {})[1]) == "object"
        ]
        scalars = [p for p, (_, s) in resolved.items() if _scalar(s)]
        objects = [p for p, (_, s) in resolved.items() if _type(s) == "object" and s.get("properties")]
        keyed = any(snake(p) in ("id", f"{snake(name or fallback)}_id") for p in props)  # a record, not a wrapper
        own = [p for p in scalars if snake(p) not in PAGE_FIELDS]  # paging and counts do not make a record
        if len(arrays) == 1 and len(own) + len(objects) <= 3 and len(own) < 3 and not keyed:
            inner = self.record_of(props[arrays[0]], _camel(singular(snake(arrays[0]))), depth + 1)
            if inner:
                return inner[0], inner[1], True
        if len(props) == 1 and objects:
            return self.record_of(props[objects[0]], _camel(snake(objects[0])), depth + 1)
        if len(scalars) >= 1 and (len(scalars) + len(objects)) >= 2 or (name and scalars):
            return name or fallback, schema, False
        return None

    def entity_for(self, schema_name: str, schema: dict[str, Any]) -> _Entity:
        table = self.by_schema.get(schema_name)
        if table:
            return self.entities[table]
        table = plural(snake(schema_name))
        while table in self.entities:
            table += "_records"
        entity = _Entity(
            table=table,
            schema_name=schema_name,
            description=first_paragraph(schema.get("description"), 200)
            or _article(snake(schema_name).replace("_", " ")),
        )
        self.entities[table] = entity
        self.by_schema[schema_name] = table
        self.report.entities[table] = schema_name
        self.add_columns(entity, schema, schema_name)
        return entity

    def add_columns(self, entity: _Entity, schema: dict[str, Any], where: str) -> dict[str, str]:
        """Add the schema's properties as columns (those already there are merged); return
        property name -> column name for the top-level properties."""
        mapping: dict[str, str] = {}
        for prop, node in (schema.get("properties") or {}).items():
            _, sub = self.doc.schema(node)
            if isinstance(node, dict) and node.get("description") and not sub.get("description"):
                sub = {**sub, "description": node["description"]}  # `{$ref: String, description: ...}` (AWS)
            column = safe_name(prop)
            mapping[prop] = column
            if column != snake(prop) and f"{where}.{prop}" not in self.renamed:
                self.renamed.add(f"{where}.{prop}")
                self.report.notes.append(f"`{where}.{prop}` is the column `{column}` (its own name is a keyword)")
            if _scalar(sub):
                self._merge(entity, column, sub, f"{where}.{prop}")
            elif (
                _type(sub) == "object"
                and sub.get("properties")
                and all(_scalar(self.doc.schema(s)[1]) for s in sub["properties"].values())
            ):
                for inner, inner_node in sub["properties"].items():
                    self._merge(
                        entity,
                        f"{column}_{safe_name(inner)}",
                        self.doc.schema(inner_node)[1],
                        f"{where}.{prop}.{inner}",
                    )
            else:
                items = self.doc.schema(sub.get("items") or {})[1] if _type(sub) == "array" else {}
                what = "list" if _type(sub) == "array" and _scalar(items) else "nested data"
                note = {
                    "type": "string",
                    "description": sub.get("description")
                    or (node.get("description") if isinstance(node, dict) else None),
                }
                self._merge(entity, column, note, f"{where}.{prop}", json_text=what)
        return mapping

    def _merge(
        self, entity: _Entity, column: str, schema: dict[str, Any], where: str, json_text: str | None = None
    ) -> None:
        kind, fmt = _column_type(schema)
        enum = [str(v) for v in schema.get("enum") or [] if v is not None] or None
        if kind != "string":
            enum = None
        description = first_paragraph(schema.get("description"), 160)
        if json_text == "list":
            description = (description + " " if description else "") + LIST_TEXT
        elif json_text:
            description = (description + " " if description else "") + "(the API's nested data, as text)"
        existing = entity.columns.get(column)
        if existing is not None:
            if existing.enum and enum:
                existing.enum = sorted(set(existing.enum) | set(enum), key=(existing.enum + enum).index)
            elif existing.enum and not enum:
                existing.enum = None
            if not existing.description and description:
                existing.description = description
            return
        entity.columns[column] = _Column(
            name=column,
            type=kind,
            description=description,
            enum=enum,
            json_text=json_text or None,
            format=fmt,
            example=schema.get("example"),
            minimum=schema.get("minimum"),
            maximum=schema.get("maximum"),
            source=where,
        )

    # ---- operations -> tools -------------------------------------------------------------------

    def operations(self) -> list[tuple[str, str, dict[str, Any], list[dict[str, Any]]]]:
        found = []
        paths = self.doc.data.get("paths") or {}
        if not isinstance(paths, dict):
            raise OpenAPIError(f"{self.doc.source}: `paths` must be a map of path -> path item, found {_kind(paths)}")
        for path, raw in paths.items():
            if not isinstance(raw, dict):
                raise OpenAPIError(
                    f"{self.doc.source}: paths.{path}: a path item must be an object, found {_kind(raw)}"
                )
            _, item = self.doc.deref(raw)
            shared = item.get("parameters") or []
            for method in METHODS:
                if method in item:
                    op = item[method]
                    if not isinstance(op, dict):
                        raise OpenAPIError(
                            f"{self.doc.source}: paths.{path}.{method}: an operation must be an object, found {_kind(op)}"
                        )
                    params: dict[tuple[str, str], dict[str, Any]] = {}
                    for n, node in enumerate([*shared, *(op.get("parameters") or [])]):
                        if not isinstance(node, dict):
                            raise OpenAPIError(
                                f"{self.doc.source}: paths.{path}.{method}.parameters.{n}: a parameter must be an "
                                f"object, found {_kind(node)}"
                            )
                        _, param = self.doc.deref(node)
                        if "name" in param:
                            params[(param["name"], param.get("in", "query"))] = param
                            if param.get("in") == "path":
                                self.path_params.setdefault((path, param["name"]), param)
                    found.append((method, path, op, list(params.values())))
        return found

    def skip(self, method: str, path: str, op: dict[str, Any], reason: str) -> None:
        self.report.skipped.append(
            SkippedOperation(method=method, path=path, operation_id=op.get("operationId"), reason=reason)
        )

    def body(self, op: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None, str]:
        """(content type, the request body schema, why it is unusable or '')."""
        if "requestBody" not in op:
            return None, None, ""
        _, body = self.doc.deref(op["requestBody"])
        content = body.get("content") or {}
        # XML (the AWS query protocol's bodies) carries the same fields as JSON would.
        json_type = next((t for t in content if "json" in t), None) or next((t for t in content if "xml" in t), None)
        if json_type is None:
            kinds = ", ".join(content) or "no content"
            if any(t.startswith(("multipart/", "application/octet-stream", "image/")) for t in content):
                return None, None, f"uploads a file ({kinds}): not a record operation"
            form = next((t for t in content if "form" in t), None)
            if form is None:
                return None, None, f"request body is {kinds}, not JSON"
            json_type = form
        return json_type, (content[json_type] or {}).get("schema") or {}, ""

    def response(self, op: dict[str, Any]) -> dict[str, Any] | None:
        responses = op.get("responses") or {}
        # `default` answers a success only where no 2xx is declared (beside one, it describes the errors).
        codes = sorted(c for c in responses if str(c).startswith("2")) or (
            ["default"] if "default" in responses else []
        )
        for code in codes:
            _, resp = self.doc.deref(responses[code])
            content = resp.get("content") or {}
            json_type = next((t for t in content if "json" in t), None) or next(
                (t for t in content if "xml" in t), None
            )
            if json_type and (content[json_type] or {}).get("schema"):
                return content[json_type]["schema"]
        return None

    def tool_name(self, op: dict[str, Any], method: str, path: str) -> str:
        base = safe_name(str(op.get("operationId") or f"{method}_{path}"))[:60].rstrip("_")
        name, n = base, 2
        while name in self.tool_names:
            name, n = f"{base}_{n}", n + 1
        self.tool_names.add(name)
        return name

    def description(self, op: dict[str, Any], method: str, path: str) -> str:
        summary = first_paragraph(op.get("summary"), 160)
        detail = first_paragraph(op.get("description"), 240)
        if summary and detail and detail.lower().rstrip(".") != summary.lower().rstrip("."):
            text = f"{summary.rstrip('.')}. {detail}"
        else:
            text = summary or detail or f"{method.upper()} {path}"
        return text

    def plan(self) -> None:
        """Two passes: first every operation that names a record type, to learn the entities and
        which collection path holds which; then map each operation to a tool (or skip it)."""
        ops = self.operations()
        if not ops:
            raise OpenAPIError(f"{self.doc.source}: the document has no operations under `paths`")
        shapes: dict[tuple[str, str], tuple[str | None, dict[str, Any], bool] | None] = {}
        rpc: dict[tuple[str, str], str] = {}
        first: dict[str, tuple[str, str]] = {}  # an RPC operation -> the request that names it first
        for n, (method, path, op, params) in enumerate(ops):
            with self.at(method, path):
                if name := rpc_name(path, op, params):
                    rpc[(method, path)] = name
                    if name in first:
                        continue
                    first[name] = (method, path)
                    ops[n] = (method, path, op := _rpc_input(op, params), params)
                    self.learn_rpc(method, path, op, name)
                else:
                    self.learn(method, path, op, shapes)
        self.resolve_nouns()
        self.choose_keys()
        for method, path, op, params in ops:
            with self.at(method, path):
                if (method, path) in rpc and first[rpc[(method, path)]] != (method, path):
                    was = first[rpc[(method, path)]]
                    self.skip(method, path, op, f"the same RPC operation as {was[0].upper()} {was[1]}")
                elif (method, path) in rpc:
                    self.map_rpc(method, path, op, rpc[(method, path)])
                else:
                    self.map_operation(method, path, op, params, shapes[(method, path)])

    @contextmanager
    def at(self, method: str, path: str) -> Iterator[None]:
        """Errors while reading one operation name it: a `$ref` to nothing, or a construct of a shape
        the importer does not read (a string where a schema should be, ...)."""
        where = f"{method.upper()} {path}"
        try:
            yield
        except OpenAPIError as exc:
            raise OpenAPIError(f"{exc} (in {where})") from exc
        except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
            raise OpenAPIError(
                f"{self.doc.source}: {where}: a construct of an unexpected shape ({type(exc).__name__}: {exc}); "
                "check that its parameters, request body, responses and schemas are objects"
            ) from exc

    def learn(
        self,
        method: str,
        path: str,
        op: dict[str, Any],
        shapes: dict[tuple[str, str], tuple[str | None, dict[str, Any], bool] | None],
    ) -> None:
        """First pass, one operation: the record it reads or writes, and the collection that holds it."""
        segments = [s for s in path.strip("/").split("/") if s]
        noun = next((s for s in reversed(segments) if not s.startswith("{")), "record")
        fallback = _camel(singular(snake(noun)))
        record = None
        response = self.response(op)
        if response is not None:
            record = self.record_of(response, fallback)
        if record is None and method in ("post", "put", "patch"):
            _, body, why = self.body(op)
            if body is not None and not why:
                record = self.record_of(body, fallback)
                if record and record[2]:
                    record = None  # a bulk body is not one record
        shapes[(method, path)] = record
        # Many records answer a read (a GET, or a POST that reads: `POST /DescribeSavingsPlans`), never a write.
        one_record = record is not None and not (
            record[2] and method != "get" and not (method == "post" and _reads(op))
        )
        if record and one_record and not self._auth_like(path, op):  # noqa: SIM102 - two reasons, two tests
            if method == "get" or method == "post" and not _ends_in_param(path):
                collection = _collection(path)
                if record[0] and not self._is_action(path, record[0]):
                    self.collections.setdefault(collection, self.entity_for(record[0], record[1]).table)

    def _auth_like(self, path: str, op: dict[str, Any]) -> bool:
        words = snake(f"{path} {op.get('operationId') or ''}").split("_")
        return any(w in AUTH_WORDS or w.rstrip("s") in AUTH_WORDS for w in words)

    def _is_action(self, path: str, schema_name: str) -> bool:
        """`POST /articles/{slug}/favorite` returning the article: an action on the parent, not a
        new record in a child collection."""
        segments = [s for s in path.strip("/").split("/") if s]
        if len(segments) < 3 or segments[-1].startswith("{") or not segments[-2].startswith("{"):
            return False
        parent = "/" + "/".join(segments[:-2])
        parent_table = self.collections.get(parent)
        return parent_table is not None and self.by_schema.get(schema_name) == parent_table

    def map_operation(
        self,
        method: str,
        path: str,
        op: dict[str, Any],
        params: list[dict[str, Any]],
        record: tuple[str | None, dict[str, Any], bool] | None,
    ) -> None:
        if op.get("deprecated"):
            return self.skip(method, path, op, "deprecated")
        if self._auth_like(path, op):
            return self.skip(method, path, op, "an authentication flow: our servers act for the episode's principal")
        action = _record_action(path, method)
        parent = self.collections.get(_collection(action[0])) if action is not None else None
        if action is not None and parent is not None:
            key_name = action[0].rsplit("/", 1)[-1][1:-1]
            described: dict[str, Any] = next(
                (p for p in params if p.get("name") == key_name and p.get("in") == "path"), {}
            )
            key_desc = first_paragraph(described.get("description"))
            if state_change(action[1], self.entities[parent], method == "delete"):
                return self.action_tool(action[1], method, path, op, self.entities[parent], key_name, key_desc)
            skipped = len(self.report.skipped)
            self.map_path_operation(method, path, op, params, record)
            if len(self.report.skipped) > skipped:  # not a record operation either: the flag its name implies
                self.report.skipped.pop()
                return self.action_tool(action[1], method, path, op, self.entities[parent], key_name, key_desc)
            return None
        return self.map_path_operation(method, path, op, params, record)

    def map_path_operation(
        self,
        method: str,
        path: str,
        op: dict[str, Any],
        params: list[dict[str, Any]],
        record: tuple[str | None, dict[str, Any], bool] | None,
    ) -> None:
        """An operation on a resource path: its method and path say the effect (see the module's doc)."""
        _, body, why = self.body(op)
        if why:
            return self.skip(method, path, op, why)
        if body is not None and _type(self.doc.schema(body)[1]) == "array":
            return self.skip(method, path, op, "takes a list of records at once (bulk input): not mapped")
        keyed = _ends_in_param(path)
        table = self.collections.get(_collection(path)) if keyed or method in ("post", "delete") else None
        if record and record[0] and record[0] in self.by_schema and not (keyed and method == "get" and table):
            table = self.by_schema[record[0]] if not table else table
        if record and record[0] and self._is_action(path, record[0]):
            return self.skip(
                method,
                path,
                op,
                f"an action on one {self.by_schema[record[0]]} row (`{path.rsplit('/', 1)[-1]}`): its effect is not in the description",
            )
        if method == "post" and not keyed and _reads(op):  # a read sent as a POST (`POST /charitysearch`)
            inputs = [p for p in params if p.get("in") in ("query", "path")] + self.rpc_fields(body)
            if table is not None and record is not None and record[2]:
                return self.search_tool(method, path, op, inputs, self.entities[table])
            if self.lookup_tool(method, path, op, inputs):
                return None
        if table is None and method == "get" and self.lookup_tool(method, path, op, params):
            return None
        if table is None:
            if record is None:
                shape = self.response(op)
                what = _type(self.doc.schema(shape)[1]) if shape is not None else None
                reason = {
                    None: "returns no JSON record",
                    "object": "returns a map or a message, not a record",
                    "array": "returns a list of plain values, not records",
                }.get(what, f"returns a {what}, not a record")
                return self.skip(method, path, op, reason)
            return self.skip(method, path, op, "its record type is not a resource of any collection path")
        entity = self.entities[table]
        if method == "get":
            if record is None:
                if self.lookup_tool(method, path, op, params):
                    return None
                return self.skip(method, path, op, "returns no JSON record")
            if record[2]:
                return self.search_tool(method, path, op, params, entity)
            if not keyed:
                if self.lookup_tool(method, path, op, params):
                    return None
                return self.skip(
                    method, path, op, "reads one record with no key (a singleton or the signed-in user): no row to name"
                )
            return self.keyed_tool("get", method, path, op, params, entity, body)
        if method == "delete":
            if not keyed:
                return self.skip(method, path, op, "deletes with no key in the path: not mapped")
            return self.keyed_tool("delete", method, path, op, params, entity, body)
        if method == "post" and not keyed:
            return self.create_tool(method, path, op, params, entity, body)
        # PUT / PATCH, and POST to an item: an update of the row the key names (or the body's key).
        return self.keyed_tool("update", method, path, op, params, entity, body)

    # ---- RPC-style operations -------------------------------------------------------------------

    def learn_rpc(self, method: str, path: str, op: dict[str, Any], name: str) -> None:
        """First pass, one RPC operation (`CreateNamedQuery`): the record type its noun names, from the
        schema of that name, else the record its response carries, else (a create) the record its input is;
        and the input fields a read or write names one row by (key candidates)."""
        verb, noun = split_operation(name)
        kind = RPC_VERBS.get(verb) or ("action" if verb in ACTION_VERBS else None)
        if not noun or kind in (None, "tag"):
            return
        key = snake(singular(noun))
        schemas = (self.doc.data.get("components") or {}).get("schemas") or {}
        found: list[tuple[int, str, dict[str, Any]]] = []
        for candidate in dict.fromkeys((noun, singular(noun))):
            if isinstance(schemas.get(candidate), dict):  # the record itself, even one holding a list (`Tags`)
                _, own = self.doc.schema({"$ref": f"#/components/schemas/{candidate}"})
                properties = own.get("properties") or {}
                if _type(own) == "object" and any(_scalar(self.doc.schema(n)[1]) for n in properties.values()):
                    found.append((0, candidate, own))
        response = self.response(op)
        if kind in ("create", "get", "search", "update") and response is not None:
            record = self.record_of(response, noun)
            if record and record[0] and not _envelope_name(record[0], name):
                found.append((1 if kind in ("create", "get") else 2, record[0], record[1]))
        _, body, why = self.body(op)
        if kind == "create" and body is not None and not why:
            record = self.record_of(body, noun)
            if record and not record[2]:
                found.append((3, noun, record[1]))
        self.noun_candidates.setdefault(key, []).extend(found)
        if kind in ("get", "delete", "update", "action") and body is not None and not why:
            self.noun_keys.setdefault(key, []).extend(safe_name(f["name"]) for f in _key_fields(self.rpc_fields(body)))

    def resolve_nouns(self) -> None:
        """Each RPC noun's table: its own schema first, then a create's or get's response, then a list's,
        then a create's input; with the key candidates its operations name rows by."""
        for key, found in self.noun_candidates.items():
            if not found:
                continue
            _, schema_name, schema = min(found, key=lambda f: f[0])
            table = self.entity_for(schema_name, schema).table
            self.nouns[key] = table
            keys = self.rpc_keys.setdefault(table, [])
            keys += [k for k in self.noun_keys.get(key, []) if k not in keys]

    def rpc_fields(self, body: dict[str, Any] | None) -> list[dict[str, Any]]:
        """An RPC input's top-level scalar fields, as parameters (the filters of a read, the key of a write)."""
        schema = self.doc.schema(body)[1] if body is not None else {}
        required = set(schema.get("required") or [])
        fields = []
        for prop, node in (schema.get("properties") or {}).items():
            sub = self.doc.schema(node)[1]
            if _scalar(sub):
                described = node.get("description") if isinstance(node, dict) else None
                fields.append(
                    {
                        "name": prop,
                        "in": "query",
                        "schema": sub,
                        "description": described or sub.get("description"),
                        "required": prop in required,
                    }
                )
        return fields

    def map_rpc(self, method: str, path: str, op: dict[str, Any], name: str) -> None:
        """An RPC operation by its name and shapes: `CreateX` creates an X, `DescribeX`/`GetX` reads one by
        its key (or lists, when it answers many), `ListXs` searches, `UpdateX`/`ModifyX` updates,
        `DeleteX` deletes, and a state change (`StopX`, `CancelX`) updates X's status."""
        op = {**op, "operationId": op.get("operationId") or name}
        verb, noun = split_operation(name)
        kind = RPC_VERBS.get(verb) or ("action" if verb in ACTION_VERBS else None)
        if op.get("deprecated"):
            return self.skip(method, path, op, "deprecated")
        if self._auth_like(path, op):
            return self.skip(method, path, op, "an authentication flow: our servers act for the episode's principal")
        table = next((self.nouns[n] for n in _noun_keys(noun) if n in self.nouns), None)
        if (kind is None and verb in COMPUTE_VERBS) or (kind in ("get", "search") and table is None):
            # `GetSessionToken`, `DetectSentiment`: an answer computed from its input, no stored record.
            _, body, why = self.body(op)
            if not why and self.lookup_tool(method, path, op, self.rpc_fields(body)):
                return None
        if kind is None:
            return self.skip(
                method,
                path,
                op,
                f"the RPC operation `{name}`: its verb `{verb}` is no record effect (create, get, list, update, "
                "delete, a state change or a computation)",
            )
        if kind == "tag":
            return self.skip(method, path, op, f"`{name}` tags a resource: tags are not modelled as records")
        if table is None:
            return self.skip(method, path, op, f"`{name}` names `{noun or name}`, which is no record type here")
        _, body, why = self.body(op)
        if why:
            return self.skip(method, path, op, why)
        entity = self.entities[table]
        fields = self.rpc_fields(body)
        if kind == "create":
            before = len(self.tools)
            self.create_tool(method, path, op, [], entity, body)
            given = next((f for f in fields if safe_name(f["name"]) == entity.primary_key), None)
            if len(self.tools) > before and given is not None:  # a key the caller names (`ClusterIdentifier`)
                column = entity.columns[entity.primary_key]
                param = self._param_from_column(column, first_paragraph(given["description"]), given["required"])
                self.tools[-1]["params"] = {entity.primary_key: param, **self.tools[-1]["params"]}
            return None
        response = self.response(op)
        record = self.record_of(response, noun) if response is not None else None
        if kind == "search" or (kind == "get" and record is not None and record[2]):
            return self.search_tool(method, path, op, fields, entity)
        keyed = any(safe_name(f["name"]) == entity.primary_key for f in fields)
        if kind == "action" and not keyed and verb in STARTS and body is not None:  # `StartQueryExecution`: a new run
            return self.create_tool(method, path, op, [], entity, body)
        if not keyed:
            return self.skip(
                method, path, op, f"`{name}` names no `{entity.primary_key}` of the {table} row it acts on"
            )
        if kind == "action":
            return self.action_tool(verb, method, path, op, entity, entity.primary_key, "")
        return self.keyed_tool(kind, method, path, op, [], entity, body)

    def action_tool(
        self, verb: str, method: str, path: str, op: dict[str, Any], entity: _Entity, key_name: str, key_desc: str
    ) -> None:
        """An action on one record (`POST /orders/{id}:cancel`, `/favorite`, `StopCluster`): an update that
        sets the state its verb implies: the status enum's past participle (`cancelled`), else a flag
        column (`favorited`, `is_archived`: true, or false for `unfavorite` and DELETE); else a skip."""
        change = state_change(verb, entity, negated=method == "delete") or self.add_flag(verb, entity, method)
        if change is None:
            return self.skip(
                method,
                path,
                op,
                f"an action on one {entity.table} row (`{verb}`): no status value or flag column says what it "
                "changes, and the verb names no lasting state",
            )
        column, value = change
        _, body, why = self.body(op)
        changes = {} if why else self.body_params(entity, body, for_update=True)  # what it also records (a reason)
        key_column = self.key_column(entity, key_name)
        key = safe_name(key_name)
        if not key_desc or "XXX" in key_desc:
            key_desc = f"The {singular(entity.table).replace('_', ' ')}'s {key_column.replace('_', ' ')}"
        key_param = self._param_from_column(entity.columns[key_column], key_desc, required=True)
        key_param.pop("enum", None)
        if key != key_column:
            key_param["column"] = key_column
        tool = {
            "name": self.tool_name(op, method, path),
            "description": self.description(op, method, path),
            "effect": "update",
            "entity": entity.table,
            "key": key,
            "params": {key: key_param, **{p: v for p, v in changes.items() if p not in (key, key_column, column)}},
            "set": {column: value},
        }
        self._add(tool, method, path, op, entity)
        self.report.notes.append(f"{tool['name']}: an action; sets `{entity.table}.{column}` to {value!r}")
        return None

    def add_flag(self, verb: str, entity: _Entity, method: str) -> tuple[str, bool] | None:
        """The flag an action's name implies where the record's schema says no state (`cancel` -> `cancelled`,
        `disable` -> `enabled` false): a boolean column added to the table, noted in the report."""
        negated = method == "delete"
        if verb.startswith("un") and verb[2:] in ACTION_VERBS:
            verb, negated = verb[2:], not negated
        if verb in OPPOSITES:
            verb, negated = OPPOSITES[verb], not negated
        if verb in EVENT_VERBS:
            return None
        column = safe_name(past_participle(verb))
        if column in entity.columns and entity.columns[column].type != "boolean":  # `published`: when, not whether
            column = f"is_{column}"
        if column in entity.columns and entity.columns[column].type != "boolean":
            return None
        if column not in entity.columns:
            entity.columns[column] = _Column(
                name=column,
                type="boolean",
                description=f"Whether the {singular(entity.table).replace('_', ' ')} is {column.replace('_', ' ')}",
                source=f"added: the action `{verb}` (the schema names no state it changes)",
            )
            self.report.notes.append(f"{entity.table}.{column}: a flag added for the action `{verb}`")
        return column, not negated

    # ---- tool builders -------------------------------------------------------------------------

    def lookup_tool(self, method: str, path: str, op: dict[str, Any], params: list[dict[str, Any]]) -> bool:
        """A computed read (a weather or geocoding lookup, a language detector, a price quote): a GET that
        answers its inputs with fields of no stored record. It becomes a read over a seeded lookup table,
        one row per input it knows (input columns + answer columns), so the same input always gets the same
        answer; a read that takes no input (a singleton, `GET /account`) has one row, its answer. A read whose
        document gives no record schema answers in one `answer` column. Returns False (nothing mapped) when it
        answers a list of records (a search of their table) or no field."""
        inputs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        for param in params:
            if param.get("in") not in ("query", "path") or not isinstance(param.get("name"), str):
                continue
            schema = self.doc.schema(param.get("schema") or {})[1]
            column = safe_name(param["name"])
            ignored = PAGINATION | NOT_INPUTS
            if _scalar(schema) and column not in ignored and snake(param["name"]) not in ignored:
                inputs[column] = (param, schema)
        response = self.response(op)
        answer = self.doc.schema(response)[1] if response is not None else {}
        opaque = _type(answer) != "object" or not answer.get("properties")
        if opaque:
            items = self.doc.schema(answer.get("items") or {})[1] if _type(answer) == "array" else {}
            if _type(items) == "object" and items.get("properties"):
                return False  # a list of records: a search of their table, not one answer per input
            answer = self._opaque_answer(op, answer, set(inputs))
        name = self.tool_name(op, method, path)
        table = f"{name}_answers"
        while table in self.entities:
            table += "_records"
        entity = _Entity(
            table=table,
            schema_name=_camel(table),
            description=f"The answers {name} knows: one row per input" if inputs else f"The answer {name} gives",
            primary_key="lookup_id",
            id_format="lkp_{:04d}",
            added_key=True,
            seed_rows=SEED_ROWS if inputs else 1,  # no input: always the same answer
        )
        entity.columns["lookup_id"] = _Column(
            name="lookup_id", type="string", description="Internal lookup row id", source="added: a lookup table"
        )
        for column, (param, schema) in inputs.items():
            entity.columns[column] = _Column(
                name=column,
                type=_column_type(schema)[0],
                description=first_paragraph(param.get("description")) or column.replace("_", " "),
                enum=[str(v) for v in schema["enum"]]
                if schema.get("enum") and _column_type(schema)[0] == "string"
                else None,
                source=f"parameter {param['name']}",
            )
        self.add_columns(entity, answer, entity.schema_name)
        if len(entity.columns) <= len(inputs) + 1:
            self.tool_names.discard(name)
            return False
        self.entities[table] = entity
        self.report.entities[table] = f"the answer of {op.get('operationId') or path} (a computed read)"
        tool_params = {
            column: {
                **self._param_from_column(entity.columns[column], first_paragraph(param.get("description"))),
                **({"required": True} if param.get("required") or param.get("in") == "path" else {}),
            }
            for column, (param, _) in inputs.items()
        }
        tool = {
            "name": name,
            "description": self.description(op, method, path),
            "effect": "search",
            "entity": table,
            "limit": 10,
            "params": tool_params,
        }
        self._add(tool, method, path, op, entity)
        self.report.notes.append(
            f"{name}: a computed read, answered from the seeded lookup table `{table}`"
            + (" (the document gives no schema for its answer: one text column holds it)" if opaque else "")
        )
        return True

    def _opaque_answer(self, op: dict[str, Any], shape: dict[str, Any], taken: set[str]) -> dict[str, Any]:
        """The answer of a read whose document gives no record schema (none at all, a string, a free-form
        map, a list of plain values): one `answer` column of its type (text when unknown), described by
        the response's own description where it says more than "OK"."""
        described = ""
        for code, resp in (op.get("responses") or {}).items():
            if str(code).startswith("2"):
                described = first_paragraph(self.doc.deref(resp)[1].get("description"), 120)
                break
        if re.fullmatch(
            r"(?i)(\d{3} )?(ok|success(ful)?( response| operation| request)?|no response was specified)?\.?", described
        ):
            described = ""
        kind = _type(shape)
        column: dict[str, Any] = {"type": "string"}
        if kind == "array" and _scalar(self.doc.schema(shape.get("items") or {})[1]):
            column = {"type": "array", "items": shape.get("items")}
        elif _scalar(shape):
            column = {k: v for k, v in shape.items() if k in ("type", "format", "enum")}
        what = {
            "object": "the API's answer, a map kept as text",
            "array": "the API's answer, a list",
            None: "the API's answer (the document gives no schema for it)",
        }.get(kind, "the API's answer")
        column["description"] = (f"{described.rstrip('.')}: " if described else "") + what
        name = "answer" if "answer" not in taken else "answer_text"
        return {"type": "object", "properties": {name: column}}

    def _param_from_column(
        self, column: _Column, description: str | None, required: bool = False, search: bool = False
    ) -> dict[str, Any]:
        """A tool param filling or filtering `column`. A list column (kept as comma-joined text) takes an
        array when written, so no param is a comma-separated string; a search matches one item's text."""
        text = description or column.description or column.name.replace("_", " ")
        if LIST_AS_TEXT.search(text):
            # The document says "comma-separated", but the column holds that text whole: say only what it is.
            text = " ".join(LIST_AS_TEXT.sub("", text).split()).lstrip("-,; ") or column.name.replace("_", " ")
        param: dict[str, Any] = {"type": column.type, "description": text}
        if column.json_text == "list":
            text = text.replace(LIST_TEXT, "").strip()
            param["description"] = f"{text} (any list item containing this text)" if search else text
            if not search:
                param["items"] = True
        if required:
            param["required"] = True
        if column.enum:
            param["enum"] = list(column.enum)
        return param

    def _parent_params(self, path: str, entity: _Entity, params: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Path parameters of a parent collection (`/projects/{projectId}/tasks`): each names the
        parent row, so it becomes the child's foreign-key column, added if the schema lacks it."""
        found: dict[str, dict[str, Any]] = {}
        segments = [s for s in path.strip("/").split("/") if s]
        described = {p["name"]: p for p in params if p.get("in") == "path"}
        for i, seg in enumerate(segments):
            if not (seg.startswith("{") and seg.endswith("}")):
                continue
            if i == len(segments) - 1:
                continue  # the row's own key
            pname = seg[1:-1]
            parent_path = "/" + "/".join(segments[:i])
            parent_table = self.collections.get(parent_path)
            if parent_table is None or parent_table == entity.table:
                continue
            parent = self.entities[parent_table]
            parent_key = self.key_column(parent, pname)
            column = safe_name(pname)
            if (
                column not in entity.columns
                or column == entity.primary_key
                or column in self.item_keys.get(entity.table, [])
            ):
                column = (
                    f"{singular(parent.table)}_{parent_key}"
                    if not parent_key.startswith(singular(parent.table))
                    else parent_key
                )
                column = safe_name(column)
            ptype = parent.columns[parent_key].type
            desc = first_paragraph((described.get(pname) or {}).get("description"))
            if not desc or "XXX" in desc:
                desc = f"The {singular(parent.table).replace('_', ' ')}'s {parent_key.replace('_', ' ')}"
            if column in entity.columns and entity.columns[column].type != ptype:
                # The record's own field of that name is not of the parent key's type: a filter, not a reference.
                found[column] = {"type": entity.columns[column].type, "description": desc, "required": True}
                continue
            if column not in entity.columns:
                entity.columns[column] = _Column(
                    name=column,
                    type=ptype,
                    description=f"The {singular(parent.table).replace('_', ' ')} it belongs to",
                    source=f"path {path}",
                )
            entity.columns[column].ref = f"{parent.table}.{parent_key}"
            entity.parents[column] = parent.table
            found[column] = {"type": ptype, "description": desc, "required": True}
        return found

    def key_column(self, entity: _Entity, pname: str) -> str:
        column = safe_name(pname)
        if column in entity.columns:
            return column
        return entity.primary_key

    def search_tool(
        self, method: str, path: str, op: dict[str, Any], params: list[dict[str, Any]], entity: _Entity
    ) -> None:
        tool_params = self._parent_params(path, entity, params)
        limit = 25
        dropped = []
        for param in params:
            where, pname = param.get("in", "query"), param["name"]
            if where != "query":
                continue
            schema = self.doc.schema(param.get("schema") or {})[1]
            column = safe_name(pname)
            if column in PAGINATION or snake(pname) in PAGINATION:
                size = schema.get("maximum") or schema.get("default")
                if snake(pname) in ("limit", "page_size", "pagesize", "per_page", "size", "top") and isinstance(
                    size, int | float
                ):
                    limit = max(1, min(200, int(size)))
                continue
            target = (
                column
                if column in entity.columns
                else next(
                    (c for c in entity.columns if c.startswith(f"{column}_") and entity.columns[c].type == "string"),
                    None,
                )
            )
            if target is None or target in tool_params:
                dropped.append(pname)
                continue
            col = entity.columns[target]
            desc = first_paragraph(param.get("description")) or col.description
            tool_param = self._param_from_column(col, desc, search=True)
            if col.type == "string" and not col.enum and (col.json_text or _user_known(target, col, entity)):
                tool_param["match"] = "contains"
            if target != column:
                tool_param["column"] = target
            tool_params[column] = tool_param
        if dropped:
            self.report.notes.append(
                f"{op.get('operationId') or path}: query parameters {dropped} name no column and were dropped"
            )
        tool = {
            "name": self.tool_name(op, method, path),
            "description": self.description(op, method, path),
            "effect": "search",
            "entity": entity.table,
            "limit": limit,
            "params": tool_params,
        }
        self._add(tool, method, path, op, entity)

    def keyed_tool(
        self,
        effect: str,
        method: str,
        path: str,
        op: dict[str, Any],
        params: list[dict[str, Any]],
        entity: _Entity,
        body: dict[str, Any] | None,
    ) -> None:
        segments = [s for s in path.strip("/").split("/") if s]
        key_desc = ""
        if _ends_in_param(path):
            key_name = segments[-1][1:-1]
            described = next((p for p in params if p["name"] == key_name and p.get("in") == "path"), {})
            key_desc = first_paragraph(described.get("description"))
        else:
            key_name = entity.primary_key  # PUT /pet with the pet (its id) in the body
            if body is None:
                return self.skip(method, path, op, "changes a record with no key in the path or body: not mapped")
        column = self.key_column(entity, key_name)
        key = safe_name(key_name)
        if not key_desc or "XXX" in key_desc:
            key_desc = f"The {singular(entity.table).replace('_', ' ')}'s {column.replace('_', ' ')}"
        key_param = self._param_from_column(entity.columns[column], key_desc, required=True)
        key_param.pop("enum", None)
        if key != column:
            key_param["column"] = column
        tool_params: dict[str, dict[str, Any]] = {key: key_param}
        if effect == "update":
            changes = self.body_params(entity, body, for_update=True)
            for param in params:
                if param.get("in") == "query" and safe_name(param["name"]) in entity.columns:
                    col = entity.columns[safe_name(param["name"])]
                    changes.setdefault(
                        col.name, self._param_from_column(col, first_paragraph(param.get("description")))
                    )
            changes.pop(key, None)
            changes.pop(column, None)
            changes.pop(entity.primary_key, None)
            if not changes:
                return self.skip(
                    method,
                    path,
                    op,
                    "changes a record but names no field it changes: its effect is not in the description",
                )
            tool_params.update(changes)
        tool = {
            "name": self.tool_name(op, method, path),
            "description": self.description(op, method, path),
            "effect": effect,
            "entity": entity.table,
            "key": key,
            "params": tool_params,
        }
        self._add(tool, method, path, op, entity)

    def body_params(self, entity: _Entity, body: dict[str, Any] | None, for_update: bool) -> dict[str, dict[str, Any]]:
        """Body properties as params (added as columns where the record schema lacks them); the
        record's own key and read-only properties are left out."""
        if body is None:
            return {}
        record = self.record_of(body, entity.schema_name)
        if record is None:  # a body of one field (`{nights}`) is still the fields a write sets
            schema = self.doc.schema(body)[1]
            if _type(schema) != "object" or not schema.get("properties"):
                return {}
            record = (None, schema, False)
        _, schema, _ = record
        required = set(schema.get("required") or [])
        before = set(entity.columns)
        mapping = self.add_columns(entity, schema, f"{record[0] or 'body'}")
        params: dict[str, dict[str, Any]] = {}
        for prop, column in mapping.items():
            node = (schema.get("properties") or {})[prop]
            sub = self.doc.schema(node)[1]
            if sub.get("readOnly") or column == entity.primary_key:
                continue
            columns = [
                c for c in entity.columns if c == column or c.startswith(f"{column}_") and c not in before | {column}
            ]
            if column not in entity.columns:
                columns = [c for c in entity.columns if c.startswith(f"{column}_")]
            for name in columns:
                col = entity.columns[name]
                params[name] = self._param_from_column(
                    col, col.description, required=not for_update and prop in required and name == column
                )
        return params

    def create_tool(
        self,
        method: str,
        path: str,
        op: dict[str, Any],
        params: list[dict[str, Any]],
        entity: _Entity,
        body: dict[str, Any] | None,
    ) -> None:
        tool_params = self._parent_params(path, entity, params)
        tool_params.update(
            {k: v for k, v in self.body_params(entity, body, for_update=False).items() if k not in tool_params}
        )
        for param in params:
            if param.get("in") == "query" and safe_name(param["name"]) in entity.columns:
                col = entity.columns[safe_name(param["name"])]
                tool_params.setdefault(
                    col.name,
                    self._param_from_column(
                        col, first_paragraph(param.get("description")), bool(param.get("required"))
                    ),
                )
        if not tool_params:
            return self.skip(method, path, op, "creates a record from nothing it describes (no body, no parameters)")
        tool = {
            "name": self.tool_name(op, method, path),
            "description": self.description(op, method, path),
            "effect": "create",
            "entity": entity.table,
            "params": tool_params,
        }
        self._add(tool, method, path, op, entity)

    def _add(self, tool: dict[str, Any], method: str, path: str, op: dict[str, Any], entity: _Entity) -> None:
        if "id" in tool["params"] and tool.get("key") != "id" and tool["effect"] != "search":
            # The generated write binds the row's key as `:id`: a param of that name (a record's own `id` field
            # beside another key) would be overwritten by it, so it takes another name.
            params = tool["params"]
            tool["params"] = {
                ("id_value" if p == "id" else p): ({**v, "column": v.get("column", "id")} if p == "id" else v)
                for p, v in params.items()
            }
        self.tools.append(tool)
        self.asked[tool["name"]] = str(op.get("summary") or op.get("description") or "")
        self.report.tools.append(
            MappedOperation(
                method=method,
                path=path,
                operation_id=op.get("operationId"),
                tool=tool["name"],
                effect=tool["effect"],
                entity=entity.table,
            )
        )

    # ---- keys, refs, seed -----------------------------------------------------------------------

    def choose_keys(self) -> None:
        """Each entity's primary key: `id`, else `<singular>_id`, else the column a path names a row
        by, else a synthetic `id`; and its id format."""
        path_keys = self.item_keys
        path_types: dict[str, dict[str, str]] = {}  # table -> path key -> its type (integer or string)
        for path, table in self.collections.items():
            for item_path in self.doc.data.get("paths") or {}:
                if _collection(item_path) == path and _ends_in_param(item_path):
                    pname = item_path.rstrip("/").rsplit("/", 1)[-1][1:-1]
                    path_keys.setdefault(table, []).append(safe_name(pname))
                    schema = self.doc.schema((self.path_params.get((item_path, pname)) or {}).get("schema") or {})[1]
                    kind = "integer" if _type(schema) == "integer" else "string"
                    path_types.setdefault(table, {}).setdefault(safe_name(pname), kind)
        for table, entity in self.entities.items():
            one = singular(table)
            last = one.rsplit("_", 1)[-1]
            candidates = [
                "id",
                f"{one}_id",
                f"{snake(entity.schema_name)}_id",
                *path_keys.get(table, []),
                *(k for k in self.rpc_keys.get(table, []) if k in entity.columns and not entity.columns[k].enum),
                f"{last}_id",
            ]
            key = next(
                (
                    c
                    for c in candidates
                    if c in entity.columns
                    and entity.columns[c].type in ("string", "integer")
                    and not entity.columns[c].json_text
                ),
                None,
            )
            named = next((k for k in path_keys.get(table, []) if k not in entity.columns), None)
            if key is None and named is not None:  # `/characters/{character_id}`: the path names a row by it
                key = named
                entity.columns = {
                    key: _Column(
                        name=key,
                        type=path_types[table][key],
                        description=f"The {one.replace('_', ' ')}'s {key.replace('_', ' ')}",
                        source="added: the key its item path names a row by",
                    ),
                    **entity.columns,
                }
                entity.added_key = True
            elif key is None:
                key = "id" if "id" not in entity.columns else f"{one}_key"
                entity.columns = {
                    key: _Column(
                        name=key,
                        type="string",
                        description=f"Internal {one.replace('_', ' ')} id",
                        source="added: the record has no key",
                    ),
                    **entity.columns,
                }
                entity.added_key = True
            else:
                entity.columns = {key: entity.columns[key], **{k: v for k, v in entity.columns.items() if k != key}}
            entity.primary_key = key
            column = entity.columns[key]
            column.enum = None
            if column.type == "integer":
                entity.id_format = "{:d}"
            elif column.format == "uuid" or _looks_uuid(column.example):
                entity.id_format = ID_FORMAT_UUID
            else:
                prefix = re.sub(r"[^a-z]", "", one)[:4] or "rec"
                entity.id_format = f"{prefix}_{{:04d}}"

    def link_refs(self) -> None:
        """A column named like another entity's key (`pet_id`, `task_id`, `user_id`) refers to it."""
        # A key named after its table (`cluster_identifier` of clusters), not a name every record has (`name`,
        # `web_id`): a column of that name elsewhere refers to that table.
        keys = {
            e.primary_key: t
            for t, e in self.entities.items()
            if e.primary_key != "id" and singular(t).rsplit("_", 1)[-1] in e.primary_key.split("_")
        }
        by_singular = {singular(t): t for t in self.entities}
        own_keys = {(t["entity"], t["params"][t["key"]].get("column", t["key"])) for t in self.tools if t.get("key")}
        for table, entity in self.entities.items():
            for name, column in entity.columns.items():
                if column.ref or name == entity.primary_key or column.json_text or column.enum:
                    continue  # an enum's values are its own, not another table's keys
                if (table, name) in own_keys:
                    continue  # the table's own tools name its rows by it: its key, not another table's
                target = None
                if name in keys and keys[name] != table:
                    target = keys[name]
                elif name.endswith("_id") and by_singular.get(name[:-3]) not in (None, table):
                    target = by_singular[name[:-3]]
                if target is None:
                    continue
                pk = self.entities[target].columns[self.entities[target].primary_key]
                if pk.type == column.type:
                    column.ref = f"{target}.{pk.name}"

    def seed(self, rng: random.Random, now: datetime) -> dict[str, list[dict[str, Any]]]:
        rows: dict[str, list[dict[str, Any]]] = {}
        order = _topological(self.entities)
        people = fakedata.unique_people(rng, SEED_ROWS * max(1, len(self.entities)))
        for t_index, table in enumerate(order):
            entity = self.entities[table]
            table_rows = []
            for n in range(entity.seed_rows):
                person = people[(t_index * SEED_ROWS + n) % len(people)]
                row: dict[str, Any] = {}
                for name, column in entity.columns.items():
                    if name == entity.primary_key:
                        row[name] = n + 1 if column.type == "integer" else entity.id_format.format(n + 1)
                    elif column.ref:
                        target_table, _, target_column = column.ref.partition(".")
                        targets = rows.get(target_table) or []
                        # Only the first half of the parents have children, so deleting the
                        # others is not refused by the foreign key.
                        half = max(1, (len(targets) + 1) // 2)
                        row[name] = targets[n % half][target_column] if targets else None
                    else:
                        row[name] = _value(column, n, rng, now, person, table)
                table_rows.append(row)
            rows[table] = table_rows
        return rows

    # ---- expectations ------------------------------------------------------------------------------

    def _fresh(self, tool: dict[str, Any], pname: str, seed: dict[str, list[dict[str, Any]]], avoid: Any = None) -> Any:
        """A value for a write's param: an existing key for a foreign key, else a new value of its type
        (never a copy of a seed value, so unique columns stay unique)."""
        param = tool["params"][pname]
        entity = self.entities[tool["entity"]]
        column = entity.columns.get(param.get("column", pname))
        if column is not None and column.ref:
            target, _, target_column = column.ref.partition(".")
            values = [row[target_column] for row in seed.get(target, []) if row.get(target_column) is not None]
            return next((v for v in values if v != avoid), values[0] if values else None)
        if param.get("enum"):
            return next((v for v in param["enum"] if v != avoid), param["enum"][0])
        if param.get("items"):  # a list column: one new item
            return [self._fresh({**tool, "params": {pname: {**param, "items": False}}}, pname, seed, avoid)]
        return {
            "string": f"New {pname.replace('_', ' ')}",
            "integer": 7,
            "number": 12.5,
            "boolean": avoid is not True,
            "date": "2026-05-04",
            "datetime": "2026-05-04T10:00:00Z",
        }[param["type"]]

    def expectations(self, tool: dict[str, Any], seed: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """What each imported write must do, as examples with expectations: a create adds one row, an
        update sets the column it names on that row, a delete removes it (an unreferenced row), and an
        update given nothing to change is refused. Reads need none: the contract checks cover them."""
        table, effect = tool["entity"], tool["effect"]
        entity = self.entities[table]
        rows = seed.get(table) or []
        params = tool["params"]
        if effect == "create":
            args = {p: self._fresh(tool, p, seed) for p, spec in params.items() if spec.get("required")}
            if not args:  # at least one value, so the call says something
                first = next(iter(params))
                args[first] = self._fresh(tool, first, seed)
            shown = {
                p: v
                for p, v in args.items()
                if params[p]["type"] == "string" and not params[p].get("column") and not params[p].get("items")
            }
            expect: dict[str, Any] = {"rows": {table: {"added": 1}}}
            if shown:
                expect["result"] = shown
            return [{"args": args, "expect": expect}]
        if effect not in ("update", "delete") or not rows:
            return []
        key = tool["key"]
        key_column = params[key].get("column", key)
        row = rows[-1]  # the last rows have no children: deleting one is not refused by a foreign key
        if row.get(key_column) is None or sum(r.get(key_column) == row[key_column] for r in rows) != 1:
            return []
        where = f"{table}[{row[entity.primary_key]}]"
        if effect == "delete":
            return [
                {"args": {key: row[key_column]}, "expect": {"state": {where: None}, "rows": {table: {"removed": 1}}}}
            ]
        changes = [p for p in params if p != key]
        if not changes and tool.get("set"):  # an action: its fixed state lands on a row not already in it
            column, value = next(iter(tool["set"].items()))
            other = next((r for r in reversed(rows) if r.get(column) != value), None)
            if other is None or other.get(key_column) is None:
                return []
            where = f"{table}[{other[entity.primary_key]}]"
            expect = {"state": {f"{where}.{column}": value}, "rows": {table: {"updated": 1}}}
            return [{"args": {key: other[key_column]}, "expect": expect}]
        if not changes:
            return []
        # The first change whose new value differs from the row's; where none can (an enum of one value), the
        # call still runs under an expectation of the state, without counting the row as changed.
        candidates = []
        for target in changes:
            column = params[target].get("column", target)
            value = self._fresh(tool, target, seed, avoid=row.get(column))
            stored = ", ".join(map(str, value)) if isinstance(value, list) else value  # a list column keeps joined text
            candidates.append((stored == row.get(column), target, column, value, stored))
        same, target, column, value, stored = min(candidates, key=lambda c: c[0])
        state = {f"{where}.{column}": stored, **{f"{where}.{c}": v for c, v in (tool.get("set") or {}).items()}}
        expect = {"state": state} if same else {"state": state, "rows": {table: {"updated": 1}}}
        examples = [{"args": {key: row[key_column], target: value}, "expect": expect}]
        if all(not params[p].get("required") for p in changes) and not tool.get("set"):
            examples.append({"args": {key: row[key_column]}, "expect": {"error": "Nothing to change"}})
        return examples

    # ---- the spec ----------------------------------------------------------------------------------

    def spec(self, title: str, description: str, domain: str, seed_number: int) -> dict[str, Any]:
        now = datetime.fromisoformat(FARM_NOW)
        used = {t["entity"] for t in self.tools}
        # Keep the entities a tool uses and the ones their foreign keys need.
        keep = set(used)
        changed = True
        while changed:
            changed = False
            for table in list(keep):
                for column in self.entities[table].columns.values():
                    if column.ref and (target := column.ref.split(".")[0]) not in keep:
                        keep.add(target)
                        changed = True
        for table in list(self.entities):
            if table not in keep:
                del self.entities[table]
                self.report.entities.pop(table, None)
        self.report.notes += [
            f"{t}: the schema has no key; added `{e.primary_key}`" for t, e in self.entities.items() if e.added_key
        ]
        seed = self.seed(random.Random(seed_number), now)
        self.optional_parents(seed)
        # A foreign key must name a primary key or a unique column (SQLite refuses anything else): a
        # reference to another column is kept, as UNIQUE, only where the seed's values are distinct.
        unique: set[tuple[str, str]] = set()
        for entity in self.entities.values():
            for column in entity.columns.values():
                if not column.ref:
                    continue
                target, _, target_column = column.ref.partition(".")
                if target_column == self.entities[target].primary_key:
                    continue
                values = [row.get(target_column) for row in seed.get(target, [])]
                if None not in values and len(set(values)) == len(values):
                    unique.add((target, target_column))
                else:
                    self.report.notes.append(f"{entity.table}.{column.name}: not linked to {column.ref} (not a key)")
                    column.ref = None
        entities: dict[str, Any] = {}
        for table, entity in self.entities.items():
            columns: dict[str, Any] = {}
            for name, column in entity.columns.items():
                col: dict[str, Any] = {"type": column.type, "description": column.description or name.replace("_", " ")}
                if column.enum:
                    col["enum"] = column.enum
                if column.ref:
                    col["ref"] = column.ref
                if (table, name) in unique:
                    col["unique"] = True
                if name != entity.primary_key and name not in entity.parents:
                    col["nullable"] = True
                if _user_known(name, column, entity):
                    col["user_known"] = True
                columns[name] = col
            entities[table] = {
                "description": entity.description,
                "primary_key": entity.primary_key,
                "id_format": entity.id_format,
                "columns": columns,
            }
        for tool in self.tools:
            for pname, param in tool["params"].items():
                found = self.entities[tool["entity"]].columns.get(param.get("column", pname))
                if found is not None and found.type != param["type"]:
                    param["type"] = found.type
            examples = self.expectations(tool, seed)
            if examples:
                tool["examples"] = examples
        spec = {
            "name": self.name,
            "domain": domain,
            "title": title,
            "description": description,
            "version": "1.0.0",
            "now": FARM_NOW,
            "seed_number": seed_number,
            "entities": entities,
            "seed": seed,
            "tools": self.tools,
        }
        if unlisted := self.unlisted(entities):
            spec["unlisted"] = unlisted
        return spec

    def optional_parents(self, seed: dict[str, list[dict[str, Any]]]) -> None:
        """A parent column (`/projects/{id}/tasks` -> `tasks.project_id`) is required only where every
        create of the table fills it and every seed row has one. A create at another path (`POST /tasks`)
        or a parent the seed cannot fill (a cycle, a parent table nobody lists) leaves the reference
        empty instead of making the spec unbuildable; the report notes each one."""
        for table, entity in self.entities.items():
            creates = [t for t in self.tools if t["effect"] == "create" and t["entity"] == table]
            for column in list(entity.parents):
                unfilled = [t["name"] for t in creates if column not in _filled_columns(t)]
                seedless = any(row.get(column) is None for row in seed.get(table, []))
                if unfilled or seedless:
                    del entity.parents[column]
                    why = f"not always filled by {', '.join(unfilled)}" if unfilled else "no parent row to seed it from"
                    self.report.notes.append(f"{table}.{column}: an optional reference ({why})")

    def unlisted(self, entities: dict[str, Any]) -> dict[str, str]:
        """Tables the API itself cannot list in full: no search operation, or only one per parent."""
        searches: dict[str, list[dict[str, Any]]] = {}
        for tool in self.tools:
            if tool.get("effect") == "search":
                searches.setdefault(tool["entity"], []).append(tool)
        reasons = {}
        for table in entities:
            found = searches.get(table, [])
            if not found:
                reasons[table] = f"the API has no operation that lists {table}"
            elif all(any(p.get("required") for p in (s.get("params") or {}).values()) for s in found):
                reasons[table] = f"the API lists {table} only for one parent at a time"
        return reasons


def rpc_name(path: str, op: dict[str, Any], params: list[dict[str, Any]]) -> str | None:
    """The operation an RPC-style request names, or None for a resource path: the path's fragment or query
    (`/#X-Amz-Target=Svc.CreateThing`, `/#CreateThing`, `/?Action=CreateThing`), else the operationId of an
    operation on `/` that takes an `Action` or `X-Amz-Target` selector."""
    base, _, fragment = path.partition("#")
    base_path, _, query = base.partition("?")
    if "{" in base_path:
        return None
    named = re.search(r"(?:^|[&#?])(?:Action|X-Amz-Target)=([A-Za-z0-9_.]+)", f"?{query}#{fragment}")
    if named:
        name = named.group(1).rsplit(".", 1)[-1]
    elif fragment[:1].isupper():  # `/#CreateThing`; a lower-case fragment (`/servers#name`) is a path variant
        name = fragment
    elif base_path.strip("/") == "" and any(
        snake(str(p.get("name", ""))) in RPC_SELECTORS and p.get("in") in ("header", "query") for p in params
    ):  # `POST /` with an `Action` selector; a resource path taking one too (AWS REST APIs) is no RPC
        name = str(op.get("operationId") or "")
    else:
        return None
    return name if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) else None


def _rpc_input(op: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
    """An RPC operation whose input is its query (`GET /?Action=CreateQueue&QueueName=...`, the AWS query
    protocol), restated with that input as its body, so it reads like the operations that send one."""
    if "requestBody" in op:
        return op
    fields = [
        p
        for p in params
        if p.get("in") == "query"
        and isinstance(p.get("name"), str)
        and snake(p["name"]) not in RPC_SELECTORS | {"version"}
    ]
    if not fields:
        return op
    properties = {
        p["name"]: {**(p.get("schema") or {}), **({"description": p["description"]} if p.get("description") else {})}
        for p in fields
    }
    required = [p["name"] for p in fields if p.get("required")]
    schema = {"type": "object", "properties": properties, "required": required}
    return {**op, "requestBody": {"content": {"application/json": {"schema": schema}}}}


def split_operation(name: str) -> tuple[str, str]:
    """`CreateNamedQuery` -> ("create", "NamedQuery"); `createDBCluster` -> ("create", "DBCluster"); an
    `Admin` prefix (`AdminDeleteUser`) says who may call it, not what it does, and is dropped."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", name)
    if len(words) > 1 and words[0].lower() == "admin":
        words = words[1:]
    if not words:
        return "", ""
    return words[0].lower(), "".join(w[:1].upper() + w[1:] for w in words[1:])


def _reads(op: dict[str, Any]) -> bool:
    """Whether the operation's summary or operationId starts with a verb that reads or computes."""
    return any(snake(str(op.get(field) or "")).split("_", 1)[0] in READ_VERBS for field in ("summary", "operationId"))


def _record_action(path: str, method: str) -> tuple[str, str] | None:
    """(the record's path, the action verb) of `POST /things/{id}:cancel` or `POST /things/{id}/favorite`
    (DELETE of the latter undoes it); None for any other path."""
    found = re.fullmatch(r"(.*/\{[^}/]+\})(?::|/)([A-Za-z][A-Za-z_-]*)/?", path)
    if found is None or method not in ("post", "put", "patch", "delete"):
        return None
    verb = snake(found.group(2))
    return (found.group(1), verb) if verb in ACTION_VERBS else None


def _key_fields(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The input fields a keyed RPC operation names its row by (a string or integer, no choice of values): the
    required ones; else its only one (`DeleteReportDefinition {ReportName}`); else the first named like a key."""
    fields = [f for f in fields if not f["schema"].get("enum") and _type(f["schema"]) in ("string", "integer")]
    required = [f for f in fields if f["required"]]
    if required or len(fields) <= 1:
        return required or fields
    return [f for f in fields if snake(f["name"]).endswith(("_id", "_name", "_identifier", "_arn"))][:1]


def _noun_keys(noun: str) -> list[str]:
    """The tables an RPC noun may name, most specific first: `BuildsForProject` -> builds_for_project, builds;
    `RepositoryDescription` (a field of the repository) -> repository_description, repository."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", noun)
    cut = next(
        (i for i, w in enumerate(words) if i and w in ("For", "From", "To", "In", "By", "With", "Of", "On")), None
    )
    if cut is not None:
        words = words[:cut]
    keys = [snake(singular(noun))]
    keys += [snake(singular("".join(words[:n]))) for n in range(len(words), 0, -1)]
    return list(dict.fromkeys(keys))


def _envelope_name(schema_name: str, operation: str) -> bool:
    """`CreateClusterResult`, `GetThingOutput`: the shape of one operation's answer, not a record type."""
    return schema_name.startswith(operation) or schema_name.endswith(
        ("Output", "Result", "Response", "Message", "Request", "Input")
    )


# An action that undoes another: its flag is the other's, set false (`disable` -> `enabled`: false).
OPPOSITES = {"disable": "enable", "deactivate": "activate", "reopen": "close"}
IRREGULAR_PAST = {"read": "read", "hide": "hidden", "cancel": "cancelled", "submit": "submitted"}
# Actions that leave no lasting state of their own (a reset record is as it was before): no flag to add.
EVENT_VERBS = {"reset", "retry", "restart", "reboot", "mark"}


def past_participle(verb: str) -> str:
    """`cancel` -> cancelled, `stop` -> stopped, `archive` -> archived, `verify` -> verified, `open` -> opened."""
    if verb in IRREGULAR_PAST:
        return IRREGULAR_PAST[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2:-1] not in ("a", "e", "i", "o", "u"):
        return verb[:-1] + "ied"
    if re.fullmatch(r"[^aeiou]*[aeiou][bdgklmnprt]", verb):  # one short syllable: the consonant doubles
        return verb + verb[-1] + "ed"
    return verb + "ed"


def _participles(verb: str) -> list[str]:
    """The states a verb leaves a record in, most likely first: `cancel` -> cancelled, canceled, ...;
    `favorite` -> favorited; `reboot` -> rebooted, then rebooting (a state it is in meanwhile)."""
    stem = verb.removesuffix("e")
    forms = [verb + verb[-1] + "ed", verb + "ed", verb + "d", stem + "ed"]
    if verb.endswith("y") and verb[-2:-1] not in ("a", "e", "i", "o", "u"):
        forms.insert(0, verb[:-1] + "ied")
    forms += [verb + verb[-1] + "ing", stem + "ing", verb]
    return list(dict.fromkeys(forms))


def state_change(verb: str, entity: _Entity, negated: bool = False) -> tuple[str, Any] | None:
    """(column, value) an action verb sets on its record: a status enum value naming the state the verb
    leaves it in, else a boolean flag named by it (`favorited`, `is_archived`) set true, or false for its
    `un-` verb or a DELETE; None when the record says neither."""
    if verb.startswith("un") and verb[2:] in ACTION_VERBS:
        verb, negated = verb[2:], not negated
    forms = _participles(verb)
    if not negated:
        statuses = [
            c
            for name, c in entity.columns.items()
            if c.enum and (name in ("status", "state") or name.endswith(("_status", "_state")))
        ]
        for form in forms:
            for column in statuses:
                value = next((v for v in column.enum or [] if re.sub(r"[^a-z]", "", v.lower()) == form), None)
                if value is not None:
                    return column.name, value
    for form in forms:
        for name, column in entity.columns.items():
            if column.type == "boolean" and name.removeprefix("is_") == form:
                return name, not negated
    return None


def _filled_columns(tool: dict[str, Any]) -> set[str]:
    """The columns a create tool always writes: each required param's own column (or its name) and its fixed
    `set` values (an optional param may leave its column empty)."""
    given = {param.get("column", name) for name, param in tool["params"].items() if param.get("required")}
    return given | set(tool.get("set") or {})


def _kind(value: Any) -> str:
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)


def _camel(snake_name: str) -> str:
    return snake_name.title().replace("_", "")


def _article(noun: str) -> str:
    return f"{'An' if noun[:1] in 'aeiou' else 'A'} {noun}"


def _ends_in_param(path: str) -> bool:
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return last.startswith("{") and last.endswith("}")


def _collection(path: str) -> str:
    path = path.rstrip("/") or "/"
    return path.rsplit("/", 1)[0] or "/" if _ends_in_param(path) else path


def _looks_uuid(value: Any) -> bool:
    return isinstance(value, str) and bool(re.fullmatch(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", value))


def _topological(entities: dict[str, _Entity]) -> list[str]:
    """Tables ordered so each comes after the tables its foreign keys name (cycles: name order)."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(table: str) -> None:
        if table in order or table in visiting:
            return
        visiting.add(table)
        for column in entities[table].columns.values():
            if column.ref and (target := column.ref.split(".")[0]) in entities and target != table:
                visit(target)
        visiting.discard(table)
        order.append(table)

    for table in entities:
        visit(table)
    return order


def _user_known(name: str, column: _Column, entity: _Entity) -> bool:
    if name == entity.primary_key or column.ref or column.json_text:
        return False
    return not (name.endswith(("_id", "_ids", "_key", "token", "password", "_url", "url")) or name == "id")


WORDS = ["alpha", "harbor", "summit", "orchid", "meadow", "copper", "falcon", "willow", "cedar", "aurora"]


def _value(column: _Column, n: int, rng: random.Random, now: datetime, person: str, table: str) -> Any:
    """A plausible value for one seed cell: the example first, then enums, formats and names."""
    name, kind = column.name, column.type
    example = column.example
    if n == 0 and example is not None and not column.json_text and _fits(column, example):
        return example
    if column.json_text:
        return ", ".join(WORDS[(n + k) % len(WORDS)] for k in range(2)) if column.json_text == "list" else ""
    if column.enum:
        return column.enum[n % len(column.enum)]
    if kind == "boolean":
        return n % 2 == 0
    if kind == "integer":
        low = int(column.minimum) if column.minimum is not None else 1
        high = int(column.maximum) if column.maximum is not None else max(low + 1, 120)
        return rng.randint(low, max(low, high))
    if kind == "number":
        bottom = float(column.minimum) if column.minimum is not None else 5.0
        top = float(column.maximum) if column.maximum is not None else 500.0
        return fakedata.money(rng, bottom, max(bottom, top))
    if kind == "date":
        return fakedata.day(now, rng.randint(-60, 60))
    if kind == "datetime":
        return fakedata.moment(now, rng.randint(-1440, 1440))
    fmt = column.format or ""
    words = set(name.split("_"))
    if fmt == "email" or "email" in words:
        return fakedata.email(person)
    if fmt == "uuid" or _looks_uuid(example):
        return f"{n + 1:08d}-0000-4000-8000-{rng.randrange(16**12):012x}"
    if fmt in ("uri", "url") or words & {"url", "uri", "link", "image", "href", "website"}:
        return f"https://example.com/{table}/{n + 1}"
    if "phone" in words:
        return fakedata.phone(rng)
    if "password" in words:
        return f"secret-{n + 1:03d}"
    if words & {"username", "login", "handle"} or name in ("user", "owner"):
        return fakedata.slug(person).replace(".", "_")
    if words & {"name", "first", "last", "author", "contact", "full"}:
        if "first" in words:
            return person.split()[0]
        if "last" in words:
            return person.split()[-1]
        return (
            person
            if table in ("users", "people", "persons", "customers", "profiles", "contacts", "members", "employees")
            or words & {"full", "author", "contact"}
            else f"{WORDS[n % len(WORDS)].title()} {singular(table).replace('_', ' ')}"
        )
    if words & {"title", "subject", "summary", "headline"}:
        return f"{fakedata.title(rng)} {n + 1}"
    if words & {"description", "body", "bio", "note", "notes", "message", "comment", "text", "content"}:
        return f"{fakedata.title(rng)} for the {WORDS[n % len(WORDS)]} {singular(table).replace('_', ' ')}."
    if words & {"currency"}:
        return ["USD", "EUR", "GBP"][n % 3]
    if words & {"code"}:
        return f"{name[:3].upper()}-{n + 1:03d}"
    if words & {"slug"}:
        return f"{WORDS[n % len(WORDS)]}-{singular(table).replace('_', '-')}-{n + 1}"
    if words & {"address", "street"}:
        return fakedata.address(rng)
    if words & {"city"}:
        return rng.choice(fakedata.CITIES)
    if words & {"tag", "tags", "category", "type", "kind", "status", "state"}:
        return WORDS[n % 3]
    return f"{name.replace('_', ' ')} {n + 1}"


def _fits(column: _Column, value: Any) -> bool:
    if column.enum and str(value) not in column.enum:
        return False
    checks = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "date": isinstance(value, str) and bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)),
        "datetime": isinstance(value, str)
        and bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?", value)),
    }
    return checks.get(column.type, False)


def _swagger2(data: dict[str, Any]) -> dict[str, Any]:
    """A Swagger 2.0 document restated as OpenAPI 3 (definitions, body and formData parameters,
    produces), enough for the importer."""
    text = (
        json.dumps(data)
        .replace('"#/definitions/', '"#/components/schemas/')
        .replace('"#/parameters/', '"#/components/parameters/')
        .replace('"#/responses/', '"#/components/responses/')
    )
    data = json.loads(text)
    shared_params: dict[str, Any] = data["parameters"] if isinstance(data.get("parameters"), dict) else {}

    def resolved(param: Any) -> Any:
        """A `$ref` to a document-level parameter, as the parameter (a body one becomes the request body)."""
        if isinstance(param, dict) and isinstance(param.get("$ref"), str):
            found = shared_params.get(param["$ref"].removeprefix("#/components/parameters/"))
            if isinstance(found, dict):
                return found
        return param

    paths: dict[str, Any] = {}
    for path, item in (data.get("paths") or {}).items():
        if not isinstance(item, dict):
            paths[path] = item  # the importer names the malformed path item
            continue
        new_item: dict[str, Any] = {}
        shared: list[Any] = item["parameters"] if isinstance(item.get("parameters"), list) else []
        for method, op in item.items():
            if method not in METHODS or not isinstance(op, dict):
                if method in METHODS:
                    new_item[method] = op
                continue
            op = dict(op)
            kept, form, form_required = [], {}, []
            own: list[Any] = op["parameters"] if isinstance(op.get("parameters"), list) else []
            # The path item's parameters apply to each of its operations (an operation's own one wins).
            named = {(p.get("name"), p.get("in")) for p in map(resolved, own) if isinstance(p, dict)}
            inherited = [
                p for p in map(resolved, shared) if isinstance(p, dict) and (p.get("name"), p.get("in")) not in named
            ]
            for param in [*inherited, *map(resolved, own)]:
                if not isinstance(param, dict):
                    kept.append(param)
                    continue
                where = param.get("in")
                if where == "body":
                    op["requestBody"] = {"content": {"application/json": {"schema": param.get("schema") or {}}}}
                elif where == "formData":
                    if param.get("type") == "file":
                        op["requestBody"] = {"content": {"multipart/form-data": {"schema": {}}}}
                    form[param["name"]] = {k: v for k, v in param.items() if k not in ("in", "name", "required")}
                    if param.get("required"):
                        form_required.append(param["name"])
                else:
                    kept.append(_swagger2_param(param))
            if form and "requestBody" not in op:
                op["requestBody"] = {
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "schema": {"type": "object", "properties": form, "required": form_required}
                        }
                    }
                }
            op["parameters"] = kept
            if isinstance(op.get("responses"), dict):
                op["responses"] = {code: _swagger2_response(resp) for code, resp in op["responses"].items()}
            new_item[method] = op
        paths[path] = new_item
    parameters = {pname: _swagger2_param(param) for pname, param in shared_params.items() if isinstance(param, dict)}
    return {
        "openapi": "3.0.0",
        "info": data.get("info") or {},
        "paths": paths,
        "components": {
            "schemas": data.get("definitions") or {},
            "parameters": parameters,
            "responses": {rname: _swagger2_response(resp) for rname, resp in (data.get("responses") or {}).items()},
            "securitySchemes": data.get("securityDefinitions") or {},
        },
    }


def _swagger2_param(param: dict[str, Any]) -> dict[str, Any]:
    """A Swagger 2.0 query, path or header parameter (its type beside its name) as OpenAPI 3 (`schema`)."""
    if "$ref" in param:
        return param
    schema = {k: param[k] for k in ("type", "format", "enum", "items", "default", "maximum", "minimum") if k in param}
    return {**{k: v for k, v in param.items() if k in ("name", "in", "description", "required")}, "schema": schema}


def _swagger2_response(resp: Any) -> Any:
    """A Swagger 2.0 response (`schema` beside `description`) as OpenAPI 3 (`content`); a `$ref` stays."""
    if not isinstance(resp, dict) or "schema" not in resp:
        return resp
    resp = dict(resp)
    resp["content"] = {"application/json": {"schema": resp.pop("schema")}}
    return resp


def _auth_notes(data: dict[str, Any]) -> list[str]:
    schemes = (data.get("components") or {}).get("securitySchemes") or {}
    if not schemes:
        return ["no security schemes: the server acts for the episode's principal like every farm server"]
    described = []
    for sname, scheme in schemes.items():
        kind = scheme.get("type", "?")
        detail = {
            "apiKey": f"API key in {scheme.get('in', '?')} `{scheme.get('name', '?')}`",
            "http": f"HTTP {scheme.get('scheme', '?')}",
            "oauth2": "OAuth 2",
            "openIdConnect": "OpenID Connect",
        }.get(kind, kind)
        described.append(f"`{sname}` ({detail})")
    return [
        "auth: " + ", ".join(described) + " -> the episode's principal: the runtime (control plane or an HTTP "
        "bearer token) says who acts; no tool takes credentials, and auth header and cookie parameters are dropped"
    ]


# Paths that read "the signed-in user" rather than a row someone names.
CURRENT_USER = re.compile(
    r"/(me|my|myself|user|account|profile|whoami|(users|accounts)/(me|current|self))/?", re.IGNORECASE
)
USER_TABLES = ("users", "accounts", "profiles", "members", "customers", "people", "persons")
PER_USER_AUTH = ("oauth2", "openIdConnect", "apiKey", "bearer")
PRINCIPAL_COLUMNS = ("email", "username", "login", "handle", "user_name", "name")


def _schemes(data: dict[str, Any]) -> list[str]:
    """The kinds of the document's security schemes (`http` ones by their scheme: bearer, basic)."""
    schemes = (data.get("components") or {}).get("securitySchemes") or {}
    kinds = []
    for scheme in schemes.values():
        if isinstance(scheme, dict):
            kind = str(scheme.get("type", ""))
            kinds.append(str(scheme.get("scheme", "")).lower() if kind == "http" else kind)
    return kinds


def owner_fields(spec: dict[str, Any], users: str) -> list[tuple[str, str]]:
    """(table, column) of the columns naming a row's owner (`owner`, `owner_id`, `owner_login`...) in the
    tables other than the users table: where an imported API may keep rows private to a user."""
    return [
        (table, column)
        for table, entity in spec["entities"].items()
        if table != users
        for column in entity["columns"]
        if column == "owner" or column.startswith("owner_")
    ]


def infer_principal(
    importer: _Importer, data: dict[str, Any], spec: dict[str, Any], title: str
) -> tuple[dict[str, Any], list[str]]:
    """Whom the imported server acts for, and notes saying why. Per-user credentials (OAuth 2, OpenID,
    bearer tokens, API keys) and a users resource -- the one a current-user path (`/me`, `/user`)
    returns, else a table named like users -- make a `user` principal named by its most personal
    unique column; anything else is `staff` operating the API for customers."""
    notes: list[str] = []
    auth = [k for k in _schemes(data) if k in PER_USER_AUTH]
    current = [
        path
        for path, item in (data.get("paths") or {}).items()
        if CURRENT_USER.fullmatch(path) and isinstance(item, dict) and "get" in item
    ]
    table = None
    for path in current:
        response = importer.response(importer.doc.deref(data["paths"][path])[1]["get"])
        record = importer.record_of(response, "User") if response is not None else None
        node = importer.doc.deref(response)[1] if response is not None else {}
        # The schema it returns, or one it extends (`private-user: allOf [simple-user, {...}]`).
        names = [record[0] if record else None] + [
            str(part["$ref"]).rsplit("/", 1)[-1] for part in node.get("allOf") or [] if "$ref" in part
        ]
        found = [importer.by_schema[n] for n in names if n and importer.by_schema.get(n) in spec["entities"]]
        if found:
            table = found[0]
            break
    table = table or next((t for u in USER_TABLES for t in spec["entities"] if t == u or t.endswith(f"_{u}")), None)
    if auth and table is not None:
        rows = spec["seed"].get(table) or []
        columns = spec["entities"][table]["columns"]
        candidates = [c for c in PRINCIPAL_COLUMNS if c in columns] + [spec["entities"][table]["primary_key"]]
        distinct = [
            c
            for c in candidates
            if rows
            and all(isinstance(r.get(c), str) and r.get(c) != "" for r in rows)  # a principal is a string
            and len({r[c] for r in rows}) == len(rows)
        ]
        column = distinct[0] if distinct else None
        if column is not None:
            why = f"per-user credentials ({', '.join(sorted(set(auth)))})"
            why += f" and the current-user path {current[0]}" if current else f" and the `{table}` resource"
            owners = owner_fields(spec, table)
            private = (
                f"the document names owner fields ({', '.join(f'`{t}.{c}`' for t, c in owners)}) but not whether "
                "they make rows private: scope them with `principal.scope`, e.g. "
                f'`{owners[0][0]}: "{owners[0][1]} IN (SELECT ... FROM {table} WHERE {column} = :principal)"`'
                if owners
                else "the document does not say which are private (add `principal.scope`)"
            )
            notes.append(
                f"principal: user, one of `{table}.{column}` (default {rows[0][column]!r}), from {why}. Rows are "
                f"not scoped to the user: {private}"
            )
            return {
                "kind": "user",
                "description": f"a signed-in user of {title}",
                "table": table,
                "column": column,
                "default": rows[0][column],
            }, notes
    reason = (
        "no security scheme" if not _schemes(data) else "no per-user credentials" if not auth else "no users resource"
    )
    notes.append(f"principal: staff operating the API for customers ({reason} to act as a signed-in user)")
    operator = f"{title} operator"
    return {
        "kind": "staff",
        "description": f"an operator of {title} acting for customers",
        "values": [operator],
        "default": operator,
        "customers": "the customer names the record they mean (its id, or a name or email that finds it); "
        "confirm it with them before changing anything",
    }, notes


# Columns a person names a row by, most telling first.
NAMING_WORDS = ("name", "title", "email", "username", "login", "handle", "subject", "label", "number", "code", "slug")


def _words(name: str) -> str:
    return name.replace("_", " ")


def _verb_phrase(text: str) -> str:
    """An operation's summary as what a person asks for: 'Adds templates to an envelope.' -> 'add templates to
    an envelope' (its first sentence, the verb in the imperative, no braces a phrasing would read as a slot)."""
    sentence = re.split(r"(?<=[.!?])\s|\n", first_paragraph(text, 200), maxsplit=1)[0]
    sentence = re.sub(r"[{}\[\]()]", "", sentence).strip().rstrip(".!?:;, ")
    words = sentence.split()[:14]
    if not words or not re.fullmatch(r"[A-Za-z][A-Za-z-]*", words[0]):
        return ""
    verb = words[0].lower()
    if verb.endswith("ies") and len(verb) > 4:
        verb = verb[:-3] + "y"
    elif verb.endswith(("ses", "xes", "ches", "shes")):
        verb = verb[:-2]
    elif verb.endswith("s") and not verb.endswith(("ss", "us", "is")):
        verb = verb[:-1]
    return " ".join([verb, *words[1:]])


def _slot(name: str, param: dict[str, Any]) -> str:
    kind = param.get("type")
    return f"{{{name}:date}}" if kind == "date" else f"{{{name}:datetime}}" if kind == "datetime" else f"{{{name}}}"


def _said(name: str, param: dict[str, Any], entity: dict[str, Any]) -> str:
    """A param as a person says it: an id through its table's reference (the slot alone), else 'the <label> x'."""
    column = entity["columns"].get(param.get("column", name)) or {}
    if column.get("ref") or name.endswith("_id") or name == entity["primary_key"]:
        return _slot(name, param)
    return f"{_words(name)} {_slot(name, param)}"


def _refer(table: str, entity: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """How a person names one row: by a column they know whose seeded values tell the rows apart."""
    noun = _words(singular(table))
    telling = [
        c
        for c, col in entity["columns"].items()
        if col.get("user_known")
        and col["type"] not in ("boolean",)
        and not col.get("enum")
        and rows
        and all(r.get(c) not in (None, "") for r in rows)
        and len({str(r.get(c)) for r in rows}) == len(rows)
    ]

    # Its own name first (`name`, `email`), then a name of something else it holds (`category_name`).
    def rank(column: str) -> tuple[int, int]:
        words = column.split("_")
        first = next((i for i, w in enumerate(NAMING_WORDS) if w in words), len(NAMING_WORDS))
        return (
            0 if column in NAMING_WORDS or column in ("full_name", "display_name") else 1 if first < 99 else 2,
            first,
        )

    telling.sort(key=rank)
    phrasings = []
    for column in telling[:2]:
        slot = _slot(column, entity["columns"][column])
        if column in ("name", "title", "full_name", "display_name"):
            phrasings.append(f"the {noun} {slot}")
        else:
            phrasings.append(f"the {noun} with {_words(column)} {slot}")
    return phrasings


def _hear(entity: dict[str, Any], skip: set[str], limit: int = 3) -> dict[str, str]:
    """Output fields a person wants back: columns they know (not the ones they gave), by their words."""
    found = [c for c, col in entity["columns"].items() if col.get("user_known") and c not in skip]
    return {c: f"the {_words(c)}" for c in found[:limit]}


def derive_intents(spec: dict[str, Any], asked: dict[str, str]) -> None:
    """Intents from the document: each write, get and computed read says who asks for it (the signed-in user,
    or a customer asking staff), two ways a person asks (the operation's summary as the request, its params as
    slots) and what they want to hear back; each table a person names rows of says how (a column whose seeded
    values tell its rows apart). Plain searches carry none: a task does not end in a listing."""
    asks = "user" if spec["principal"]["kind"] == "user" else "customer"
    for table, entity in spec["entities"].items():
        if entity["primary_key"] != "lookup_id" and (refer := _refer(table, entity, spec["seed"].get(table) or [])):
            entity["refer"] = refer
    for tool in spec["tools"]:
        entity = spec["entities"][tool["entity"]]
        noun = _words(singular(tool["entity"]))
        params: dict[str, dict[str, Any]] = tool["params"]
        effect, key = tool["effect"], tool.get("key")
        lookup = entity["primary_key"] == "lookup_id"
        if effect == "search" and not lookup:
            continue
        default = {
            "create": f"create a new {noun}",
            "update": f"update a {noun}",
            "delete": f"delete a {noun}",
            "get": f"look up a {noun}",
            "search": f"look up {_words(tool['name'])}",
        }[effect]
        verb = _verb_phrase(asked.get(tool["name"], "")) or default
        hear: dict[str, str] = {}
        if effect == "create":
            chosen = [p for p, v in params.items() if v.get("required")][:3] or list(params)[:2]
            said = ", ".join(_said(p, params[p], entity) for p in chosen)
            say = [f"Please {verb}: {said}.", f"Could you {verb}? It is {said}."]
        elif effect == "search":  # a computed read: its inputs, its answer
            chosen = [p for p, v in params.items() if v.get("required")][:3] or list(params)[:2]
            said = ", ".join(_said(p, params[p], entity) for p in chosen)
            say = (
                [f"Can you {verb}? For {said}.", f"I need to {verb}, for {said}."]
                if chosen
                else [
                    f"Can you {verb}?",
                    f"I need to {verb}.",
                ]
            )
            hear = _hear(entity, set(params) | {entity["primary_key"]})
        else:
            assert isinstance(key, str)
            target = _slot(key, params[key])
            changes = [p for p in params if p != key]
            if effect == "update" and changes and not tool.get("set"):
                first, second = changes[0], changes[1] if len(changes) > 1 else changes[0]
                say = [
                    f"Please {verb}: for {target}, set the {_words(first)} to {_slot(first, params[first])}.",
                    f"Could you change the {_words(second)} of {target} to {_slot(second, params[second])}?",
                ]
                hear = {params[first].get("column", first): f"the {_words(first)}"}
            elif effect == "get":
                say = [f"Can you {verb}? I mean {target}.", f"What do you have on {target}?"]
                hear = _hear(entity, {key, params[key].get("column", key)})
            else:
                say = [f"Please {verb}: {target}.", f"Can you {verb} for {target}?"]
        intent: dict[str, Any] = {"asks": asks, "say": say}
        if hear:
            intent["hear"] = hear
        tool["intent"] = intent
    with_default_words(spec)  # a code said in a phrasing: its values humanized, never said raw


def draft_policy(spec: dict[str, Any], description: str) -> str:
    """policy.md from what the document says: who the agent is, what to confirm, the rules its schemas
    state (required fields, allowed values) and paging."""
    principal = spec["principal"]
    writes = [t for t in spec["tools"] if t["effect"] in ("create", "update", "delete")]
    lines = [f"You are {principal['description']}. {description}".strip(), "", "Identity:"]
    if principal["kind"] == "user":
        lines.append(
            f"- Act only as the signed-in user (their {principal['column'].replace('_', ' ')}); never give another "
            "person's identity to a tool."
        )
    else:
        lines.append(f"- Identify the customer first: {principal['customers']}.")
    if writes:
        lines += [
            "",
            "Before you change anything:",
            (
                "- Read the change back and get an explicit yes before you create, change or delete a record (not "
                "enforced by the tools: it is your job)."
            ),
        ]
    rules = []
    for tool in writes:
        required = [p for p, v in tool["params"].items() if v.get("required") and p != tool.get("key")]
        if tool["effect"] == "create" and required:
            rules.append(f"- `{tool['name']}` needs {', '.join(f'`{p}`' for p in required)}.")
        enums = [f"`{p}` is one of {', '.join(v['enum'])}" for p, v in tool["params"].items() if v.get("enum")]
        if enums:
            rules.append(f"- In `{tool['name']}`, " + "; ".join(enums) + ".")
    if rules:
        lines += ["", "Rules the API states (the tools refuse breaches with a reason):", *rules[:12]]
    lines += [
        "",
        (
            "- Lists come a page at a time: when has_more is true, pass the cursor before you conclude that "
            "something does not exist."
        ),
    ]
    return "\n".join(lines) + "\n"


def draft_scenarios(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One scenario per resource that can be created and then read, changed or deleted by its key:
    the calls chain on one episode through the new row's key (`${made.<key>}`)."""
    scenarios: list[dict[str, Any]] = []
    for create in spec["tools"]:
        if create["effect"] != "create" or not create.get("examples") or len(scenarios) >= 3:
            continue
        table = create["entity"]
        pk = spec["entities"][table]["primary_key"]
        example = create["examples"][0]
        steps: list[dict[str, Any]] = [{"tool": create["name"], "name": "made", "args": copy.deepcopy(example["args"])}]
        keyed = {
            t["effect"]: t
            for t in spec["tools"]
            if t["entity"] == table and t.get("key") and t["params"][t["key"]].get("column", t["key"]) == pk
        }
        ref = f"${{made.{pk}}}"
        if "get" in keyed:
            step: dict[str, Any] = {"tool": keyed["get"]["name"], "args": {keyed["get"]["key"]: ref}}
            if example["expect"].get("result"):
                step["expect"] = {"result": copy.deepcopy(example["expect"]["result"])}
            steps.append(step)
        if "delete" in keyed:
            steps.append(
                {
                    "tool": keyed["delete"]["name"],
                    "args": {keyed["delete"]["key"]: ref},
                    "expect": {"state": {f"{table}[{ref}]": None}, "rows": {table: {"removed": 1}}},
                }
            )
        if len(steps) > 1:
            scenarios.append(
                {
                    "name": f"{create['name']}_then_use_it"[:60],
                    "description": f"A {singular(table).replace('_', ' ')} just created can be used by its key.",
                    "steps": steps,
                }
            )
    return scenarios


def import_openapi(path: Path, name: str | None = None, seed_number: int = 0) -> ImportResult:
    """Read an OpenAPI 3.x (or Swagger 2.0) document and return a validated spec and its report.

    Raises `OpenAPIError` when the document is not one, and `SpecError` (every problem, located) if
    what it describes cannot make a valid spec.
    """
    try:
        data = (
            read_document(path)
            if path.suffix in (".json", ".yaml", ".yml")
            else yaml.safe_load(path.read_text("utf-8"))
        )
    except SpecError as exc:
        raise OpenAPIError(str(exc)) from exc
    except OSError as exc:
        raise OpenAPIError(f"{path}: {exc.strerror or exc}") from exc
    if not isinstance(data, dict) or not ("openapi" in data or "swagger" in data):
        raise OpenAPIError(f"{path}: not an OpenAPI document (no `openapi` or `swagger` version at the top)")
    version = str(data.get("openapi") or data.get("swagger"))
    kind = "Swagger" if "swagger" in data else "OpenAPI"
    source = document_source(data, path, f"{kind} {version}")
    if "swagger" in data:
        if not version.startswith("2"):
            raise OpenAPIError(f"{path}: Swagger {version} is not supported (2.0 and OpenAPI 3.x are)")
        data = _swagger2(data)
    elif not version.startswith("3"):
        raise OpenAPIError(f"{path}: OpenAPI {version} is not supported (3.0 and 3.1 are)")
    result = import_document(data, path, name, seed_number, f"{kind} {version}")
    result.spec["source"] = source.model_dump()
    return result


def document_source(data: dict[str, Any], path: Path, kind: str) -> Source:
    """Where an imported server comes from (registry.json's `source`): the document's title and version,
    and its provider (APIs.guru's `x-providerName`, else the host the API is served at)."""
    info = data.get("info")
    info = info if isinstance(info, dict) else {}
    servers = data.get("servers")
    servers = servers if isinstance(servers, list) else []
    url = next((str(s.get("url")) for s in servers if isinstance(s, dict) and s.get("url")), "")
    host = str(data.get("host") or urlsplit(url).hostname or "")
    return Source(
        title=" ".join(str(info.get("title") or path.stem).split()),
        version=str(info.get("version") or ""),
        provider=str(info.get("x-providerName") or host),
        format=kind,
        document=path.name,
    )


def import_document(
    data: dict[str, Any],
    path: Path,
    name: str | None,
    seed_number: int,
    kind: str,
    skipped: list[SkippedOperation] | None = None,
) -> ImportResult:
    """Import an OpenAPI 3 document already read (`path` names it in errors and the report); `skipped`
    are operations a caller already refused (`envfarm import metadata` restates tools as operations)."""
    info = data.get("info") or {}
    title = " ".join(str(info.get("title") or path.stem).split())
    words = [
        w
        for w in snake(re.sub(r"\b(api|openapi|rest|swagger)\b", " ", title, flags=re.IGNORECASE)).split("_")
        if not w.isdigit()
    ]
    server_name = name or "_".join(words[:3]) or "imported"
    server_name = safe_name(server_name)
    report = ImportReport(source=path.name, format=kind, title=title, skipped=list(skipped or []))
    importer = _Importer(_Doc(data, str(path)), server_name, report)
    importer.plan()
    if not importer.tools:
        raise OpenAPIError(
            f"{path}: no operation maps to a record tool; skipped: "
            + "; ".join(f"{s.method.upper()} {s.path}: {s.reason}" for s in report.skipped)
        )
    importer.link_refs()
    report.notes += _auth_notes(data)
    report.notes.append(
        "pagination: page, limit, offset and cursor parameters are dropped; a search returns at most its `limit` rows"
    )
    categories = info.get("x-apisguru-categories") or []
    domain = safe_name(categories[0]) if categories else "imported"
    description = first_paragraph(info.get("description")) or f"A stateful twin of {title}."
    spec = importer.spec(title, description, domain, seed_number)
    spec["principal"], notes = infer_principal(importer, data, spec, title)
    report.notes += notes
    derive_intents(spec, importer.asked)
    writes = [t["name"] for t in spec["tools"] if t["effect"] in ("create", "update", "delete")]
    if writes:
        spec["unenforced_rules"] = [
            {
                "id": "confirm_before_write",
                "rule": "Read the change back and get an explicit yes before making it.",
                "tools": writes,
            }
        ]
    scenarios = draft_scenarios(spec)
    if scenarios:
        spec["scenarios"] = scenarios
    policy = draft_policy(spec, description)
    report.notes.append(
        f"policy.md: drafted from the document (whom the agent acts for, confirm before {len(writes)} write "
        f"tool(s), the required fields and allowed values the schemas state); {len(scenarios)} scenario(s) chain "
        "a create into the calls that use its key"
    )
    parse_spec({**spec, "policy": policy}, f"{path} (imported)")
    return ImportResult(spec=spec, report=report, policy=policy)


def write_spec_folder(result: ImportResult, out: Path) -> Path:
    """Write `spec.yaml` and `IMPORT.md` into `out` (created); return the spec file."""
    out.mkdir(parents=True, exist_ok=True)
    spec_file = out / "spec.yaml"
    header = f"# Imported by `envfarm import` from {result.report.source}; see IMPORT.md.\n"
    spec_file.write_text(header + yaml.safe_dump(result.spec, sort_keys=False, allow_unicode=True, width=120), "utf-8")
    (out / "IMPORT.md").write_text(result.report.markdown(), "utf-8")
    if result.policy.strip():
        (out / POLICY_NAME).write_text(result.policy, "utf-8")
    return spec_file
