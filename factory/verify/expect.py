"""Judging a call against its spec expectation: result values, rows changed, column values after.

The verifier reads state only through the control plane (hash and diff against the seed); this
module rebuilds the episode's rows from the seed plus that diff, so a step's own change (rows
added, updated, removed per table) is the difference between the state before and after it.
Every function here is pure: it returns mismatches as text, naming the field, what was expected
and what was seen.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

from envfarm.factory.spec import REFERENCE, STATE_KEY, EnvironmentSpec, Expect, RowChange

Rows = dict[str, dict[Any, dict[str, Any]]]
"""Rows per table, keyed by primary key."""


class Mismatch(NamedTuple):
    """One field of an expectation that does not hold."""

    field: str
    expected: str
    actual: str

    def __str__(self) -> str:
        return f"{self.field}: expected {self.expected}, got {self.actual}"


class UnresolvedReference(Exception):
    """A `${step.field}` that names no field of that step's result."""


def seed_rows(spec: EnvironmentSpec) -> Rows:
    return {
        table: {row[entity.primary_key]: row for row in spec.seed.get(table, [])}
        for table, entity in spec.entities.items()
    }


def apply_diff(seed: Rows, diff: dict[str, Any], spec: EnvironmentSpec) -> Rows:
    """The episode's rows: the seed with the control plane's diff (added, removed, updated) applied."""
    rows = dict(seed)
    for table, change in diff.items():
        if table not in spec.entities:
            continue
        pk = spec.entities[table].primary_key
        current = dict(rows.get(table, {}))
        for row in change.get("removed", []):
            current.pop(row.get(pk), None)
        for row in change.get("added", []):
            current[row.get(pk)] = row
        for update in change.get("updated", []):
            key = update["key"]
            current[key] = {**current.get(key, {}), **update.get("after", {})}
        rows[table] = current
    return rows


def row_changes(before: Rows, after: Rows) -> dict[str, RowChange]:
    """Per table that differs: how many rows were added, updated and removed."""
    changes = {}
    for table in sorted(set(before) | set(after)):
        old, new = before.get(table, {}), after.get(table, {})
        if old is new:
            continue
        change = RowChange(
            added=sum(k not in old for k in new),
            removed=sum(k not in new for k in old),
            updated=sum(k in old and old[k] != new[k] for k in new),
        )
        if change.added or change.removed or change.updated:
            changes[table] = change
    return changes


def _lookup(results: dict[str, Any], name: str, path: str) -> Any:
    if name not in results:
        raise UnresolvedReference(f"${{{name}{path}}}: no earlier step named {name!r} succeeded")
    value = results[name]
    for part in [p for p in path.split(".") if p]:
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise UnresolvedReference(f"${{{name}{path}}}: no {part!r} in {json.dumps(value, default=str)[:200]}")
    return value


def resolve(value: Any, results: dict[str, Any]) -> Any:
    """`value` with every `${step.field}` replaced by that step's result; a string that is exactly one
    reference takes the referenced value's type."""
    if isinstance(value, dict):
        return {resolve(k, results): resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    whole = REFERENCE.fullmatch(value)
    if whole:
        return _lookup(results, whole[1], whole[2])
    return REFERENCE.sub(lambda m: str(_lookup(results, m[1], m[2])), value)


def same(expected: Any, actual: Any) -> bool:
    """Equal as a spec author means it: numbers within a cent's rounding noise, booleans as SQLite's 0/1."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        if isinstance(actual, int) and isinstance(expected, int):
            return int(expected) == int(actual)
        return expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-6)
    return bool(expected == actual)


def _show(value: Any) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 160 else text[:160] + "..."


def match(expected: Any, actual: Any, path: str = "result") -> list[Mismatch]:
    """Partial match: a dict gives the keys that must be there with these values, a list must have the
    same length and match item by item, anything else must be equal."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [Mismatch(path, "an object", _show(actual))]
        found: list[Mismatch] = []
        for key, value in expected.items():
            if key not in actual:
                found.append(Mismatch(f"{path}.{key}", _show(value), "missing"))
            else:
                found += match(value, actual[key], f"{path}.{key}")
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            size = len(actual) if isinstance(actual, list) else "not a list"
            return [Mismatch(path, f"{len(expected)} items", f"{size}: {_show(actual)}")]
        return [m for n, (e, a) in enumerate(zip(expected, actual, strict=True)) for m in match(e, a, f"{path}.{n}")]
    return [] if same(expected, actual) else [Mismatch(path, _show(expected), _show(actual))]


def _key(spec: EnvironmentSpec, table: str, text: str, rows: Rows) -> Any:
    """A state key's primary key as stored: integer keys are written as text in `table[12]`."""
    if text in rows.get(table, {}):
        return text
    if re.fullmatch(r"-?\d+", text) and int(text) in rows.get(table, {}):
        return int(text)
    return text


def state_mismatches(spec: EnvironmentSpec, state: dict[str, Any], rows: Rows) -> list[Mismatch]:
    """Column values (and row presence) after the call, as `table[key].column: value` says."""
    found: list[Mismatch] = []
    for raw_key, expected in state.items():
        parsed = STATE_KEY.match(raw_key)
        if parsed is None:
            found.append(Mismatch(raw_key, "a key 'table[key].column'", raw_key))
            continue
        table, column = parsed["table"], parsed["column"]
        row = rows.get(table, {}).get(_key(spec, table, parsed["key"], rows))
        if column is None:
            if expected is None and row is not None:
                found.append(Mismatch(raw_key, "no such row", _show(row)))
            elif expected is not None and row is None:
                found.append(Mismatch(raw_key, _show(expected), "no such row"))
            elif expected is not None and row is not None:
                found += match(expected, row, raw_key)
        elif row is None:
            found.append(Mismatch(raw_key, _show(expected), f"no row {parsed['key']!r}"))
        elif not same(expected, row.get(column)):
            found.append(Mismatch(raw_key, _show(expected), _show(row.get(column))))
    return found


def _counts(change: RowChange) -> str:
    return ", ".join(f"{n} {what}" for what, n in change.model_dump().items() if n) or "unchanged"


def rows_mismatches(expected: dict[str, RowChange], actual: dict[str, RowChange]) -> list[Mismatch]:
    """The call's change per table is exactly `expected`; tables not named must not change."""
    found = []
    for table in sorted(set(expected) | set(actual)):
        want, got = expected.get(table, RowChange()), actual.get(table, RowChange())
        if want != got:
            found.append(Mismatch(f"rows.{table}", _counts(want), _counts(got)))
    return found


def judge(
    spec: EnvironmentSpec,
    expect: Expect,
    is_error: bool,
    text: str,
    structured: Any,
    before: Rows,
    after: Rows,
) -> list[Mismatch]:
    """Every way the call's outcome differs from `expect` (empty when it holds)."""
    changes = row_changes(before, after)
    if expect.error is not None:
        if not is_error:
            return [Mismatch("error", f"a rejection containing {expect.error!r}", f"success: {_show(structured)}")]
        found = [] if expect.error in text else [Mismatch("error", f"a message containing {expect.error!r}", text)]
        return found + rows_mismatches({}, changes)
    if is_error:
        return [Mismatch("outcome", "success", f"isError: {text[:300]}")]
    found = match(expect.result, structured) if expect.result is not None else []
    if expect.rows is not None:
        found += rows_mismatches(expect.rows, changes)
    return found + state_mismatches(spec, expect.state, after)
