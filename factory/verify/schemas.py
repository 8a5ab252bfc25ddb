"""What a tool's listed JSON schemas must say, derived from the spec alone, and how to compare them.

The verifier must not trust the generated code to describe itself: it rebuilds the expected input
and output schemas from the spec (names, JSON types, nullability, enums, bounds, defaults, required)
and compares them with what the server lists, after reducing both to one canonical shape (refs
resolved, `anyOf [T, null]` folded into a type set, titles and descriptions ignored).
"""

from __future__ import annotations

from typing import Any

from envfarm.factory.spec import (
    TYPES,
    EnvironmentSpec,
    FieldsResult,
    Param,
    ReturnField,
    RowsResult,
    SearchTool,
    ToolKind,
)

Canon = dict[str, Any]


def _node(types: list[str], enum: list[Any] | None = None, **extra: Any) -> Canon:
    node: Canon = {"type": sorted(set(types))}
    if enum is not None:
        node["enum"] = sorted(enum, key=repr)
    node.update({k: v for k, v in extra.items() if v is not None})
    return node


def _object(properties: dict[str, Canon], required: list[str]) -> Canon:
    return {"type": ["object"], "properties": properties, "required": sorted(required)}


def canonical(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Canon:
    """Reduce a listed JSON schema to the facts the spec determines."""
    defs = schema.get("$defs", defs or {})
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        return canonical({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, defs)
    if "anyOf" in schema:
        branches = [canonical(b, defs) for b in schema["anyOf"]]
        types = sorted({t for b in branches for t in b["type"]})
        solid = [b for b in branches if b["type"] != ["null"]]
        merged = {**solid[0], "type": types} if len(solid) == 1 else {"type": types, "anyOf": branches}
        if "default" in schema:
            merged["default"] = schema["default"]
        return merged
    kind = schema.get("type")
    types = kind if isinstance(kind, list) else [kind] if kind else []
    enum = [schema["const"]] if "const" in schema else schema.get("enum")
    node = _node(
        types, enum, minimum=schema.get("minimum"), maximum=schema.get("maximum"), pattern=schema.get("pattern")
    )
    if "default" in schema:
        node["default"] = schema["default"]
    if "object" in types:
        properties = {k: canonical(v, defs) for k, v in schema.get("properties", {}).items()}
        node.update(_object(properties, schema.get("required", [])))
    if "array" in types:
        node["items"] = canonical(schema.get("items", {}), defs)
    return node


def _param(param: Param) -> Canon:
    optional = not param.required and param.default is None
    item = _node(
        [TYPES[param.type].json],
        param.enum,
        minimum=param.minimum,
        maximum=param.maximum,
        pattern=None if param.enum else TYPES[param.type].pattern,
    )
    if param.items:
        node = {**_node(["array"] + (["null"] if optional else [])), "items": item}
    else:
        node = {**item, "type": sorted(item["type"] + (["null"] if optional else []))}
    if not param.required:
        node["default"] = param.default
    return node


def expected_input(tool: ToolKind) -> Canon:
    """The input schema the spec declares: one property per param, the required ones required; a
    search adds its paging (`limit`, `cursor`)."""
    properties = {name: _param(p) for name, p in tool.params.items()}
    if isinstance(tool, SearchTool):
        properties["limit"] = {**_node(["integer"], minimum=1, maximum=200), "default": tool.limit}
        properties["cursor"] = {**_node(["null", "string"]), "default": None}
    return _object(properties, [n for n, p in tool.params.items() if p.required])


def entity_row(spec: EnvironmentSpec, table: str) -> Canon:
    """A row of `table` as returned by a tool: every column present, nullable ones may be null."""
    columns = spec.entities[table].columns
    properties = {
        name: _node([TYPES[c.type].json] + (["null"] if c.nullable else []), c.enum) for name, c in columns.items()
    }
    return _object(properties, list(columns))


def _field(spec: EnvironmentSpec, field: ReturnField) -> Canon:
    nullable = ["null"] if field.nullable else []
    if field.type == "array":
        item = field.items or "string"
        items = entity_row(spec, item) if item in spec.entities else _node([TYPES[item].json])
        return {**_node(["array", *nullable]), "items": items}
    if field.type == "object":
        return {**_node(["object", *nullable]), "properties": {}, "required": []}
    return _node([TYPES[field.type].json, *nullable])


def expected_output(spec: EnvironmentSpec, tool: ToolKind) -> Canon:
    """The output schema the spec implies: a row, a search result, or a custom tool's fields."""
    result = tool.result(spec)
    if isinstance(result, RowsResult):
        rows = {**_node(["array"]), "items": entity_row(spec, result.entity)}
        page = {"count": _node(["integer"]), "total": _node(["integer"]), "has_more": _node(["boolean"])}
        page["cursor"] = _node(["null", "string"])
        return _object({result.entity: rows, **page}, [result.entity, *page])
    if isinstance(result, FieldsResult):
        return _object({name: _field(spec, f) for name, f in result.fields.items()}, list(result.fields))
    return entity_row(spec, result.entity)


def differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Human-readable differences between two canonical schemas, each with its JSON path."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found: list[str] = []
        for key in sorted(set(expected) | set(actual)):
            where = f"{path}.{key}" if path else key
            if key not in actual:
                found.append(f"{where}: missing (expected {expected[key]!r})")
            elif key not in expected:
                found.append(f"{where}: unexpected {actual[key]!r}")
            else:
                found += differences(expected[key], actual[key], where)
        return found
    return [] if expected == actual else [f"{path or '<root>'}: expected {expected!r}, got {actual!r}"]
