"""Schemas -> tables: the record a body or response carries, its columns (flattened, typed, renamed away from
keywords), the key each table is named by, and the foreign keys between tables.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from envfarm.factory.importers.openapi.document import collection_path, ends_in_param
from envfarm.factory.importers.openapi.models import (
    LIST_TEXT,
    NESTED_TEXT,
    Column,
    Entity,
    column_type,
    is_scalar,
    schema_type,
)
from envfarm.factory.importers.openapi.seed import looks_uuid
from envfarm.factory.importers.openapi.state import ImporterState
from envfarm.factory.importers.openapi.words import (
    PAGE_FIELDS,
    article_for,
    camel,
    first_paragraph,
    plural,
    record_nouns,
    safe_name,
    singular,
    snake,
    uuid_format,
)
from envfarm.factory.spec import SQL_KEYWORDS


class TableBuilder(ImporterState):
    """Schemas -> tables: records, columns, keys and foreign keys."""

    # ---- schemas -> entities -------------------------------------------------------------------

    def record_of(self, node: Any, fallback: str, depth: int = 0) -> tuple[str | None, dict[str, Any], bool] | None:
        """The record schema a body or response carries: (schema name, schema, many), unwrapping
        arrays, `{items: [X], pagination}` collections and `{x: X}` envelopes; None if no record."""
        if depth > 4:  # a schema that contains itself (`children: [Category]`) ends here
            return None
        name, schema = self.doc.schema(node)
        kind = schema_type(schema)
        if kind == "array":
            inner = self.record_of(schema.get("items") or {}, fallback, depth + 1)
            return (inner[0], inner[1], True) if inner else None
        if kind != "object":
            return None
        props = schema.get("properties") or {}
        resolved = {p: self.doc.schema(s) for p, s in props.items()}
        arrays = [  # a hypermedia `links: [Link]` beside a record's fields is never what it holds
            p
            for p, (_, s) in resolved.items()
            if schema_type(s) == "array"
            and schema_type(self.doc.schema(s.get("items") or {})[1]) == "object"
            and snake(p) not in ("links", "link")
        ]
        scalars = [p for p, (_, s) in resolved.items() if is_scalar(s)]
        objects = [p for p, (_, s) in resolved.items() if schema_type(s) == "object" and s.get("properties")]
        own = snake(name or fallback)  # `WebServiceGroup {groupId, ...}`: a record keyed by its own noun's id
        keyed = any(snake(p) in ("id", f"{own}_id", f"{own.rsplit('_', 1)[-1]}_id") for p in props)
        fields = [p for p in scalars if snake(p) not in PAGE_FIELDS]  # paging and counts do not make a record
        if len(arrays) == 1 and len(fields) + len(objects) <= 3 and len(fields) < 3 and not keyed:
            inner = self.record_of(props[arrays[0]], camel(singular(snake(arrays[0]))), depth + 1)
            if inner:
                return inner[0], inner[1], True
        if len(props) == 1 and objects:
            return self.record_of(props[objects[0]], camel(snake(objects[0])), depth + 1)
        if len(scalars) >= 1 and (len(scalars) + len(objects)) >= 2 or (name and scalars):
            return name or fallback, schema, False
        return None

    def entity_for(self, schema_name: str, schema: dict[str, Any]) -> Entity:
        table = self.by_schema.get(schema_name)
        if table:
            return self.entities[table]
        nouns = record_nouns(
            schema_name, self.doc.decoration_habits, self.doc.record_schema_names, self.doc.operation_verbs
        )
        noun = next((n for n in nouns if plural(n) not in self.entities), nouns[-1])  # the barest name still free
        table = plural(noun)
        if keyword.iskeyword(table) or table in SQL_KEYWORDS:
            self.report.notes.append(f"table `{table}_records`: the schema `{schema_name}`; `{table}` is a keyword")
            table += "_records"
        while table in self.entities:
            table += "_records"
        entity = Entity(
            table=table,
            schema_name=schema_name,
            description=first_paragraph(schema.get("description"), 200) or article_for(noun.replace("_", " ")),
        )
        self.entities[table] = entity
        self.by_schema[schema_name] = table
        self.report.entities[table] = schema_name
        self.add_columns(entity, schema, schema_name)
        return entity

    def add_columns(self, entity: Entity, schema: dict[str, Any], where: str) -> dict[str, str]:
        """Add the schema's properties as columns (those already there are merged); return
        property name -> column name for the top-level properties."""
        mapping: dict[str, str] = {}
        for prop, node in (schema.get("properties") or {}).items():
            _, sub = self.doc.schema(node)
            if isinstance(node, dict) and node.get("description") and not sub.get("description"):
                sub = {**sub, "description": node["description"]}  # `{$ref: String, description: ...}` (AWS)
            column = safe_name(prop)
            mapping[prop] = column
            if column != snake(prop) and f"{where}.{prop}" not in self.renamed:
                self.renamed.add(f"{where}.{prop}")
                self.report.notes.append(f"`{where}.{prop}` is the column `{column}` (its own name is a keyword)")
            if is_scalar(sub):
                self._merge(entity, column, sub, f"{where}.{prop}")
            elif (
                schema_type(sub) == "object"
                and sub.get("properties")
                and all(is_scalar(self.doc.schema(s)[1]) for s in sub["properties"].values())
            ):
                for inner, inner_node in sub["properties"].items():
                    self._merge(
                        entity,
                        f"{column}_{safe_name(inner)}",
                        self.doc.schema(inner_node)[1],
                        f"{where}.{prop}.{inner}",
                        part=column,
                    )
            else:
                items = self.doc.schema(sub.get("items") or {})[1] if schema_type(sub) == "array" else {}
                what = "list" if schema_type(sub) == "array" and is_scalar(items) else "nested data"
                note = {
                    "type": "string",
                    "description": sub.get("description")
                    or (node.get("description") if isinstance(node, dict) else None),
                }
                self._merge(entity, column, note, f"{where}.{prop}", json_text=what)
        return mapping

    def _merge(
        self,
        entity: Entity,
        column: str,
        schema: dict[str, Any],
        where: str,
        json_text: str | None = None,
        part: str = "",
    ) -> None:
        kind, fmt = column_type(schema)
        enum = [str(v) for v in schema.get("enum") or [] if v is not None] or None
        if kind != "string":
            enum = None
        description = first_paragraph(schema.get("description"), 160)
        if json_text == "list":
            description = (description + " " if description else "") + LIST_TEXT
        elif json_text:
            description = (description + " " if description else "") + NESTED_TEXT
        existing = entity.columns.get(column)
        if existing is not None:
            if existing.enum and enum:
                existing.enum = sorted(set(existing.enum) | set(enum), key=(existing.enum + enum).index)
            elif existing.enum and not enum:
                existing.enum = None
            if not existing.description and description:
                existing.description = description
            return
        entity.columns[column] = Column(
            name=column,
            type=kind,
            description=description,
            enum=enum,
            json_text=json_text or None,
            format=fmt,
            example=schema.get("example"),
            minimum=schema.get("minimum"),
            maximum=schema.get("maximum"),
            source=where,
            part=part,
        )

    # ---- keys, refs, seed -----------------------------------------------------------------------

    def choose_keys(self) -> None:
        """Each entity's primary key: `id`, else `<singular>_id`, else the column a path names a row
        by, else a synthetic `id`; and its id format."""
        path_keys = self.item_keys
        path_types: dict[str, dict[str, str]] = {}  # table -> path key -> its type (integer or string)
        for path, table in self.collections.items():
            for item_path in self.doc.data.get("paths") or {}:
                if collection_path(item_path) == path and ends_in_param(item_path):
                    pname = item_path.rstrip("/").rsplit("/", 1)[-1][1:-1]
                    path_keys.setdefault(table, []).append(safe_name(pname))
                    schema = self.doc.schema((self.path_params.get((item_path, pname)) or {}).get("schema") or {})[1]
                    kind = "integer" if schema_type(schema) == "integer" else "string"
                    path_types.setdefault(table, {}).setdefault(safe_name(pname), kind)
        for table, entity in self.entities.items():
            one = singular(table)
            last = one.rsplit("_", 1)[-1]
            candidates = [
                "id",
                f"{one}_id",
                f"{snake(entity.schema_name)}_id",
                *path_keys.get(table, []),
                *(k for k in self.rpc_keys.get(table, []) if k in entity.columns and not entity.columns[k].enum),
                f"{last}_id",
            ]
            key = next(
                (
                    c
                    for c in candidates
                    if c in entity.columns
                    and entity.columns[c].type in ("string", "integer")
                    and not entity.columns[c].json_text
                ),
                None,
            )
            named = next((k for k in path_keys.get(table, []) if k not in entity.columns), None)
            if key is None and named is not None:  # `/characters/{character_id}`: the path names a row by it
                key = named
                entity.columns = {
                    key: Column(
                        name=key,
                        type=path_types[table][key],
                        description=f"The {one.replace('_', ' ')}'s {key.replace('_', ' ')}",
                        source="added: the key its item path names a row by",
                    ),
                    **entity.columns,
                }
                entity.added_key = True
            elif key is None:
                key = "id" if "id" not in entity.columns else f"{one}_key"
                entity.columns = {
                    key: Column(
                        name=key,
                        type="string",
                        description=f"Internal {one.replace('_', ' ')} id",
                        source="added: the record has no key",
                    ),
                    **entity.columns,
                }
                entity.added_key = True
            else:
                entity.columns = {key: entity.columns[key], **{k: v for k, v in entity.columns.items() if k != key}}
            entity.primary_key = key
            column = entity.columns[key]
            column.enum = None
            if column.type == "integer":
                entity.id_format = "{:d}"
            elif column.format == "uuid" or looks_uuid(column.example):
                entity.id_format = uuid_format(table)
            else:
                prefix = re.sub(r"[^a-z]", "", one)[:4] or "rec"
                entity.id_format = f"{prefix}_{{:04d}}"

    def link_refs(self) -> None:
        """A column named like another entity's key (`pet_id`, `task_id`, `user_id`) refers to it."""
        # A key named after its table (`cluster_identifier` of clusters), not a name every record has (`name`,
        # `web_id`): a column of that name elsewhere refers to that table.
        keys = {
            e.primary_key: t
            for t, e in self.entities.items()
            if e.primary_key != "id" and singular(t).rsplit("_", 1)[-1] in e.primary_key.split("_")
        }
        by_singular = {singular(t): t for t in self.entities}
        own_keys = {(t["entity"], t["params"][t["key"]].get("column", t["key"])) for t in self.tools if t.get("key")}
        for table, entity in self.entities.items():
            for name, column in entity.columns.items():
                if column.ref or name == entity.primary_key or column.json_text or column.enum:
                    continue  # an enum's values are its own, not another table's keys
                if (table, name) in own_keys:
                    continue  # the table's own tools name its rows by it: its key, not another table's
                target = None
                if name in keys and keys[name] != table:
                    target = keys[name]
                elif name.endswith("_id") and by_singular.get(name[:-3]) not in (None, table):
                    target = by_singular[name[:-3]]
                if target is None:
                    continue
                pk = self.entities[target].columns[self.entities[target].primary_key]
                if pk.type == column.type:
                    column.ref = f"{target}.{pk.name}"

    def key_column(self, entity: Entity, pname: str) -> str:
        column = safe_name(pname)
        if column in entity.columns:
            return column
        return entity.primary_key
