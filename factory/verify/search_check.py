"""What each search must return, worked out from the spec alone: the search oracle.

A search's meaning is declared, not coded: rows of its entity that the principal may see, matching every
given filter (or its default: `exact`, `contains`, `gte`, `lte`, or any item of an array), in its declared order. So the
verifier can ask the seed which keys a call must list, in which order, with SQL it writes itself from
those declarations, and compare with what the generated server returns. This catches a filter that
matches the wrong rows, two filters joined by OR instead of AND, an off-by-one bound (each bound is tried
at a value some row holds exactly) and a principal seeing someone else's rows.

Probes per search and principal: no filter (only the required params), each optional filter alone, and
every filter at once, each value taken from a seed row the principal sees.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from envfarm.factory.spec import EnvironmentSpec, Param, SearchTool
from envfarm.factory.verify.call_plan import SeedView

DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
MIN_CONTAINS = 2  # shortest substring a `contains` probe searches for
OTHERS = "rows of others"  # the probe asking a scoped search about rows its principal may not see


@dataclass(frozen=True)
class SearchProbe:
    """One search call and the keys it must list over all its pages, in order."""

    tool: SearchTool
    arguments: dict[str, Any]
    expected: list[str]
    label: str  # which filters it tries, for the failure message
    may_refuse: bool = False  # asked about rows the principal may not see, "unknown id" is an answer too


def _as_param(param: Param, value: Any) -> Any:
    """A seed column value as this param accepts it (a date filter on a datetime column takes the day),
    or None when the param cannot take it."""
    if value is None:
        return None
    if param.type in ("date", "datetime") and not (isinstance(value, str) and DAY.match(value)):
        return None
    if param.type == "date":
        value = value[:10]
    elif param.type == "datetime" and len(value) <= len("2026-01-01"):
        return None  # a day where the param wants a moment: the server would refuse the format
    elif param.type == "boolean":
        value = bool(value)
    elif param.type == "integer" and isinstance(value, int | float) and float(value).is_integer():
        value = int(value)
    elif param.type == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        value = float(value)
    elif param.type == "string" and not isinstance(value, str):
        return None
    if param.enum is not None and value not in param.enum:
        return None
    if param.minimum is not None and isinstance(value, int | float) and value < param.minimum:
        return None
    if param.maximum is not None and isinstance(value, int | float) and value > param.maximum:
        return None
    return value


def _unheld(param: Param, held: set[Any]) -> list[Any]:
    """Values the param accepts that no row holds (an enum's others, the other boolean); an id must exist,
    so a `ref` param has none."""
    if param.ref is not None:
        return []
    if param.type == "boolean":
        return [v for v in (False, True) if v not in held]
    return [v for v in param.enum or [] if v not in held]


def _substring(text: str) -> str | None:
    """A piece of `text` in other letter case: what a case-insensitive `contains` must still find."""
    words = sorted((w for w in text.split() if len(w) >= MIN_CONTAINS), key=len, reverse=True)
    if not words:
        return None
    word = words[0]
    piece = word[1:] if len(word) > MIN_CONTAINS else word
    return piece.swapcase()


class SearchOracle:
    """Plans search probes from the spec and computes their expected keys on the verifier's own seed copy."""

    def __init__(self, spec: EnvironmentSpec, seed: SeedView) -> None:
        self.spec = spec
        self.seed = seed

    def _rows(self, tool: SearchTool, principal: str | None, scoped: bool = True) -> list[dict[str, Any]]:
        """The entity's rows the principal may see (every row: `scoped=False`), in the search's order."""
        scope = self.spec.principal.predicate(tool.entity) if self.spec.principal and scoped else None
        sql = f"SELECT * FROM {tool.entity} WHERE {scope or '1'} ORDER BY {tool.order_sql(self.spec)}"
        cursor = self.seed.connection.execute(sql, {"principal": principal})
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def expected(self, tool: SearchTool, arguments: dict[str, Any], principal: str | None) -> list[str]:
        """The keys a call with these filters must list, in order: the spec's meaning of each `match`."""
        pk = self.spec.entities[tool.entity].primary_key
        conditions: list[str] = []
        values: dict[str, Any] = {"principal": principal}
        for n, (name, param) in enumerate(tool.params.items()):
            given = arguments.get(name, param.default)  # a filter left out still applies its default
            if given is None:
                continue
            column = param.column or name
            items = given if param.items else [given]
            tests = []
            for k, item in enumerate(items):
                slot = f"v{n}_{k}"
                values[slot] = item
                tests.append(
                    {
                        "exact": f"{column} = :{slot}",
                        "contains": f"instr(lower({column}), lower(:{slot})) > 0",
                        "gte": f"{column} >= :{slot}",
                        "lte": f"{column} <= :{slot}",
                    }["exact" if param.items else param.match]
                )
            conditions.append("(" + " OR ".join(tests or ["0"]) + ")")
        scope = self.spec.principal.predicate(tool.entity) if self.spec.principal else None
        if scope:
            conditions.append(f"({scope})")
        where = " AND ".join(conditions) or "1"
        sql = f"SELECT {pk} FROM {tool.entity} WHERE {where} ORDER BY {tool.order_sql(self.spec)}"
        return [str(r[0]) for r in self.seed.connection.execute(sql, values).fetchall()]

    def _value(self, name: str, param: Param, rows: list[dict[str, Any]], of_row: bool = False) -> Any:
        """A value for one filter that tells a right match from a wrong one: the rarest exact value (or, when
        every row holds it, one none holds), the middle bound (held by some row exactly), a substring in
        other case; None if no row informs it. `of_row`: the value of the one row given, as it is."""
        column = param.column or name
        held = [v for row in rows if (v := _as_param(param, row.get(column))) is not None]
        if not held:
            return None
        if param.items or param.match == "exact":
            counts = Counter(held)
            value = min(counts, key=lambda v: counts[v])  # the first of the rarest, in list order
            if counts[value] == len(rows) and not of_row:  # every row holds it: a value none holds lists nothing
                value = next(iter(_unheld(param, set(counts))), value)
            return [value] if param.items else value
        if param.match in ("gte", "lte"):
            ordered = sorted(set(held), key=lambda v: (str(type(v)), v))
            return ordered[len(ordered) // 2]
        return next((s for v in held if isinstance(v, str) and (s := _substring(v))), None)

    def _required(self, tool: SearchTool, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Values for the required params: those most of `rows` hold, so the optional filters have rows to
        narrow; None if some required param has no value in them."""
        required: dict[str, Any] = {}
        for name, param in tool.params.items():
            if param.required:
                column = param.column or name
                counts = Counter(v for r in rows if (v := _as_param(param, r.get(column))) is not None)
                value = max(counts, key=lambda v: counts[v], default=None)
                if value is None:
                    return None
                required[name] = [value] if param.items else value
        return required

    def _calls(self, tool: SearchTool, principal: str | None) -> dict[str, dict[str, Any]]:
        """The argument sets worth trying on one search, by label."""
        rows = self._rows(tool, principal)
        required = self._required(tool, rows) if rows else None
        if required is None:
            return {}
        keys = set(self.expected(tool, required, principal))
        pk = self.spec.entities[tool.entity].primary_key
        chosen = [r for r in rows if str(r[pk]) in keys]
        calls = {"no filter": dict(required)}
        every = dict(required)  # every filter at the values of one row, which must come back
        for name, param in tool.params.items():
            if param.required:
                continue
            value = self._value(name, param, chosen)
            if value is not None:
                calls[name] = {**required, name: value}
            if chosen and (own := self._value(name, param, chosen[:1], of_row=True)) is not None:
                every[name] = own
        if len(every) > len(required) + 1:
            calls["every filter"] = every
        if required and self.spec.principal and self.spec.principal.predicate(tool.entity):
            # Asked about rows the principal may not see (another owner's), a scoped search lists none of them.
            hidden = [r for r in self._rows(tool, None, scoped=False) if str(r[pk]) not in {str(v[pk]) for v in rows}]
            others = self._required(tool, hidden) if hidden else None
            if others is not None and others != required:
                calls[OTHERS] = others
        return calls

    def probes(self, principal: str | None) -> list[SearchProbe]:
        probes: list[SearchProbe] = []
        for tool in self.spec.tools:
            if not isinstance(tool, SearchTool):
                continue
            columns = self.spec.entities[tool.entity].columns
            if any((p.column or n) not in columns for n, p in tool.params.items()):
                continue  # a param the oracle cannot read from the spec: leave the search to the other checks
            for label, arguments in self._calls(tool, principal).items():
                if not self.seed.accepts(tool, arguments):
                    continue  # a rule of the search refuses it: the rule examples check that
                expected = self.expected(tool, arguments, principal)
                probes.append(SearchProbe(tool, arguments, expected, label, may_refuse=label == OTHERS))
        return probes
