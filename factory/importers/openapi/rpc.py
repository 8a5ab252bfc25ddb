"""RPC-style operations (named by a header, a query parameter or the body, not the path): the verb is the
effect, the noun the table, the input field the key.
"""

from __future__ import annotations

import re
from typing import Any

from envfarm.factory.importers.openapi.actions import ActionBuilder
from envfarm.factory.importers.openapi.models import is_scalar, schema_type
from envfarm.factory.importers.openapi.words import (
    ACTION_VERBS,
    COMPUTE_VERBS,
    READ_VERBS,
    RPC_SELECTORS,
    RPC_VERBS,
    STARTS,
    first_paragraph,
    safe_name,
    singular,
    snake,
)


class RpcMapper(ActionBuilder):
    """RPC-style operations mapped by their name and shapes."""

    # ---- RPC-style operations -------------------------------------------------------------------

    def learn_rpc(self, method: str, path: str, op: dict[str, Any], name: str) -> None:
        """First pass, one RPC operation (`CreateNamedQuery`): the record type its noun names, from the
        schema of that name, else the record its response carries, else (a create) the record its input is;
        and the input fields a read or write names one row by (key candidates)."""
        verb, noun = split_operation(name)
        kind = RPC_VERBS.get(verb) or ("action" if verb in ACTION_VERBS else None)
        if not noun or kind in (None, "tag"):
            return
        key = snake(singular(noun))
        schemas = (self.doc.data.get("components") or {}).get("schemas") or {}
        found: list[tuple[int, str, dict[str, Any]]] = []
        for candidate in dict.fromkeys((noun, singular(noun))):
            if isinstance(schemas.get(candidate), dict):  # the record itself, even one holding a list (`Tags`)
                _, own = self.doc.schema({"$ref": f"#/components/schemas/{candidate}"})
                properties = own.get("properties") or {}
                if schema_type(own) == "object" and any(is_scalar(self.doc.schema(n)[1]) for n in properties.values()):
                    found.append((0, candidate, own))
        response = self.response(op)
        if kind in ("create", "get", "search", "update") and response is not None:
            record = self.record_of(response, noun)
            if record and record[0] and not _envelope_name(record[0], name):
                found.append((1 if kind in ("create", "get") else 2, record[0], record[1]))
        _, body, why = self.body(op)
        if kind == "create" and body is not None and not why:
            record = self.record_of(body, noun)
            if record and not record[2]:
                found.append((3, noun, record[1]))
        self.noun_candidates.setdefault(key, []).extend(found)
        if kind in ("get", "delete", "update", "action") and body is not None and not why:
            self.noun_keys.setdefault(key, []).extend(safe_name(f["name"]) for f in _key_fields(self.rpc_fields(body)))

    def resolve_nouns(self) -> None:
        """Each RPC noun's table: its own schema first, then a create's or get's response, then a list's,
        then a create's input, a schema named for the noun before any other (`CreatePortfolioOutput
        {PortfolioDetail, Tags: [Tag]}` answers no tags: AWS Service Catalog's portfolios and products all became
        `tags`); with the key candidates its operations name rows by."""
        for key, found in self.noun_candidates.items():
            if not found:
                continue
            _, schema_name, schema = min(found, key=lambda f: (not _shares_a_word(f[1], key), f[0]))
            table = self.entity_for(schema_name, schema).table
            self.nouns[key] = table
            keys = self.rpc_keys.setdefault(table, [])
            keys += [k for k in self.noun_keys.get(key, []) if k not in keys]

    def rpc_fields(self, body: dict[str, Any] | None) -> list[dict[str, Any]]:
        """An RPC input's top-level scalar fields, as parameters (the filters of a read, the key of a write)."""
        schema = self.doc.schema(body)[1] if body is not None else {}
        required = set(schema.get("required") or [])
        fields = []
        for prop, node in (schema.get("properties") or {}).items():
            sub = self.doc.schema(node)[1]
            if is_scalar(sub):
                described = node.get("description") if isinstance(node, dict) else None
                fields.append(
                    {
                        "name": prop,
                        "in": "query",
                        "schema": sub,
                        "description": described or sub.get("description"),
                        "required": prop in required,
                    }
                )
        return fields

    def map_rpc(self, method: str, path: str, op: dict[str, Any], name: str) -> None:
        """An RPC operation by its name and shapes: `CreateX` creates an X, `DescribeX`/`GetX` reads one by
        its key (or lists, when it answers many), `ListXs` searches, `UpdateX`/`ModifyX` updates,
        `DeleteX` deletes, and a state change (`StopX`, `CancelX`) updates X's status."""
        op = {**op, "operationId": op.get("operationId") or name}
        verb, noun = split_operation(name)
        kind = RPC_VERBS.get(verb) or ("action" if verb in ACTION_VERBS else None)
        if op.get("deprecated"):
            return self.skip(method, path, op, "deprecated")
        if self._auth_like(path, op):
            return self.skip(method, path, op, "an authentication flow: our servers act for the episode's principal")
        table = next((self.nouns[n] for n in _noun_keys(noun) if n in self.nouns), None)
        if (verb in COMPUTE_VERBS and (kind is None or table is None)) or (kind in ("get", "search") and table is None):
            # `GetSessionToken`, `DetectSentiment`, `ResolveCustomer` (a token resolved to the customer it names,
            # where the document has no customer record): an answer computed from its input, no stored record.
            _, body, why = self.body(op)
            if not why and self.lookup_tool(method, path, op, self.rpc_fields(body)):
                return None
        if kind is None:
            return self.skip(
                method,
                path,
                op,
                f"the RPC operation `{name}`: its verb `{verb}` is no record effect (create, get, list, update, "
                "delete, a state change or a computation)",
            )
        if kind == "tag":
            return self.skip(method, path, op, f"`{name}` tags a resource: tags are not modelled as records")
        if table is None:
            return self.skip(method, path, op, f"`{name}` names `{noun or name}`, which is no record type here")
        _, body, why = self.body(op)
        if why:
            return self.skip(method, path, op, why)
        entity = self.entities[table]
        fields = self.rpc_fields(body)
        if kind == "create":
            before = len(self.tools)
            self.create_tool(method, path, op, [], entity, body)
            given = next((f for f in fields if safe_name(f["name"]) == entity.primary_key), None)
            if len(self.tools) > before and given is not None:  # a key the caller names (`ClusterIdentifier`)
                column = entity.columns[entity.primary_key]
                param = self._param_from_column(column, first_paragraph(given["description"]), given["required"])
                self.tools[-1]["params"] = {entity.primary_key: param, **self.tools[-1]["params"]}
            return None
        response = self.response(op)
        record = self.record_of(response, noun) if response is not None else None
        if kind == "search" or (kind == "get" and record is not None and record[2]):
            return self.search_tool(method, path, op, fields, entity)
        keyed = any(safe_name(f["name"]) == entity.primary_key for f in fields)
        if kind == "action" and not keyed and verb in STARTS and body is not None:  # `StartQueryExecution`: a new run
            return self.create_tool(method, path, op, [], entity, body)
        if not keyed:
            return self.skip(
                method, path, op, f"`{name}` names no `{entity.primary_key}` of the {table} row it acts on"
            )
        if kind == "action":
            return self.action_tool(verb, method, path, op, entity, entity.primary_key, "")
        return self.keyed_tool(kind, method, path, op, [], entity, body)


def rpc_name(path: str, op: dict[str, Any], params: list[dict[str, Any]]) -> str | None:
    """The operation an RPC-style request names, or None for a resource path: the path's fragment or query
    (`/#X-Amz-Target=Svc.CreateThing`, `/#CreateThing`, `/?Action=CreateThing`), else the operationId of an
    operation on `/` that takes an `Action` or `X-Amz-Target` selector."""
    base, _, fragment = path.partition("#")
    base_path, _, query = base.partition("?")
    if "{" in base_path:
        return None
    named = re.search(r"(?:^|[&#?])(?:Action|X-Amz-Target)=([A-Za-z0-9_.]+)", f"?{query}#{fragment}")
    if named:
        name = named.group(1).rsplit(".", 1)[-1]
    elif fragment[:1].isupper():  # `/#CreateThing`; a lower-case fragment (`/servers#name`) is a path variant
        name = fragment
    elif base_path.strip("/") == "" and any(
        snake(str(p.get("name", ""))) in RPC_SELECTORS and p.get("in") in ("header", "query") for p in params
    ):  # `POST /` with an `Action` selector; a resource path taking one too (AWS REST APIs) is no RPC
        name = str(op.get("operationId") or "")
    else:
        return None
    return name if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) else None


def rpc_input(op: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
    """An RPC operation whose input is its query (`GET /?Action=CreateQueue&QueueName=...`, the AWS query
    protocol), restated with that input as its body, so it reads like the operations that send one."""
    if "requestBody" in op:
        return op
    fields = [
        p
        for p in params
        if p.get("in") == "query"
        and isinstance(p.get("name"), str)
        and snake(p["name"]) not in RPC_SELECTORS | {"version"}
    ]
    if not fields:
        return op
    properties = {
        p["name"]: {**(p.get("schema") or {}), **({"description": p["description"]} if p.get("description") else {})}
        for p in fields
    }
    required = [p["name"] for p in fields if p.get("required")]
    schema = {"type": "object", "properties": properties, "required": required}
    return {**op, "requestBody": {"content": {"application/json": {"schema": schema}}}}


def split_operation(name: str) -> tuple[str, str]:
    """`CreateNamedQuery` -> ("create", "NamedQuery"); `createDBCluster` -> ("create", "DBCluster"); an
    `Admin` prefix (`AdminDeleteUser`) says who may call it, not what it does, and is dropped."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", name)
    if len(words) > 1 and words[0].lower() == "admin":
        words = words[1:]
    if not words:
        return "", ""
    return words[0].lower(), "".join(w[:1].upper() + w[1:] for w in words[1:])


def names_a_read(op: dict[str, Any]) -> bool:
    """Whether the operation's summary or operationId starts with a verb that reads or computes."""
    return any(snake(str(op.get(field) or "")).split("_", 1)[0] in READ_VERBS for field in ("summary", "operationId"))


def record_action(path: str, method: str) -> tuple[str, str] | None:
    """(the record's path, the action verb) of `POST /things/{id}:cancel` or `POST /things/{id}/favorite`
    (DELETE of the latter undoes it); None for any other path."""
    found = re.fullmatch(r"(.*/\{[^}/]+\})(?::|/)([A-Za-z][A-Za-z_-]*)/?", path)
    if found is None or method not in ("post", "put", "patch", "delete"):
        return None
    verb = snake(found.group(2))
    undoes = verb.startswith("un") and verb[2:] in ACTION_VERBS  # Taxamo's `/transactions/{key}/unconfirm`
    return (found.group(1), verb) if verb in ACTION_VERBS or undoes else None


def _key_fields(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The input fields a keyed RPC operation names its row by (a string or integer, no choice of values): the
    required ones; else its only one (`DeleteReportDefinition {ReportName}`); else the first named like a key."""
    fields = [f for f in fields if not f["schema"].get("enum") and schema_type(f["schema"]) in ("string", "integer")]
    required = [f for f in fields if f["required"]]
    if required or len(fields) <= 1:
        return required or fields
    return [f for f in fields if snake(f["name"]).endswith(("_id", "_name", "_identifier", "_arn"))][:1]


def _noun_keys(noun: str) -> list[str]:
    """The tables an RPC noun may name, most specific first: `BuildsForProject` -> builds_for_project, builds;
    `RepositoryDescription` (a field of the repository) -> repository_description, repository."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", noun)
    cut = next(
        (i for i, w in enumerate(words) if i and w in ("For", "From", "To", "In", "By", "With", "Of", "On")), None
    )
    if cut is not None:
        words = words[:cut]
    keys = [snake(singular(noun))]
    keys += [snake(singular("".join(words[:n]))) for n in range(len(words), 0, -1)]
    return list(dict.fromkeys(keys))


def _envelope_name(schema_name: str, operation: str) -> bool:
    """`CreateClusterResult`, `GetThingOutput`: the shape of one operation's answer, not a record type."""
    return schema_name.startswith(operation) or schema_name.endswith(
        ("Output", "Result", "Response", "Message", "Request", "Input")
    )


def _shares_a_word(schema_name: str | None, noun: str) -> bool:
    """Whether a schema's name and an operation's noun have a word in common (`PipelineDescription`, `Pipelines`)."""
    return bool(
        {singular(w) for w in snake(schema_name or "").split("_")} & {singular(w) for w in snake(noun).split("_")}
    )
