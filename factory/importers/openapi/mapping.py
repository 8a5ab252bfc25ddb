"""The import plan: learn every operation's records, then map each path or RPC operation onto a tool, or skip
it with its reason.
"""

from __future__ import annotations

from typing import Any

from envfarm.factory.importers.openapi.actions import state_change
from envfarm.factory.importers.openapi.document import collection_path, ends_in_param
from envfarm.factory.importers.openapi.models import OpenAPIError, is_scalar, schema_type
from envfarm.factory.importers.openapi.rpc import RpcMapper, names_a_read, record_action, rpc_input, rpc_name
from envfarm.factory.importers.openapi.words import EVENT_VERBS, PAGE_FIELDS, camel, first_paragraph, singular, snake


class OperationMapper(RpcMapper):
    """The plan: every operation learned, then mapped onto a tool or skipped with its reason."""

    def plan(self) -> None:
        """Two passes: first every operation that names a record type, to learn the entities and
        which collection path holds which; then map each operation to a tool (or skip it)."""
        ops = self.operations()
        if not ops and not self.report.skipped:
            raise OpenAPIError(f"{self.doc.source}: the document has no operations under `paths`")
        shapes: dict[tuple[str, str], tuple[str | None, dict[str, Any], bool] | None] = {}
        rpc: dict[tuple[str, str], str] = {}
        first: dict[str, tuple[str, str]] = {}  # an RPC operation -> the request that names it first
        unresolved: dict[tuple[str, str], str] = {}  # an operation using a $ref that leads nowhere -> why
        for n, (method, path, op, params) in enumerate(ops):
            with self.at(method, path), self.unless_unresolved(method, path, unresolved):
                if name := rpc_name(path, op, params):
                    rpc[(method, path)] = name
                    if name in first:
                        continue
                    first[name] = (method, path)
                    ops[n] = (method, path, op := rpc_input(op, params), params)
                    self.learn_rpc(method, path, op, name)
                else:
                    self.learn(method, path, op, shapes)
        self.resolve_nouns()
        self.choose_keys()
        for method, path, op, params in ops:
            with self.at(method, path), self.unless_unresolved(method, path, unresolved, op):
                if (method, path) in unresolved:
                    self.skip(method, path, op, unresolved[(method, path)])
                elif (method, path) in rpc and first[rpc[(method, path)]] != (method, path):
                    was = first[rpc[(method, path)]]
                    self.skip(method, path, op, f"the same RPC operation as {was[0].upper()} {was[1]}")
                elif (method, path) in rpc:
                    self.map_rpc(method, path, op, rpc[(method, path)])
                else:
                    self.map_operation(method, path, op, params, shapes[(method, path)])
        self.read_back_tools()
        self.listed_get_tools()

    def learn(
        self,
        method: str,
        path: str,
        op: dict[str, Any],
        shapes: dict[tuple[str, str], tuple[str | None, dict[str, Any], bool] | None],
    ) -> None:
        """First pass, one operation: the record it reads or writes, and the collection that holds it."""
        segments = [s for s in path.strip("/").split("/") if s]
        noun = next((s for s in reversed(segments) if not s.startswith("{")), "record")
        fallback = camel(singular(snake(noun)))
        record = None
        response = self.response(op)
        if response is not None:
            record = self.record_of(response, fallback)
            if record is not None and record[2] and method == "post" and names_a_create(op):
                record = self.written_record(response) or record
        if record is None and method in ("post", "put", "patch"):
            _, body, why = self.body(op)
            if body is not None and not why:
                record = self.record_of(body, fallback)
                if record and record[2]:
                    record = None  # a bulk body is not one record
        shapes[(method, path)] = record
        # Many records answer a read (a GET, or a POST that reads: `POST /DescribeSavingsPlans`), never a write.
        one_record = record is not None and not (
            record[2] and method != "get" and not (method == "post" and names_a_read(op))
        )
        if record and one_record and not self._auth_like(path, op):  # noqa: SIM102 - two reasons, two tests
            if method == "get" or method == "post" and not ends_in_param(path):
                collection = collection_path(path)
                if record[0] and not self._is_action(path, record[0]):
                    self.collections.setdefault(collection, self.entity_for(record[0], record[1]).table)

    def written_record(self, response: dict[str, Any]) -> tuple[str | None, dict[str, Any], bool] | None:
        """The one record a create answers with, where reading its answer as a list wrapper would see many: a
        create of a short link answering `{shortLink, previewLink, warning: [...]}` made one link (its
        warnings ride along), not a list of warnings. A named schema with two plain fields of its own (no paging,
        count or `kind`/`etag` field) is that record; one answering the list it added (`ConversionList {kind,
        conversion: [...]}`, `{deals: [...], orderRevisionNumber}`) is not: None."""
        name, schema = self.doc.schema(response)
        props = schema.get("properties") or {}
        own = [
            p
            for p, node in props.items()
            if is_scalar(self.doc.schema(node)[1]) and snake(p) not in PAGE_FIELDS | {"kind", "etag"}
        ]
        return (name, schema, False) if name and len(own) >= 2 and schema_type(schema) == "object" else None

    def map_operation(
        self,
        method: str,
        path: str,
        op: dict[str, Any],
        params: list[dict[str, Any]],
        record: tuple[str | None, dict[str, Any], bool] | None,
    ) -> None:
        if op.get("deprecated"):
            return self.skip(method, path, op, "deprecated")
        if self._auth_like(path, op):
            return self.skip(method, path, op, "an authentication flow: our servers act for the episode's principal")
        action = record_action(path, method)
        parent = self.collections.get(collection_path(action[0])) if action is not None else None
        if action is not None and parent is None:
            parent = self._named_resource(op)
        if action is not None and parent is not None:
            key_name = action[0].rsplit("/", 1)[-1][1:-1]
            described: dict[str, Any] = next(
                (p for p in params if p.get("name") == key_name and p.get("in") == "path"), {}
            )
            key_desc = first_paragraph(described.get("description"))
            if state_change(action[1], self.entities[parent], method == "delete") or (
                action[1] not in EVENT_VERBS and not _names_its_own_record(action[1], record)
            ):
                return self.action_tool(action[1], method, path, op, self.entities[parent], key_name, key_desc)
            skipped = len(self.report.skipped)
            self.map_path_operation(method, path, op, params, record)
            if len(self.report.skipped) > skipped:  # not a record operation either: the flag its name implies
                self.report.skipped.pop()
                return self.action_tool(action[1], method, path, op, self.entities[parent], key_name, key_desc)
            return None
        return self.map_path_operation(method, path, op, params, record)

    def _named_resource(self, op: dict[str, Any]) -> str | None:
        """The table a Google-style custom method acts on (`POST /v1/{name}:disable`, where `{name}` is a whole
        resource name such as `projects/p/services/s`): its operationId names the resource collection
        (`serviceuser.projects.services.disable` -> `services`), the last path segment of exactly one collection."""
        parts = str(op.get("operationId") or "").split(".")
        if len(parts) < 3:
            return None
        noun = snake(parts[-2])
        tables = {t for path, t in self.collections.items() if snake(path.rstrip("/").rsplit("/", 1)[-1]) == noun}
        return tables.pop() if len(tables) == 1 else None

    def map_path_operation(
        self,
        method: str,
        path: str,
        op: dict[str, Any],
        params: list[dict[str, Any]],
        record: tuple[str | None, dict[str, Any], bool] | None,
    ) -> None:
        """An operation on a resource path: its method and path say the effect (see the module's doc)."""
        _, body, why = self.body(op)
        if why:
            return self.skip(method, path, op, why)
        if body is not None and schema_type(self.doc.schema(body)[1]) == "array":
            return self.skip(method, path, op, "takes a list of records at once (bulk input): not mapped")
        keyed = ends_in_param(path)
        table = self.collections.get(collection_path(path)) if keyed or method in ("post", "delete") else None
        if record and record[0] and record[0] in self.by_schema and not (keyed and method == "get" and table):
            table = self.by_schema[record[0]] if not table else table
        if record and record[0] and self._is_action(path, record[0]):
            return self.skip(
                method,
                path,
                op,
                f"an action on one {self.by_schema[record[0]]} row (`{path.rsplit('/', 1)[-1]}`): its effect is not "
                "in the description",
            )
        if method == "post" and not keyed and names_a_read(op):  # a read sent as a POST (`POST /charitysearch`)
            inputs = [p for p in params if p.get("in") in ("query", "path")] + self.rpc_fields(body)
            if table is not None and record is not None and record[2]:
                return self.search_tool(method, path, op, inputs, self.entities[table])
            if self.lookup_tool(method, path, op, inputs):
                return None
        if table is None and method == "get" and self.lookup_tool(method, path, op, params):
            return None
        if table is None:
            if record is None:
                shape = self.response(op)
                what = schema_type(self.doc.schema(shape)[1]) if shape is not None else None
                reason = {
                    None: "returns no JSON record",
                    "object": "returns a map or a message, not a record",
                    "array": "returns a list of plain values, not records",
                }.get(what, f"returns a {what}, not a record")
                if body is not None and (wrapped := self.record_of(body, "record")) is not None and wrapped[2]:
                    reason = "takes a list of records at once (bulk input): not mapped"  # `{traces: [Trace]}`
                return self.skip(method, path, op, reason)
            return self.skip(method, path, op, "its record type is not a resource of any collection path")
        entity = self.entities[table]
        if method == "get":
            if record is None:
                if self.lookup_tool(method, path, op, params):
                    return None
                return self.skip(method, path, op, "returns no JSON record")
            if record[2]:
                return self.search_tool(method, path, op, params, entity)
            if not keyed:
                if self.lookup_tool(method, path, op, params):
                    return None
                return self.skip(
                    method, path, op, "reads one record with no key (a singleton or the signed-in user): no row to name"
                )
            return self.keyed_tool("get", method, path, op, params, entity, body)
        if method == "delete":
            if not keyed:
                return self.skip(method, path, op, "deletes with no key in the path: not mapped")
            return self.keyed_tool("delete", method, path, op, params, entity, body)
        if method == "post" and not keyed:
            return self.create_tool(method, path, op, params, entity, body)
        # PUT / PATCH, and POST to an item: an update of the row the key names (or the body's key).
        return self.keyed_tool("update", method, path, op, params, entity, body)


def names_a_create(op: dict[str, Any]) -> bool:
    """Whether the operationId names a create (`firebasedynamiclinks.shortLinks.create`, `createShortLink`,
    `ShortLinks_Insert`): its first or last word is `create`, `insert` or `add`."""
    words = snake(str(op.get("operationId") or "").replace(".", "_")).split("_")
    return bool({words[0], words[-1]} & {"create", "insert", "add"})


def _names_its_own_record(verb: str, record: tuple[str | None, dict[str, Any], bool] | None) -> bool:
    """Whether an action on a record (`POST /charges/{id}/refund`) makes a record of its own, one its schema's
    name tells of (`Refund`, `RefundRequest`); Taxamo's `POST /transactions/{key}/confirm` taking an
    `InputTransactionUpdate` confirms the transaction, it makes no 'input transaction update'. An event with no
    lasting state (`restart`) is left to the path's own mapping."""
    if record is None or not record[0]:
        return False
    return any(word.startswith(verb[:4]) for word in snake(record[0].rsplit(".", 1)[-1]).split("_"))
