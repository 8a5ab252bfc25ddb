"""The environment spec: the factory's input contract.

Data is declarative (entities, seed rows, tools, rules as parameterized SQL); behaviour that CRUD
cannot express lives in a Python `handlers.py` beside the spec. `load_spec` reads YAML or JSON and
reports every problem at once, each with the file and the field path.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import ErrorDetails

from envfarm.servers.runtime.effects import Effect, Hints, effect_hints
from envfarm.servers.runtime.identification import is_identification_rule, unresolved
from envfarm.servers.runtime.intents import Intent, Words, slots, value_key
from envfarm.servers.runtime.registry import Source

NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
POLICY_NAME = "policy.md"  # the policy the instructions carry; becomes the spec's `policy`
ColumnType = Literal["string", "integer", "number", "boolean", "date", "datetime"]
FieldType = Literal["string", "integer", "number", "boolean", "date", "datetime", "object", "array"]
Match = Literal["exact", "contains", "gte", "lte"]
NOW = "$now"
# A `set` value: the episode's principal (the caller, never a param); "$principal.<column>" a column of their row.
PRINCIPAL = "$principal"
RESERVED_PARAMS = ("principal", "cursor", "limit")  # the runtime binds principal; a search's paging the others
PrincipalKind = Literal["user", "staff"]


@dataclass(frozen=True)
class ValueType:
    """How one column type appears in each place it is used."""

    python: str
    sql: str
    json: str
    pattern: str | None = None  # dates and datetimes are ISO strings; params must match to be accepted
    hint: str = ""  # appended to descriptions so an agent knows the format


TYPES: dict[str, ValueType] = {
    "string": ValueType("str", "TEXT", "string"),
    "integer": ValueType("int", "INTEGER", "integer"),
    "number": ValueType("float", "REAL", "number"),
    "boolean": ValueType("bool", "INTEGER", "boolean"),
    "date": ValueType("str", "TEXT", "string", r"^\d{4}-\d{2}-\d{2}$", " (YYYY-MM-DD)"),
    "datetime": ValueType(
        "str",
        "TEXT",
        "string",
        r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$",
        " (ISO 8601, UTC)",
    ),
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
    refer: list[str] = Field(
        default_factory=list,
        description=(
            "how a person names one row, with {column} slots: 'my stay at {hotel_id.name} from {check_in:date}'"
        ),
    )
    words: Words = Field(
        default_factory=dict,
        description=(
            "column -> value -> how a person says it: every enum or boolean column a `refer` or `say` slot uses"
        ),
    )

    @field_validator("words", mode="before")
    @classmethod
    def _word_keys(cls, words: Any) -> Any:
        return {
            str(c): {value_key(k): v for k, v in said.items()} if isinstance(said, dict) else said
            for c, said in (words or {}).items()
        }

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
    """A tool parameter. `ref` names the entity key it must exist in, making data flow explicit.
    `items` makes it an array of that type (each item checked: type, pattern, enum, `ref`)."""

    type: ColumnType
    items: bool = Field(False, description="an array of `type` values (JSON `type: array`), not one value")
    min_items: int | None = Field(None, ge=0, description="arrays: fewest items")
    description: str
    required: bool = False
    enum: list[str] | None = None
    ref: str | None = Field(None, description="'table.column' this value must exist in")
    column: str | None = Field(None, description="the entity column it reads or writes; default: its own name")
    match: Match = "exact"
    minimum: float | None = None
    maximum: float | None = None
    default: Any = None


class RowChange(StrictModel):
    """How many rows of one table a call added, updated and removed (each 0 unless given)."""

    added: int = Field(default=0, ge=0)
    updated: int = Field(default=0, ge=0)
    removed: int = Field(default=0, ge=0)


LIST_AS_TEXT = re.compile(
    r"\b(comma|semicolon)s?[- ](separated|delimited)|separated by (commas|semicolons)", re.IGNORECASE
)
STATE_KEY = re.compile(r"^(?P<table>[a-z][a-z0-9_]*)\[(?P<key>[^\]]+)\](?:\.(?P<column>[a-z_][a-z0-9_]*))?$")
REFERENCE = re.compile(r"\$\{([a-z_][a-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)\}")


class Expect(StrictModel):
    """What a call must do, beyond succeeding: checked against its result and the state diff.

    `result` is a partial match on the structured output (dicts: the keys given; lists: the same
    length, item by item); `error` is a rejection whose text contains it (the state must not move);
    `rows` is the exact change per table (tables not named must not change); `state` holds column
    values afterwards, keyed `table[primary key].column` (`table[key]: null`: the row is gone).
    Strings may refer to an earlier scenario step's result as `${step.field}`.
    """

    result: dict[str, Any] | None = None
    error: str | None = Field(default=None, min_length=1)
    rows: dict[str, RowChange] | None = None
    state: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Expect:
        if self.error is not None and (self.result is not None or self.rows or self.state):
            raise ValueError("a rejection (`error`) changes nothing: give no `result`, `rows` or `state` with it")
        if self.error is None and self.result is None and self.rows is None and not self.state:
            raise ValueError("expect nothing? give at least one of result, error, rows, state")
        bad = [k for k in self.state if not STATE_KEY.match(k)]
        if bad:
            raise ValueError(f"state keys look like 'table[key].column' or 'table[key]', not {bad}")
        return self

    def problems(self, spec: EnvironmentSpec, at: str) -> Problems:
        """Tables and columns the expectation names must exist."""
        problems: Problems = [(f"{at}.rows.{t}", f"no entity {t!r}") for t in self.rows or {} if t not in spec.entities]
        for key in self.state:
            match = STATE_KEY.match(key)
            assert match is not None
            table, column = match["table"], match["column"]
            if table not in spec.entities:
                problems.append((f"{at}.state.{key}", f"no entity {table!r}"))
            elif column is not None and column not in spec.entities[table].columns:
                problems.append((f"{at}.state.{key}", f"entity {table!r} has no column {column!r}"))
        return problems


class Example(StrictModel):
    """A valid call for the verifier (`args`), optionally with what it must do (`expect`).

    In a spec an example is written either as the bare arguments (`{patient_id: pat_0001}`) or as
    `{args: {...}, expect: {...}, note: ...}`; an example expecting `error` is a call that must be refused.
    """

    args: dict[str, Any] = Field(default_factory=dict)
    expect: Expect | None = None
    note: str = ""

    @model_validator(mode="before")
    @classmethod
    def _bare_arguments(cls, data: Any) -> Any:
        if isinstance(data, dict) and not ("args" in data and set(data) <= {"args", "expect", "note"}):
            return {"args": data}
        return data

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Bare arguments stay bare in spec.json."""
        return handler(self) if self.expect is not None or self.note else dict(self.args)

    @property
    def refused(self) -> bool:
        return self.expect is not None and self.expect.error is not None


class Step(StrictModel):
    """One call of a scenario; `name` lets later steps refer to its result as `${name.field}`."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    expect: Expect | None = None
    name: str | None = Field(default=None, pattern=NAME_PATTERN)


class Scenario(StrictModel):
    """Calls made one after another on one episode, with expectations after each: behaviour that
    only shows across calls (book, cancel, the slot is free again)."""

    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    steps: list[Step] = Field(min_length=1)


class EquivalentMutant(StrictModel):
    """A seeded bug that cannot change behaviour, so no expectation can kill it, and why."""

    file: str = Field(description="handlers.py or tools.py")
    function: str = Field(description="the function the mutation is in")
    change: str = Field(description="the mutation as `envfarm verify --mutate` reports it")
    line: int | None = Field(
        default=None, description="only when file, function and change name several mutants: which one"
    )
    reason: str = Field(min_length=10, description="why no call can tell the mutant from the original")


class Rule(StrictModel):
    """A business rule: reject the call when `reject_if` (SQL, named params) returns a row."""

    reject_if: str
    message: str = Field(description="told to the caller; may use {param} placeholders")
    example: dict[str, Any] = Field(description="a call that breaks this rule; the verifier expects a rejection")


class Principal(StrictModel):
    """Whom the agent acts for. `user`: the authenticated person (a mailbox owner, an account holder);
    tools act as them and other people's rows in `scope` are invisible. `staff`: a member of a business
    serving customers (a pharmacist, a hotel desk clerk); the policy says how a customer is identified."""

    kind: PrincipalKind
    description: str = Field(description="who the principal is, as the instructions say it")
    table: str | None = Field(None, description="the table listing principals (user kind)")
    column: str | None = Field(None, description="the column of `table` naming one principal")
    values: list[str] = Field(default_factory=list, description="the principals, when no table lists them")
    default: str = Field(description="the principal of an episode nobody set one for (manual probing)")
    time_zone: str = Field("UTC", description="IANA zone the instructions show the date and time in")
    customers: str | None = Field(None, description="staff: how a customer is identified before acting for them")
    scope: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "table -> the column holding its owner, or a SQL predicate using :principal: rows others cannot see"
        ),
    )

    def predicate(self, table: str) -> str | None:
        """The SQL condition a row of `table` must meet to be visible to `:principal`."""
        rule = self.scope.get(table)
        if rule is None:
            return None
        return f"{rule} = :principal" if re.fullmatch(NAME_PATTERN[1:-1], rule) else rule


class UnenforcedRule(StrictModel):
    """A policy rule the tools deliberately do not enforce, so tasks grade whether the agent follows it."""

    id: str = Field(pattern=NAME_PATTERN)
    rule: str = Field(description="the rule as the policy states it")
    tools: list[str] = Field(default_factory=list, description="the tools whose calls the rule governs")


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


@dataclass(frozen=True)
class RowsResult:
    """A search's result: the matching rows of `entity` (at most `limit`) and their count."""

    entity: str
    limit: int


@dataclass(frozen=True)
class RowResult:
    """One row of `entity`."""

    entity: str


@dataclass(frozen=True)
class FieldsResult:
    """A custom tool's named fields."""

    fields: dict[str, ReturnField]


ToolResult = RowsResult | RowResult | FieldsResult
Problems = list[tuple[str, str]]


class BaseTool(StrictModel):
    """What every kind of tool has. Each kind below adds its own fields and rules."""

    name: str = Field(pattern=NAME_PATTERN)
    effect: Effect
    title: str | None = None
    description: str
    params: dict[str, Param] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)
    annotations: Annotations = Field(default_factory=Annotations)
    examples: list[Example] = Field(
        default_factory=list, description="calls for the verifier, each optionally with what it must do"
    )
    reaches_others: bool = Field(
        False, description="by design changes other principals' rows (sending mail lands in the recipients' mailboxes)"
    )
    intent: Intent | None = Field(
        None, description="who asks for it, how a person asks, what they want to hear back (tasks are written from it)"
    )

    # The SQL of rules and `then` may use `:id` (the row the call creates or changes) only where there is one.
    binds_id: ClassVar[bool] = False

    @property
    def entity_name(self) -> str | None:
        """The table the tool is about, if any."""
        return None

    @property
    def key_param(self) -> str | None:
        """The param naming an existing row (get, update, delete)."""
        return None

    @property
    def changed_tables(self) -> list[str]:
        """Every table a successful call may change, as the spec declares it."""
        return []

    @property
    def then_sql(self) -> list[str]:
        return []

    @property
    def read_only_override(self) -> bool | None:
        return None

    def hints(self) -> Hints:
        """The MCP annotation hints: derived from the effect by the runtime, overridable in the spec."""
        return effect_hints(
            self.effect,
            read_only=self.read_only_override,
            destructive=self.annotations.destructive,
            idempotent=self.annotations.idempotent,
        )

    def result(self, spec: EnvironmentSpec) -> ToolResult:
        raise NotImplementedError

    def agent_description(self, spec: EnvironmentSpec) -> str:
        """The description the server lists: the spec's, plus what the kind adds (a list's paging)."""
        return self.description

    def sql_names(self) -> set[str]:
        """The named parameters its SQL may use: every param, `:now`, `:principal` (the episode's principal,
        null on a server without one), and `:id` where the kind has one."""
        return set(self.params) | {"now", "principal"} | ({"id"} if self.binds_id else set())

    def checked_ref(self, spec: EnvironmentSpec, pname: str) -> str | None:
        """The 'table.column' a param's value must exist in before the call runs (the generated
        `db.require`): its own `ref`, or for writes the foreign key of the column it fills."""
        return self.params[pname].ref

    def problems(self, spec: EnvironmentSpec, at: str, handler_names: set[str] | None) -> Problems:
        """Cross-field checks a schema cannot express, located under `at`."""
        problems: Problems = []
        for pname, param in self.params.items():
            if param.ref and (err := _check_ref(param.ref, spec)):
                problems.append((f"{at}.params.{pname}", err))
            if pname in RESERVED_PARAMS and (pname == "principal" or isinstance(self, SearchTool)):
                problems.append((f"{at}.params.{pname}", f"{pname!r} is reserved (the runtime or paging binds it)"))
            if param.items and param.match != "exact":
                problems.append((f"{at}.params.{pname}.match", "an array param matches any of its items exactly"))
            if not param.items and param.type == "string" and LIST_AS_TEXT.search(param.description):
                problem = "a list is an array param (items: true), not comma- or semicolon-separated text"
                problems.append((f"{at}.params.{pname}", problem))
        known = self.sql_names()
        for j, rule in enumerate(self.rules):
            for name in _PLACEHOLDER.findall(rule.reject_if):
                if name not in known:
                    problems.append((f"{at}.rules.{j}.reject_if", f"unknown SQL parameter :{name}"))
            unknown_args = set(rule.example) - set(self.params) - {"principal"}
            if unknown_args:
                problems.append((f"{at}.rules.{j}.example", f"unknown params {sorted(unknown_args)}"))
            try:
                placeholders = {name for _, name, _, _ in string.Formatter().parse(rule.message) if name}
            except ValueError as exc:
                problems.append((f"{at}.rules.{j}.message", f"bad placeholder: {exc}"))
                continue
            if placeholders - known:
                problems.append((f"{at}.rules.{j}.message", f"unknown placeholders {sorted(placeholders - known)}"))
        for j, sql in enumerate(self.then_sql):
            for name in _PLACEHOLDER.findall(sql):
                if name not in known:
                    problems.append((f"{at}.then.{j}", f"unknown SQL parameter :{name}"))
        for j, example in enumerate(self.examples):
            unknown_args = set(example.args) - set(self.params) - {"principal"}
            if unknown_args:
                problems.append((f"{at}.examples.{j}", f"unknown params {sorted(unknown_args)}"))
            if example.expect is not None:
                problems += example.expect.problems(spec, f"{at}.examples.{j}.expect")
        return problems


class EntityTool(BaseTool):
    """A generated tool over one entity table."""

    entity: str

    @property
    def entity_name(self) -> str:
        return self.entity

    def result(self, spec: EnvironmentSpec) -> ToolResult:
        return RowResult(self.entity)

    def problems(self, spec: EnvironmentSpec, at: str, handler_names: set[str] | None) -> Problems:
        problems = super().problems(spec, at, handler_names)
        entity = spec.entities.get(self.entity)
        if entity is None:
            return [*problems, (f"{at}.entity", f"no entity {self.entity!r}")]
        return problems + self.entity_problems(entity, at)

    def entity_problems(self, entity: Entity, at: str) -> Problems:
        """Every param other than the key names a column of the entity."""
        key = self.key_param
        return [
            (f"{at}.params.{pname}", f"no column {param.column or pname!r} in {self.entity!r}")
            for pname, param in self.params.items()
            if pname != key and (param.column or pname) not in entity.columns
        ]


class KeyedTool(EntityTool):
    """A tool naming one existing row by its `key` param."""

    key: str = Field(description="the param naming the row")

    @property
    def key_param(self) -> str:
        return self.key

    def checked_ref(self, spec: EnvironmentSpec, pname: str) -> str | None:
        """The key param must name an existing row of the entity."""
        return f"{self.entity}.{self.key_column}" if pname == self.key else super().checked_ref(spec, pname)

    @property
    def key_column(self) -> str:
        """The entity column the key param is matched against."""
        param = self.params.get(self.key)
        return (param.column if param else None) or self.key

    def entity_problems(self, entity: Entity, at: str) -> Problems:
        problems = super().entity_problems(entity, at)
        if self.key not in self.params:
            problems.append((f"{at}.key", f"key {self.key!r} is not a param"))
        elif self.key_column not in entity.columns:
            problems.append((f"{at}.key", f"no column {self.key_column!r} in {self.entity!r}"))
        return problems


class WriteTool(EntityTool):
    """Create, update and delete: they change their entity and may run extra SQL after."""

    then: list[str] = Field(default_factory=list, description="extra SQL run after the main write")
    writes: list[str] = Field(default_factory=list, description="tables changed besides the entity")

    binds_id: ClassVar[bool] = True

    @property
    def changed_tables(self) -> list[str]:
        return [self.entity, *(t for t in self.writes if t != self.entity)]

    @property
    def then_sql(self) -> list[str]:
        return self.then

    def checked_ref(self, spec: EnvironmentSpec, pname: str) -> str | None:
        ref = super().checked_ref(spec, pname)
        if ref or pname == self.key_param:
            return ref
        column = spec.entities[self.entity].columns.get(self.params[pname].column or pname)
        return column.ref if column else None

    def problems(self, spec: EnvironmentSpec, at: str, handler_names: set[str] | None) -> Problems:
        problems = super().problems(spec, at, handler_names)
        return problems + [(f"{at}.writes", f"no entity {t!r}") for t in self.writes if t not in spec.entities]


def _set_problems(tool: CreateTool | UpdateTool, entity: Entity, at: str) -> Problems:
    problems: Problems = []
    for column in tool.set:
        if column not in entity.columns:
            problems.append((f"{at}.set.{column}", f"no column {column!r} in {tool.entity!r}"))
        if column in tool.params:
            problems.append((f"{at}.set.{column}", "a column is either a param or a fixed value, not both"))
    return problems


class SearchTool(EntityTool):
    """Rows of `entity` matching every given filter param, in `order` (default: primary key), one page
    at a time: `limit` rows by default (the caller may ask for up to 200), `cursor` for the next page."""

    effect: Literal["search"]
    limit: int = Field(25, ge=1, le=200, description="rows per page unless the caller gives `limit`")
    order: str | None = Field(None, description="SQL ORDER BY over the entity's columns; default: the primary key")
    order_description: str | None = Field(None, description="the order in words, e.g. 'newest first'")

    def order_sql(self, spec: EnvironmentSpec) -> str:
        """The ORDER BY of every page: the declared order, then the primary key, so pages never overlap.
        Opaque ids carry no order, so there the default (and the tie-break) is creation order (rowid)."""
        pk = "rowid" if spec.ids == "opaque" else spec.entities[self.entity].primary_key
        return f"{self.order}, {pk}" if self.order else pk

    def listing_note(self, spec: EnvironmentSpec) -> str:
        """What the description adds so an agent knows how the list matches, orders and pages."""
        how = {
            "exact": "equals",
            "contains": "contains (case-insensitive)",
            "gte": "at or after/above",
            "lte": "at or before/below",
        }
        filters = [
            f"{name} {'is any of the given values' if p.items else how[p.match]}" for name, p in self.params.items()
        ]
        default = "oldest first" if spec.ids == "opaque" else f"by {spec.entities[self.entity].primary_key}"
        order = self.order_description or default
        parts = [f"Matching: {'; '.join(filters)}." if filters else ""]
        parts.append(
            f"Ordered {order}. Returns {self.limit} rows per page by default (limit: up to 200) with total and "
            "has_more; pass the returned cursor to get the next page."
        )
        return " ".join(p for p in parts if p)

    def result(self, spec: EnvironmentSpec) -> ToolResult:
        return RowsResult(self.entity, self.limit)

    def agent_description(self, spec: EnvironmentSpec) -> str:
        return f"{self.description.strip()}\n\n{self.listing_note(spec)}"

    def entity_problems(self, entity: Entity, at: str) -> Problems:
        problems = [(where, f"{what} to filter on") for where, what in super().entity_problems(entity, at)]
        if self.order is not None:
            for term in self.order.split(","):
                column = term.split()[0] if term.split() else ""
                if (
                    column not in entity.columns
                    or len(term.split()) > 2
                    or (len(term.split()) == 2 and term.split()[1].upper() not in ("ASC", "DESC"))
                ):
                    problems.append(
                        (f"{at}.order", f"{term.strip()!r} is not '<column> [ASC|DESC]' of {self.entity!r}")
                    )
        return problems


class GetTool(KeyedTool):
    """The one row of `entity` whose key column equals the `key` param."""

    effect: Literal["get"]


class CreateTool(WriteTool):
    """Inserts one row: params fill their columns, `set` fixes others, the primary key comes from `id_format`."""

    effect: Literal["create"]
    set: dict[str, Any] = Field(default_factory=dict, description="fixed column values")

    def entity_problems(self, entity: Entity, at: str) -> Problems:
        problems = super().entity_problems(entity, at) + _set_problems(self, entity, at)
        for cname, col in entity.columns.items():
            given = cname in self.params or cname in self.set or cname == entity.primary_key
            if not given and not col.nullable and col.default is None:
                problems.append((at, f"create cannot fill required column {self.entity}.{cname}"))
        return problems


class UpdateTool(WriteTool, KeyedTool):
    """Changes the row the key names: required params overwrite, optional ones only when given."""

    effect: Literal["update"]
    set: dict[str, Any] = Field(default_factory=dict, description="fixed column values")

    def entity_problems(self, entity: Entity, at: str) -> Problems:
        return super().entity_problems(entity, at) + _set_problems(self, entity, at)


class DeleteTool(WriteTool, KeyedTool):
    """Removes the row the key names and returns it."""

    effect: Literal["delete"]


class CustomTool(BaseTool):
    """Behaviour CRUD cannot express: a function in handlers.py, called with the params."""

    effect: Literal["custom"]
    handler: str = Field(description="function name in handlers.py")
    returns: Returns
    then: list[str] = Field(default_factory=list, description="extra SQL run after the handler")
    writes: list[str] = Field(default_factory=list, description="tables the handler changes; empty: read-only")

    @property
    def changed_tables(self) -> list[str]:
        return list(self.writes)

    @property
    def then_sql(self) -> list[str]:
        return self.then

    @property
    def read_only_override(self) -> bool | None:
        return True if not self.writes else None

    def result(self, spec: EnvironmentSpec) -> ToolResult:
        if self.returns.entity is not None:
            return RowResult(self.returns.entity)
        return FieldsResult(self.returns.fields or {})

    def problems(self, spec: EnvironmentSpec, at: str, handler_names: set[str] | None) -> Problems:
        problems = super().problems(spec, at, handler_names)
        if handler_names is not None and self.handler not in handler_names:
            problems.append((f"{at}.handler", f"handlers.py has no function {self.handler!r}"))
        if self.returns.entity and self.returns.entity not in spec.entities:
            problems.append((f"{at}.returns.entity", f"no entity {self.returns.entity!r}"))
        for fname, field in (self.returns.fields or {}).items():
            if field.type == "array" and not field.items:
                problems.append((f"{at}.returns.fields.{fname}", "arrays say what their items are"))
            if field.items and field.items not in spec.entities and field.items not in TYPES:
                problems.append((f"{at}.returns.fields.{fname}.items", f"{field.items!r} is no entity or column type"))
        problems += [(f"{at}.writes", f"no entity {t!r}") for t in self.writes if t not in spec.entities]
        return problems


ToolSpec = Annotated[
    SearchTool | GetTool | CreateTool | UpdateTool | DeleteTool | CustomTool, Field(discriminator="effect")
]
ToolKind = SearchTool | GetTool | CreateTool | UpdateTool | DeleteTool | CustomTool
KINDS: tuple[str, ...] = get_args(Effect)


class EnvironmentSpec(StrictModel):
    """A whole environment: identity, frozen clock, entities, seed, tools."""

    name: str = Field(pattern=NAME_PATTERN)
    domain: str = Field(pattern=NAME_PATTERN)
    title: str
    description: str
    version: str = "1.0.0"
    now: datetime = Field(description="the frozen clock; nothing reads the wall clock")
    seed_number: int = 0
    ids: Literal["sequential", "opaque"] = Field(
        "sequential",
        description="opaque: ids are a prefix and a short hash (pat_k3x9qm), seeded and new alike, so no id can "
        "be guessed from a neighbour's; the seed builder still writes id_format's form, and loading maps it",
    )
    id_namespace: str | None = Field(
        None,
        description="with ids: opaque, the name ids are hashed under (default: the spec's name); a renamed "
        "copy of a spec names the original here to keep its ids",
    )
    tags: list[str] = Field(
        default_factory=list, description="e.g. 'heldout' keeps a server out of default task sampling"
    )
    source: Source | None = Field(
        None, description="the API document an import came from (title, version, provider); none: written here"
    )
    principal: Principal | None = Field(None, description="whom the agent acts for; none: nobody in particular")
    policy: str = Field("", description="the policy (policy.md beside the spec): what the agent may and may not do")
    unenforced_rules: list[UnenforcedRule] = Field(
        default_factory=list, description="policy rules the tools leave to the agent (tasks grade them)"
    )
    entities: dict[str, Entity]
    seed: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    tools: list[ToolSpec]
    scenarios: list[Scenario] = Field(default_factory=list, description="multi-call behaviour with expectations")
    equivalent_mutants: list[EquivalentMutant] = Field(
        default_factory=list, description="seeded bugs that cannot change behaviour, each with the reason"
    )
    unlisted: dict[str, str] = Field(
        default_factory=dict,
        description="table -> why no list reaches all its rows (an imported API that cannot list them); "
        "the verifier then reports the table instead of failing. Built-in specs leave it empty",
    )

    @property
    def ids_namespace(self) -> str | None:
        """The namespace of its opaque ids, or None when ids are sequential."""
        return (self.id_namespace or self.name) if self.ids == "opaque" else None

    @property
    def now_iso(self) -> str:
        return self.now.isoformat().replace("+00:00", "Z")

    def tool(self, name: str) -> ToolKind:
        return next(t for t in self.tools if t.name == name)


def _problem(error: ErrorDetails) -> tuple[str, str]:
    """A pydantic error as (field path, message), the path as the spec author wrote it: without the
    tool kind pydantic inserts after `tools.N`, and ending in `effect` when the kind is the problem."""
    parts = [str(p) for p in error["loc"]]
    message = error["msg"]
    if parts[:1] == ["tools"] and len(parts) > 2 and parts[2] in KINDS:
        del parts[2]
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        parts.append("effect")
        tag = error.get("ctx", {}).get("tag")
        message = f"{'missing' if tag is None else repr(tag) + ' is no tool kind'}: use one of {', '.join(KINDS)}"
        if tag == "read":
            message += " (`read` is `search` without a key, `get` with one)"
    return ".".join(parts), message


def _check_ref(ref: str, spec: EnvironmentSpec) -> str | None:
    table, _, column = ref.partition(".")
    if table not in spec.entities:
        return f"ref {ref!r}: no entity {table!r}"
    if column not in spec.entities[table].columns:
        return f"ref {ref!r}: entity {table!r} has no column {column!r}"
    return None


_PLACEHOLDER = re.compile(r"(?<!:):([a-z_][a-z0-9_]*)")
# The SQLite keywords that cannot stand bare as a table or column name in the statements generated code writes
# (CREATE, INSERT, SELECT ... WHERE/ORDER BY/LIKE, UPDATE ... RETURNING, JOIN ... ON): found by trying each of
# SQLite's 147 keywords in them (3.40). The others (`key`, `action`, `plan`, ...) SQLite accepts as names. The
# spec check refuses these; the OpenAPI importer renames them (`default` -> `default_value`).
_SQL_KEYWORD_LIST = """
add all alter and as autoincrement between case cast check collate commit constraint create current_date
current_time current_timestamp default deferrable delete distinct drop else escape except exists foreign from
group having if in index insert intersect into is isnull join limit not nothing notnull null on or order primary
raise references returning select set table then to transaction union unique update using values when where
"""
SQL_KEYWORDS = frozenset(_SQL_KEYWORD_LIST.split())


def semantic_problems(spec: EnvironmentSpec, handler_names: set[str] | None = None) -> list[tuple[str, str]]:
    """Cross-field checks a schema cannot express: refs resolve, keys exist, SQL names known params."""
    problems: list[tuple[str, str]] = []
    for tname, entity in spec.entities.items():
        if not re.match(NAME_PATTERN, tname):
            problems.append((f"entities.{tname}", "table names are lower_snake_case"))
        if tname in SQL_KEYWORDS:
            problems.append((f"entities.{tname}", f"{tname!r} is an SQL keyword; name the table otherwise"))
        for cname, col in entity.columns.items():
            if cname in SQL_KEYWORDS:
                where = f"entities.{tname}.columns.{cname}"
                problems.append((where, f"{cname!r} is an SQL keyword; name the column otherwise ({cname}_value)"))
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
        problems += tool.problems(spec, at, handler_names)
    problems += intent_problems(spec)
    problems += principal_problems(spec)
    problems += [(f"unlisted.{t}", f"no entity {t!r}") for t in spec.unlisted if t not in spec.entities]
    problems += seed_problems(spec)
    problems += scenario_problems(spec)
    return problems


def is_goal_eligible(tool: ToolKind) -> bool:
    """A tool a task may end in: every write. Its spec must say who asks for it and how (`intent`)."""
    return not tool.hints().read_only_hint


def result_fields(spec: EnvironmentSpec, tool: ToolKind) -> set[str]:
    """The output fields a person can ask to hear back: a row's columns, a custom tool's fields (and the
    columns of the rows an array field holds)."""
    result = tool.result(spec)
    if isinstance(result, RowsResult | RowResult):
        return set(spec.entities[result.entity].columns) if result.entity in spec.entities else set()
    names = set(result.fields)
    for field in result.fields.values():
        if field.items in spec.entities:
            names |= set(spec.entities[field.items].columns)
    return names


def _is_id(entity: Entity, column: str) -> bool:
    """A key or a reference a person would not say: a natural key (a city's name) is `user_known`."""
    col = entity.columns[column]
    return (column == entity.primary_key or col.ref is not None) and not col.user_known


def _slot_problem(spec: EnvironmentSpec, name: str, follow: str | None, ref: str | None) -> str | None:
    """Why a slot naming `name` (a column or a param, whose value lies in `ref`) and following `follow` cannot
    be said; None when it can."""
    if follow is None:
        return None
    if ref is None:
        return f"{name!r} references no table, so {name}.{follow} cannot be followed"
    target = ref.partition(".")[0]
    if target not in spec.entities:
        return None
    entity = spec.entities[target]
    if follow not in entity.columns:
        return f"{target!r} (referenced by {name!r}) has no column {follow!r}"
    if _is_id(entity, follow):
        further = (entity.columns[follow].ref or "").partition(".")[0]
        if further in spec.entities and spec.entities[further].refer and further != target:
            return None  # said as its own table names the row ('{section_id.course_id}': 'HIST 210')
        return f"{target}.{follow} is an id, which no person says; follow it to a column they know"
    return None


def _coded(column: Column | Param | None) -> list[str] | None:
    """The values a person would otherwise hear as raw codes: an enum's, or `true`/`false`; None for any
    other value (a name, a date, a number is said as it is)."""
    if column is None:
        return None
    if column.enum:
        return list(column.enum)
    return ["true", "false"] if column.type == "boolean" else None


def _followed(spec: EnvironmentSpec, ref: str | None, follow: str) -> tuple[Column | None, Words]:
    """The column `follow` of the table `ref` points into, and that table's words."""
    target = spec.entities.get((ref or "").partition(".")[0])
    if target is None:
        return None, {}
    return target.columns.get(follow), target.words


def _words_problem(slot_text: str, name: str, values: list[str] | None, words: dict[str, str] | None) -> str | None:
    """Why a slot said through `words` would put a raw code in a person's mouth; None when every value has words."""
    if values is None:
        return None
    missing = [v for v in values if v not in (words or {})]
    if not missing:
        return None
    return (
        f"{slot_text}: a person does not say {missing[0]!r}; give `words: {{{name}: {{{missing[0]}: ...}}}}` "
        f"for every value ({', '.join(missing)} missing): how a person says each one"
    )


def humanized(value: Any) -> str:
    """A coded value as words when nobody wrote better ones: 'not_received' -> 'not received', 'inStock' ->
    'in stock', True -> 'yes'; an all-capitals code ('USD') stays."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value)
    if text.isupper():
        return text
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return " ".join(t.lower() for t in re.split(r"[_\-\s]+", spaced) if t)


def _coded_field(field: Any) -> list[str] | None:
    """`_coded` of a raw (not yet validated) column or param document."""
    if not isinstance(field, dict):
        return None
    if field.get("enum"):
        return [str(v) for v in field["enum"]]
    return ["true", "false"] if field.get("type") == "boolean" else None


def with_default_words(data: dict[str, Any]) -> dict[str, Any]:
    """A spec document with `words` for every coded `say` or `refer` slot that has none, the values humanized
    ('not_received' -> 'not received'): what `import openapi` and `propose` fall back on, so a derived or
    proposed spec never puts a raw code in a person's mouth. Words already written are kept."""
    found = data.get("entities")
    entities: dict[str, Any] = found if isinstance(found, dict) else {}

    def fill(words: dict[str, Any], key: str, values: list[str] | None) -> None:
        if values is None:
            return
        said = words.setdefault(key, {})
        for value in values:
            said.setdefault(value, humanized(True if value == "true" else False if value == "false" else value))

    def target(ref: Any) -> dict[str, Any]:
        found = entities.get(str(ref or "").partition(".")[0])
        return found if isinstance(found, dict) else {}

    for entity in entities.values():
        if not isinstance(entity, dict):
            continue
        columns = entity.get("columns") or {}
        for phrasing in entity.get("refer") or []:
            for slot in _safe_slots(phrasing):
                column = columns.get(slot.name)
                if slot.follow is None:
                    fill(entity.setdefault("words", {}), slot.name, _coded_field(column))
                elif isinstance(column, dict) and (other := target(column.get("ref"))):
                    fill(
                        other.setdefault("words", {}),
                        slot.follow,
                        _coded_field((other.get("columns") or {}).get(slot.follow)),
                    )
    for tool in data.get("tools") or []:
        intent = tool.get("intent") if isinstance(tool, dict) else None
        if not isinstance(intent, dict):
            continue
        params = tool.get("params") or {}
        entity = entities.get(tool.get("entity") or "")
        entity = entity if isinstance(entity, dict) else {}
        for phrasing in intent.get("say") or []:
            for slot in _safe_slots(phrasing):
                param = params.get(slot.name)
                if not isinstance(param, dict):
                    continue
                column_name = param.get("column") or slot.name
                column = (entity.get("columns") or {}).get(column_name)
                if slot.follow is not None:
                    keyed = slot.name == tool.get("key")
                    other = entity if keyed else target(param.get("ref") or (column or {}).get("ref"))
                    if other:
                        fill(
                            other.setdefault("words", {}),
                            slot.follow,
                            _coded_field((other.get("columns") or {}).get(slot.follow)),
                        )
                    continue
                values = _coded_field(param) or (_coded_field(column) if slot.name != tool.get("key") else None)
                if values is None or slot.name in (intent.get("words") or {}):
                    continue
                if column is not None and column_name in (entity.get("words") or {}):
                    continue
                fill(intent.setdefault("words", {}), slot.name, values)
    return data


def _safe_slots(phrasing: Any) -> list[Any]:
    """The slots of a phrasing, or none when it is malformed (the check names that problem itself)."""
    try:
        return slots(phrasing) if isinstance(phrasing, str) else []
    except ValueError:
        return []


def words_problems(spec: EnvironmentSpec) -> Problems:
    """`words` word values that exist: a table's name its columns, a tool's its params (or `param.column`),
    and every value they word is one the column or param can hold."""
    problems: Problems = []
    for tname, entity in spec.entities.items():
        for column, said in entity.words.items():
            at = f"entities.{tname}.words.{column}"
            values = _coded(entity.columns.get(column))
            if column not in entity.columns:
                problems.append((at, f"{tname!r} has no column {column!r}"))
            elif values is None and entity.columns[column].type != "string":
                problems.append((at, f"{column!r} is neither an enum nor a boolean: its values are said as they are"))
            elif values is None:
                continue  # a code column without an enum (meeting days 'MWF'): its codes, said as people say them
            else:
                problems += [
                    (f"{at}.{v}", f"{v!r} is not a value of {column!r} ({', '.join(values)})")
                    for v in said
                    if v not in values
                ]
    for i, tool in enumerate(spec.tools):
        for name in tool.intent.words if tool.intent else {}:
            head = name.partition(".")[0]
            if head not in tool.params:
                problems.append((f"tools.{i}({tool.name}).intent.words.{name}", f"{tool.name} has no param {head!r}"))
    return problems


def _say_values(spec: EnvironmentSpec, tool: ToolKind, name: str, follow: str | None) -> tuple[list[str] | None, Words]:
    """The coded values a `say` slot can take, and the table words that serve it when the intent has none."""
    if follow is not None:
        column, words = _followed(spec, tool.checked_ref(spec, name), follow)
        return _coded(column), {f"{name}.{follow}": words.get(follow, {})}
    param = tool.params[name]
    values = _coded(param)
    entity = spec.entities.get(tool.entity_name or "")
    column_name = param.column or name
    if entity is not None and name != tool.key_param and column_name in entity.columns:
        return values or _coded(entity.columns[column_name]), {name: entity.words.get(column_name, {})}
    return values, {}


def intent_problems(spec: EnvironmentSpec) -> Problems:
    """Intents name what exists: `say` slots the tool's params, `hear` its output fields, `refer` slots the
    table's columns (or a column of a row they reference); a slot holding a code (an enum, a boolean) has
    `words` for every value, so no person is made to say `pass_fail` or `true`."""
    problems: Problems = words_problems(spec)
    for tname, entity in spec.entities.items():
        for j, phrasing in enumerate(entity.refer):
            at = f"entities.{tname}.refer.{j}"
            try:
                found = slots(phrasing)
            except ValueError as exc:
                problems.append((at, str(exc)))
                continue
            if not found:
                problems.append((at, "a reference names the row by at least one {column}"))
            for slot in found:
                column = entity.columns.get(slot.name)
                if column is None:
                    problems.append((at, f"{slot.text}: {tname!r} has no column {slot.name!r}"))
                elif slot.follow is None and _is_id(entity, slot.name):
                    problems.append((at, f"{slot.text} is an id; name a column a person knows ({{{slot.name}.name}})"))
                elif why := _slot_problem(spec, slot.name, slot.follow, column.ref):
                    problems.append((at, f"{slot.text}: {why}"))
                elif slot.follow is not None:
                    target, words = _followed(spec, column.ref, slot.follow)
                    if why := _words_problem(slot.text, slot.follow, _coded(target), words.get(slot.follow)):
                        problems.append((at, f"{why} (in the referenced table's words)"))
                elif why := _words_problem(slot.text, slot.name, _coded(column), entity.words.get(slot.name)):
                    problems.append((at, why))
    for i, tool in enumerate(spec.tools):
        at = f"tools.{i}({tool.name}).intent"
        if tool.intent is None:
            if is_goal_eligible(tool):
                problem = "a write needs an intent: who asks for it (asks: user, customer or internal) and how"
                problems.append((at, f"{problem} (factory/specs/README.md, Intents)"))
            continue
        for j, phrasing in enumerate(tool.intent.say):
            for slot in slots(phrasing):
                if slot.name not in tool.params:
                    problems.append((f"{at}.say.{j}", f"{slot.text}: {tool.name} has no param {slot.name!r}"))
                elif why := _slot_problem(spec, slot.name, slot.follow, tool.checked_ref(spec, slot.name)):
                    problems.append((f"{at}.say.{j}", f"{slot.text}: {why}"))
                else:
                    key = f"{slot.name}.{slot.follow}" if slot.follow else slot.name
                    values, table_words = _say_values(spec, tool, slot.name, slot.follow)
                    said = tool.intent.words.get(key) or table_words.get(key)
                    if why := _words_problem(slot.text, key, values, said):
                        problems.append((f"{at}.say.{j}", why))
        fields = result_fields(spec, tool)
        for field in tool.intent.hear:
            # 'capacity - seats_booked': the seats left, a difference of two fields the tool returns
            parts = re.fullmatch(r"(\w+) - (\w+)", field)
            for name in parts.groups() if parts else [field]:
                if name not in fields:
                    problems.append((f"{at}.hear.{field}", f"{tool.name} returns no field {name!r}"))
    return problems


def scenario_problems(spec: EnvironmentSpec) -> Problems:
    """Scenario steps name known tools and params, and refer only to earlier named steps."""
    problems: Problems = []
    tools = {t.name: t for t in spec.tools}
    names: set[str] = set()
    for i, scenario in enumerate(spec.scenarios):
        at = f"scenarios.{i}({scenario.name})"
        if scenario.name in names:
            problems.append((at, f"duplicate scenario name {scenario.name!r}"))
        names.add(scenario.name)
        earlier: set[str] = set()
        for j, step in enumerate(scenario.steps):
            where = f"{at}.steps.{j}"
            tool = tools.get(step.tool)
            if tool is None:
                problems.append((f"{where}.tool", f"no tool {step.tool!r}"))
            elif unknown := set(step.args) - set(tool.params) - {"principal"}:
                problems.append((f"{where}.args", f"unknown params {sorted(unknown)} of {step.tool}"))
            if step.expect is not None:
                problems += step.expect.problems(spec, f"{where}.expect")
            text = json.dumps([step.args, step.expect.model_dump() if step.expect else None])
            for ref in REFERENCE.findall(text):
                if ref[0] not in earlier:
                    problems.append((where, f"${{{ref[0]}{ref[1]}}} refers to no earlier named step"))
            if step.name:
                if step.name in earlier:
                    problems.append((f"{where}.name", f"duplicate step name {step.name!r}"))
                earlier.add(step.name)
    return problems


def identification_problems(spec: EnvironmentSpec) -> Problems:
    """An identification rule (and the staff principal's `customers` line) names only what some table holds:
    a policy asking for an order number no row has can be met by no agent, and tasks could not hold it back."""
    tables = {name: list(entity.columns) for name, entity in spec.entities.items()}
    texts = [(f"unenforced_rules.{j}.rule", r.rule) for j, r in enumerate(spec.unenforced_rules)]
    if spec.principal is not None and spec.principal.customers:
        texts.append(("principal.customers", spec.principal.customers))
    return [
        (where, f"identifies by {part!r}, which no column of any table holds")
        for where, text in texts
        if is_identification_rule(text) or where == "principal.customers"
        for part in unresolved(text, tables)
    ]


def principal_problems(spec: EnvironmentSpec) -> Problems:
    """The principal names real tables and columns, its default exists, and unenforced rules name tools."""
    problems: Problems = []
    names = {t.name for t in spec.tools}
    for j, unenforced in enumerate(spec.unenforced_rules):
        problems += [(f"unenforced_rules.{j}.tools", f"no tool {t!r}") for t in unenforced.tools if t not in names]
    problems += identification_problems(spec)
    principal = spec.principal
    if principal is None:
        if spec.unenforced_rules and not spec.policy:
            problems.append(("policy", "unenforced rules need a policy that states them"))
        return problems
    if (principal.table is None) != (principal.column is None):
        problems.append(("principal", "give both table and column, or neither (then values)"))
    elif principal.table is not None and (err := _check_ref(f"{principal.table}.{principal.column}", spec)):
        problems.append(("principal.table", err))
    elif principal.table is not None and principal.column is not None:
        known = {row.get(principal.column) for row in spec.seed.get(principal.table, [])}
        if principal.default not in known:
            problems.append(
                ("principal.default", f"{principal.default!r} is not a {principal.table}.{principal.column}")
            )
    elif principal.default not in principal.values:
        problems.append(("principal.default", f"{principal.default!r} is not one of values {principal.values}"))
    if principal.kind == "staff" and not principal.customers:
        problems.append(("principal.customers", "staff serve customers: say how a customer is identified"))
    try:
        ZoneInfo(principal.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        problems.append(("principal.time_zone", f"{principal.time_zone!r} is no IANA time zone"))
    for i, tool in enumerate(spec.tools):
        for column, value in (getattr(tool, "set", None) or {}).items():
            if not (isinstance(value, str) and value.startswith(PRINCIPAL + ".")):
                continue
            field = value[len(PRINCIPAL) + 1 :]
            if principal.table is None or field not in spec.entities[principal.table].columns:
                where = f"a column of {principal.table!r}" if principal.table else "a principal table (table/column)"
                problems.append((f"tools.{i}({tool.name}).set.{column}", f"{value!r} needs {where}"))
    for table, rule in principal.scope.items():
        if table not in spec.entities:
            problems.append((f"principal.scope.{table}", f"no entity {table!r}"))
        elif re.fullmatch(NAME_PATTERN[1:-1], rule) and rule not in spec.entities[table].columns:
            problems.append((f"principal.scope.{table}", f"no column {rule!r} in {table!r}"))
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
            problems += [
                (f"{at}.{column}", f"no column {column!r} in {table!r}") for column in set(row) - set(entity.columns)
            ]
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


# libyaml's safe loader where PyYAML was built with it: the same documents, ~5x faster; an imported spec
# of a large API is a megabyte of YAML, and a build of hundreds reads each one twice.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """YAML that refuses a key given twice in one mapping: PyYAML keeps the last silently, so a block pasted
    twice (a second `intent:` under a tool) would pass every check with half of it ignored."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_document(path: Path) -> Any:
    """Parse a YAML or JSON file, naming the file and line in the error."""
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=_UniqueKeyLoader)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SpecError(str(path), [("", f"not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}")]) from exc


def parse_spec(data: Any, source: str, handler_names: set[str] | None = None) -> EnvironmentSpec:
    """Validate a spec document; raise SpecError with every problem found."""
    try:
        spec = EnvironmentSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(source, [_problem(e) for e in exc.errors()]) from exc
    problems = semantic_problems(spec, handler_names)
    if problems:
        raise SpecError(source, problems)
    return spec
