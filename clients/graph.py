"""The tool dependency graph: which tool's output can feed which tool's input, read from listed schemas only.

Nodes are tools (`tool:<server>/<name>`) and their parameters (`param:<server>/<tool>/<name>`). A
parameter points at its tool; a tool points at every parameter its output can fill, the edge naming
the output field. Links are exact where a server advertises them (`x-envfarm-ref` on id parameters
and output fields, as our servers do) and inferred by name, type and description similarity where it
does not (any other MCP server). Ids never cross servers; user-known values (an email, a name) may,
which is how one person's facts join mail, calendar and bank tasks.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Literal

import mcp_types as types
import networkx as nx
from pydantic import BaseModel, Field, ValidationError

from envfarm.servers.runtime.control import ControlError
from envfarm.servers.runtime.intents import ServerIntents
from envfarm.servers.runtime.vocabulary import ID_WORDS, READ_VERBS

REF = "x-envfarm-ref"
COLUMN = "x-envfarm-column"
USER_KNOWN = "x-envfarm-user-known"
INTENTS_RESOURCE = "intents"
# A similarity link needs at least this score (see README "Tasks" for its precision/recall on our servers).
SIMILARITY_THRESHOLD = 0.6
DESTRUCTIVE = frozenset({"delete", "remove", "cancel", "close", "archive", "drop"})
Source = Literal["exact", "similar"]


class Param(BaseModel):
    name: str
    type: str = "string"
    required: bool = False
    description: str = ""
    ref: str | None = None
    column: str | None = None
    user_known: bool = True
    enum: list[Any] | None = None
    pattern: str | None = None
    minimum: float | None = None  # the schema's bounds on a number ('a freeze lasts at least 7 days')
    maximum: float | None = None


class OutField(BaseModel):
    """A leaf of a tool's structured output: a property of a row model (or of the top-level object)."""

    name: str
    type: str = "string"
    entity: str = ""
    description: str = ""
    ref: str | None = None
    user_known: bool = True


class ToolSpec(BaseModel):
    """What the graph knows of one listed tool."""

    server: str
    name: str
    description: str = ""
    read_only: bool
    params: list[Param] = Field(default_factory=list)
    outputs: list[OutField] = Field(default_factory=list)
    annotated: bool = Field(False, description="the server advertises exact links (x-envfarm-ref)")

    @property
    def key(self) -> str:
        return tool_node(self.server, self.name)

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


def tool_node(server: str, tool: str) -> str:
    return f"tool:{server}/{tool}"


def param_node(server: str, tool: str, param: str) -> str:
    return f"param:{server}/{tool}/{param}"


# ---------------------------------------------------------------- reading listed schemas


@functools.lru_cache(maxsize=8192)
def _words(name: str) -> tuple[str, ...]:
    """`fromAccountID`, `from_account_id` -> ['from', 'account', 'id'] (plurals folded, 'identifier' -> 'id')."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    tokens = [t.lower() for t in re.split(r"[^A-Za-z0-9]+", spaced) if t]
    out = []
    for token in tokens:
        token = "id" if token in {"identifier", "ids"} else token
        if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
            token = token[:-1]
        out.append(token)
    return tuple(out)


def words(name: str) -> list[str]:
    """`fromAccountID`, `from_account_id` -> ['from', 'account', 'id'] (plurals folded, 'identifier' -> 'id')."""
    return list(_words(name))


def is_id_like(name: str) -> bool:
    tokens = words(name)
    return bool(tokens) and tokens[-1] in ID_WORDS


def _type_of(schema: dict[str, Any]) -> str:
    if "type" in schema and isinstance(schema["type"], str):
        return str(schema["type"])
    for option in schema.get("anyOf", []) + schema.get("oneOf", []):
        if isinstance(option, dict) and option.get("type") not in (None, "null"):
            return _type_of(option)
    return "string"


def _enum_of(schema: dict[str, Any]) -> list[Any] | None:
    if "enum" in schema:
        return list(schema["enum"])
    for option in schema.get("anyOf", []):
        if isinstance(option, dict) and "enum" in option:
            return list(option["enum"])
    return None


def _bound_of(schema: dict[str, Any], key: str) -> float | None:
    """A number's `minimum` or `maximum` (or its exclusive form, as the nearest whole number inside it)."""
    for where in [schema, *(o for o in schema.get("anyOf", []) if isinstance(o, dict))]:
        if isinstance(where.get(key), (int, float)):
            return float(where[key])
        exclusive = where.get("exclusive" + key.capitalize())
        if isinstance(exclusive, (int, float)) and not isinstance(exclusive, bool):
            return float(exclusive) + (1 if key == "minimum" else -1)
    return None


def _pattern_of(schema: dict[str, Any]) -> str | None:
    if isinstance(schema.get("pattern"), str):
        return str(schema["pattern"])
    for option in schema.get("anyOf", []):
        if isinstance(option, dict) and isinstance(option.get("pattern"), str):
            return str(option["pattern"])
    return None


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node if isinstance(node, dict) else {}
    return schema


def output_fields(schema: dict[str, Any] | None) -> list[OutField]:
    """Every scalar property reachable in an output schema, once per (entity, name)."""
    if not schema:
        return []
    found: dict[tuple[str, str], OutField] = {}

    def walk(node: dict[str, Any], entity: str, depth: int) -> None:
        node = _resolve(node, schema)
        if depth > 6:
            return
        for option in node.get("anyOf", []):
            if isinstance(option, dict) and option.get("type") != "null":
                walk(option, entity, depth + 1)
        if _type_of(node) == "array" and isinstance(node.get("items"), dict):
            walk(node["items"], entity, depth + 1)
            return
        for name, prop in (node.get("properties") or {}).items():
            resolved = _resolve(prop, schema)
            inner = resolved
            for option in resolved.get("anyOf", []):
                if isinstance(option, dict) and option.get("type") != "null":
                    inner = _resolve(option, schema)
            kind = _type_of(inner)
            if kind in {"object", "array"}:
                walk(inner, str(inner.get("title") or (inner.get("items") or {}).get("title") or name), depth + 1)
                continue
            key = (entity, name)
            if key not in found:
                known = resolved.get(USER_KNOWN)
                found[key] = OutField(
                    name=name,
                    type=kind,
                    entity=entity,
                    description=str(resolved.get("description", "")),
                    ref=resolved.get(REF),
                    user_known=bool(known) if known is not None else not is_id_like(name),
                )

    walk(schema, str(schema.get("title", "")), 0)
    return list(found.values())


def tool_spec(server: str, tool: types.Tool) -> ToolSpec:
    """A listed tool as the graph sees it. Read vs write comes from `readOnlyHint`, else from the verb."""
    schema = tool.input_schema or {}
    required = set(schema.get("required", []))
    params = []
    for name, prop in (schema.get("properties") or {}).items():
        known = prop.get(USER_KNOWN)
        params.append(
            Param(
                name=name,
                type=_type_of(prop),
                required=name in required,
                description=str(prop.get("description", "")),
                ref=prop.get(REF),
                column=prop.get(COLUMN),
                user_known=bool(known) if known is not None else not is_id_like(name),
                enum=_enum_of(prop),
                pattern=_pattern_of(prop),
                minimum=_bound_of(prop, "minimum"),
                maximum=_bound_of(prop, "maximum"),
            )
        )
    hint = tool.annotations.read_only_hint if tool.annotations else None
    read_only = hint if hint is not None else (words(tool.name)[:1] or [""])[0] in READ_VERBS
    outputs = output_fields(tool.output_schema)
    annotated = any(p.ref for p in params) or any(f.ref for f in outputs)
    return ToolSpec(
        server=server,
        name=tool.name,
        description=tool.description or "",
        read_only=read_only,
        params=params,
        outputs=outputs,
        annotated=annotated,
    )


# ---------------------------------------------------------------- links


def _field_words(field: OutField) -> list[str]:
    tokens = words(field.name)
    if tokens == ["id"] and field.entity:  # `id` of a `Project` is a project id
        return [*words(field.entity), "id"]
    return tokens


def similarity(param: Param, field: OutField, producer: str = "") -> float:
    """How likely `field` (an output of tool `producer`) is a value for `param`, in [0, 1]: offline, no model.

    Ids match only ids of the same entity (`from_account_id` <- `account_id`). Other values match by
    token overlap, the last word weighing most (`owner_email` <- `email`). A parameter description that
    names the producing tool ("Patient id from find_patient") adds weight.
    """
    if param.type != field.type and {param.type, field.type} != {"integer", "number"}:
        return 0.0
    p, f = words(param.name), _field_words(field)
    if not p or not f:
        return 0.0
    if (p[-1] == "id") != (f[-1] == "id"):
        return 0.0
    if p[-1] == "id":
        p_entity, f_entity = [t for t in p if t != "id"], [t for t in f if t != "id"]
        if not p_entity or not f_entity:
            score = 0.5 if not p_entity and not f_entity else 0.0
        elif p_entity[-1] == f_entity[-1]:
            score = 0.8 + 0.2 * len(set(p_entity) & set(f_entity)) / len(set(p_entity) | set(f_entity))
        else:
            score = 0.0
    else:
        overlap = len(set(p) & set(f)) / len(set(p) | set(f))
        score = min(1.0, overlap * 0.6 + (0.4 if p[-1] == f[-1] else 0.0))
    if producer and producer in param.description:
        score = min(1.0, score + 0.3)
    return round(score, 3)


class Link(BaseModel):
    producer: str
    field: str
    consumer: str
    param: str
    source: Source
    score: float = 1.0


def exact_links(specs: Sequence[ToolSpec]) -> list[Link]:
    """Advertised links: an output field and an input parameter naming the same `table.column`, same server."""
    by_ref: dict[tuple[str, str], list[tuple[ToolSpec, OutField]]] = {}
    for spec in specs:
        for field in spec.outputs:
            if field.ref:
                by_ref.setdefault((spec.server, field.ref), []).append((spec, field))
    links = []
    for spec in specs:
        for param in spec.params:
            if not param.ref:
                continue
            for producer, field in by_ref.get((spec.server, param.ref), []):
                if producer.name != spec.name:
                    links.append(
                        Link(
                            producer=producer.key, field=field.name, consumer=spec.key, param=param.name, source="exact"
                        )
                    )
    return _dedupe(links)


def similar_links(
    specs: Sequence[ToolSpec],
    threshold: float = SIMILARITY_THRESHOLD,
    *,
    cross_server: bool = False,
    together: Collection[tuple[str, str]] | None = None,
) -> list[Link]:
    """Inferred links. Within a server: into parameters a user would have to look up, by `similarity`.
    Across servers (`cross_server=True`): only user-known values under the same name, never ids; with
    `together` (pairs of servers, each sorted), only between servers one task may join."""
    if cross_server:
        return _same_name_links(specs, together)
    links = []
    by_server: dict[str, list[ToolSpec]] = {}
    for spec in specs:
        by_server.setdefault(spec.server, []).append(spec)
    for tools in by_server.values():
        for consumer in tools:
            for param in consumer.params:
                if param.user_known:
                    continue
                for producer in tools:
                    if producer.name == consumer.name:
                        continue
                    for field in producer.outputs:
                        score = similarity(param, field, producer.name)
                        if score >= threshold:
                            links.append(
                                Link(
                                    producer=producer.key,
                                    field=field.name,
                                    consumer=consumer.key,
                                    param=param.name,
                                    source="similar",
                                    score=score,
                                )
                            )
    return _dedupe(links)


# Free text a person writes for one occasion (why they cancel, what a comment says). The same name on two servers
# is not the same thing: an unsubscribe's reason is no reason for a credit note ("I get too many emails").
PROSE = frozenset({"reason", "comment", "body", "note", "notes", "message", "text", "content", "purpose", "memo"})


def _same_name_links(specs: Sequence[ToolSpec], together: Collection[tuple[str, str]] | None = None) -> list[Link]:
    """User-known strings across servers: the same last word, and one name contained in the other
    (`attendee_emails` <- `email`, `owner_email` <- `email`), never free text (`PROSE`). Every `name` links to
    every `*_name` of every other server, so on a farm of hundreds of servers these links grow with the square of
    its size (17,815 among 20 imported servers); `together` keeps those between servers a task may join."""
    index: dict[str, list[tuple[ToolSpec, OutField, set[str]]]] = {}
    for spec in specs:
        for field in spec.outputs:
            tokens = words(field.name)
            if field.user_known and field.type == "string" and tokens and tokens[-1] not in PROSE:
                index.setdefault(tokens[-1], []).append((spec, field, set(tokens)))
    links = []
    for consumer in specs:
        for param in consumer.params:
            tokens = words(param.name)
            if not param.user_known or param.enum or param.type != "string" or not tokens:
                continue
            for producer, field, field_tokens in index.get(tokens[-1], []):
                if producer.server == consumer.server or (
                    together is not None and tuple(sorted((producer.server, consumer.server))) not in together
                ):
                    continue
                if field_tokens <= set(tokens) or set(tokens) <= field_tokens:
                    links.append(
                        Link(
                            producer=producer.key,
                            field=field.name,
                            consumer=consumer.key,
                            param=param.name,
                            source="similar",
                        )
                    )
    return _dedupe(links)


def _dedupe(links: Iterable[Link]) -> list[Link]:
    best: dict[tuple[str, str, str, str], Link] = {}
    for link in links:
        key = (link.producer, link.field, link.consumer, link.param)
        if key not in best or link.score > best[key].score:
            best[key] = link
    return list(best.values())


class LinkQuality(BaseModel):
    threshold: float
    exact: int
    inferred: int
    true_positive: int
    precision: float
    recall: float


def link_quality(specs: Sequence[ToolSpec], threshold: float = SIMILARITY_THRESHOLD) -> LinkQuality:
    """Similarity inference measured against the exact links of annotated servers (same-server links)."""
    annotated = [s for s in specs if s.annotated]
    stripped = [_strip(s) for s in annotated]
    gold = {(link.producer, link.field, link.consumer, link.param) for link in exact_links(annotated)}
    guessed = {(link.producer, link.field, link.consumer, link.param) for link in similar_links(stripped, threshold)}
    hit = len(gold & guessed)
    return LinkQuality(
        threshold=threshold,
        exact=len(gold),
        inferred=len(guessed),
        true_positive=hit,
        precision=round(hit / len(guessed), 3) if guessed else 0.0,
        recall=round(hit / len(gold), 3) if gold else 0.0,
    )


def _strip(spec: ToolSpec) -> ToolSpec:
    """The spec a foreign server would give: no links, no user-known flags."""
    params = [
        p.model_copy(update={"ref": None, "column": None, "user_known": not is_id_like(p.name)}) for p in spec.params
    ]
    outputs = [f.model_copy(update={"ref": None, "user_known": not is_id_like(f.name)}) for f in spec.outputs]
    return spec.model_copy(update={"params": params, "outputs": outputs, "annotated": False})


# ---------------------------------------------------------------- the graph


def build_graph(
    specs: Sequence[ToolSpec],
    threshold: float = SIMILARITY_THRESHOLD,
    together: Collection[tuple[str, str]] | None = None,
) -> nx.DiGraph:
    """Tools and parameters as nodes; links as edges tool -> param (attribute `field`), param -> tool.

    A server that advertises links gets exactly those; any other server gets similarity links.
    User-known values link across servers by similarity (only between the pairs `together`, if given).
    """
    graph = nx.DiGraph()
    for spec in specs:
        graph.add_node(
            spec.key,
            kind="tool",
            server=spec.server,
            tool=spec.name,
            read_only=spec.read_only,
            description=spec.description,
            annotated=spec.annotated,
        )
        for param in spec.params:
            node = param_node(spec.server, spec.name, param.name)
            graph.add_node(
                node,
                kind="param",
                server=spec.server,
                tool=spec.name,
                param=param.name,
                required=param.required,
                user_known=param.user_known,
                type=param.type,
                ref=param.ref,
            )
            graph.add_edge(node, spec.key, kind="input")
    annotated = [s for s in specs if s.annotated]
    foreign = [s for s in specs if not s.annotated]
    links = (
        exact_links(annotated)
        + similar_links(foreign, threshold)
        + similar_links(specs, threshold, cross_server=True, together=together)
    )
    for link in links:
        server, rest = link.consumer.removeprefix("tool:").split("/", 1)
        target = param_node(server, rest, link.param)
        data = graph.get_edge_data(link.producer, target)
        fields = sorted({*(data["fields"] if data else []), link.field})
        graph.add_edge(link.producer, target, kind="feeds", fields=fields, source=link.source, score=link.score)
    return graph


def producers(graph: nx.DiGraph, server: str, tool: str, param: str) -> list[tuple[str, list[str]]]:
    """(tool node, output fields) that can fill a parameter."""
    node = param_node(server, tool, param)
    if node not in graph:
        return []
    return [
        (src, list(graph.edges[src, node]["fields"]))
        for src in graph.predecessors(node)
        if graph.nodes[src]["kind"] == "tool"
    ]


def consumers(graph: nx.DiGraph, tool_key: str) -> list[tuple[str, str, list[str]]]:
    """(tool node, param name, fields) that the output of `tool_key` can feed."""
    out = []
    for target in graph.successors(tool_key):
        attrs = graph.nodes[target]
        if attrs["kind"] == "param":
            out.append(
                (
                    tool_node(attrs["server"], attrs["tool"]),
                    attrs["param"],
                    list(graph.edges[tool_key, target]["fields"]),
                )
            )
    return out


async def load_specs(connections: Any, servers: Sequence[str]) -> list[ToolSpec]:
    """The listed tools of each server (a `envfarm.clients.connect.Connections`), as graph specs; a server whose
    tools do not say what they return is explored first (`explore`), so its outputs can feed inputs."""
    specs = []
    for server in servers:
        listed = [tool_spec(server, tool) for tool in await connections.tools(server)]
        specs += await explore(connections, server, listed) if any(_thin(s) for s in listed) else listed
    return specs


async def load_intents(connections: Any, server: str) -> ServerIntents | None:
    """The server's intents (how people ask for its tools and name its rows), read over MCP as its `intents`
    resource like its policy rules; None for a server that serves none or an empty one (a foreign server, or
    one built before its spec had intents): then tasks are written without them."""
    text = await connections.resource_text(server, INTENTS_RESOURCE)
    if not text:
        return None
    try:
        intents = ServerIntents.model_validate_json(text)
    except ValidationError as exc:
        raise ValueError(f"{server}: the resource {INTENTS_RESOURCE!r} is not a server's intents: {exc}") from exc
    return intents if intents.tools or intents.refer else None


# ---------------------------------------------------------------- outputs of servers that do not declare them


def output_of(result: Any) -> Any:
    """A call's data: its structured content, else its text parsed as JSON (one block per list item, as
    mcp 1.x FastMCP sends a list), else the text. A lone `result` wrapper (how FastMCP wraps a return
    value that is not an object) is unwrapped, and a JSON string inside it is parsed."""
    if result.structured_content is not None:
        data: Any = result.structured_content
        if isinstance(data, dict) and list(data) == ["result"]:
            data = data["result"]
    else:
        texts = [getattr(c, "text", "") for c in result.content if getattr(c, "text", None) is not None]
        parsed = [_json(t) for t in texts]
        if len(texts) > 1 and all(isinstance(v, (dict, list)) for v in parsed):
            return parsed
        data = "\n".join(texts)
    return _json(data) if isinstance(data, str) else data


def _json(text: str) -> Any:
    """`text` parsed when it is a JSON object or array; else `text` itself."""
    if not text.lstrip().startswith(("{", "[")):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _scalar_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return "number" if isinstance(value, float) else "string"


def _leaves(data: Any, entity: str) -> list[tuple[OutField, Any]]:
    """(field, value) for every scalar of a sample output; a field's entity is the key holding its row."""
    found: list[tuple[OutField, Any]] = []

    def walk(node: Any, label: str) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, label)
        elif isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, (dict, list)):
                    walk(value, key)
                elif value is not None:
                    field = OutField(name=key, type=_scalar_type(value), entity=label, user_known=not is_id_like(key))
                    found.append((field, value))

    walk(data, entity)
    return found


def sampled_fields(data: Any, entity: str) -> list[OutField]:
    """What a tool returns, read off one sample output (for a tool with no useful output schema)."""
    fields: dict[tuple[str, str], OutField] = {}
    for field, _ in _leaves(data, entity):
        fields.setdefault((field.entity, field.name), field)
    return list(fields.values())


def _thin(spec: ToolSpec) -> bool:
    """Whether a tool's listed output schema names nothing an input could take (none, or only a wrapper)."""
    return not spec.annotated and not [f for f in spec.outputs if f.name != "result"]


def _probe_value(param: Param, seen: Sequence[tuple[OutField, Any]], producer_of: dict[str, str]) -> Any:
    """A value for `param` from what earlier sample outputs showed (by `similarity`), else a stand-in for a
    value a user would know; None when an id is needed that nothing showed."""
    best = max(
        ((similarity(param, field, producer_of.get(field.entity, "")), value) for field, value in seen),
        key=lambda pair: pair[0],
        default=(0.0, None),
    )
    if best[0] >= SIMILARITY_THRESHOLD:
        return best[1]
    if not param.user_known:
        return None
    if param.enum:
        return param.enum[0]
    return {"integer": 1, "number": 1.0, "boolean": False}.get(param.type, "sample")


async def explore(connections: Any, server: str, specs: Sequence[ToolSpec], rounds: int = 3) -> list[ToolSpec]:
    """Specs whose outputs are read off sample calls, for a server whose tools do not declare them.

    One episode: reads without required inputs first, then every tool whose inputs the outputs seen so far
    can fill (ids by `similarity`, like the graph's links), for up to `rounds` rounds. Writes are called
    only where the episode is a process of its own that ends with it (`Connections.fresh_process`): a
    shared server keeps no trace of the exploration. A tool that fails or is never reached keeps its spec.
    """
    writes = connections.fresh_process(server)
    samples: dict[str, Any] = {}
    seen: list[tuple[OutField, Any]] = []
    producer_of: dict[str, str] = {}
    reads = sorted((s for s in specs if s.read_only), key=lambda s: s.name)
    # Writes after every read, and the ones that remove things last: they would take away what others need.
    later = sorted(
        (s for s in specs if not s.read_only and writes),
        key=lambda s: ((words(s.name) or [""])[0] in DESTRUCTIVE, s.name),
    )
    async with connections.episode(server, f"explore-{server}") as episode:
        for pending in (reads, later):
            for _ in range(rounds):
                called = False
                for spec in list(pending):
                    args = {p.name: _probe_value(p, seen, producer_of) for p in spec.params if p.required}
                    if any(v is None for v in args.values()):
                        continue
                    pending.remove(spec)
                    called = True
                    try:
                        result = await episode.call_tool(spec.name, args)
                    except ControlError:  # the server broke or hangs: keep what it showed so far
                        return _with_samples(specs, samples)
                    if result.is_error:
                        continue
                    entity = " ".join(words(spec.name)[1:]) or spec.name
                    samples[spec.name] = output_of(result)
                    leaves = _leaves(samples[spec.name], entity)
                    seen += leaves
                    producer_of.update({f.entity: spec.name for f, _ in leaves})
                if not called:
                    break
    return _with_samples(specs, samples)


def _with_samples(specs: Sequence[ToolSpec], samples: dict[str, Any]) -> list[ToolSpec]:
    return [
        s.model_copy(update={"outputs": sampled_fields(samples[s.name], " ".join(words(s.name)[1:]) or s.name)})
        if _thin(s) and s.name in samples
        else s
        for s in specs
    ]


def graph_json(graph: nx.DiGraph) -> dict[str, Any]:
    return nx.node_link_data(graph, edges="links")


# ---------------------------------------------------------------- a picture a person can read


def render_svg(graph: nx.DiGraph) -> str:
    """A self-contained SVG: one column of tools per server (reads blue, writes orange), arrows for data flow."""
    servers = sorted({d["server"] for _, d in graph.nodes(data=True) if d["kind"] == "tool"})
    col_w, row_h, top = 260, 26, 40
    pos: dict[str, tuple[float, float]] = {}
    height = top
    for column, server in enumerate(servers):
        tools = sorted(n for n, d in graph.nodes(data=True) if d["kind"] == "tool" and d["server"] == server)
        for row, node in enumerate(tools):
            pos[node] = (20 + column * col_w, top + row * row_h)
        height = max(height, top + len(tools) * row_h + 20)
    width = 40 + len(servers) * col_w
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            'font-family="sans-serif" font-size="11">'
        ),
        (
            '<defs><marker id="a" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
            'orient="auto"><path d="M0,0L10,5L0,10z" fill="#888"/></marker></defs>'
        ),
        "<style>line{stroke:#999;stroke-opacity:.45}line.x{stroke:#7a3;stroke-dasharray:4 3}</style>",
    ]
    for column, server in enumerate(servers):
        parts.append(
            f'<text x="{20 + column * col_w}" y="22" font-weight="bold" font-size="13">{html.escape(server)}</text>'
        )
    for src, dst, data in graph.edges(data=True):
        if data.get("kind") != "feeds":
            continue
        consumer = next(iter(graph.successors(dst)))
        (x1, y1), (x2, y2) = pos[src], pos[consumer]
        cross = graph.nodes[src]["server"] != graph.nodes[consumer]["server"]
        title = html.escape(f"{', '.join(data['fields'])} -> {graph.nodes[dst]['param']} ({data['source']})")
        if x1 == x2:  # same column: bend out to the right so arrows stay visible
            mid = x1 + 200 + min(50, abs(y2 - y1) / 6)
            parts.append(
                f'<path d="M{x1 + 190},{y1 - 4} Q{mid},{(y1 + y2) / 2 - 4} {x2 + 190},{y2 - 4}" fill="none" '
                f'stroke="#999" stroke-opacity=".45" marker-end="url(#a)"><title>{title}</title></path>'
            )
        else:
            parts.append(
                f'<line class="{"x" if cross else ""}" x1="{x1 + 190}" y1="{y1 - 4}" x2="{x2}" y2="{y2 - 4}" '
                f'marker-end="url(#a)"><title>{title}</title></line>'
            )
    for node, (x, y) in pos.items():
        data = graph.nodes[node]
        fill = "#dbe9fb" if data["read_only"] else "#fde3c8"
        required = [graph.nodes[p] for p in graph.predecessors(node) if graph.nodes[p].get("required")]
        lookups = sum(1 for p in required if not p["user_known"])
        label = f"{data['tool']}" + (f"  ({lookups} lookup{'s' * (lookups != 1)})" if lookups else "")
        parts.append(
            f'<rect x="{x}" y="{y - 16}" width="190" height="20" rx="4" fill="{fill}" stroke="#667">'
            f"<title>{html.escape(data['description'])}</title></rect>"
        )
        parts.append(f'<text x="{x + 5}" y="{y - 2}">{html.escape(label)}</text>')
    legend_y = height - 6
    parts.append(
        f'<text x="20" y="{legend_y}" fill="#555">blue: read, orange: write; arrows: an output feeds an input '
        f"(dashed green: across servers); hover for fields</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts)


def summarize(graph: nx.DiGraph) -> dict[str, Any]:
    tools = [d for _, d in graph.nodes(data=True) if d["kind"] == "tool"]
    feeds = [d for _, _, d in graph.edges(data=True) if d.get("kind") == "feeds"]
    return {
        "tools": len(tools),
        "writes": sum(1 for d in tools if not d["read_only"]),
        "params": sum(1 for _, d in graph.nodes(data=True) if d["kind"] == "param"),
        "links": len(feeds),
        "exact_links": sum(1 for d in feeds if d["source"] == "exact"),
        "similar_links": sum(1 for d in feeds if d["source"] == "similar"),
    }


def dump(graph: nx.DiGraph) -> str:
    return json.dumps(graph_json(graph), indent=1, sort_keys=True, default=str)
