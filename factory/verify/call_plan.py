"""The calls the verifier makes, planned from the spec and the seed before the server starts.

Valid calls come from the spec's `examples` when it has them; otherwise they are built from the seed:
key and `ref` params take existing ids, enums take their values, other params copy a seed row's
column (so related values stay consistent) or a plausible default. Candidates are screened against
the spec's own business rules on a local copy of the seed, so the server is asked only about calls a
rule should accept; a handler may still reject some, which is why several are kept.

Invalid calls are derived from a valid one: a required argument dropped, an argument of the wrong
JSON type, an unknown id, and each rule's `example`, whose rejection message is known exactly.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from envfarm.factory.spec import CreateTool, EnvironmentSpec, KeyedTool, Param, SearchTool, ToolKind, WriteTool
from envfarm.servers.runtime.database import Database, Rejected, comma_joined, json_array
from envfarm.servers.runtime.episodes import build_seed

MAX_CANDIDATES = 600
KEEP_CANDIDATES = 5
MAX_LIST_CALLS = 1000  # per list tool in the paging check
UNKNOWN_ID = "zz_unknown_0000"
InvalidCheck = Literal["missing_argument", "wrong_type", "unknown_id", "rule"]


@dataclass(frozen=True)
class InvalidCall:
    """A call that must be refused with `isError`, leaving the state as it was."""

    check: InvalidCheck
    arguments: dict[str, Any]
    param: str | None = None
    message: str | None = None

    @property
    def expectation(self) -> str:
        if self.message is not None:
            return f"isError with the rule's message: {self.message!r}"
        if self.check == "unknown_id":
            return f"isError rejecting the unknown {self.param} (not a server error)"
        return f"isError naming the argument {self.param!r}"


@dataclass
class ToolPlan:
    """What to call for one tool: calls that must all succeed, or candidates of which one must."""

    tool: ToolKind
    must_pass: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)


def ref_of(spec: EnvironmentSpec, tool: ToolKind, name: str) -> tuple[str, str] | None:
    """The (table, column) a param's value must exist in, exactly as the generated code checks it."""
    ref = tool.checked_ref(spec, name)
    if ref is None:
        return None
    table, _, column_name = ref.partition(".")
    return table, column_name


def coerce(param: Param, value: Any) -> Any:
    """The value a tool function receives for a JSON argument (pydantic's lax conversion)."""
    if value is None or isinstance(value, bool):
        return value
    if param.type == "number" and isinstance(value, int | float):
        return float(value)
    if param.type == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class SeedView:
    """The seed rows plus a local database to evaluate the spec's rules against candidate calls."""

    def __init__(self, spec: EnvironmentSpec, schema_sql: str) -> None:
        self.spec = spec
        self.rows = {table: spec.seed.get(table, []) for table in spec.entities}
        principal = spec.principal
        default = principal.default if principal else None
        scopes = {t: p for t in principal.scope if (p := principal.predicate(t))} if principal else {}
        self.connection: sqlite3.Connection = build_seed(schema_sql, self.rows, default)
        ids = {t: e.id_format for t, e in spec.entities.items()}
        self.db = Database(self.connection, spec.now_iso, ids, default, scopes, id_namespace=spec.ids_namespace)
        self._distinct: dict[tuple[str, str], list[Any]] = {}

    def distinct(self, table: str, column: str) -> list[Any]:
        """The column's non-null seed values, in seed order, each once."""
        if (table, column) not in self._distinct:
            values = [row.get(column) for row in self.rows.get(table, [])]
            self._distinct[table, column] = list(dict.fromkeys(v for v in values if v is not None))
        return self._distinct[table, column]

    def sql_args(self, tool: ToolKind, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The named SQL parameters the generated code binds (params, `now`, and `id` for writes to
        one row); None if the key row is unknown."""
        values = {name: coerce(p, arguments.get(name, p.default)) for name, p in tool.params.items()}
        for name, param in tool.params.items():
            if param.items:
                bind = json_array if isinstance(tool, SearchTool) else comma_joined
                values[name] = bind(values[name])
        values["now"] = self.spec.now_iso
        values["principal"] = arguments.get("principal") or self._default()
        if not isinstance(tool, WriteTool):
            return values
        entity = self.spec.entities[tool.entity]
        if isinstance(tool, CreateTool):
            given = values.get(entity.primary_key)
            values["id"] = given if given is not None else self.db.peek_id(tool.entity)
            return values
        assert isinstance(tool, KeyedTool)
        sql = f"SELECT {entity.primary_key} FROM {tool.entity} WHERE {tool.key_column} = ?"
        row = self.db.one(sql, (values[tool.key],))
        if row is None:
            return None
        values["id"] = row[entity.primary_key]
        return values

    def accepts(self, tool: ToolKind, arguments: dict[str, Any]) -> bool:
        """Whether the spec's refs and rules let this call through (a handler may still refuse it)."""
        values = self.sql_args(tool, arguments)
        if values is None:
            return False
        for name, param in tool.params.items():
            target = ref_of(self.spec, tool, name)
            given = arguments.get(name)
            items = given if param.items and isinstance(given, list) else [given]
            if target and name in arguments and any(v not in self.distinct(*target) for v in items):
                return False
        try:
            return not any(self.db.one(rule.reject_if, values) for rule in tool.rules)
        except (sqlite3.Error, Rejected):
            return False

    # ------------------------------------------------------------ principals and paging (verifier)

    def principals(self) -> list[str]:
        principal = self.spec.principal
        if principal is None:
            return []
        if principal.table is None or principal.column is None:
            return list(principal.values)
        return [str(v) for v in self.distinct(principal.table, principal.column)]

    def visible(self, table: str, principal: str | None) -> list[str]:
        """Keys of `table`'s rows that `principal` may see, in primary-key order."""
        pk = self.spec.entities[table].primary_key
        scope = self.spec.principal.predicate(table) if self.spec.principal else None
        sql = f"SELECT {pk} FROM {table} WHERE {scope or '1'} ORDER BY {pk}"
        return [str(r[0]) for r in self.connection.execute(sql, {"principal": principal}).fetchall()]

    def other_principal(self, owner: str) -> str | None:
        """A principal other than `owner` for the cross-principal check (the first in seed order)."""
        return next((p for p in self.principals() if p != owner), None)

    def private_keys(self, owner: str, other: str) -> set[str]:
        """Keys of rows `owner` may see and `other` may not, over every scoped table."""
        scoped = self.spec.principal.scope if self.spec.principal else {}
        return {k for t in scoped for k in set(self.visible(t, owner)) - set(self.visible(t, other))}

    def _default(self) -> str | None:
        return self.spec.principal.default if self.spec.principal else None

    def visible_keys(self, principal: str | None = None) -> dict[str, list[str]]:
        """Keys of every table's rows `principal` (default: the spec's) may see."""
        principal = principal or self._default()
        return {table: self.visible(table, principal) for table in self.spec.entities}

    def paging_principals(self) -> list[str | None]:
        """Whom the paging check lists as: the default principal and, where rows are private, also the
        principal seeing the most private rows the default cannot (the default may own none of a table)."""
        default = self._default()
        scoped = self.spec.principal.scope if self.spec.principal else {}
        if not scoped or default is None:
            return [default]
        mine = {t: set(self.visible(t, default)) for t in scoped}
        gains = {p: sum(len(set(self.visible(t, p)) - mine[t]) for t in scoped) for p in self.principals()}
        richest = max(gains, key=lambda p: gains[p], default=None)  # first in seed order on a tie
        paging: list[str | None] = [default]
        if richest is not None and gains[richest] > 0:
            paging.append(richest)
        return paging

    def _values(self, tool: ToolKind, name: str, param: Param, principal: str | None = None) -> list[Any]:
        """Every value worth listing by for one required param: the keys the principal sees, or the enum."""
        if param.enum:
            return list(param.enum)
        target = ref_of(self.spec, tool, name)
        if target is None:
            return [param.default] if param.default is not None else [_fallback(param, self.spec)]
        table, column = target
        if isinstance(tool, SearchTool) and (param.column or name) in self.spec.entities[tool.entity].columns:
            # A filter on the listed table's own column: the values its rows hold find every row.
            table, column = tool.entity, param.column or name
        pk = self.spec.entities[table].primary_key
        keys = set(self.visible(table, principal or self._default()))
        values = [r.get(column) for r in self.rows.get(table, []) if str(r.get(pk)) in keys]
        return list(dict.fromkeys(v for v in values if v is not None))

    def list_calls(self, principal: str | None = None) -> Iterator[tuple[ToolKind, dict[str, Any]]]:
        """Calls that together list everything `principal` (default: the spec's) may see: each list tool
        (a search, or a custom tool returning rows) with every value of its required params (one at a time,
        the others at their first value), at most MAX_LIST_CALLS per tool."""
        for tool in self.spec.tools:
            if self.listed_entity(tool) is None:
                continue
            required = {n: p for n, p in tool.params.items() if p.required}
            pools = {n: self._values(tool, n, p, principal) for n, p in required.items()}
            if any(not pool for pool in pools.values()):
                continue
            first = {n: pool[0] for n, pool in pools.items()}
            calls = [first]
            for name, pool in pools.items():
                calls += [{**first, name: v} for v in pool[1:]]
            # An optional enum with a default (status: active) hides the other values unless asked for them.
            for name, param in tool.params.items():
                if not param.required and param.default is not None and param.enum:
                    calls += [{**call, name: v} for call in list(calls) for v in param.enum if v != param.default]
            for arguments in calls[:MAX_LIST_CALLS]:
                yield tool, {n: [v] if tool.params[n].items else v for n, v in arguments.items()}

    def page_arguments(self, tool: ToolKind, cursor: str | None) -> dict[str, Any]:
        """The paging arguments a list takes: its largest page, and the cursor once there is one."""
        if isinstance(tool, SearchTool):
            return {"limit": 200, **({"cursor": cursor} if cursor else {})}
        limit = tool.params.get("limit")
        paged = {"limit": int(min(200, limit.maximum or 200))} if limit is not None and limit.type == "integer" else {}
        return paged | ({"cursor": cursor} if cursor and "cursor" in tool.params else {})

    def listed_entity(self, tool: ToolKind) -> tuple[str, str] | None:
        """(field, entity) of the rows a list returns: a search's entity, or a custom tool's array of rows."""
        if isinstance(tool, SearchTool):
            return tool.entity, tool.entity
        result = tool.result(self.spec)
        fields = getattr(result, "fields", None) or {}
        return next(
            ((f, r.items) for f, r in fields.items() if r.type == "array" and r.items in self.spec.entities), None
        )

    def get_keys(self, tool: KeyedTool, found: set[str], principal: str | None = None) -> list[Any]:
        """Values of a get's key column on the rows the principal sees, where some list showed the value."""
        keys = set(self.visible(tool.entity, principal or self._default()))
        pk = self.spec.entities[tool.entity].primary_key
        values = [r.get(tool.key_column) for r in self.rows.get(tool.entity, []) if str(r.get(pk)) in keys]
        return list(dict.fromkeys(v for v in values if v is not None and str(v) in found))

    def row_keys(self, tool: ToolKind, page: dict[str, Any]) -> list[Any]:
        listed = self.listed_entity(tool)
        if listed is None:
            return []
        field_name, entity = listed
        pk = self.spec.entities[entity].primary_key
        return [row.get(pk) for row in page.get(field_name) or [] if isinstance(row, dict)]


def _fallback(param: Param, spec: EnvironmentSpec) -> Any:
    """A plausible value for a param no seed column informs."""
    if param.default is not None:
        return param.default
    if param.type in ("integer", "number"):
        low = param.minimum if param.minimum is not None else 1
        return int(low) if param.type == "integer" else float(low)
    return {
        "boolean": True,
        "date": spec.now.date().isoformat(),
        "datetime": spec.now_iso,
    }.get(param.type, "verification")


def _fresh(sample: Any, n: int) -> Any:
    """A value for a unique column that no seed row has."""
    if isinstance(sample, bool):
        return sample
    if isinstance(sample, int | float):
        return type(sample)(10_000_000 + n)
    text = str(sample)
    return f"verify{n}@example.test" if "@" in text else f"{text} (verify {n})"


def _in_bounds(param: Param, values: list[Any]) -> list[Any]:
    if param.minimum is None and param.maximum is None:
        return values
    low = param.minimum if param.minimum is not None else float("-inf")
    high = param.maximum if param.maximum is not None else float("inf")
    return [v for v in values if isinstance(v, int | float) and low <= v <= high]


class _Builder:
    """Builds candidate calls for one tool from anchor rows and value pools."""

    def __init__(self, seed: SeedView, tool: ToolKind) -> None:
        self.seed = seed
        self.spec = seed.spec
        self.tool = tool
        self.rng = random.Random(f"{self.spec.name}:{tool.name}")
        self.table = tool.entity_name
        self.entity = self.spec.entities[self.table] if self.table else None
        self.anchor_param, self.anchor_rows = self._anchor()
        self.pools = {name: self._pool(name, p) for name, p in tool.params.items()}

    def _anchor(self) -> tuple[str | None, list[dict[str, Any]]]:
        """The rows calls are built around: the tool's own table, or a custom tool's first required ref."""
        if self.table:
            return self.tool.key_param, self.seed.rows[self.table]
        for name, param in self.tool.params.items():
            target = ref_of(self.spec, self.tool, name)
            if param.required and target:
                return name, self.seed.rows.get(target[0], [])
        return None, []

    def _column(self, name: str, param: Param) -> str:
        target = ref_of(self.spec, self.tool, name)
        if name == self.anchor_param and target:
            return target[1]
        return param.column or name

    def _pool(self, name: str, param: Param) -> list[Any]:
        if param.enum:
            return list(param.enum)
        target = ref_of(self.spec, self.tool, name)
        if target:
            values = self.seed.distinct(*target)
        elif self.table and self.entity and (param.column or name) in self.entity.columns:
            values = self.seed.distinct(self.table, param.column or name)
        else:
            values = []
        return _in_bounds(param, values) or [_fallback(param, self.spec)]

    def _is_unique(self, name: str, param: Param) -> bool:
        if not isinstance(self.tool, CreateTool) or self.entity is None:
            return False
        column = self.entity.columns.get(param.column or name)
        return bool(column and (column.unique or (param.column or name) == self.entity.primary_key))

    def build(self, n: int, mode: str, row: dict[str, Any] | None, optional: bool) -> dict[str, Any]:
        """One call: `aligned` copies the anchor row, `mixed` draws refs at random, `random` draws all."""
        arguments: dict[str, Any] = {}
        for name, param in self.tool.params.items():
            if self._is_unique(name, param):
                if param.required:
                    arguments[name] = _fresh(self.pools[name][0], n)
                continue
            column = self._column(name, param)
            from_row = row.get(column) if row is not None else None
            is_anchor = name == self.anchor_param
            use_row = from_row is not None and (
                mode == "aligned" or (mode == "mixed" and (is_anchor or not ref_of(self.spec, self.tool, name)))
            )
            if from_row is not None and (
                (param.enum and from_row not in param.enum) or not _in_bounds(param, [from_row])
            ):
                use_row = False
            if use_row:
                if param.required or optional:
                    arguments[name] = from_row
            elif param.required:
                arguments[name] = self.rng.choice(self.pools[name])
            if param.items and name in arguments and not isinstance(arguments[name], list):
                value = arguments[name]  # a text column holding a list stores it as "a, b"
                arguments[name] = (
                    [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else [value]
                )
        return arguments

    def generate(self) -> Iterator[dict[str, Any]]:
        modes = ("aligned", "mixed", "random") if self.anchor_rows else ("random",)
        for n in range(MAX_CANDIDATES):
            mode = modes[n % len(modes)]
            row = self.anchor_rows[(n // len(modes)) % len(self.anchor_rows)] if self.anchor_rows else None
            yield self.build(n, mode, row, optional=mode == "aligned")


def plan_tool(seed: SeedView, tool: ToolKind) -> ToolPlan:
    if any(not e.refused for e in tool.examples):
        return ToolPlan(tool, must_pass=[dict(e.args) for e in tool.examples if not e.refused])
    builder = _Builder(seed, tool)
    if isinstance(tool, SearchTool):
        rows: list[dict[str, Any] | None] = [*builder.anchor_rows] or [None]
        for row in rows:
            narrow = builder.build(0, "aligned", row, optional=False)
            wide = builder.build(0, "aligned", row, optional=True)
            if seed.accepts(tool, narrow) and seed.accepts(tool, wide):
                return ToolPlan(tool, must_pass=[narrow] if narrow == wide else [narrow, wide])
        return ToolPlan(tool, must_pass=[builder.build(0, "random", None, optional=False)])
    accepted: list[dict[str, Any]] = []
    first: list[dict[str, Any]] = []
    for arguments in builder.generate():
        if arguments in accepted or arguments in first:
            continue
        if seed.accepts(tool, arguments):
            accepted.append(arguments)
            if len(accepted) == KEEP_CANDIDATES:
                break
        elif len(first) < KEEP_CANDIDATES:
            first.append(arguments)
    return ToolPlan(tool, candidates=accepted or first)


def plan_calls(spec: EnvironmentSpec, schema_sql: str) -> tuple[dict[str, ToolPlan], SeedView]:
    """Plans for every tool of `spec`, and the local seed used to derive invalid calls later."""
    seed = SeedView(spec, schema_sql)
    return {tool.name: plan_tool(seed, tool) for tool in spec.tools}, seed


def rule_message(seed: SeedView, tool: ToolKind, example: dict[str, Any], message: str) -> str:
    """The exact text a rule's rejection carries for `example`, formatted as the generated code does."""
    values = seed.sql_args(tool, example) or {
        **{n: example.get(n, p.default) for n, p in tool.params.items()},
        "now": seed.spec.now_iso,
        "id": None,
    }
    return message.format_map(values)


def invalid_calls(seed: SeedView, tool: ToolKind, valid: dict[str, Any]) -> list[InvalidCall]:
    """Calls derived from a valid one that the server must refuse, each for one reason."""
    calls: list[InvalidCall] = []
    required = [name for name, param in tool.params.items() if param.required]
    if required:  # argument validation is the SDK's, shared by every param: one of each per tool is enough
        calls.append(InvalidCall("missing_argument", {k: v for k, v in valid.items() if k != required[0]}, required[0]))
    if tool.params:
        name = (required or list(tool.params))[0]
        wrong = {"bad": "type"} if tool.params[name].items else [str(valid.get(name, "value"))]
        calls.append(InvalidCall("wrong_type", {**valid, name: wrong}, name))
    for name, param in tool.params.items():
        if ref_of(seed.spec, tool, name):
            unknown: Any = -1 if param.type in ("integer", "number") else UNKNOWN_ID
            calls.append(InvalidCall("unknown_id", {**valid, name: [unknown] if param.items else unknown}, name))
    for rule in tool.rules:
        message = rule_message(seed, tool, rule.example, rule.message)
        calls.append(InvalidCall("rule", dict(rule.example), message=message))
    return calls
