"""Reads the document does not give as records: computed reads over a seeded lookup table (a detector, a
geocoder, a read with no response schema), and read-backs of what a few-operation document creates.
"""

from __future__ import annotations

import re
from typing import Any

from envfarm.factory.importers.openapi.models import (
    Column,
    Entity,
    column_type,
    is_scalar,
    schema_type,
)
from envfarm.factory.importers.openapi.seed import user_known_column
from envfarm.factory.importers.openapi.tools import ToolBuilder
from envfarm.factory.importers.openapi.words import (
    NOT_INPUTS,
    PAGINATION,
    SEED_ROWS,
    camel,
    first_paragraph,
    safe_name,
    singular,
    snake,
)

FEW_TOOLS = 3  # a document whose operations make fewer tools may get read-backs of what it creates
OUTPUT_SCHEMA = re.compile(
    r"(Response|Result|Output|Reply|Request|Parameters|Params|Input)s?(Entity|Entities)?$|Responses?_?\d*$"
)


class ReadBuilder(ToolBuilder):
    """Read tools the document describes as no record read: computed reads and read-backs."""

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
        # An answer field named like an input echoes it when it is a plain value (merged into that column); a
        # list or map of that name (`GET /search?query=` answering `{query: [...]}`) is the answer itself.
        props = answer.get("properties") or {}
        clashes = {p for p, node in props.items() if safe_name(p) in inputs and not is_scalar(self.doc.schema(node)[1])}
        if clashes:
            answer = {**answer, "properties": {(f"{p}_answer" if p in clashes else p): n for p, n in props.items()}}
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

    def listed_get_tools(self) -> None:
        """A document of few operations that lists records it never reads one of (`GET /trips` alone, an
        Azure `.../usageAggregates` list): every listed row carries the key the document gives it (`id`,
        `event_id`), so a `get` by that key reads one row of what the list already shows. It is not an
        operation of the original API, and its description says so. A table whose key the importer added (the
        document names none: nothing a person could quote) gets none, nor a computed read's lookup table (its
        rows are answers, not records), nor any table of a document whose own operations make three tools."""
        if len(self.tools) >= FEW_TOOLS:
            return
        got = {t["entity"] for t in self.tools if t["effect"] == "get"}
        listed = [t["entity"] for t in self.tools if t["effect"] == "search"]
        for table in dict.fromkeys(listed):
            entity = self.entities[table]
            if table in got or entity.added_key or entity.primary_key not in entity.columns:
                continue
            one, key = singular(table).replace("_", " "), entity.primary_key
            param = self._param_from_column(entity.columns[key], f"The {one}'s {key.replace('_', ' ')}", True)
            param.pop("enum", None)
            asked = f"Show the {one} with {key.replace('_', ' ')}"
            name = self.tool_name({"operationId": f"get_{singular(table)}"}, "", "")
            tool: dict[str, Any] = {
                "name": name,
                "description": f"{asked}. Not an operation of the original API: it reads one of the "
                f"{table.replace('_', ' ')} its list operation returns, by the {key.replace('_', ' ')} each carries.",
                "effect": "get",
                "entity": table,
                "key": key,
                "params": {key: param},
            }
            self._add(tool, "get", f"(one of the listed {table})", {"summary": asked}, entity)
            self.report.notes.append(f"{name}: reads one of the listed {table} by its {key} (no such operation)")

    # ---- tool builders -------------------------------------------------------------------------
