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

from factory.call_plan import SeedView, ref_of, rule_message
from factory.spec import KeyedTool, Param, ToolKind
from servers.runtime.database import Rejected

MAX_PROBES = 12  # boundary calls per tool
MAX_PRINCIPALS = 3  # other principals a call is made again as, when a rule names `:principal`
PRINCIPAL = "principal"  # beside a call's arguments: act as this principal
MAX_COLUMN_VALUES = 8  # seed values of one compared column tried as a number
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


def _sees_named_rows(seed: SeedView, tool: ToolKind, arguments: dict[str, Any], principal: str | None) -> bool:
    """Whether the principal may see every row the call names by id, looked up as the server does (another
    principal's row is as unknown as a missing one)."""
    named: list[tuple[str, str, Any]] = []  # (table, column, value)
    if isinstance(tool, KeyedTool) and tool.key in arguments:
        named.append((tool.entity, tool.key_column, arguments[tool.key]))
    for name, param in tool.params.items():
        target = ref_of(seed.spec, tool, name)
        given = arguments.get(name)
        if target is not None and given is not None and name != getattr(tool, "key", None):
            named += [(*target, v) for v in (given if param.items and isinstance(given, list) else [given])]
    for table, column, value in named:
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
        [{**base, name: value} for value in _candidates(seed, tool, name, tool.params[name], base) if base.get(name) != value]
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
        messages = frozenset(rule_message(seed, tool, arguments, r.message) for r in tool.rules)
        message = rule_message(seed, tool, arguments, tool.rules[rule].message) if rule is not None else None
        probes.append(RuleProbe(tool, arguments, message, messages))
        if len(probes) == MAX_PROBES:
            break
    return probes
