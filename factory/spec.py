"""The environment spec: the factory's input contract.

Data is declarative (entities, seed rows, tools, rules as parameterized SQL); behaviour that CRUD
cannot express lives in a Python `handlers.py` beside the spec. `load_spec` reads YAML or JSON and
reports every problem at once, each with the file and the field path.
"""

from __future__ import annotations

import json
import re
import string
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
ColumnType = Literal["string", "integer", "number", "boolean", "date", "datetime"]
FieldType = Literal["string", "integer", "number", "boolean", "date", "datetime", "object", "array"]
Effect = Literal["read", "create", "update", "delete", "custom"]
Match = Literal["exact", "contains", "gte", "lte"]
NOW = "$now"
# Dates and datetimes are ISO strings; params of those types must match these to be accepted.
ISO_PATTERNS = {
    "date": r"^\d{4}-\d{2}-\d{2}$",
    "datetime": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$",
}


class SpecError(Exception):
    """A spec that cannot be built; `problems` lists every `(location, message)` found."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"{source}: {len(problems)} problem(s)"]
        lines += [f"  {where or '<root>'}: {what}" for where, what in problems]
        super().__init__("\n".join(lines))


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Column(StrictModel):
    """One typed column of an entity table."""

    type: ColumnType
    description: str = ""
    enum: list[str] | None = None
    ref: str | None = Field(None, description="foreign key as 'table.column'")
    nullable: bool = False
    unique: bool = False
    default: Any = None
    user_known: bool = Field(False, description="a user would know and say this value (names, dates, titles)")


class Entity(StrictModel):
    """A table: typed columns, a primary key with an id format, and the row model's name."""

    description: str
    primary_key: str
    id_format: str = Field(description="Python format for new ids, e.g. 'pat_{:04d}'")
    model: str | None = Field(None, description="name of the generated row model; default: singular of the table")
    columns: dict[str, Column]

    @model_validator(mode="after")
    def _check_keys(self) -> Entity:
        if self.primary_key not in self.columns:
            raise ValueError(f"primary_key {self.primary_key!r} is not a column")
        try:
            self.id_format.format(1)
        except (IndexError, KeyError, ValueError) as exc:
            raise ValueError(f"id_format {self.id_format!r} does not format a number: {exc}") from exc
        return self


class Param(StrictModel):
    """A tool parameter. `ref` names the entity key it must exist in, making data flow explicit."""

    type: ColumnType
    description: str
    required: bool = False
    enum: list[str] | None = None
    ref: str | None = Field(None, description="'table.column' this value must exist in")
    column: str | None = Field(None, description="the entity column it reads or writes; default: its own name")
    match: Match = "exact"
    minimum: float | None = None
    maximum: float | None = None
    default: Any = None


class Rule(StrictModel):
    """A business rule: reject the call when `reject_if` (SQL, named params) returns a row."""

    reject_if: str
    message: str = Field(description="told to the caller; may use {param} placeholders")
    example: dict[str, Any] = Field(description="a call that breaks this rule; the verifier expects a rejection")


class ReturnField(StrictModel):
    type: FieldType
    description: str = ""
    nullable: bool = False
    items: str | None = Field(None, description="for arrays: a column type or an entity name")


class Returns(StrictModel):
    """What a custom tool returns: one entity row, or named fields."""

    entity: str | None = None
    fields: dict[str, ReturnField] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> Returns:
        if (self.entity is None) == (self.fields is None):
            raise ValueError("give exactly one of 'entity' or 'fields'")
        return self


class Annotations(StrictModel):
    """Overrides for the MCP tool annotations the effect implies."""

    destructive: bool | None = None
    idempotent: bool | None = None


class ToolSpec(StrictModel):
    """One agent-facing tool. CRUD effects are generated; `custom` calls a Python handler."""

    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    description: str
    effect: Effect
    entity: str | None = None
    key: str | None = Field(None, description="the param naming the row (get/update/delete)")
    params: dict[str, Param] = Field(default_factory=dict)
    set: dict[str, Any] = Field(default_factory=dict, description="fixed column values written by create/update")
    rules: list[Rule] = Field(default_factory=list)
    then: list[str] = Field(default_factory=list, description="extra SQL run after the main write")
    writes: list[str] = Field(default_factory=list, description="tables changed besides the entity")
    handler: str | None = Field(None, description="custom: function name in handlers.py")
    returns: Returns | None = None
    limit: int = Field(25, ge=1, le=200, description="search: most rows returned")
    annotations: Annotations = Field(default_factory=Annotations)
    examples: list[dict[str, Any]] = Field(default_factory=list, description="valid calls for the verifier")

    @property
    def is_search(self) -> bool:
        return self.effect == "read" and self.key is None and self.handler is None

    @property
    def changed_tables(self) -> list[str]:
        """Every table a successful call may change, as the effect declares it."""
        if self.effect == "read":
            return []
        tables = [self.entity] if self.entity and self.effect != "custom" else []
        return tables + [t for t in self.writes if t not in tables]


class EnvironmentSpec(StrictModel):
    """A whole environment: identity, frozen clock, entities, seed, tools."""

    name: str = Field(pattern=NAME_PATTERN)
    domain: str = Field(pattern=NAME_PATTERN)
    title: str
    description: str
    version: str = "1.0.0"
    now: datetime = Field(description="the frozen clock; nothing reads the wall clock")
    seed_number: int = 0
    tags: list[str] = Field(
        default_factory=list, description="e.g. 'heldout' keeps a server out of default task sampling"
    )
    entities: dict[str, Entity]
    seed: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    tools: list[ToolSpec]

    @property
    def now_iso(self) -> str:
        return self.now.isoformat().replace("+00:00", "Z")

    def tool(self, name: str) -> ToolSpec:
        return next(t for t in self.tools if t.name == name)


def _loc(parts: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in parts)


def _check_ref(ref: str, spec: EnvironmentSpec) -> str | None:
    table, _, column = ref.partition(".")
    if table not in spec.entities:
        return f"ref {ref!r}: no entity {table!r}"
    if column not in spec.entities[table].columns:
        return f"ref {ref!r}: entity {table!r} has no column {column!r}"
    return None


_PLACEHOLDER = re.compile(r"(?<!:):([a-z_][a-z0-9_]*)")


def semantic_problems(spec: EnvironmentSpec, handler_names: set[str] | None = None) -> list[tuple[str, str]]:
    """Cross-field checks a schema cannot express: refs resolve, keys exist, SQL names known params."""
    problems: list[tuple[str, str]] = []
    for tname, entity in spec.entities.items():
        if not re.match(NAME_PATTERN, tname):
            problems.append((f"entities.{tname}", "table names are lower_snake_case"))
        for cname, col in entity.columns.items():
            if col.ref and (err := _check_ref(col.ref, spec)):
                problems.append((f"entities.{tname}.columns.{cname}", err))
            if col.enum and col.default is not None and col.default not in col.enum:
                problems.append((f"entities.{tname}.columns.{cname}.default", f"{col.default!r} is not in enum"))
    seen: set[str] = set()
    for i, tool in enumerate(spec.tools):
        at = f"tools.{i}({tool.name})"
        if tool.name in seen:
            problems.append((at, f"duplicate tool name {tool.name!r}"))
        seen.add(tool.name)
        if tool.effect != "custom":
            if tool.entity not in spec.entities:
                problems.append((f"{at}.entity", f"{tool.effect} tools need an existing entity, got {tool.entity!r}"))
                continue
            entity = spec.entities[tool.entity]
            if tool.handler:
                problems.append((f"{at}.handler", "only custom tools have a handler"))
            if tool.effect in ("update", "delete") and tool.key is None:
                problems.append((f"{at}.key", f"{tool.effect} tools need a key param"))
            for pname, param in tool.params.items():
                column = param.column or pname
                is_key = pname == tool.key
                if not is_key and column not in entity.columns and tool.effect != "read":
                    problems.append((f"{at}.params.{pname}", f"no column {column!r} in {tool.entity!r}"))
                if tool.effect == "read" and not is_key and column not in entity.columns:
                    problems.append((f"{at}.params.{pname}", f"no column {column!r} in {tool.entity!r} to filter on"))
            for column in tool.set:
                if column not in entity.columns:
                    problems.append((f"{at}.set.{column}", f"no column {column!r} in {tool.entity!r}"))
                if column in tool.params:
                    problems.append((f"{at}.set.{column}", "a column is either a param or a fixed value, not both"))
            if tool.effect == "create":
                for cname, col in entity.columns.items():
                    given = cname in tool.params or cname in tool.set or cname == entity.primary_key
                    if not given and not col.nullable and col.default is None:
                        problems.append((at, f"create cannot fill required column {tool.entity}.{cname}"))
        else:
            if not tool.handler:
                problems.append((f"{at}.handler", "custom tools need a handler function name"))
            elif handler_names is not None and tool.handler not in handler_names:
                problems.append((f"{at}.handler", f"handlers.py has no function {tool.handler!r}"))
            if tool.returns is None:
                problems.append((f"{at}.returns", "custom tools declare what they return"))
        if tool.key is not None and tool.key not in tool.params:
            problems.append((f"{at}.key", f"key {tool.key!r} is not a param"))
        if tool.returns and tool.returns.entity and tool.returns.entity not in spec.entities:
            problems.append((f"{at}.returns.entity", f"no entity {tool.returns.entity!r}"))
        for fname, field in (tool.returns.fields or {}).items() if tool.returns else []:
            if field.type == "array" and not field.items:
                problems.append((f"{at}.returns.fields.{fname}", "arrays say what their items are"))
            if field.items and field.items not in spec.entities and field.items not in get_args(ColumnType):
                problems.append((f"{at}.returns.fields.{fname}.items", f"{field.items!r} is no entity or column type"))
        for table in tool.writes:
            if table not in spec.entities:
                problems.append((f"{at}.writes", f"no entity {table!r}"))
        for pname, param in tool.params.items():
            if param.ref and (err := _check_ref(param.ref, spec)):
                problems.append((f"{at}.params.{pname}", err))
        known = set(tool.params) | {"now", "id"}
        for j, rule in enumerate(tool.rules):
            for name in _PLACEHOLDER.findall(rule.reject_if):
                if name not in known:
                    problems.append((f"{at}.rules.{j}.reject_if", f"unknown SQL parameter :{name}"))
            unknown_args = set(rule.example) - set(tool.params)
            if unknown_args:
                problems.append((f"{at}.rules.{j}.example", f"unknown params {sorted(unknown_args)}"))
            try:
                placeholders = {name for _, name, _, _ in string.Formatter().parse(rule.message) if name}
            except ValueError as exc:
                problems.append((f"{at}.rules.{j}.message", f"bad placeholder: {exc}"))
                continue
            if placeholders - known:
                problems.append((f"{at}.rules.{j}.message", f"unknown placeholders {sorted(placeholders - known)}"))
        for j, sql in enumerate(tool.then):
            for name in _PLACEHOLDER.findall(sql):
                if name not in known:
                    problems.append((f"{at}.then.{j}", f"unknown SQL parameter :{name}"))
        for j, example in enumerate(tool.examples):
            unknown_args = set(example) - set(tool.params)
            if unknown_args:
                problems.append((f"{at}.examples.{j}", f"unknown params {sorted(unknown_args)}"))
    problems += seed_problems(spec)
    return problems


def seed_problems(spec: EnvironmentSpec) -> list[tuple[str, str]]:
    """Seed rows must fit their tables: known columns, required values, enums, unique keys, refs."""
    problems: list[tuple[str, str]] = []
    keys: dict[str, set[Any]] = {}
    for table, rows in spec.seed.items():
        if table not in spec.entities:
            problems.append((f"seed.{table}", f"no entity {table!r}"))
            continue
        entity = spec.entities[table]
        keys[table] = set()
        for n, row in enumerate(rows):
            at = f"seed.{table}.{n}"
            for column in set(row) - set(entity.columns):
                problems.append((f"{at}.{column}", f"no column {column!r} in {table!r}"))
            for cname, col in entity.columns.items():
                value = row.get(cname)
                if value is None:
                    if not col.nullable and col.default is None:
                        problems.append((f"{at}.{cname}", "required value missing"))
                elif col.enum and value not in col.enum:
                    problems.append((f"{at}.{cname}", f"{value!r} is not one of {col.enum}"))
            pk = row.get(entity.primary_key)
            if pk in keys[table]:
                problems.append((f"{at}.{entity.primary_key}", f"duplicate key {pk!r}"))
            keys[table].add(pk)
    for table, rows in spec.seed.items():
        if table not in spec.entities:
            continue
        for cname, col in spec.entities[table].columns.items():
            if not col.ref:
                continue
            if _check_ref(col.ref, spec):
                continue  # a broken ref is reported once, on the column, not once per seed row
            ref_table, _, ref_column = col.ref.partition(".")
            targets = {r.get(ref_column) for r in spec.seed.get(ref_table, [])}
            for n, row in enumerate(rows):
                if row.get(cname) is not None and row[cname] not in targets:
                    problems.append((f"seed.{table}.{n}.{cname}", f"{row[cname]!r} is not a {col.ref}"))
    return problems


def read_document(path: Path) -> Any:
    """Parse a YAML or JSON file, naming the file and line in the error."""
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SpecError(str(path), [("", f"not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}")]) from exc


def parse_spec(data: Any, source: str, handler_names: set[str] | None = None) -> EnvironmentSpec:
    """Validate a spec document; raise SpecError with every problem found."""
    try:
        spec = EnvironmentSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(source, [(_loc(e["loc"]), e["msg"]) for e in exc.errors()]) from exc
    problems = semantic_problems(spec, handler_names)
    if problems:
        raise SpecError(source, problems)
    return spec
