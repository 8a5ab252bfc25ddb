"""What one import has learned so far (tables, tools, names taken) and the per-operation readers every stage
shares: its body, its response, its tool name and description, and a skip with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from envfarm.factory.importers.openapi.document import ApiDocument
from envfarm.factory.importers.openapi.models import (
    Entity,
    ImportReport,
    OpenAPIError,
    SkippedOperation,
    UnresolvedRefError,
)
from envfarm.factory.importers.openapi.seed import value_kind
from envfarm.factory.importers.openapi.words import (
    AUTH_WORDS,
    METHODS,
    SESSION_VERBS,
    SPRINGFOX_SUFFIX,
    first_paragraph,
    safe_name,
    snake,
)


class ImporterState:
    """What one import has learned so far, and the readers of one operation every stage shares."""

    def __init__(self, doc: ApiDocument, name: str, report: ImportReport) -> None:
        self.doc = doc
        self.name = name
        self.report = report
        self.entities: dict[str, Entity] = {}  # table -> entity
        self.by_schema: dict[str, str] = {}  # schema name -> table
        self.collections: dict[str, str] = {}  # collection path -> table
        self.tools: list[dict[str, Any]] = []
        self.tool_names: set[str] = set()
        self.limits: dict[str, int] = {}
        self.renamed: set[str] = set()  # properties whose column was renamed (noted once each in IMPORT.md)
        self.nouns: dict[str, str] = {}  # an RPC operation's noun (`named_query`) -> the table it names
        self.rpc_keys: dict[str, list[str]] = {}  # table -> the columns RPC reads and writes name a row by
        self.noun_candidates: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}  # noun -> (rank, schema)
        self.noun_keys: dict[str, list[str]] = {}  # noun -> required input fields of its keyed operations
        self.path_params: dict[tuple[str, str], dict[str, Any]] = {}  # (path, name) -> its path parameter
        self.asked: dict[str, str] = {}  # tool -> the operation's summary (else description): how its intent asks
        self.item_keys: dict[str, list[str]] = {}  # table -> the path parameters its item paths name a row by

    # ---- operations -> tools -------------------------------------------------------------------

    def operations(self) -> list[tuple[str, str, dict[str, Any], list[dict[str, Any]]]]:
        found = []
        paths = self.doc.data.get("paths") or {}
        if not isinstance(paths, dict):
            raise OpenAPIError(
                f"{self.doc.source}: `paths` must be a map of path -> path item, found {value_kind(paths)}"
            )
        for path, raw in paths.items():
            if not isinstance(raw, dict):
                raise OpenAPIError(
                    f"{self.doc.source}: paths.{path}: a path item must be an object, found {value_kind(raw)}"
                )
            try:
                _, item = self.doc.deref(raw)
            except UnresolvedRefError as exc:
                self.skip("any", path, {}, exc.reason)
                continue
            shared = item.get("parameters") or []
            for method in METHODS:
                if method in item:
                    op = item[method]
                    if not isinstance(op, dict):
                        raise OpenAPIError(
                            f"{self.doc.source}: paths.{path}.{method}: an operation must be an object, "
                            f"found {value_kind(op)}"
                        )
                    params: dict[tuple[str, str], dict[str, Any]] = {}
                    for n, node in enumerate([*shared, *(op.get("parameters") or [])]):
                        if not isinstance(node, dict):
                            raise OpenAPIError(
                                f"{self.doc.source}: paths.{path}.{method}.parameters.{n}: a parameter must be an "
                                f"object, found {value_kind(node)}"
                            )
                        try:
                            _, param = self.doc.deref(node)
                        except UnresolvedRefError as exc:
                            self.skip(method, path, op, f"parameter {exc.reason}")
                            break
                        if "name" in param:
                            params[(param["name"], param.get("in", "query"))] = param
                            if param.get("in") == "path":
                                self.path_params.setdefault((path, param["name"]), param)
                    else:
                        found.append((method, path, op, list(params.values())))
        return found

    def skip(self, method: str, path: str, op: dict[str, Any], reason: str) -> None:
        self.report.skipped.append(
            SkippedOperation(method=method, path=path, operation_id=op.get("operationId"), reason=reason)
        )

    @contextmanager
    def unless_unresolved(
        self, method: str, path: str, unresolved: dict[tuple[str, str], str], op: dict[str, Any] | None = None
    ) -> Iterator[None]:
        """A `$ref` that leads nowhere costs the operation that uses it, not the document: its reason is kept in
        `unresolved` (and, given the operation, it is skipped at once)."""
        try:
            yield
        except UnresolvedRefError as exc:
            if (method, path) not in unresolved and op is not None:
                self.skip(method, path, op, exc.reason)
            unresolved[(method, path)] = exc.reason

    @contextmanager
    def at(self, method: str, path: str) -> Iterator[None]:
        """Errors while reading one operation name it: a `$ref` to nothing, or a construct of a shape
        the importer does not read (a string where a schema should be, ...)."""
        where = f"{method.upper()} {path}"
        try:
            yield
        except OpenAPIError as exc:
            raise OpenAPIError(f"{exc} (in {where})") from exc
        except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
            raise OpenAPIError(
                f"{self.doc.source}: {where}: a construct of an unexpected shape ({type(exc).__name__}: {exc}); "
                "check that its parameters, request body, responses and schemas are objects"
            ) from exc

    def body(self, op: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None, str]:
        """(content type, the request body schema, why it is unusable or '')."""
        if "requestBody" not in op:
            return None, None, ""
        _, body = self.doc.deref(op["requestBody"])
        content = body.get("content") or {}
        # XML (the AWS query protocol's bodies) carries the same fields as JSON would.
        json_type = next((t for t in content if "json" in t), None) or next((t for t in content if "xml" in t), None)
        if json_type is None:
            kinds = ", ".join(content) or "no content"
            if any(t.startswith(("multipart/", "application/octet-stream", "image/")) for t in content):
                return None, None, f"uploads a file ({kinds}): not a record operation"
            form = next((t for t in content if "form" in t), None)
            if form is None:
                return None, None, f"request body is {kinds}, not JSON"
            json_type = form
        return json_type, (content[json_type] or {}).get("schema") or {}, ""

    def response(self, op: dict[str, Any]) -> dict[str, Any] | None:
        responses = op.get("responses") or {}
        # `default` answers a success only where no 2xx is declared (beside one, it describes the errors).
        codes = sorted(c for c in responses if str(c).startswith("2")) or (
            ["default"] if "default" in responses else []
        )
        for code in codes:
            _, resp = self.doc.deref(responses[code])
            content = resp.get("content") or {}
            json_type = next((t for t in content if "json" in t), None) or next(
                (t for t in content if "xml" in t), None
            )
            if json_type and (content[json_type] or {}).get("schema"):
                return content[json_type]["schema"]
        return None

    def tool_name(self, op: dict[str, Any], method: str, path: str) -> str:
        """The tool's name: the operation's id without what Springfox appends (`predictUsingGET_1` -> `predict`);
        an id that leaves a bare verb (`getUsingGET`) gets the path's last word (`get_sentiment`)."""
        operation = SPRINGFOX_SUFFIX.sub("", str(op.get("operationId") or ""))
        if operation and snake(operation) in (*METHODS, "find", "search"):
            words = [s for s in path.strip("/").split("/") if s and not s.startswith("{")]
            topic = next((snake(w) for w in reversed(words) if snake(w) != snake(operation)), "")
            operation = f"{operation}_{topic}" if topic else operation
        base = safe_name(operation or f"{method}_{path}")[:60].rstrip("_")
        if base in self.tool_names:  # told apart by its path first (`feed_game` beside `feed`), then by number
            said = set(base.split("_"))
            words = [snake(w) for w in path.strip("/").split("/") if w and not w.startswith("{")]
            topic = "_".join(w for w in snake("_".join(words[-1:])).split("_") if w and w not in said)
            base = safe_name(f"{base}_{topic}")[:60].rstrip("_") if topic else base
        name, n = base, 2
        while name in self.tool_names:
            name, n = f"{base}_{n}", n + 1
        self.tool_names.add(name)
        return name

    def description(self, op: dict[str, Any], method: str, path: str) -> str:
        summary = first_paragraph(op.get("summary"), 160)
        detail = first_paragraph(op.get("description"), 240)
        if summary and detail and detail.lower().rstrip(".") != summary.lower().rstrip("."):
            text = f"{summary.rstrip('.')}. {detail}"
        else:
            text = summary or detail or f"{method.upper()} {path}"
        return text

    def _auth_like(self, path: str, op: dict[str, Any]) -> bool:
        """Whether the operation is a login, a token exchange or a session of the signed-in user. A session
        names a login only unqualified (`/sessions`, `createSession`, `DELETE /session`): an upload's or a
        game's session (`/files/upload_sessions/{session_id}`, `CreateGameSession`) is a record."""
        words = snake(f"{path} {op.get('operationId') or ''}").split("_")
        if any(w in AUTH_WORDS or w.rstrip("s") in AUTH_WORDS for w in words):
            return True
        named = [s for s in path.split("/") if s and not s.startswith("{")] + [str(op.get("operationId") or "")]
        for part in named:
            words = snake(part).split("_")
            if any(
                w.rstrip("s") == "session" and (not n or words[n - 1] in SESSION_VERBS) for n, w in enumerate(words)
            ):
                return True
        return False

    def _is_action(self, path: str, schema_name: str) -> bool:
        """`POST /articles/{slug}/favorite` returning the article: an action on the parent, not a
        new record in a child collection."""
        segments = [s for s in path.strip("/").split("/") if s]
        if len(segments) < 3 or segments[-1].startswith("{") or not segments[-2].startswith("{"):
            return False
        parent = "/" + "/".join(segments[:-2])
        parent_table = self.collections.get(parent)
        return parent_table is not None and self.by_schema.get(schema_name) == parent_table
