"""The whole draft: the seed, every write's expectation, and the spec document that `envfarm build` verifies."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.importers.openapi.mapping import OperationMapper
from envfarm.factory.importers.openapi.seed import seed_value, topological, user_known_column
from envfarm.factory.importers.openapi.tools import filled_columns
from envfarm.factory.importers.openapi.words import FARM_NOW, SEED_ROWS

# The last word of a key column that names the record as people do, so it is seeded as a name.
KEY_NAME_WORDS = frozenset({"name", "title", "username", "email", "login", "handle"})


class Importer(OperationMapper):
    """One document's import: the mapping above plus the seed, the expectations and the spec."""

    def seed(self, rng: random.Random, now: datetime) -> dict[str, list[dict[str, Any]]]:
        rows: dict[str, list[dict[str, Any]]] = {}
        order = topological(self.entities)
        # distinct names while there are enough (a document of hundreds of tables reuses them across tables)
        people = fakedata.unique_people(rng, min(SEED_ROWS * max(1, len(self.entities)), fakedata.PEOPLE))
        for t_index, table in enumerate(order):
            entity = self.entities[table]
            personal = bool({"first_name", "last_name", "given_name", "family_name", "surname"} & set(entity.columns))
            key = entity.columns[entity.primary_key]
            # A key people name the record by (AWS's `budget_name`, a user's `username`) is seeded as such, not as
            # `budg_0001`: the budget is then 'the Greenfield Budget', never 'the budget that says ...'.
            named_key = key.type == "string" and not entity.added_key and key.name.rsplit("_", 1)[-1] in KEY_NAME_WORDS
            table_rows = []
            for n in range(entity.seed_rows):
                person = people[(t_index * SEED_ROWS + n) % len(people)]
                row: dict[str, Any] = {}
                for name, column in entity.columns.items():
                    if name == entity.primary_key and named_key:
                        row[name] = seed_value(column, n, rng, now, person, table, personal)
                    elif name == entity.primary_key:
                        row[name] = n + 1 if column.type == "integer" else entity.id_format.format(n + 1)
                    elif column.ref:
                        target_table, _, target_column = column.ref.partition(".")
                        targets = rows.get(target_table) or []
                        # Only the first half of the parents have children, so deleting the
                        # others is not refused by the foreign key.
                        half = max(1, (len(targets) + 1) // 2)
                        row[name] = targets[n % half][target_column] if targets else None
                    else:
                        row[name] = seed_value(column, n, rng, now, person, table, personal)
                table_rows.append(row)
            keys = [r[entity.primary_key] for r in table_rows]
            if named_key and (len(set(keys)) < len(keys) or not all(isinstance(k, str) and k for k in keys)):
                for n, r in enumerate(table_rows):  # names that repeat make no key
                    r[entity.primary_key] = entity.id_format.format(n + 1)
            rows[table] = table_rows
        return rows

    # ---- expectations ------------------------------------------------------------------------------

    def _fresh(self, tool: dict[str, Any], pname: str, seed: dict[str, list[dict[str, Any]]], avoid: Any = None) -> Any:
        """A value for a write's param: an existing key for a foreign key, else a new value of its type
        (never a copy of a seed value, so unique columns stay unique)."""
        param = tool["params"][pname]
        entity = self.entities[tool["entity"]]
        column = entity.columns.get(param.get("column", pname))
        if column is not None and column.ref:
            target, _, target_column = column.ref.partition(".")
            values = [row[target_column] for row in seed.get(target, []) if row.get(target_column) is not None]
            return next((v for v in values if v != avoid), values[0] if values else None)
        if param.get("enum"):
            return next((v for v in param["enum"] if v != avoid), param["enum"][0])
        if param.get("items"):  # a list column: one new item
            return [self._fresh({**tool, "params": {pname: {**param, "items": False}}}, pname, seed, avoid)]
        return {
            "string": f"New {pname.replace('_', ' ')}",
            "integer": 7,
            "number": 12.5,
            "boolean": avoid is not True,
            "date": "2026-05-04",
            "datetime": "2026-05-04T10:00:00Z",
        }[param["type"]]

    def expectations(self, tool: dict[str, Any], seed: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """What each imported write must do, as examples with expectations: a create adds one row, an
        update sets the column it names on that row, a delete removes it (an unreferenced row), and an
        update given nothing to change is refused. Reads need none: the contract checks cover them."""
        table, effect = tool["entity"], tool["effect"]
        entity = self.entities[table]
        rows = seed.get(table) or []
        params = tool["params"]
        if effect == "create":
            args = {p: self._fresh(tool, p, seed) for p, spec in params.items() if spec.get("required")}
            if not args:  # at least one value, so the call says something
                first = next(iter(params))
                args[first] = self._fresh(tool, first, seed)
            shown = {
                p: v
                for p, v in args.items()
                if params[p]["type"] == "string" and not params[p].get("column") and not params[p].get("items")
            }
            expect: dict[str, Any] = {"rows": {table: {"added": 1}}}
            if shown:
                expect["result"] = shown
            return [{"args": args, "expect": expect}]
        if effect not in ("update", "delete") or not rows:
            return []
        key = tool["key"]
        key_column = params[key].get("column", key)
        row = rows[-1]  # the last rows have no children: deleting one is not refused by a foreign key
        if row.get(key_column) is None or sum(r.get(key_column) == row[key_column] for r in rows) != 1:
            return []
        where = f"{table}[{row[entity.primary_key]}]"
        if effect == "delete":
            return [
                {"args": {key: row[key_column]}, "expect": {"state": {where: None}, "rows": {table: {"removed": 1}}}}
            ]
        changes = [p for p in params if p != key]
        if not changes and tool.get("set"):  # an action: its fixed state lands on a row not already in it
            column, value = next(iter(tool["set"].items()))
            other = next((r for r in reversed(rows) if r.get(column) != value), None)
            if other is None or other.get(key_column) is None:
                return []
            where = f"{table}[{other[entity.primary_key]}]"
            expect = {"state": {f"{where}.{column}": value}, "rows": {table: {"updated": 1}}}
            return [{"args": {key: other[key_column]}, "expect": expect}]
        if not changes:
            return []
        # The first change whose new value differs from the row's; where none can (an enum of one value), the
        # call still runs under an expectation of the state, without counting the row as changed.
        candidates = []
        for target in changes:
            column = params[target].get("column", target)
            value = self._fresh(tool, target, seed, avoid=row.get(column))
            stored = ", ".join(map(str, value)) if isinstance(value, list) else value  # a list column keeps joined text
            candidates.append((stored == row.get(column), target, column, value, stored))
        same, target, column, value, stored = min(candidates, key=lambda c: c[0])
        state = {f"{where}.{column}": stored, **{f"{where}.{c}": v for c, v in (tool.get("set") or {}).items()}}
        expect = {"state": state} if same else {"state": state, "rows": {table: {"updated": 1}}}
        examples = [{"args": {key: row[key_column], target: value}, "expect": expect}]
        if all(not params[p].get("required") for p in changes) and not tool.get("set"):
            examples.append({"args": {key: row[key_column]}, "expect": {"error": "Nothing to change"}})
        return examples

    # ---- the spec ----------------------------------------------------------------------------------

    def spec(self, title: str, description: str, domain: str, seed_number: int) -> dict[str, Any]:
        now = datetime.fromisoformat(FARM_NOW)
        used = {t["entity"] for t in self.tools}
        # Keep the entities a tool uses and the ones their foreign keys need.
        keep = set(used)
        changed = True
        while changed:
            changed = False
            for table in list(keep):
                for column in self.entities[table].columns.values():
                    if column.ref and (target := column.ref.split(".")[0]) not in keep:
                        keep.add(target)
                        changed = True
        for table in list(self.entities):
            if table not in keep:
                del self.entities[table]
                self.report.entities.pop(table, None)
        self.report.notes += [
            f"{t}: the schema has no key; added `{e.primary_key}`" for t, e in self.entities.items() if e.added_key
        ]
        seed = self.seed(random.Random(seed_number), now)
        self.optional_parents(seed)
        # A foreign key must name a primary key or a unique column (SQLite refuses anything else): a
        # reference to another column is kept, as UNIQUE, only where the seed's values are distinct.
        unique: set[tuple[str, str]] = set()
        for entity in self.entities.values():
            for column in entity.columns.values():
                if not column.ref:
                    continue
                target, _, target_column = column.ref.partition(".")
                if target_column == self.entities[target].primary_key:
                    continue
                values = [row.get(target_column) for row in seed.get(target, [])]
                if None not in values and len(set(values)) == len(values):
                    unique.add((target, target_column))
                else:
                    self.report.notes.append(f"{entity.table}.{column.name}: not linked to {column.ref} (not a key)")
                    column.ref = None
        # the tables whose keys were seeded as names (`seed`): a person knows their project's name
        named = {
            table
            for table, entity in self.entities.items()
            if seed.get(table)
            and not any(str(r[entity.primary_key]) == entity.id_format.format(n + 1) for n, r in enumerate(seed[table]))
            and entity.columns[entity.primary_key].type == "string"
            and not entity.id_format.startswith("{")
        }
        entities: dict[str, Any] = {}
        for table, entity in self.entities.items():
            columns: dict[str, Any] = {}
            for name, column in entity.columns.items():
                col: dict[str, Any] = {"type": column.type, "description": column.description or name.replace("_", " ")}
                if column.enum:
                    col["enum"] = column.enum
                if column.ref:
                    col["ref"] = column.ref
                if (table, name) in unique:
                    col["unique"] = True
                if name != entity.primary_key and name not in entity.parents:
                    col["nullable"] = True
                if user_known_column(name, column, entity) or (name == entity.primary_key and table in named):
                    col["user_known"] = True
                columns[name] = col
            entities[table] = {
                "description": entity.description,
                "primary_key": entity.primary_key,
                "id_format": entity.id_format,
                "columns": columns,
            }
        for tool in self.tools:
            for pname, param in tool["params"].items():
                found = self.entities[tool["entity"]].columns.get(param.get("column", pname))
                if found is not None and found.type != param["type"]:
                    param["type"] = found.type
            examples = self.expectations(tool, seed)
            if examples:
                tool["examples"] = examples
        spec = {
            "name": self.name,
            "domain": domain,
            "title": title,
            "description": description,
            "version": "1.0.0",
            "now": FARM_NOW,
            "seed_number": seed_number,
            "entities": entities,
            "seed": seed,
            "tools": self.tools,
        }
        if unlisted := self.unlisted(entities):
            spec["unlisted"] = unlisted
        return spec

    def optional_parents(self, seed: dict[str, list[dict[str, Any]]]) -> None:
        """A parent column (`/projects/{id}/tasks` -> `tasks.project_id`) is required only where every
        create of the table fills it and every seed row has one. A create at another path (`POST /tasks`)
        or a parent the seed cannot fill (a cycle, a parent table nobody lists) leaves the reference
        empty instead of making the spec unbuildable; the report notes each one."""
        for table, entity in self.entities.items():
            creates = [t for t in self.tools if t["effect"] == "create" and t["entity"] == table]
            for column in list(entity.parents):
                unfilled = [t["name"] for t in creates if column not in filled_columns(t)]
                seedless = any(row.get(column) is None for row in seed.get(table, []))
                if unfilled or seedless:
                    del entity.parents[column]
                    why = f"not always filled by {', '.join(unfilled)}" if unfilled else "no parent row to seed it from"
                    self.report.notes.append(f"{table}.{column}: an optional reference ({why})")

    def unlisted(self, entities: dict[str, Any]) -> dict[str, str]:
        """Tables the API itself cannot list in full: no search operation, or only one per parent."""
        searches: dict[str, list[dict[str, Any]]] = {}
        for tool in self.tools:
            if tool.get("effect") == "search":
                searches.setdefault(tool["entity"], []).append(tool)
        reasons = {}
        for table in entities:
            found = searches.get(table, [])
            if not found:
                reasons[table] = f"the API has no operation that lists {table}"
            elif all(any(p.get("required") for p in (s.get("params") or {}).values()) for s in found):
                reasons[table] = f"the API lists {table} only for one parent at a time"
        return reasons
