"""Operations -> tools: search, get, create, update and delete over a table, computed reads over a seeded
lookup table, and actions on a record that set the state their verb names.
"""

from __future__ import annotations

import re
from typing import Any

from envfarm.factory.importers.openapi.document import ends_in_param
from envfarm.factory.importers.openapi.models import (
    LIST_TEXT,
    Column,
    Entity,
    MappedOperation,
    column_type,
    is_scalar,
    schema_type,
)
from envfarm.factory.importers.openapi.seed import user_known_column
from envfarm.factory.importers.openapi.tables import TableBuilder
from envfarm.factory.importers.openapi.words import (
    ACTION_VERBS,
    EVENT_VERBS,
    NOT_INPUTS,
    OPPOSITES,
    PAGINATION,
    SEED_ROWS,
    camel,
    first_paragraph,
    participles,
    past_participle,
    safe_name,
    singular,
    snake,
)
from envfarm.factory.spec import LIST_AS_TEXT

FEW_TOOLS = 3  # a document whose operations make fewer tools may get read-backs of what it creates
OUTPUT_SCHEMA = re.compile(
    r"(Response|Result|Output|Reply|Request|Parameters|Params|Input)s?(Entity|Entities)?$|Responses?_?\d*$"
)


class ToolBuilder(TableBuilder):
    """Tables -> tools: the search, get, create, update, delete, lookup and action tools."""

    def _param_from_column(
        self, column: Column, description: str | None, required: bool = False, search: bool = False
    ) -> dict[str, Any]:
        """A tool param filling or filtering `column`. A list column (kept as comma-joined text) takes an
        array when written, so no param is a comma-separated string; a search matches one item's text."""
        text = without_list_phrasing(description or column.description or "", column.name)
        param: dict[str, Any] = {"type": column.type, "description": text}
        if column.json_text == "list":
            text = text.replace(LIST_TEXT, "").strip()
            param["description"] = f"{text} (any list item containing this text)" if search else text
            if not search:
                param["items"] = True
        if required:
            param["required"] = True
        if column.enum:
            param["enum"] = list(column.enum)
        return param

    def _parent_params(self, path: str, entity: Entity, params: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Path parameters of a parent collection (`/projects/{projectId}/tasks`): each names the
        parent row, so it becomes the child's foreign-key column, added if the schema lacks it."""
        found: dict[str, dict[str, Any]] = {}
        segments = [s for s in path.strip("/").split("/") if s]
        described = {p["name"]: p for p in params if p.get("in") == "path"}
        for i, seg in enumerate(segments):
            if not (seg.startswith("{") and seg.endswith("}")):
                continue
            if i == len(segments) - 1:
                continue  # the row's own key
            pname = seg[1:-1]
            parent_path = "/" + "/".join(segments[:i])
            parent_table = self.collections.get(parent_path)
            if parent_table is None or parent_table == entity.table:
                continue
            parent = self.entities[parent_table]
            parent_key = self.key_column(parent, pname)
            column = safe_name(pname)
            if (
                column not in entity.columns
                or column == entity.primary_key
                or column == "id"  # `/invoices/{id}/items`: the invoice's id, not the item's own `id` field
                or column in self.item_keys.get(entity.table, [])
            ):
                column = (
                    f"{singular(parent.table)}_{parent_key}"
                    if not parent_key.startswith(singular(parent.table))
                    else parent_key
                )
                column = safe_name(column)
            ptype = parent.columns[parent_key].type
            desc = first_paragraph((described.get(pname) or {}).get("description"))
            if not desc or "XXX" in desc:
                desc = f"The {singular(parent.table).replace('_', ' ')}'s {parent_key.replace('_', ' ')}"
            if column in entity.columns and entity.columns[column].type != ptype:
                # The record's own field of that name is not of the parent key's type: a filter, not a reference.
                found[column] = {"type": entity.columns[column].type, "description": desc, "required": True}
                continue
            if column not in entity.columns:
                entity.columns[column] = Column(
                    name=column,
                    type=ptype,
                    description=f"The {singular(parent.table).replace('_', ' ')} it belongs to",
                    source=f"path {path}",
                )
            entity.columns[column].ref = f"{parent.table}.{parent_key}"
            entity.parents[column] = parent.table
            found[column] = {"type": ptype, "description": desc, "required": True}
        return found

    def search_tool(
        self, method: str, path: str, op: dict[str, Any], params: list[dict[str, Any]], entity: Entity
    ) -> None:
        tool_params = self._parent_params(path, entity, params)
        limit = 25
        dropped = []
        for param in params:
            where, pname = param.get("in", "query"), param["name"]
            if where != "query":
                continue
            schema = self.doc.schema(param.get("schema") or {})[1]
            column = safe_name(pname)
            if column in PAGINATION or snake(pname) in PAGINATION:
                size = schema.get("maximum") or schema.get("default")
                if snake(pname) in ("limit", "page_size", "pagesize", "per_page", "size", "top") and isinstance(
                    size, int | float
                ):
                    limit = max(1, min(200, int(size)))
                continue
            target = (
                column
                if column in entity.columns
                else next(
                    (c for c in entity.columns if c.startswith(f"{column}_") and entity.columns[c].type == "string"),
                    None,
                )
            )
            if target is None or target in tool_params:
                dropped.append(pname)
                continue
            col = entity.columns[target]
            desc = first_paragraph(param.get("description")) or col.description
            tool_param = self._param_from_column(col, desc, search=True)
            if col.type == "string" and not col.enum and (col.json_text or user_known_column(target, col, entity)):
                tool_param["match"] = "contains"
            if target != column:
                tool_param["column"] = target
            tool_params[column] = tool_param
        if dropped:
            self.report.notes.append(
                f"{op.get('operationId') or path}: query parameters {dropped} name no column and were dropped"
            )
        tool = {
            "name": self.tool_name(op, method, path),
            "description": self.description(op, method, path),
            "effect": "search",
            "entity": entity.table,
            "limit": limit,
            "params": tool_params,
        }
        self._add(tool, method, path, op, entity)

    def keyed_tool(
        self,
        effect: str,
        method: str,
        path: str,
        op: dict[str, Any],
        params: list[dict[str, Any]],
        entity: Entity,
        body: dict[str, Any] | None,
    ) -> None:
        segments = [s for s in path.strip("/").split("/") if s]
        key_desc = ""
        if ends_in_param(path):
            key_name = segments[-1][1:-1]
            described = next((p for p in params if p["name"] == key_name and p.get("in") == "path"), {})
            key_desc = first_paragraph(described.get("description"))
        else:
            key_name = entity.primary_key  # PUT /pet with the pet (its id) in the body
            if body is None:
                return self.skip(method, path, op, "changes a record with no key in the path or body: not mapped")
        column = self.key_column(entity, key_name)
        key = safe_name(key_name)
        if not key_desc or "XXX" in key_desc:
            key_desc = f"The {singular(entity.table).replace('_', ' ')}'s {column.replace('_', ' ')}"
        key_param = self._param_from_column(entity.columns[column], key_desc, required=True)
        key_param.pop("enum", None)
        if key != column:
            key_param["column"] = column
        tool_params: dict[str, dict[str, Any]] = {key: key_param}
        if effect == "update":
            changes = self.body_params(entity, body, for_update=True)
            for param in params:
                if param.get("in") == "query" and safe_name(param["name"]) in entity.columns:
                    col = entity.columns[safe_name(param["name"])]
                    changes.setdefault(
                        col.name, self._param_from_column(col, first_paragraph(param.get("description")))
                    )
            changes.pop(key, None)
            changes.pop(column, None)
            changes.pop(entity.primary_key, None)
            if not changes:
                return self.skip(
                    method,
                    path,
                    op,
                    "changes a record but names no field it changes: its effect is not in the description",
                )
            tool_params.update(changes)
        tool = {
            "name": self.tool_name(op, method, path),
            "description": self.description(op, method, path),
            "effect": effect,
            "entity": entity.table,
            "key": key,
            "params": tool_params,
        }
        self._add(tool, method, path, op, entity)

    def body_params(self, entity: Entity, body: dict[str, Any] | None, for_update: bool) -> dict[str, dict[str, Any]]:
        """Body properties as params (added as columns where the record schema lacks them); the
        record's own key and read-only properties are left out."""
        if body is None:
            return {}
        record = self.record_of(body, entity.schema_name)
        if record is None:  # a body of one field (`{nights}`) is still the fields a write sets
            schema = self.doc.schema(body)[1]
            if schema_type(schema) != "object" or not schema.get("properties"):
                return {}
            record = (None, schema, False)
        _, schema, _ = record
        required = set(schema.get("required") or [])
        before = set(entity.columns)
        mapping = self.add_columns(entity, schema, f"{record[0] or 'body'}")
        params: dict[str, dict[str, Any]] = {}
        for prop, column in mapping.items():
            node = (schema.get("properties") or {})[prop]
            sub = self.doc.schema(node)[1]
            if sub.get("readOnly") or column == entity.primary_key:
                continue
            columns = [
                c for c in entity.columns if c == column or c.startswith(f"{column}_") and c not in before | {column}
            ]
            if column not in entity.columns:
                columns = [c for c in entity.columns if c.startswith(f"{column}_")]
            for name in columns:
                col = entity.columns[name]
                params[name] = self._param_from_column(
                    col, col.description, required=not for_update and prop in required and name == column
                )
        return params

    def create_tool(
        self,
        method: str,
        path: str,
        op: dict[str, Any],
        params: list[dict[str, Any]],
        entity: Entity,
        body: dict[str, Any] | None,
    ) -> None:
        tool_params = self._parent_params(path, entity, params)
        tool_params.update(
            {k: v for k, v in self.body_params(entity, body, for_update=False).items() if k not in tool_params}
        )
        for param in params:
            if param.get("in") == "query" and safe_name(param["name"]) in entity.columns:
                col = entity.columns[safe_name(param["name"])]
                tool_params.setdefault(
                    col.name,
                    self._param_from_column(
                        col, first_paragraph(param.get("description")), bool(param.get("required"))
                    ),
                )
        if not tool_params:
            return self.skip(method, path, op, "creates a record from nothing it describes (no body, no parameters)")
        tool = {
            "name": self.tool_name(op, method, path),
            "description": self.description(op, method, path),
            "effect": "create",
            "entity": entity.table,
            "params": tool_params,
        }
        self._add(tool, method, path, op, entity)

    def _add(self, tool: dict[str, Any], method: str, path: str, op: dict[str, Any], entity: Entity) -> None:
        for pname, param in tool["params"].items():
            if not param.get("items") and param.get("type") == "string" and isinstance(param.get("description"), str):
                param["description"] = without_list_phrasing(param["description"], pname)
        if "id" in tool["params"] and tool.get("key") != "id" and tool["effect"] != "search":
            # The generated write binds the row's key as `:id`: a param of that name (a record's own `id` field
            # beside another key) would be overwritten by it, so it takes another name.
            params = tool["params"]
            tool["params"] = {
                ("id_value" if p == "id" else p): ({**v, "column": v.get("column", "id")} if p == "id" else v)
                for p, v in params.items()
            }
        self.tools.append(tool)
        self.asked[tool["name"]] = str(op.get("summary") or op.get("description") or "")
        self.report.tools.append(
            MappedOperation(
                method=method,
                path=path,
                operation_id=op.get("operationId"),
                tool=tool["name"],
                effect=tool["effect"],
                entity=entity.table,
            )
        )

    def read_back_tools(self) -> None:
        """A document of few operations whose creates write a resource no operation reads (`POST /customApps`
        alone): the server keeps every row it creates, so a `get` by key and a `list` over it read back what
        was made. They are not operations of the original API, and their descriptions say so. A table with any
        read gets none, nor one whose schema is an operation's output (`SimilarityResponse`: a computation's
        answer, not a resource), nor any table of a document whose own operations make three tools or more."""
        if len(self.tools) >= FEW_TOOLS:
            return
        read = {t["entity"] for t in self.tools if t["effect"] in ("get", "search")}
        created = [t["entity"] for t in self.tools if t["effect"] == "create"]
        resources = [t for t in created if t not in read and not OUTPUT_SCHEMA.search(self.entities[t].schema_name)]
        for table in dict.fromkeys(resources):
            entity = self.entities[table]
            one, key = singular(table).replace("_", " "), entity.primary_key
            note = "Not an operation of the original API: this server keeps the {0} its create tool makes."
            get_param = self._param_from_column(entity.columns[key], f"The {one}'s {key.replace('_', ' ')}", True)
            get_param.pop("enum", None)
            filters: dict[str, dict[str, Any]] = {}
            for name, column in entity.columns.items():
                if name != key and column.type == "string" and user_known_column(name, column, entity):
                    filters[name] = self._param_from_column(column, column.description, search=True)
                    if not column.enum:
                        filters[name]["match"] = "contains"
            for effect, verb, params, asked in (
                ("get", "get", {key: get_param}, f"Show the {one} with {key.replace('_', ' ')}"),
                ("search", "list", filters, f"List the {table.replace('_', ' ')}"),
            ):
                name = self.tool_name({"operationId": f"{verb}_{table if verb == 'list' else singular(table)}"}, "", "")
                tool: dict[str, Any] = {
                    "name": name,
                    "description": f"{asked}. " + note.format(table.replace("_", " ")),
                    "effect": effect,
                    "entity": table,
                    **({"key": key} if effect == "get" else {"limit": 25}),
                    "params": params,
                }
                self._add(tool, "get", f"(read-back of {table})", {"summary": asked}, entity)
                self.report.notes.append(f"{name}: reads back the {table} its create makes (no such operation)")

    # ---- tool builders -------------------------------------------------------------------------

    def lookup_tool(self, method: str, path: str, op: dict[str, Any], params: list[dict[str, Any]]) -> bool:
        """A computed read (a weather or geocoding lookup, a language detector, a price quote): a GET that
        answers its inputs with fields of no stored record. It becomes a read over a seeded lookup table,
        one row per input it knows (input columns + answer columns), so the same input always gets the same
        answer; a read that takes no input (a singleton, `GET /account`) has one row, its answer. A read whose
        document gives no record schema answers in one `answer` column. Returns False (nothing mapped) when it
        answers a list of records (a search of their table) or no field."""
        inputs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        for param in params:
            if param.get("in") not in ("query", "path") or not isinstance(param.get("name"), str):
                continue
            schema = self.doc.schema(param.get("schema") or {})[1]
            column = safe_name(param["name"])
            ignored = PAGINATION | NOT_INPUTS
            if is_scalar(schema) and column not in ignored and snake(param["name"]) not in ignored:
                inputs[column] = (param, schema)
        response = self.response(op)
        answer = self.doc.schema(response)[1] if response is not None else {}
        opaque = schema_type(answer) != "object" or not answer.get("properties")
        if opaque:
            items = self.doc.schema(answer.get("items") or {})[1] if schema_type(answer) == "array" else {}
            if schema_type(items) == "object" and items.get("properties"):
                return False  # a list of records: a search of their table, not one answer per input
            answer = self._opaque_answer(op, answer, set(inputs))
        name = self.tool_name(op, method, path)
        table = f"{name}_answers"
        while table in self.entities:
            table += "_records"
        entity = Entity(
            table=table,
            schema_name=camel(table),
            description=f"The answers {name} knows: one row per input" if inputs else f"The answer {name} gives",
            primary_key="lookup_id",
            id_format="lkp_{:04d}",
            added_key=True,
            seed_rows=SEED_ROWS if inputs else 1,  # no input: always the same answer
        )
        entity.columns["lookup_id"] = Column(
            name="lookup_id", type="string", description="Internal lookup row id", source="added: a lookup table"
        )
        for column, (param, schema) in inputs.items():
            entity.columns[column] = Column(
                name=column,
                type=column_type(schema)[0],
                description=first_paragraph(param.get("description")) or column.replace("_", " "),
                enum=[str(v) for v in schema["enum"]]
                if schema.get("enum") and column_type(schema)[0] == "string"
                else None,
                source=f"parameter {param['name']}",
            )
        self.add_columns(entity, answer, entity.schema_name)
        if len(entity.columns) <= len(inputs) + 1:
            self.tool_names.discard(name)
            return False
        self.entities[table] = entity
        self.report.entities[table] = f"the answer of {op.get('operationId') or path} (a computed read)"
        tool_params = {
            column: {
                **self._param_from_column(entity.columns[column], first_paragraph(param.get("description"))),
                **({"required": True} if param.get("required") or param.get("in") == "path" else {}),
            }
            for column, (param, _) in inputs.items()
        }
        tool = {
            "name": name,
            "description": self.description(op, method, path),
            "effect": "search",
            "entity": table,
            "limit": 10,
            "params": tool_params,
        }
        self._add(tool, method, path, op, entity)
        self.report.notes.append(
            f"{name}: a computed read, answered from the seeded lookup table `{table}`"
            + (" (the document gives no schema for its answer: one text column holds it)" if opaque else "")
        )
        return True

    def _opaque_answer(self, op: dict[str, Any], shape: dict[str, Any], taken: set[str]) -> dict[str, Any]:
        """The answer of a read whose document gives no record schema (none at all, a string, a free-form
        map, a list of plain values): one `answer` column of its type (text when unknown), described by
        the response's own description where it says more than "OK"."""
        described = ""
        for code, resp in (op.get("responses") or {}).items():
            if str(code).startswith("2"):
                described = first_paragraph(self.doc.deref(resp)[1].get("description"), 120)
                break
        if re.fullmatch(
            r"(?i)(\d{3} )?(ok|success(ful)?( response| operation| request)?|no response was specified)?\.?", described
        ):
            described = ""
        kind = schema_type(shape)
        column: dict[str, Any] = {"type": "string"}
        if kind == "array" and is_scalar(self.doc.schema(shape.get("items") or {})[1]):
            column = {"type": "array", "items": shape.get("items")}
        elif is_scalar(shape):
            column = {k: v for k, v in shape.items() if k in ("type", "format", "enum")}
        what = {
            "object": "the API's answer, a map kept as text",
            "array": "the API's answer, a list",
            None: "the API's answer (the document gives no schema for it)",
        }.get(kind, "the API's answer")
        column["description"] = (f"{described.rstrip('.')}: " if described else "") + what
        name = "answer" if "answer" not in taken else "answer_text"
        return {"type": "object", "properties": {name: column}}

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


def filled_columns(tool: dict[str, Any]) -> set[str]:
    """The columns a create tool always writes: each required param's own column (or its name) and its fixed
    `set` values (an optional param may leave its column empty)."""
    given = {param.get("column", name) for name, param in tool["params"].items() if param.get("required")}
    return given | set(tool.get("set") or {})


def without_list_phrasing(text: str, name: str) -> str:
    """A text param's description without "comma-separated" (the document's list syntax): the param holds
    that text whole, so say only what it is; the name stands in when nothing else is left."""
    if LIST_AS_TEXT.search(text):
        text = " ".join(LIST_AS_TEXT.sub("", text).replace("()", "").split()).lstrip("-,; ")
    return text or name.replace("_", " ")
