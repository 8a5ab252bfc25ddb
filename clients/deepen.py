"""Deeper gold chains that stay needed and motivated (criterion D of the annotation rubric).

A refusal decided by two unlinked lookups (the asker found by name, the row found by its code) is one step of
checking; a desk agent who hears "cancel my rental RA89179" first pulls up the caller's own rentals, does not find
it there, and only then looks the code up to see whose it is. `own_rows_reads` finds that middle read for any
server: one keyed on the asker's id (which the lookup of the asker returned) that lists rows of the table the
request is about. Its output is what establishes "not yours", and its input is an earlier output, so the check is
a chain, not two lookups side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envfarm.clients.audit import rows_of
from envfarm.clients.graph import ToolSpec, is_id_like
from envfarm.clients.grounding import ServerWorld


def own_rows_reads(
    specs: Sequence[ToolSpec], world: ServerWorld, table: str, asker: dict[str, Any]
) -> list[tuple[ToolSpec, dict[str, Any]]]:
    """The reads of the server that list `table`'s rows of the person `asker` (their row as a people lookup
    returned it), with the arguments: a read filtered by a column of `table` that points at a people table (the
    rental's `driver_id`, the hold's `member_id`), filled with the asker's key from that row. Reads whose only
    required input is that filter, so nothing else must be made up; in the order the server lists them."""
    people_keys = {world.keys[t]: t for t in world.tables if world.keys.get(t) and world.keys[t] in asker}
    found = []
    for spec in specs:
        if not spec.read_only:
            continue
        for param in spec.params:
            where, _, column = (param.column or "").partition(".")
            if where != table or param.user_known or column not in people_keys or people_keys[column] == table:
                continue
            if not is_id_like(column) or asker.get(column) in (None, ""):
                continue
            if any(p.required and p.name != param.name for p in spec.params):
                continue
            found.append((spec, {param.name: asker[column]}))
            break
    return found


def asker_row(output: Any, email: str) -> dict[str, Any] | None:
    """The row of a people lookup's `output` that is the asker's (carries their email)."""
    return next((r for r in rows_of(output) if email and email in r.values()), None)
