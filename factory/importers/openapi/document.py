"""Reading the document: `$ref` resolution and schema lookup (`ApiDocument`), Swagger 2.0 normalised to the
OpenAPI 3 shape the rest of the importer reads, and the notes on its security schemes.
"""

from __future__ import annotations

import functools
import json
from typing import Any
from urllib.parse import unquote

from envfarm.factory.importers.openapi.models import UnresolvedRefError, is_scalar, schema_type
from envfarm.factory.importers.openapi.words import METHODS, decoration_habits, snake


class ApiDocument:
    """The document with local `$ref`s resolved on demand (a cycle ends as an empty schema)."""

    def __init__(self, data: dict[str, Any], source: str) -> None:
        self.data = data
        self.source = source

    @functools.cached_property
    def schema_names(self) -> frozenset[str]:
        """The names of the document's own schemas (`components.schemas`; a Swagger 2.0 document's definitions)."""
        schemas = (self.data.get("components") or {}).get("schemas")
        return frozenset(str(name) for name in schemas) if isinstance(schemas, dict) else frozenset()

    @functools.cached_property
    def decoration_habits(self) -> frozenset[str]:
        """The suffixes its generator puts on at least three of its schemas (`words.decoration_habits`)."""
        return decoration_habits(self.schema_names)

    @functools.cached_property
    def record_schema_names(self) -> frozenset[str]:
        """The schemas that read as records: objects with two plain fields or more (`Templates {templateId, name,
        ...}`), not list wrappers (`PreviousPurchases {previous_purchases: [...], result_count}`)."""
        schemas = (self.data.get("components") or {}).get("schemas")
        found = set()
        for name, node in schemas.items() if isinstance(schemas, dict) else ():
            props = self.schema(node)[1].get("properties") or {}
            if sum(is_scalar(self.schema(prop)[1]) for prop in props.values()) >= 2:
                found.add(str(name))
        return frozenset(found)

    @functools.cached_property
    def operation_verbs(self) -> frozenset[str]:
        """The first word of every operation's id (`analyze` of `AnalyzeSentiment` and of Google's
        `language.documents.analyzeSentiment`): what the document's calls are named by, as opposed to its records."""
        verbs = set()
        for item in (self.data.get("paths") or {}).values():
            for method, op in item.items() if isinstance(item, dict) else ():
                if method in METHODS and isinstance(op, dict) and isinstance(op.get("operationId"), str):
                    verbs.add(snake(op["operationId"].rsplit(".", 1)[-1]).split("_")[0])
        return frozenset(verbs)

    def lookup(self, ref: str) -> Any:
        """The node a local `$ref` names. The ref is a URI fragment: percent-escapes are decoded before the JSON
        pointer's own `~1`/`~0` (`#/components/schemas/Transaction%20Id` names `Transaction Id`)."""
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise UnresolvedRefError(self.source, f"external $ref {ref!r} is not supported (bundle the document first)")
        node: Any = self.data
        for raw in ref[2:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
                continue
            if not isinstance(node, dict) or part not in node:
                raise UnresolvedRefError(self.source, f"$ref {ref!r} points at nothing")
            node = node[part]
        return node

    def deref(self, node: Any, seen: tuple[str, ...] = ()) -> tuple[str | None, dict[str, Any]]:
        """(the component name the node refers to, if any; the resolved node)."""
        name = None
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                return unquote(str(ref).rsplit("/", 1)[-1]), {}
            seen = (*seen, ref)
            name = unquote(str(ref).rsplit("/", 1)[-1])
            node = self.lookup(ref)
        return name, node if isinstance(node, dict) else {}

    def schema(self, node: Any) -> tuple[str | None, dict[str, Any]]:
        """A schema with `allOf` merged and the first object alternative of `oneOf`/`anyOf` taken."""
        name, schema = self.deref(node)
        parts = [self.schema(part) for part in schema.get("allOf") or []]
        if parts and all(schema_type(p) not in (None, "object", "array") and "properties" not in p for _, p in parts):
            # `{allOf: [{$ref: ResourceId}], readOnly: true}`: a scalar restated with notes, not a record
            scalar: dict[str, Any] = {}
            for _, part in parts:
                scalar.update(part)
            return name, {**scalar, **{k: v for k, v in schema.items() if k != "allOf"}}
        if "allOf" in schema:
            merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
            for part in schema["allOf"]:
                part_name, part_schema = self.schema(part)
                name = name or part_name
                merged["properties"].update(part_schema.get("properties") or {})
                merged["required"] += part_schema.get("required") or []
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            merged["properties"].update(rest.pop("properties", {}) or {})
            merged["required"] += rest.pop("required", []) or []
            schema = {**rest, **merged}
        for alternative in ("oneOf", "anyOf"):
            if alternative in schema and "properties" not in schema:
                options = [self.schema(o) for o in schema[alternative]]
                objects = [o for o in options if schema_type(o[1]) == "object"]
                if objects:
                    return name or objects[0][0], objects[0][1]
                real = [o for o in options if schema_type(o[1]) != "null"]
                if real:
                    return name or real[0][0], {**real[0][1], "nullable": True}
        return name, schema


def ends_in_param(path: str) -> bool:
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return last.startswith("{") and last.endswith("}")


def collection_path(path: str) -> str:
    path = path.rstrip("/") or "/"
    return path.rsplit("/", 1)[0] or "/" if ends_in_param(path) else path


def swagger2(data: dict[str, Any]) -> dict[str, Any]:
    """A Swagger 2.0 document restated as OpenAPI 3 (definitions, body and formData parameters,
    produces), enough for the importer."""
    text = (
        json.dumps(data)
        .replace('"#/definitions/', '"#/components/schemas/')
        .replace('"#/parameters/', '"#/components/parameters/')
        .replace('"#/responses/', '"#/components/responses/')
    )
    data = json.loads(text)
    shared_params: dict[str, Any] = data["parameters"] if isinstance(data.get("parameters"), dict) else {}

    def resolved(param: Any) -> Any:
        """A `$ref` to a document-level parameter, as the parameter (a body one becomes the request body)."""
        if isinstance(param, dict) and isinstance(param.get("$ref"), str):
            found = shared_params.get(param["$ref"].removeprefix("#/components/parameters/"))
            if isinstance(found, dict):
                return found
        return param

    paths: dict[str, Any] = {}
    for path, item in (data.get("paths") or {}).items():
        if not isinstance(item, dict):
            paths[path] = item  # the importer names the malformed path item
            continue
        new_item: dict[str, Any] = {"$ref": item["$ref"]} if "$ref" in item else {}  # a path item kept elsewhere
        shared: list[Any] = item["parameters"] if isinstance(item.get("parameters"), list) else []
        for method, op in item.items():
            if method not in METHODS or not isinstance(op, dict):
                if method in METHODS:
                    new_item[method] = op
                continue
            op = dict(op)
            kept, form, form_required = [], {}, []
            own: list[Any] = op["parameters"] if isinstance(op.get("parameters"), list) else []
            # The path item's parameters apply to each of its operations (an operation's own one wins).
            named = {(p.get("name"), p.get("in")) for p in map(resolved, own) if isinstance(p, dict)}
            inherited = [
                p for p in map(resolved, shared) if isinstance(p, dict) and (p.get("name"), p.get("in")) not in named
            ]
            for param in [*inherited, *map(resolved, own)]:
                if not isinstance(param, dict):
                    kept.append(param)
                    continue
                where = param.get("in")
                if where == "body":
                    op["requestBody"] = {"content": {"application/json": {"schema": param.get("schema") or {}}}}
                elif where == "formData":
                    if param.get("type") == "file":
                        op["requestBody"] = {"content": {"multipart/form-data": {"schema": {}}}}
                    form[param["name"]] = {k: v for k, v in param.items() if k not in ("in", "name", "required")}
                    if param.get("required"):
                        form_required.append(param["name"])
                else:
                    kept.append(_swagger2_param(param))
            if form and "requestBody" not in op:
                op["requestBody"] = {
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "schema": {"type": "object", "properties": form, "required": form_required}
                        }
                    }
                }
            op["parameters"] = kept
            if isinstance(op.get("responses"), dict):
                op["responses"] = {code: _swagger2_response(resp) for code, resp in op["responses"].items()}
            new_item[method] = op
        paths[path] = new_item
    parameters = {pname: _swagger2_param(param) for pname, param in shared_params.items() if isinstance(param, dict)}
    return {
        "openapi": "3.0.0",
        "info": data.get("info") or {},
        "paths": paths,
        "components": {
            "schemas": data.get("definitions") or {},
            "parameters": parameters,
            "responses": {rname: _swagger2_response(resp) for rname, resp in (data.get("responses") or {}).items()},
            "securitySchemes": data.get("securityDefinitions") or {},
        },
    }


def _swagger2_param(param: dict[str, Any]) -> dict[str, Any]:
    """A Swagger 2.0 query, path or header parameter (its type beside its name) as OpenAPI 3 (`schema`)."""
    if "$ref" in param:
        return param
    schema = {k: param[k] for k in ("type", "format", "enum", "items", "default", "maximum", "minimum") if k in param}
    return {**{k: v for k, v in param.items() if k in ("name", "in", "description", "required")}, "schema": schema}


def _swagger2_response(resp: Any) -> Any:
    """A Swagger 2.0 response (`schema` beside `description`) as OpenAPI 3 (`content`); a `$ref` stays."""
    if not isinstance(resp, dict) or "schema" not in resp:
        return resp
    resp = dict(resp)
    resp["content"] = {"application/json": {"schema": resp.pop("schema")}}
    return resp


def auth_notes(data: dict[str, Any]) -> list[str]:
    schemes = (data.get("components") or {}).get("securitySchemes") or {}
    if not schemes:
        return ["no security schemes: the server acts for the episode's principal like every farm server"]
    described = []
    for sname, scheme in schemes.items():
        kind = scheme.get("type", "?")
        detail = {
            "apiKey": f"API key in {scheme.get('in', '?')} `{scheme.get('name', '?')}`",
            "http": f"HTTP {scheme.get('scheme', '?')}",
            "oauth2": "OAuth 2",
            "openIdConnect": "OpenID Connect",
        }.get(kind, kind)
        described.append(f"`{sname}` ({detail})")
    return [
        "auth: " + ", ".join(described) + " -> the episode's principal: the runtime (control plane or an HTTP "
        "bearer token) says who acts; no tool takes credentials, and auth header and cookie parameters are dropped"
    ]


def security_schemes(data: dict[str, Any]) -> list[str]:
    """The kinds of the document's security schemes (`http` ones by their scheme: bearer, basic)."""
    schemes = (data.get("components") or {}).get("securitySchemes") or {}
    kinds = []
    for scheme in schemes.values():
        if isinstance(scheme, dict):
            kind = str(scheme.get("type", ""))
            kinds.append(str(scheme.get("scheme", "")).lower() if kind == "http" else kind)
    return kinds
