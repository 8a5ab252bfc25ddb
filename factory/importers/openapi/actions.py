"""Actions on one record (`POST /orders/{id}:cancel`, `/favorite`, `StopCluster`): an update setting the state the
verb names, a status enum's participle or a flag column.
"""

from __future__ import annotations

import re
from typing import Any

from envfarm.factory.importers.openapi.models import (
    Column,
    Entity,
)
from envfarm.factory.importers.openapi.readers import ReadBuilder
from envfarm.factory.importers.openapi.words import (
    ACTION_VERBS,
    EVENT_VERBS,
    OPPOSITES,
    participles,
    past_participle,
    safe_name,
    singular,
)


class ActionBuilder(ReadBuilder):
    """Actions on one record: updates that set the state their verb names."""

    def action_tool(
        self, verb: str, method: str, path: str, op: dict[str, Any], entity: Entity, key_name: str, key_desc: str
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

    def add_flag(self, verb: str, entity: Entity, method: str) -> tuple[str, bool] | None:
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
            entity.columns[column] = Column(
                name=column,
                type="boolean",
                description=f"Whether the {singular(entity.table).replace('_', ' ')} is {column.replace('_', ' ')}",
                source=f"added: the action `{verb}` (the schema names no state it changes)",
            )
            self.report.notes.append(f"{entity.table}.{column}: a flag added for the action `{verb}`")
        return column, not negated


def state_change(verb: str, entity: Entity, negated: bool = False) -> tuple[str, Any] | None:
    """(column, value) an action verb sets on its record: a status enum value naming the state the verb
    leaves it in, else a boolean flag named by it (`favorited`, `is_archived`) set true, or false for its
    `un-` verb or a DELETE; None when the record says neither."""
    if verb.startswith("un") and verb[2:] in ACTION_VERBS:
        verb, negated = verb[2:], not negated
    forms = participles(verb)
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
