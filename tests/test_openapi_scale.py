"""`envfarm import openapi` on constructs that cost real documents of APIs.guru's directory their tools (issue 29),
each in a small document of our own: a resource named `..._sessions` that is no login (Box's upload sessions,
GameLift's game sessions), an AWS RPC operation that records something (`MeterUsage`) beside one that resolves a
token (`ResolveCustomer`), a create whose answer carries a list beside the fields of what it made (Firebase's
`shortLinks.create` answering `{shortLink, previewLink, warning: [...]}`), and a document of so many resources that
its spec would pass the size limit a spec file is read with (Compute Engine's 222 tables)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from envfarm.factory.build import build_all
from envfarm.factory.importers.openapi import entry, import_openapi, write_spec_folder
from envfarm.factory.importers.openapi.entry import spec_text
from envfarm.factory.verify.report import VerifyOptions
from envfarm.servers.runtime.registry import load_registry

SESSION = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The upload session's id"},
        "total_parts": {"type": "integer"},
        "file_name": {"type": "string", "description": "The name of the file uploaded"},
    },
}
KEY = {"name": "session_id", "in": "path", "required": True, "type": "string"}

UPLOADS: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Uploads", "version": "1.0"},
    "paths": {
        "/files/upload_sessions": {
            "post": {
                "operationId": "createUploadSession",
                "summary": "Create an upload session",
                "parameters": [
                    {
                        "name": "body",
                        "in": "body",
                        "schema": {"type": "object", "properties": {"file_name": {"type": "string"}}},
                    }
                ],
                "responses": {"201": {"description": "The session", "schema": {"$ref": "#/definitions/UploadSession"}}},
            }
        },
        "/files/upload_sessions/{session_id}": {
            "get": {
                "operationId": "getUploadSession",
                "parameters": [KEY],
                "responses": {"200": {"description": "The session", "schema": {"$ref": "#/definitions/UploadSession"}}},
            },
            "delete": {
                "operationId": "abortUploadSession",
                "parameters": [KEY],
                "responses": {"204": {"description": "Aborted"}},
            },
        },
        # a login: still no tool
        "/sessions": {
            "post": {
                "operationId": "createSession",
                "responses": {"200": {"description": "Signed in", "schema": {"$ref": "#/definitions/UploadSession"}}},
            }
        },
    },
    "definitions": {"UploadSession": SESSION},
}


def _rpc(name: str, request: str, result: str) -> dict[str, Any]:
    """An AWS JSON-protocol operation as Swagger 2.0 restates it: `POST /#Name` with its input as the body."""
    return {
        "post": {
            "operationId": name,
            "parameters": [
                {"name": "body", "in": "body", "required": True, "schema": {"$ref": f"#/definitions/{request}"}}
            ],
            "responses": {"200": {"description": "Success", "schema": {"$ref": f"#/definitions/{result}"}}},
        },
        "parameters": [{"name": "X-Amz-Target", "in": "header", "required": True, "type": "string"}],
    }


METERING: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Metering", "version": "2016-01-14"},
    "paths": {
        "/#MeterUsage": _rpc("MeterUsage", "MeterUsageRequest", "MeterUsageResult"),
        "/#ResolveCustomer": _rpc("ResolveCustomer", "ResolveCustomerRequest", "ResolveCustomerResult"),
    },
    "definitions": {
        "MeterUsageRequest": {
            "type": "object",
            "required": ["ProductCode", "UsageDimension", "UsageQuantity"],
            "properties": {
                "ProductCode": {"type": "string", "description": "The product metered"},
                "UsageDimension": {"type": "string", "description": "What was used"},
                "UsageQuantity": {"type": "integer", "description": "How much"},
            },
        },
        "MeterUsageResult": {"type": "object", "properties": {"MeteringRecordId": {"type": "string"}}},
        "ResolveCustomerRequest": {
            "type": "object",
            "required": ["RegistrationToken"],
            "properties": {"RegistrationToken": {"type": "string", "description": "The buyer's registration token"}},
        },
        "ResolveCustomerResult": {
            "type": "object",
            "properties": {"CustomerIdentifier": {"type": "string"}, "ProductCode": {"type": "string"}},
        },
    },
}

WARNING = {"type": "object", "properties": {"warningCode": {"type": "string"}, "warningMessage": {"type": "string"}}}
CONVERSION = {
    "type": "object",
    "properties": {"conversionId": {"type": "string"}, "revenue": {"type": "number"}, "state": {"type": "string"}},
}

LINKS: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Links", "version": "v1"},
    "paths": {
        "/v1/shortLinks": {
            "post": {
                "operationId": "links.shortLinks.create",
                "parameters": [
                    {
                        "name": "body",
                        "in": "body",
                        "schema": {"type": "object", "properties": {"longLink": {"type": "string"}}},
                    }
                ],
                "responses": {
                    "200": {"description": "Created", "schema": {"$ref": "#/definitions/CreateShortLinkResponse"}}
                },
            }
        },
        "/v1/{link}/linkStats": {
            "get": {
                "operationId": "links.getLinkStats",
                "parameters": [{"name": "link", "in": "path", "required": True, "type": "string"}],
                "responses": {"200": {"description": "Stats", "schema": {"$ref": "#/definitions/LinkStats"}}},
            }
        },
        # a batch insert answering the list it added: its rows are conversions, never the list wrapper
        "/conversion": {
            "get": {
                "operationId": "links.conversion.get",
                "responses": {"200": {"description": "All", "schema": {"$ref": "#/definitions/ConversionList"}}},
            },
            "post": {
                "operationId": "links.conversion.insert",
                "parameters": [{"name": "body", "in": "body", "schema": {"$ref": "#/definitions/ConversionList"}}],
                "responses": {"200": {"description": "Added", "schema": {"$ref": "#/definitions/ConversionList"}}},
            },
        },
    },
    "definitions": {
        "CreateShortLinkResponse": {
            "type": "object",
            "properties": {
                "shortLink": {"type": "string", "description": "The short link made"},
                "previewLink": {"type": "string", "description": "Where its flow is previewed"},
                "warning": {"type": "array", "items": WARNING},
            },
        },
        "LinkStats": {
            "type": "object",
            "properties": {"clicks": {"type": "integer"}, "platform": {"type": "string"}},
        },
        "ConversionList": {
            "type": "object",
            "properties": {"kind": {"type": "string"}, "conversion": {"type": "array", "items": CONVERSION}},
        },
    },
}


def _write(tmp_path: Path, name: str, document: dict[str, Any]) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document), "utf-8")
    return path


def test_a_qualified_session_is_a_record_and_a_login_is_not(tmp_path: Path) -> None:
    """Upload sessions are created, read and aborted like any record; `POST /sessions` (a sign-in) stays skipped."""
    result = import_openapi(_write(tmp_path, "uploads", UPLOADS))
    tools = {t["name"]: (t["effect"], t["entity"]) for t in result.spec["tools"]}
    assert tools == {
        "create_upload_session": ("create", "upload_sessions"),
        "get_upload_session": ("get", "upload_sessions"),
        "abort_upload_session": ("delete", "upload_sessions"),
    }
    assert [(s.path, s.reason) for s in result.report.skipped] == [
        ("/sessions", "an authentication flow: our servers act for the episode's principal")
    ]


@pytest.mark.parametrize("name", ["GetSessionToken", "CreateSession", "DeleteCurrentSession", "auth.sessions.create"])
def test_an_unqualified_session_is_still_a_login(tmp_path: Path, name: str) -> None:
    """A session the operation makes for whoever calls it (no other noun before `session`) is a login."""
    document = json.loads(json.dumps(UPLOADS))
    document["paths"]["/sessions"]["post"]["operationId"] = name
    skipped = {s.path: s.reason for s in import_openapi(_write(tmp_path, "uploads", document)).report.skipped}
    assert skipped == {"/sessions": "an authentication flow: our servers act for the episode's principal"}


def test_a_metering_rpc_creates_and_a_resolve_computes(tmp_path: Path) -> None:
    """`MeterUsage` records one usage (a create of `usages`, read back by the derived get and list, which say they
    are no operation of the API); `ResolveCustomer`, with no customer record in the document, is a computed read
    over a seeded lookup table keyed by its token."""
    result = import_openapi(_write(tmp_path, "metering", METERING))
    tools = {t["name"]: t for t in result.spec["tools"]}
    assert {n: (t["effect"], t["entity"]) for n, t in tools.items()} == {
        "meter_usage": ("create", "usages"),
        "resolve_customer": ("search", "resolve_customer_answers"),
        "get_usage": ("get", "usages"),
        "list_usages": ("search", "usages"),
    }
    assert {"product_code", "usage_dimension", "usage_quantity"} <= set(tools["meter_usage"]["params"])
    assert tools["resolve_customer"]["params"]["registration_token"]["required"] is True
    answers = result.spec["entities"]["resolve_customer_answers"]["columns"]
    assert {"registration_token", "customer_identifier"} <= set(answers)
    for derived in ("get_usage", "list_usages"):
        assert "Not an operation of the original API" in tools[derived]["description"]
    assert result.report.skipped == []


def test_a_create_answering_a_list_beside_its_fields_makes_one_record(tmp_path: Path) -> None:
    """`shortLinks.create` answers the link it made with a list of warnings: one short link, not many warnings. A
    batch insert answering the list it added (`ConversionList {kind, conversion: [...]}`) still writes conversions."""
    result = import_openapi(_write(tmp_path, "links", LINKS))
    tools = {t["name"]: (t["effect"], t["entity"]) for t in result.spec["tools"]}
    assert tools["links_short_links_create"] == ("create", "create_short_link_responses")
    columns = result.spec["entities"]["create_short_link_responses"]["columns"]
    assert {"short_link", "preview_link", "long_link"} <= set(columns)
    assert tools["links_conversion_insert"][1] == tools["links_conversion_get"][1] == "conversions"
    assert not any(s.path == "/v1/shortLinks" for s in result.report.skipped)


def test_a_spec_over_the_size_limit_gets_fewer_seed_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the spec would pass the size limit (here lowered, so a small document stands in for Compute Engine),
    every table's seed rows are halved until it fits, and `IMPORT.md` says so; under the limit nothing changes."""
    path = _write(tmp_path, "uploads", UPLOADS)
    full = import_openapi(path)
    assert len(full.spec["seed"]["upload_sessions"]) == 6
    limit = len(spec_text(full).encode("utf-8")) - 1
    monkeypatch.setattr(entry, "MAX_SPEC_FILE_BYTES", limit)
    fewer = import_openapi(path)
    assert len(fewer.spec["seed"]["upload_sessions"]) == 3
    assert len(spec_text(fewer).encode("utf-8")) <= limit
    assert any(n.startswith("seed: at most 3 rows a table") for n in fewer.report.notes)
    monkeypatch.setattr(entry, "MAX_SPEC_FILE_BYTES", 10)  # never fits: the fewest rows, still a spec
    assert len(import_openapi(path).spec["seed"]["upload_sessions"]) == 2


def test_the_recovered_shapes_verify(tmp_path: Path) -> None:
    """The three documents build into servers that pass every check, each with three tools or more."""
    specs, farm = tmp_path / "specs", tmp_path / "farm"
    for name, document in (("uploads", UPLOADS), ("metering", METERING), ("links", LINKS)):
        write_spec_folder(import_openapi(_write(tmp_path, name, document), name=name), specs / name)
    built = anyio.run(partial(build_all, [specs], farm, options=VerifyOptions(coverage_gate=True)))
    assert sorted(s.status for s in built.servers) == ["published"] * 3, [
        f.model_dump() for s in built.servers for f in s.problems
    ]
    registry = load_registry(farm)
    for name in ("uploads", "metering", "links"):
        entry_ = registry.get(name)
        assert entry_ is not None and entry_.verification == "passed" and entry_.tool_count >= 3


def test_a_bulk_write_answered_by_nothing_is_skipped_as_bulk_input(tmp_path: Path) -> None:
    """`PATCH /projects/{p}/traces` sending `{traces: [Trace]}` and answering nothing is skipped as bulk input (what
    it is), not as an answer that is no record; the document's list of traces is kept."""
    trace = {"type": "object", "properties": {"traceId": {"type": "string"}, "projectId": {"type": "string"}}}
    project = {"name": "projectId", "in": "path", "required": True, "type": "string"}
    document = {
        "swagger": "2.0",
        "info": {"title": "Trace", "version": "v1"},
        "paths": {
            "/v1/projects/{projectId}/traces": {
                "get": {
                    "operationId": "trace.projects.traces.list",
                    "parameters": [project],
                    "responses": {"200": {"description": "Traces", "schema": {"type": "array", "items": trace}}},
                },
                "patch": {
                    "operationId": "trace.projects.traces.patch",
                    "parameters": [
                        project,
                        {
                            "name": "body",
                            "in": "body",
                            "schema": {"type": "object", "properties": {"traces": {"type": "array", "items": trace}}},
                        },
                    ],
                    "responses": {"200": {"description": "Empty", "schema": {"type": "object"}}},
                },
            }
        },
    }
    result = import_openapi(_write(tmp_path, "trace", document))
    assert [t["effect"] for t in result.spec["tools"]] == ["search", "get"]  # the get: a read of one listed trace
    assert [(s.method, s.reason) for s in result.report.skipped] == [
        ("patch", "takes a list of records at once (bulk input): not mapped")
    ]
