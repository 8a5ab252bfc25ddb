"""A broad farm: a folder of API documents imported, built, served whole and sampled for tasks.

The documents are written here (small Swagger 2.0 and OpenAPI 3 documents in the shape of public ones: a
parent resource a person names, and child records listed under it), so the test needs no public corpus.
Each ends in a verified server tagged with its source in registry.json; `serve --all` lists every tool
of every server; tasks synthesized over the imported servers pass `envfarm tasks --audit`; and `--source`
picks the deep farm, the broad farm or both.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from envfarm.bench.startup import farm_listing
from envfarm.cli import main
from envfarm.factory.build import build_all
from envfarm.servers.runtime.registry import (
    Launch,
    Registry,
    RegistryEntry,
    Source,
    load_registry,
    registry_text,
)

# (provider, title, parent resource, its name field, child resource, the child's fields)
APIS = [
    ("kennel.example.com", "Kennel Club", "owners", "full_name", "dogs", {"dog_name": "string", "breed": "string"}),
    ("books.example.org", "Lending Library", "members", "full_name", "loans", {"book_title": "string", "due": "date"}),
    (
        "garage.example.net",
        "Garage Service",
        "customers",
        "full_name",
        "repairs",
        {"part": "string", "hours": "number"},
    ),
]


def _schema(fields: dict[str, str]) -> dict[str, Any]:
    types = {"date": {"type": "string", "format": "date"}, "number": {"type": "number"}}
    return {"type": "object", "properties": {f: types.get(t, {"type": "string"}) for f, t in fields.items()}}


def swagger_document(provider: str, title: str, parent: str, name: str, child: str, fields: dict[str, str]) -> dict:
    """A Swagger 2.0 document: search and create the parent; list, create, read and delete its children."""
    one, kid = parent[:-1], child[:-1]
    parent_fields = {"id": "string", name: "string", "email": "string"}
    child_fields = {"id": "string", f"{one}_id": "string", **fields}
    key = {"name": f"{one}Id", "in": "path", "required": True, "type": "string"}
    child_key = {"name": f"{kid}Id", "in": "path", "required": True, "type": "string"}

    def ok(ref: dict[str, Any]) -> dict[str, Any]:
        return {"200": {"description": "ok", "schema": ref}}

    return {
        "swagger": "2.0",
        "info": {"title": title, "version": "2.1", "x-providerName": provider, "description": f"{title} records."},
        "host": f"api.{provider}",
        "basePath": "/v2",
        "paths": {
            f"/{parent}": {
                "get": {
                    "operationId": f"list{parent.title()}",
                    "summary": f"Find {parent} by name",
                    "parameters": [{"name": name, "in": "query", "type": "string", "description": "Their name"}],
                    "responses": ok({"type": "array", "items": {"$ref": f"#/definitions/{one.title()}"}}),
                },
                "post": {
                    "operationId": f"create{one.title()}",
                    "summary": f"Register a {one}",
                    "parameters": [
                        {
                            "name": "body",
                            "in": "body",
                            "required": True,
                            "schema": {"$ref": f"#/definitions/{one.title()}"},
                        }
                    ],
                    "responses": ok({"$ref": f"#/definitions/{one.title()}"}),
                },
            },
            f"/{parent}/{{{one}Id}}/{child}": {
                "get": {
                    "operationId": f"list{child.title()}",
                    "summary": f"List the {child} of a {one}",
                    "parameters": [key],
                    "responses": ok({"type": "array", "items": {"$ref": f"#/definitions/{kid.title()}"}}),
                },
                "post": {
                    "operationId": f"create{kid.title()}",
                    "summary": f"Add a {kid} for a {one}",
                    "parameters": [
                        key,
                        {
                            "name": "body",
                            "in": "body",
                            "required": True,
                            "schema": {"$ref": f"#/definitions/{kid.title()}"},
                        },
                    ],
                    "responses": ok({"$ref": f"#/definitions/{kid.title()}"}),
                },
            },
            f"/{parent}/{{{one}Id}}/{child}/{{{kid}Id}}": {
                "get": {
                    "operationId": f"get{kid.title()}",
                    "summary": f"Show one {kid}",
                    "parameters": [key, child_key],
                    "responses": ok({"$ref": f"#/definitions/{kid.title()}"}),
                },
                "delete": {
                    "operationId": f"delete{kid.title()}",
                    "summary": f"Remove a {kid}",
                    "parameters": [key, child_key],
                    "responses": {"204": {"description": "gone"}},
                },
            },
        },
        "definitions": {
            one.title(): {**_schema(parent_fields), "required": [name, "email"]},
            kid.title(): {**_schema(child_fields), "required": list(fields)},
        },
    }


@pytest.fixture(scope="module")
def broad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documents imported as a folder (`envfarm import openapi DIR --out SPECS`) and built into a farm."""
    docs = tmp_path_factory.mktemp("docs")
    for api in APIS:
        folder = docs / api[0]
        folder.mkdir()
        (folder / "2.1.json").write_text(json.dumps(swagger_document(*api)), "utf-8")
    specs = tmp_path_factory.mktemp("specs")
    assert main(["import", "openapi", str(docs), "--out", str(specs)]) == 0
    farm = tmp_path_factory.mktemp("farm")
    result = anyio.run(partial(build_all, [specs], farm, jobs=2))
    assert result.succeeded == len(APIS), [(s.name, s.message) for s in result.servers if not s.ok]
    return farm


def test_imported_servers_carry_their_source_in_the_registry(broad: Path) -> None:
    registry = load_registry(broad)
    sources = {e.source.provider: e.source for e in registry.servers if e.source is not None}
    assert sorted(sources) == sorted(api[0] for api in APIS)
    for provider, title, *_ in APIS:
        source = sources[provider]
        assert (source.kind, source.title, source.version, source.format) == ("imported", title, "2.1", "Swagger 2.0")
    assert all("imported" in e.tags and e.source_kind == "imported" for e in registry.servers)
    assert registry.names(["imported"]) == [e.name for e in registry.servers]
    with pytest.raises(LookupError, match="no server of source builtin"):
        registry.select(None, ["builtin"])


def test_serve_all_lists_every_tool_of_every_server(broad: Path) -> None:
    listing = farm_listing(broad)
    assert listing.servers == len(APIS)
    assert listing.mismatched == {}
    assert listing.tools_listed == listing.tools_registered >= 3 * len(APIS)


def test_tasks_over_the_imported_servers_pass_the_audit(broad: Path, tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    farm = ["--farm", str(broad)]
    assert main([*farm, "tasks", "--n", "6", "--seed", "0", "--source", "imported", "--out", str(out)]) == 0
    tasks = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert len(tasks) == 6 and {s for t in tasks for s in t["servers"]} <= set(load_registry(broad).names(["imported"]))
    summary = json.loads(out.with_name("tasks.summary.json").read_text("utf-8"))
    assert set(summary["tasks_per_domain"]) != {"unknown"}  # read from this farm's registry, not the installed one
    assert main([*farm, "tasks", "--audit", str(out)]) == 0


def _entry(name: str, trust: str, source: Source | None = None) -> RegistryEntry:
    launch = Launch(args=["-m", f"envfarm.servers.{name}"], http_path=f"/{name}/mcp")
    return RegistryEntry.model_validate(
        {
            "name": name,
            "domain": "d",
            "title": name,
            "description": "",
            "version": "1",
            "tool_count": 1,
            "write_tool_count": 0,
            "tables": 1,
            "seed_rows": 1,
            "launch": launch,
            "spec_hash": "",
            "code_hash": "",
            "verification": "passed",
            "trust": trust,
            "source": source,
        }
    )


def test_source_picks_the_deep_farm_the_broad_farm_or_both() -> None:
    registry = Registry(
        servers=[
            _entry("clinic", "reviewed"),
            _entry("kennel", "generated", Source(title="Kennel Club", provider="kennel.example.com")),
            _entry("salon", "generated"),
        ]
    )
    assert [e.source_kind for e in registry.servers] == ["builtin", "imported", "generated"]
    assert registry.select(None, None) is None  # no selection: every server
    assert registry.select(None, ["builtin"]) == ["clinic"]
    assert registry.select(None, ["builtin", "imported"]) == ["clinic", "kennel"]
    assert registry.select(["kennel", "salon"], ["imported"]) == ["kennel"]
    with pytest.raises(LookupError, match="among salon"):
        registry.select(["salon"], ["imported"])
    with pytest.raises(ValueError, match="unknown source deep"):
        registry.names(["deep"])
    written = json.loads(registry_text(registry))["servers"]
    assert ["source" in e for e in written] == [False, True, False]  # hand-written entries stay as they were


def test_source_cannot_be_combined_with_a_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"x": {"command": "true"}}}), "utf-8")
    assert main(["tasks", "--config", str(config), "--source", "imported", "--out", str(tmp_path / "t.jsonl")]) == 2
    assert "--source picks servers of the farm's registry" in capsys.readouterr().err
