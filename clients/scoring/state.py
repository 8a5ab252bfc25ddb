"""State match (tau2-style, path-independent): each server's final diff against the seed must equal the gold
diff, table by table, and no other table may change. Ids the gold run generated (the keys of rows it added) are
compared as placeholders, so an agent whose detours used up other ids still matches; every other value must be
equal."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from envfarm.clients.tasks import ExpectedState, Task
from envfarm.clients.trajectory import ServerState
from envfarm.servers.runtime.control import TableDiff

NEW_ID = "<new id>"


def _generated_ids(diff: dict[str, TableDiff]) -> set[Any]:
    """The key (first column) of every added row: ids the run generated."""
    return {next(iter(row.values())) for table in diff.values() for row in table.added if row}


def _canonical(value: Any, new_ids: set[Any]) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v, new_ids) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_canonical(v, new_ids) for v in value]
    return NEW_ID if isinstance(value, str) and value in new_ids else value


def _rows(rows: list[dict[str, Any]], new_ids: set[Any]) -> Counter[str]:
    return Counter(json.dumps(_canonical(row, new_ids), sort_keys=True, default=str) for row in rows)


def _updated(rows: list[dict[str, Any]], new_ids: set[Any]) -> Counter[str]:
    """Updated rows by key and final values (`before` is the seed's, so it adds nothing)."""
    return _rows([{"key": row.get("key"), "after": row.get("after")} for row in rows], new_ids)


def state_problems(expected: ExpectedState, final: ServerState, server: str) -> list[str]:
    """What differs between the gold diff and the final one; empty when they match."""
    problems: list[str] = []
    gold_new, final_new = _generated_ids(expected.diff), _generated_ids(final.diff)
    empty = TableDiff()
    for table in sorted(set(expected.diff) | set(final.diff)):
        want, got = expected.diff.get(table, empty), final.diff.get(table, empty)
        if table not in expected.diff and table not in expected.tables:
            problems.append(f"{server}.{table}: changed, but the task never touches it")
            continue
        for part, compare in (("added", _rows), ("removed", _rows), ("updated", _updated)):
            wanted = compare(getattr(want, part), gold_new)
            found = compare(getattr(got, part), final_new)
            if wanted != found:
                missing = sum((wanted - found).values())
                extra = sum((found - wanted).values())
                problems.append(f"{server}.{table}: {part} rows differ ({missing} missing, {extra} unexpected)")
    return problems


def state_match(task: Task, final: dict[str, ServerState]) -> tuple[bool | None, list[str]]:
    """Path-independent match of every server's final state; None when no server reports state."""
    checked, problems = 0, []
    for server, expected in task.expected_state.items():
        state = final.get(server)
        if state is None:
            continue
        checked += 1
        if expected.hash is not None and state.hash == expected.hash:
            continue  # byte-identical state: no need to compare diffs
        problems += state_problems(expected, state, server)
    for server, state in final.items():
        if server not in task.expected_state and state.diff:
            checked += 1
            problems.append(f"{server}: changed ({', '.join(sorted(state.diff))}), but the task never touches it")
    return (None, []) if checked == 0 else (not problems, problems)
