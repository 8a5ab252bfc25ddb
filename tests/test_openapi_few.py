"""`envfarm import openapi` on shapes that left real documents short of tools or unbuildable, each in a small
document of our own: a few-operation document that lists records it never reads one of (a derived `get` by the key
the records carry), a computed read whose answer is named like its input (`GET /search?query=` answering
`{query: [...]}`), a child created under a path parameter that names the child's own key
(`POST /comments/{id}/edit` making a row keyed by `comment_id`), and an enum whose Literal alias would take the name
of another table's row model, or a table `pages` whose row model would shadow the runtime's `Page`."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from envfarm.factory.build import build_all
from envfarm.factory.importers.folder import import_folder
from envfarm.factory.importers.openapi import import_openapi, write_spec_folder
from envfarm.factory.verify.report import VerifyOptions
from envfarm.servers.runtime.registry import load_registry

TRIP = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The trip's id"},
        "name": {"type": "string", "description": "The trip's name"},
        "begin": {"type": "string", "format": "date-time"},
    },
}
STOP = {"type": "object", "properties": {"name": {"type": "string"}, "nights": {"type": "integer"}}}

# Swagger 2.0, in the shape of small public documents: a list of trips and the stops of one, and a search whose
# answer object has one field named like its input.
TRIPS: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Trips", "version": "1.0"},
    "paths": {
        "/trips": {
            "get": {
                "operationId": "listTrips",
                "summary": "List the trips",
                "responses": {"200": {"description": "Trips", "schema": {"type": "array", "items": TRIP}}},
            }
        },
        "/search": {
            "get": {
                "operationId": "search",
                "parameters": [{"name": "query", "in": "query", "required": True, "type": "string"}],
                "responses": {
                    "200": {
                        "description": "What matched",
                        "schema": {
                            "type": "object",
                            "properties": {
                                "query": {"type": "array", "items": {"$ref": "#/definitions/Match"}},
                            },
                        },
                    }
                },
            }
        },
    },
    "definitions": {
        # no field of its own: what each source found, not a record to keep
        "Match": {
            "type": "object",
            "properties": {
                "request": {"type": "object", "properties": {"mode": {"type": "string"}}},
                "results": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            },
        }
    },
}

COMMENT = {
    "type": "object",
    "properties": {
        "comment_id": {"type": "integer"},
        "body": {"type": "string"},
        "post_id": {"type": "integer"},
    },
}
STATE = {"type": "string", "enum": ["Approved", "Expired", "Pending"]}
NAME = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "label": {"type": "string"},
        "lifecycle_state": STATE,
    },
}
LIFECYCLE = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "field": {"type": "string", "description": "a property named like the runtime's `field(...)`"},
    },
}

# Comments edited through `POST /comments/{id}/edit` (the answer a `CreatedComment` keyed by `comment_id`), and a
# table `business_names` with an enum `lifecycle_state` beside a table `business_name_lifecycle_states`.
FORUM: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Forum", "version": "1.0"},
    "paths": {
        "/comments": {
            "get": {
                "operationId": "listComments",
                "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": COMMENT}}},
            }
        },
        "/posts": {
            "get": {
                "operationId": "listPosts",
                "responses": {
                    "200": {
                        "description": "ok",
                        "schema": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"post_id": {"type": "integer"}}},
                        },
                    }
                },
            }
        },
        "/comments/{id}/edit": {
            "post": {
                "operationId": "editComment",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "type": "integer"},
                    {"name": "body", "in": "query", "type": "string"},
                ],
                "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/CreatedComment"}}},
            }
        },
        "/posts/{id}/comments/add": {
            "post": {
                "operationId": "addComment",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "type": "integer"},
                    {"name": "body", "in": "query", "type": "string"},
                ],
                "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/CreatedComment"}}},
            }
        },
        "/businessNames": {
            "get": {
                "operationId": "listBusinessNames",
                "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": NAME}}},
            }
        },
        "/businessNames/{id}": {
            "get": {
                "operationId": "getBusinessName",
                "parameters": [{"name": "id", "in": "path", "required": True, "type": "string"}],
                "responses": {"200": {"description": "ok", "schema": NAME}},
            }
        },
        "/pages": {
            "get": {
                "operationId": "listPages",
                "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": LIFECYCLE}}},
            }
        },
        "/businessNameLifecycleStates": {
            "get": {
                "operationId": "listBusinessNameLifecycleStates",
                "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": LIFECYCLE}}},
            }
        },
    },
    "definitions": {"CreatedComment": COMMENT},
}


def _write(tmp_path: Path, name: str, document: dict[str, Any]) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document), "utf-8")
    return path


def test_a_few_operation_document_gets_a_read_of_one_listed_record(tmp_path: Path) -> None:
    """Trips are listed with the id each carries, and nothing reads one: a `get` by that id is derived, said to
    be no operation of the original API. The search answered `{query: [...]}` keeps its answer in its own
    column beside the `query` it was asked, instead of being skipped."""
    result = import_openapi(_write(tmp_path, "trips", TRIPS))
    assert result.report.skipped == []
    tools = {t["name"]: t for t in result.spec["tools"]}
    assert set(tools) == {"list_trips", "search", "get_trip"}
    get = tools["get_trip"]
    assert get["effect"] == "get" and get["entity"] == "trips" and get["key"] == "id"
    assert get["params"]["id"]["required"] is True
    assert "Not an operation of the original API" in get["description"]
    answers = result.spec["entities"][tools["search"]["entity"]]["columns"]
    assert {"query", "query_answer"} <= set(answers)
    assert answers["query"]["type"] == "string" and "nested data" in answers["query_answer"]["description"]


def test_no_derived_read_without_a_key_of_the_document_or_with_three_tools(tmp_path: Path) -> None:
    """Rows whose key the importer had to add (nothing a person could quote) get no derived read; neither does a
    document whose own operations already make three tools."""
    keyless = json.loads(json.dumps(TRIPS))
    keyless["paths"]["/trips"]["get"]["responses"]["200"]["schema"]["items"] = STOP
    names = [t["name"] for t in import_openapi(_write(tmp_path, "keyless", keyless)).spec["tools"]]
    assert names == ["list_trips", "search"]
    three = json.loads(json.dumps(TRIPS))
    three["paths"]["/trips/{tripId}/stops"] = {
        "get": {
            "operationId": "listStops",
            "parameters": [{"name": "tripId", "in": "path", "required": True, "type": "string"}],
            "responses": {"200": {"description": "Stops", "schema": {"type": "array", "items": STOP}}},
        }
    }
    names = [t["name"] for t in import_openapi(_write(tmp_path, "three", three)).spec["tools"]]
    assert sorted(names) == ["list_stops", "list_trips", "search"]


def test_a_path_parameter_naming_the_childs_own_key_is_its_parent_reference(tmp_path: Path) -> None:
    """`POST /comments/{id}/edit` answers a `CreatedComment` keyed by `comment_id`: the comment it edits is
    a reference (`parent_comment_id`), never the new row's own key, which a second edit would collide on."""
    result = import_openapi(_write(tmp_path, "forum", FORUM))
    tools = {t["name"]: t for t in result.spec["tools"]}
    created = result.spec["entities"]["created_comments"]
    assert created["primary_key"] == "comment_id"
    assert created["columns"]["parent_comment_id"]["ref"] == "comments.comment_id"
    assert "comment_id" not in tools["edit_comment"]["params"]
    assert tools["edit_comment"]["params"]["parent_comment_id"]["required"] is True


def test_the_few_operation_and_colliding_shapes_verify(tmp_path: Path) -> None:
    """Both documents build into servers that pass every check: the derived get, the computed read with its
    answer column, the edits that add rows, and the enum whose alias would be named like a row model."""
    specs, farm = tmp_path / "specs", tmp_path / "farm"
    write_spec_folder(import_openapi(_write(tmp_path, "trips", TRIPS), name="trips"), specs / "trips")
    forum = import_openapi(_write(tmp_path, "forum", FORUM), name="forum")
    assert "field_value" in forum.spec["entities"]["pages"]["columns"]  # never a property `field` in a class body
    write_spec_folder(forum, specs / "forum")
    built = anyio.run(partial(build_all, [specs], farm, options=VerifyOptions(coverage_gate=True)))
    assert sorted(s.status for s in built.servers) == ["published", "published"], [
        f.model_dump() for s in built.servers for f in s.problems
    ]
    registry = load_registry(farm)
    trips = registry.get("trips")
    assert trips is not None and trips.verification == "passed" and trips.tool_count == 3
    code = (farm / "servers" / "forum").rglob("*.py")
    source = "\n".join(p.read_text("utf-8") for p in code)
    assert "class BusinessNameLifecycleState(BaseModel)" in source
    assert "BusinessNameLifecycleStateValue = Literal[" in source
    # a table `pages` would make a row model `Page`, the runtime's page of results the tools module imports
    assert "class PageRow(BaseModel)" in source and "pages: list[PageRow] = Page.rows()" in source


def test_a_bulk_summary_says_why_an_import_is_short_of_three_tools(tmp_path: Path) -> None:
    """A folder import says of every import under three tools, in one line, how many operations the document
    declares, what was derived and the first skip; an import of three tools or more carries no such line."""
    docs, out = tmp_path / "docs", tmp_path / "specs"
    docs.mkdir()
    keyless = json.loads(json.dumps(TRIPS))
    keyless["paths"]["/trips"]["get"]["responses"]["200"]["schema"]["items"] = STOP
    keyless["paths"]["/trips"]["post"] = {"operationId": "pingTrips", "responses": {"204": {"description": "ok"}}}
    (docs / "keyless.json").write_text(json.dumps(keyless), "utf-8")
    (docs / "trips.json").write_text(json.dumps(TRIPS), "utf-8")
    summary = import_folder(docs, out)
    outcomes = {d.document: d for d in summary.documents}
    assert outcomes["trips.json"].tools == 3 and outcomes["trips.json"].reason == ""
    short = outcomes["keyless.json"]
    assert short.outcome == "imported" and short.tools == 2
    assert short.reason.startswith("2 tool(s): the document declares 3 operation(s); skipped POST /trips: ")
    assert "\n" not in short.reason
    markdown = (out / "IMPORT-SUMMARY.md").read_text("utf-8")
    assert "## Imported with fewer than 3 tools" in markdown
    assert "| the document declares 3 operation(s), some skipped | 1 |" in markdown
