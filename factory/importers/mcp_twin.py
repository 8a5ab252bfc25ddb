"""`envfarm import mcp CONFIG NAME`: a stateful twin of a live MCP server, from its listing and what its
reads return, so a team can train against a safe, verified copy of a server it uses.

The server is reached over MCP only, through a connection the caller opens (`LiveServers`: the driver's
`envfarm.clients.connect.Connections`, any `mcpServers` entry, stdio or HTTP; the factory does not import the
driver, which sits beside it). Its
tool listing is restated as EnvFactory metadata and imported (`envfarm.factory.importers.metadata`: effects from the
tool names and annotations, entities from the output schemas). Then every read tool that needs no
argument is called once, and the records it returns become the twin's seed rows where they fit the
inferred tables (the rest of the seed is generated). Nothing is written to the live server: only
tools it marks read-only, or whose name says they read, are called.
"""

from __future__ import annotations

import json
import re
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

import mcp_types as types

from envfarm.factory.ids import opaque_document
from envfarm.factory.importers.metadata import EnvironmentMetadata, ToolMetadata, import_metadata_offline
from envfarm.factory.importers.openapi import ImportResult, safe_name, snake
from envfarm.factory.spec import SpecError, parse_spec
from envfarm.servers.runtime.database import OPAQUE_KEY
from envfarm.servers.runtime.vocabulary import READ_VERBS

MAX_OBSERVED_ROWS = 50
OPAQUE_SYMBOLS = 6  # the hash part of an opaque id (envfarm.servers.runtime.database.opaque_id), after its prefix


def _reads(tool: types.Tool) -> bool:
    hinted = tool.annotations.read_only_hint if tool.annotations else None
    return bool(hinted) if hinted is not None else snake(tool.name).split("_")[0] in READ_VERBS


def _records(value: Any) -> list[dict[str, Any]]:
    """The records a read returned: a list of objects, or the one list of objects inside an object."""
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list) and v and all(isinstance(i, dict) for i in v)]
        if len(lists) == 1:
            return lists[0]
    return []


class LiveEpisode(Protocol):
    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult: ...


class LiveServers(Protocol):
    """What the twin needs of an open connection to the live server (`envfarm.clients.connect.Connections` is one)."""

    async def tools(self, server: str) -> list[types.Tool]: ...

    async def instructions(self, server: str) -> str | None: ...

    def episode(self, server: str, episode_id: str) -> AbstractAsyncContextManager[LiveEpisode]: ...


async def observe(connections: LiveServers, name: str) -> tuple[EnvironmentMetadata, dict[str, list[dict[str, Any]]]]:
    """The server's listing as metadata, and the records each argument-free read returned (by tool)."""
    observed: dict[str, list[dict[str, Any]]] = {}
    tools = await connections.tools(name)
    instructions = await connections.instructions(name)
    async with connections.episode(name, "envfarm-import") as episode:
        for tool in tools:
            required = (tool.input_schema or {}).get("required") or []
            if _reads(tool) and not required:
                result = await episode.call_tool(tool.name, {})
                if not result.is_error:
                    observed[tool.name] = _records(result.structured_content)[:MAX_OBSERVED_ROWS]
    meta = EnvironmentMetadata(
        class_name=name,
        description=" ".join((instructions or f"A stateful twin of the MCP server {name}.").split())[:300],
        tools=[
            ToolMetadata(
                name=t.name,
                description=t.description or "",
                input_schema=t.input_schema or {},
                output_schema=t.output_schema,
            )
            for t in tools
        ],
    )
    return meta, observed


def twin_spec(
    meta: EnvironmentMetadata, observed: dict[str, list[dict[str, Any]]], source: Path, name: str | None = None
) -> ImportResult:
    """The imported spec, its seed replaced table by table with observed records that fit."""
    result = import_metadata_offline(meta, source, name or safe_name(meta.class_name))
    spec = result.spec
    by_tool = {t.tool: t.entity for t in result.report.tools}
    used: list[str] = []
    opaque: list[str] = []  # tables whose live ids are opaque
    for tool, rows in observed.items():
        table = by_tool.get(tool)
        if table is None or not rows or table in used:
            continue
        entity = spec["entities"][table]
        columns = entity["columns"]
        fitted = [{c: row.get(c) for c in columns} for row in rows]
        if any(row[entity["primary_key"]] is None for row in fitted):
            continue
        keys = [str(row[entity["primary_key"]]) for row in fitted]
        shapes = {(m.group(1), len(m.group(2))) for k in keys if (m := re.fullmatch(r"([A-Za-z_-]*?)(\d+)", k))}
        prefixes = {k[:-OPAQUE_SYMBOLS] for k in keys}
        live_opaque = len(prefixes) == 1 and all(OPAQUE_KEY.fullmatch(k) for k in keys)
        if len(keys) == len(set(keys)) and columns[entity["primary_key"]]["type"] == "string":
            if live_opaque:  # the live ids are opaque (`pat_k3x9qm`): the twin's are too, with the same prefix
                entity = {**entity, "id_format": f"{next(iter(prefixes))}{{:04d}}"}
            elif len(shapes) == 1:
                [(prefix, width)] = shapes  # new ids look like the live server's (`pat_0041`)
                entity = {**entity, "id_format": f"{prefix}{{:0{width}d}}"}
        # Generated rows elsewhere that point at this table now point at the observed keys.
        pk = entity["primary_key"]
        remap = {old[pk]: fitted[i % len(fitted)][pk] for i, old in enumerate(spec["seed"].get(table, []))}
        seed = {**spec["seed"], table: fitted}
        for other, other_entity in spec["entities"].items():
            for cname, column in other_entity["columns"].items():
                if column.get("ref") == f"{table}.{pk}" and other != table:
                    seed[other] = [{**r, cname: remap.get(r.get(cname), r.get(cname))} for r in seed.get(other, [])]
        candidate = {**spec, "entities": {**spec["entities"], table: entity}, "seed": seed}
        try:
            parse_spec(candidate, "observed")
        except SpecError as exc:
            result.report.notes.append(
                f"{table}: the records {tool} returned do not fit ({exc.problems[0][1]}); seed generated"
            )
            continue
        spec["seed"], spec["entities"] = candidate["seed"], candidate["entities"]
        _remap_examples(spec, table, pk, {k: v for k, v in remap.items() if isinstance(k, str)})
        used.append(table)
        if live_opaque:
            opaque.append(table)
        result.report.notes.append(
            f"{table}: seeded with the {len(fitted)} records {tool} returned from the live server"
        )
    if opaque:  # ids an agent must look up, as on the live server: the whole twin switches to opaque ids
        result.spec = opaque_document(spec)
        result.report.notes.append(f"ids: opaque, as the live server's {', '.join(opaque)} ids are")
    result.report.format = "MCP listing"
    return result


def _remap_examples(spec: dict[str, Any], table: str, pk: str, remap: dict[str, Any]) -> None:
    """Examples written against the generated rows of `table` now name the observed ones: keys are
    replaced; an example naming a row of it by another column is dropped (its row is gone)."""
    for tool in spec["tools"]:
        examples = tool.get("examples") or []
        if (
            tool.get("entity") == table
            and tool.get("key")
            and tool["params"][tool["key"]].get("column", tool["key"]) != pk
        ):
            examples = []
        text = json.dumps(examples)
        for old, new in remap.items():
            text = text.replace(json.dumps(old), json.dumps(new)).replace(f"[{old}]", f"[{new}]")
        tool["examples"] = json.loads(text)
        if not tool["examples"]:
            tool.pop("examples")
    if spec.get("scenarios"):  # a scenario's create names existing rows (its foreign keys) the same way
        text = json.dumps(spec["scenarios"])
        for old, new in remap.items():
            text = text.replace(json.dumps(old), json.dumps(new))
        spec["scenarios"] = json.loads(text)
