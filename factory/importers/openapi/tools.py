"""Operations -> tools: search, get, create, update and delete over a table (computed reads are in `readers`,
actions on a record in `actions`).
"""

from __future__ import annotations

from typing import Any

from envfarm.factory.importers.openapi.document import ends_in_param
from envfarm.factory.importers.openapi.models import (
    LIST_TEXT,
    Column,
    Entity,
    MappedOperation,
    schema_type,
)
from envfarm.factory.importers.openapi.seed import user_known_column
from envfarm.factory.importers.openapi.tables import TableBuilder
from envfarm.factory.importers.openapi.words import (
    PAGINATION,
    first_paragraph,
    safe_name,
    singular,
    snake,
)
from envfarm.factory.spec import LIST_AS_TEXT


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
                if column == entity.primary_key:  # `/comments/{id}/edit` making `created_comments` keyed by comment_id
                    column = safe_name(f"parent_{column}")
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
