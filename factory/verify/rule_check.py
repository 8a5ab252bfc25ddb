"""Rule boundaries, judged against the spec's own SQL: calls at the edge of each business rule.

A rule's `example` shows that it refuses something; it does not show where the refusal starts. A rule
compared the wrong way (`>` for `>=`, a date one day off) still refuses its example. So the verifier
moves a valid call, and each rule example, onto the values where a rule's comparisons flip: for a date,
today and now (a day or an hour away, the rule's own numbers as days, hours or minutes from now); for a
number, the rule's own numbers and the values of the columns it compares with (on the rows the call
names first); for a rule about `:principal`, other principals making the same call. For each such call
it asks its own copy of the seed which rule, if any, the spec's `reject_if` SQL says refuses it, and
expects the server to refuse with exactly that rule's message, or not to refuse with any rule's message.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import zip_longest
from typing import Any

from envfarm.factory.spec import KeyedTool, Param, ToolKind
from envfarm.factory.verify.call_plan import SeedView, ref_of, rule_message
from envfarm.servers.runtime.database import Rejected

MAX_PROBES = 12  # boundary calls per tool
MAX_PRINCIPALS = 3  # other principals a call is made again as, when a rule names `:principal`
PRINCIPAL = "principal"  # beside a call's arguments: act as this principal
MAX_COLUMN_VALUES = 8  # seed values of one compared column tried as a number
MAX_RELATED = 3  # rows of one table that point at a named row, moved to a rule's edge
REF_HOPS = 2  # foreign keys followed from a named row to the rows a rule may read
NUMBER = re.compile(r"(?<![\w.:'])(\d+(?:\.\d+)?)(?![\w.'])")
IDENTIFIER = re.compile(r"(?<![:\w'])([a-z_][a-z0-9_]*)\b")
PARAM = re.compile(r":([a-z_][a-z0-9_]*)")
DATE_TYPES = ("date", "datetime")
NUMBER_TYPES = ("integer", "number")


@dataclass(frozen=True)
class RuleProbe:
    """A call at a rule's edge and the refusal the spec's rules give it (None: no rule refuses it)."""

    tool: ToolKind
    arguments: dict[str, Any]
    message: str | None
    messages: frozenset[str]  # every rule's message for these arguments: none may come back when None


def refusing_rule(seed: SeedView, tool: ToolKind, arguments: dict[str, Any]) -> tuple[bool, int | None]:
    """(judgeable, index of the first rule whose SQL matches). Not judgeable: an unknown key or id, or a
    rule the local seed cannot evaluate."""
    values = seed.sql_args(tool, arguments)
    if values is None:
        return False, None
    if not _sees_named_rows(seed, tool, arguments, values["principal"]):
        return False, None  # the server answers "unknown id" before any rule: not a rule's edge
    for n, rule in enumerate(tool.rules):
        try:
            if seed.db.one(rule.reject_if, values):
                return True, n
        except (sqlite3.Error, Rejected):
            return False, None
    return True, None


def _named(seed: SeedView, tool: ToolKind, arguments: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(table, column, value) of every row the call names by id: its key and the params that refer to rows."""
    named: list[tuple[str, str, Any]] = []
    if isinstance(tool, KeyedTool) and tool.key in arguments:
        named.append((tool.entity, tool.key_column, arguments[tool.key]))
    for name, param in tool.params.items():
        target = ref_of(seed.spec, tool, name)
        given = arguments.get(name)
        if target is not None and given is not None and name != getattr(tool, "key", None):
            named += [(*target, v) for v in (given if param.items and isinstance(given, list) else [given])]
    return named


def _messages(
    seed: SeedView, tool: ToolKind, arguments: dict[str, Any], rule: int | None
) -> tuple[str | None, frozenset[str]]:
    """(the message of rule number `rule`, or None; every rule's message) for these arguments."""
    messages = frozenset(rule_message(seed, tool, arguments, r.message) for r in tool.rules)
    return (rule_message(seed, tool, arguments, tool.rules[rule].message) if rule is not None else None), messages


def _sees_named_rows(seed: SeedView, tool: ToolKind, arguments: dict[str, Any], principal: str | None) -> bool:
    """Whether the principal may see every row the call names by id, looked up as the server does (another
    principal's row is as unknown as a missing one)."""
    for table, column, value in _named(seed, tool, arguments):
        scope = seed.spec.principal.predicate(table) if seed.spec.principal else None
        sql = f"SELECT 1 FROM {table} WHERE {column} = :value AND ({scope or '1'})"
        if seed.connection.execute(sql, {"value": value, "principal": principal}).fetchone() is None:
            return False
    return True


def _others(seed: SeedView, tool: ToolKind, base: dict[str, Any]) -> list[str]:
    """Up to MAX_PRINCIPALS principals besides the one the call acts as who may see the rows it names:
    whom a rule on `:principal` may treat differently (a buyer where the seller acts)."""
    own = base.get(PRINCIPAL) or (seed.spec.principal.default if seed.spec.principal else None)
    others = [p for p in seed.principals() if p != own and _sees_named_rows(seed, tool, base, p)]
    return others[:MAX_PRINCIPALS]


def _moments(seed: SeedView, numbers: list[float], param: Param) -> list[str]:
    """Dates or datetimes where a comparison with the clock flips: now, a day and an hour either side, and
    now plus the rule's own numbers as days, hours and minutes."""
    now = datetime.fromisoformat(seed.spec.now_iso)
    steps = [timedelta(0), timedelta(days=1), timedelta(days=-1), timedelta(hours=1), timedelta(hours=-1)]
    for number in numbers:
        steps += [timedelta(days=number), timedelta(hours=number), timedelta(minutes=number)]
    moments = []
    for step in steps:
        moment = now + step
        text = moment.strftime("%Y-%m-%d") if param.type == "date" else moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        moments.append(text)
    return list(dict.fromkeys(moments))


def _compared_values(seed: SeedView, sql: str, param: Param) -> list[Any]:
    """Seed values of the numeric columns a rule's SQL names, fewest first in seed order."""
    names = set(IDENTIFIER.findall(sql))
    values: list[Any] = []
    for table, entity in seed.spec.entities.items():
        for column, spec_column in entity.columns.items():
            if column in names and spec_column.type in NUMBER_TYPES:
                values += seed.distinct(table, column)[:MAX_COLUMN_VALUES]
    return values


def _fits(param: Param, value: Any) -> bool:
    if param.type == "integer" and not float(value).is_integer():
        return False
    if param.minimum is not None and value < param.minimum:
        return False
    return param.maximum is None or value <= param.maximum


def _related_values(seed: SeedView, tool: ToolKind, sql: str, base: dict[str, Any]) -> list[Any]:
    """The numbers a rule may compare with on the rows the call names: for each id param of the call,
    that row's numeric columns the rule's SQL names (a listing's minimum price, a product's stock)."""
    names = set(IDENTIFIER.findall(sql))
    values: list[Any] = []
    for param_name in tool.params:
        target = ref_of(seed.spec, tool, param_name)
        if target is None or param_name not in base:
            continue
        table, key_column = target
        columns = seed.spec.entities[table].columns
        for row in seed.rows.get(table, []):
            if row.get(key_column) == base[param_name]:
                values += [row.get(c) for c, col in columns.items() if c in names and col.type in NUMBER_TYPES]
    return values


def _candidates(seed: SeedView, tool: ToolKind, name: str, param: Param, base: dict[str, Any]) -> list[Any]:
    """Values of one param where some rule of the tool may flip, for a call otherwise like `base`."""
    sqls = [r.reject_if for r in tool.rules if name in PARAM.findall(r.reject_if)]
    numbers = [float(n) for sql in sqls for n in NUMBER.findall(sql)]
    if param.type in DATE_TYPES:
        return _moments(seed, numbers, param)
    values: list[Any] = list(numbers)
    for sql in sqls:
        values += _related_values(seed, tool, sql, base)
    for sql in sqls:
        values += _compared_values(seed, sql, param)
    cast = int if param.type == "integer" else float
    fitting = [cast(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool) and _fits(param, v)]
    return list(dict.fromkeys(fitting))


def rule_probes(seed: SeedView, tool: ToolKind, valid: list[dict[str, Any]]) -> list[RuleProbe]:
    """Up to MAX_PROBES calls at the edges of the tool's rules, moved from its first valid call and from
    each rule example, one param at a time (taking turns, so every param gets some)."""
    ruled = [n for n, p in tool.params.items() if not p.items and p.type in DATE_TYPES + NUMBER_TYPES]
    ruled = [n for n in ruled if any(n in PARAM.findall(r.reject_if) for r in tool.rules)]
    by_principal = seed.spec.principal is not None and any(PRINCIPAL in PARAM.findall(r.reject_if) for r in tool.rules)
    if not ruled and not by_principal:
        return []
    bases = valid[:1] + [dict(r.example) for r in tool.rules]
    lanes = [
        [
            {**base, name: value}
            for value in _candidates(seed, tool, name, tool.params[name], base)
            if base.get(name) != value
        ]
        for base in bases
        for name in ruled
    ]
    if by_principal:  # the same call made by someone else: a rule about who may do it flips
        lanes += [[{**base, PRINCIPAL: other} for other in _others(seed, tool, base)] for base in bases]
    probes: list[RuleProbe] = []
    seen: set[str] = set()
    for arguments in (a for turn in zip_longest(*lanes) for a in turn if a is not None):
        key = repr(sorted(arguments.items()))
        if key in seen:
            continue
        seen.add(key)
        judgeable, rule = refusing_rule(seed, tool, arguments)
        if not judgeable:
            continue
        probes.append(RuleProbe(tool, arguments, *_messages(seed, tool, arguments, rule)))
        if len(probes) == MAX_PROBES:
            break
    return probes


@dataclass(frozen=True)
class StateProbe:
    """A call made on the seed with one row's column moved to a rule's edge (a date at now or at the rule's
    own number of hours, a count at the rule's own number), and the refusal the spec's rules give it."""

    tool: ToolKind
    arguments: dict[str, Any]
    table: str
    rows: list[dict[str, Any]]  # the whole table as the episode loads it instead of the seed's rows
    change: str  # what moved, for the report: "loans[loan_001].due_on = 2026-03-02"
    message: str | None
    messages: frozenset[str]


def _near_rows(seed: SeedView, tool: ToolKind, arguments: dict[str, Any]) -> list[tuple[str, Any]]:
    """(table, primary key) of the rows a rule about this call may read: the rows it names, the rows those
    point at (and those point at: an enrollment's section's term), and up to MAX_RELATED rows of each table
    that point at a named row (a member's loans)."""
    entities = seed.spec.entities

    def rows_where(table: str, column: str, value: Any) -> list[dict[str, Any]]:
        return [row for row in seed.rows.get(table, []) if row.get(column) == value]

    def key(table: str, row: dict[str, Any]) -> tuple[str, Any]:
        return table, row[entities[table].primary_key]

    named = [(t, row) for t, column, value in _named(seed, tool, arguments) for row in rows_where(t, column, value)]
    near = [key(t, row) for t, row in named]
    for table, row in named:
        for other, entity in entities.items():
            for name, spec_column in entity.columns.items():
                target, _, target_column = (spec_column.ref or "").partition(".")
                if target == table and target_column in row:
                    related = rows_where(other, name, row[target_column])[:MAX_RELATED]
                    near += [key(other, r) for r in related]
    frontier = named
    for _ in range(REF_HOPS):
        pointed = []
        for table, row in frontier:
            for name, spec_column in entities[table].columns.items():
                if spec_column.ref and row.get(name) is not None:
                    target, _, target_column = spec_column.ref.partition(".")
                    pointed += [(target, r) for r in rows_where(target, target_column, row[name])]
        near += [key(t, row) for t, row in pointed]
        frontier = pointed
    return list(dict.fromkeys(near))


def _like(sample: Any, moment: datetime, column_type: str) -> str:
    """`moment` written as `sample`, a seed value of the column, is written (a date; or a datetime with the
    sample's separator, zone and suffix), so a handler parses it as it parses the seed."""
    if column_type == "date":
        return moment.strftime("%Y-%m-%d")
    if not (isinstance(sample, str) and len(sample) >= 19):
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        zone = datetime.fromisoformat(sample).tzinfo
    except ValueError:
        zone = None
    if zone is not None and moment.tzinfo is not None:
        moment = moment.astimezone(zone)
    return moment.strftime(f"%Y-%m-%d{sample[10]}%H:%M:%S") + sample[19:]


def _column_edges(seed: SeedView, column_type: str, sample: Any, numbers: list[float], base: list[Any]) -> list[Any]:
    """Values of a row's column where a rule comparing it may flip: for a date, now and now moved by the
    rule's numbers as hours, days or minutes (either way), then a day or an hour away; for a number, the
    rule's numbers and the call's own numeric arguments."""
    if column_type in DATE_TYPES:
        now = datetime.fromisoformat(seed.spec.now_iso)
        steps = [timedelta(0)]
        for number in numbers:
            for unit in (timedelta(hours=number), timedelta(days=number), timedelta(minutes=number)):
                steps += [unit, -unit]
        steps += [timedelta(days=1), timedelta(days=-1), timedelta(hours=1), timedelta(hours=-1)]
        return list(dict.fromkeys(_like(sample, now + step, column_type) for step in steps))
    values = [v for v in [*numbers, *base] if isinstance(v, int | float) and not isinstance(v, bool)]
    if column_type == "integer":
        return list(dict.fromkeys(int(v) for v in values if float(v).is_integer()))
    return list(dict.fromkeys(float(v) for v in values))


def _nudged(value: Any, column_type: str, sign: int) -> Any:
    """The nearest value on one side: a second, a day, one, or a cent away."""
    if column_type in DATE_TYPES:
        step = timedelta(days=sign) if column_type == "date" else timedelta(seconds=sign)
        moment = datetime.fromisoformat(value) + step
        return _like(value, moment, column_type)
    return value + sign if column_type == "integer" else round(value + sign * 0.01, 2)


class _Moved:
    """The verifier's seed copy with one cell changed, inside a savepoint that is rolled back on exit."""

    def __init__(self, seed: SeedView, table: str, key: Any, column: str, value: Any) -> None:
        self.seed, self.table = seed, table
        pk = seed.spec.entities[table].primary_key
        self.update = (f"UPDATE {table} SET {column} = ? WHERE {pk} = ?", (value, key))

    def __enter__(self) -> bool:
        """Whether the change took (a CHECK constraint refuses it: the server's schema would too)."""
        self.seed.connection.execute("SAVEPOINT state_edge")
        try:
            self.seed.connection.execute(*self.update)
        except sqlite3.Error:
            return False
        return True

    def __exit__(self, *exc: object) -> None:
        self.seed.connection.execute("ROLLBACK TO state_edge")
        self.seed.connection.execute("RELEASE state_edge")

    def rows(self) -> list[dict[str, Any]]:
        cursor = self.seed.connection.execute(f"SELECT * FROM {self.table} ORDER BY rowid")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]


def _verdict(seed: SeedView, tool: ToolKind, base: dict[str, Any], cell: tuple[str, Any, str], value: Any) -> Any:
    """What the spec's rules say of `base` with the cell at `value`: (judgeable, rule), or None."""
    with _Moved(seed, *cell, value) as took:
        return refusing_rule(seed, tool, base) if took else None


def _edge_probe(
    seed: SeedView, tool: ToolKind, base: dict[str, Any], cell: tuple[str, Any, str], value: Any
) -> StateProbe | None:
    """The probe with the cell at `value` if the rules' verdict there differs from theirs a step to either
    side (where a comparison flips, so `<` and `<=`, or a shifted number, disagree); else None."""
    table, key, column = cell
    column_type = seed.spec.entities[table].columns[column].type
    here = _verdict(seed, tool, base, cell, value)
    if here is None or not here[0]:
        return None
    if all(_verdict(seed, tool, base, cell, _nudged(value, column_type, sign)) == here for sign in (-1, 1)):
        return None
    moved = _Moved(seed, table, key, column, value)
    with moved:
        rows = moved.rows()
        message, messages = _messages(seed, tool, base, here[1])
    return StateProbe(tool, base, table, rows, f"{table}[{key}].{column} = {value}", message, messages)


def state_probes(seed: SeedView, tool: ToolKind, valid: list[dict[str, Any]]) -> list[StateProbe]:
    """Up to MAX_PROBES calls (the first valid one and each rule example) made on a seed where one row they
    read has a date or number its rules compare moved to the rule's edge: a rule on stored values (an
    event that ended before now, a class starting within 2 hours) flips only where the seed has no row."""
    if not tool.rules:
        return []
    sql = " ".join(rule.reject_if for rule in tool.rules)
    names, params = set(IDENTIFIER.findall(sql)), set(PARAM.findall(sql))
    numbers = [float(n) for n in NUMBER.findall(sql)]
    lanes: list[list[tuple[dict[str, Any], str, Any, str, Any]]] = []
    for base in valid[:1] + [dict(rule.example) for rule in tool.rules]:
        arguments = [v for n, v in base.items() if n in params]
        for table, key in _near_rows(seed, tool, base):
            entity = seed.spec.entities[table]
            for column, spec_column in entity.columns.items():
                if column not in names or column == entity.primary_key or spec_column.ref is not None:
                    continue
                if spec_column.type not in DATE_TYPES + NUMBER_TYPES:
                    continue
                current = seed.db.scalar(f"SELECT {column} FROM {table} WHERE {entity.primary_key} = ?", (key,))
                sample = current if current is not None else next(iter(seed.distinct(table, column)), None)
                edges = _column_edges(seed, spec_column.type, sample, numbers, arguments)
                lanes.append([(base, table, key, column, v) for v in edges if v != current])
    probes: list[StateProbe] = []
    seen: set[str] = set()
    for base, table, key, column, value in (p for turn in zip_longest(*lanes) for p in turn if p is not None):
        marker = repr((sorted(base.items()), table, key, column, value))
        if marker in seen:
            continue
        seen.add(marker)
        probe = _edge_probe(seed, tool, base, (table, key, column), value)
        if probe is not None:
            probes.append(probe)
            if len(probes) == MAX_PROBES:
                break
    return probes
