"""`envfarm import openapi` on failure classes found on a fresh sample of 200 real documents (APIs.guru's directory
beyond the corpora used before, wso2/api-specs, dlt-hub/openapi-specs, apideck and Twilio), each reproduced by a
small document of our own: a document of hundreds of resources (GitHub's, Cisco Meraki's: the seed ran out of
distinct people and crashed), a `$ref` written as a URI fragment with percent-escapes (`Transaction%20Id`), and
a `$ref` that leads nowhere or to another file in one operation (the document keeps its other operations)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envfarm.factory import fakedata
from envfarm.factory.importers.openapi import OpenAPIError, import_openapi
from envfarm.factory.importers.openapi.words import SEED_ROWS

ID = {"name": "id", "in": "path", "required": True, "type": "string"}


def _thing(title: str) -> dict[str, Any]:
    return {
        "type": "object",
        "title": title,
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "size": {"type": "integer"}},
    }


def _collection(noun: str, ref: str) -> dict[str, Any]:
    """`GET /<noun>` listing and `GET /<noun>/{id}` reading records of the schema `ref` names."""
    return {
        f"/{noun}": {
            "get": {
                "operationId": f"list_{noun}",
                "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": {"$ref": ref}}}},
            }
        },
        f"/{noun}/{{id}}": {
            "get": {
                "operationId": f"get_{noun}",
                "parameters": [ID],
                "responses": {"200": {"description": "ok", "schema": {"$ref": ref}}},
            }
        },
    }


def _write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "api.json"
    path.write_text(json.dumps(document), "utf-8")
    return path


def test_hundreds_of_resources_seed_without_running_out_of_people(tmp_path: Path) -> None:
    """More tables than distinct full names for six rows each: names repeat across tables, never within one, and
    the import (once a crash: `Sample larger than population`) seeds every table."""
    tables = fakedata.PEOPLE // SEED_ROWS + 1
    paths: dict[str, Any] = {}
    for n in range(tables):
        paths.update(_collection(f"things{n}", f"#/definitions/Thing{n}"))
    document = {
        "swagger": "2.0",
        "info": {"title": "Many", "version": "1"},
        "paths": paths,
        "definitions": {f"Thing{n}": _thing(f"Thing{n}") for n in range(tables)},
    }
    result = import_openapi(_write(tmp_path, document))
    seed = result.spec["seed"]
    assert len(result.report.tools) == 2 * tables
    assert len(result.spec["entities"]) == tables
    assert all(len(seed[table]) == SEED_ROWS for table in result.spec["entities"])


def test_a_percent_escaped_ref_is_followed(tmp_path: Path) -> None:
    """`#/components/schemas/Transaction%20Id` is a URI fragment naming the schema `Transaction Id`."""
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Ledger", "version": "1"},
        "paths": {
            "/transactions/{id}": {
                "get": {
                    "operationId": "getTransaction",
                    "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/Transaction%20Record"}}
                            },
                        }
                    },
                }
            },
            "/transactions": {
                "post": {
                    "operationId": "createTransaction",
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Transaction%20Record"}}
                        }
                    },
                    "responses": {
                        "201": {
                            "description": "made",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/Transaction%20Record"}}
                            },
                        }
                    },
                }
            },
        },
        "components": {"schemas": {"Transaction Record": _thing("Transaction Record")}},
    }
    result = import_openapi(_write(tmp_path, document))
    assert {t.tool for t in result.report.tools} >= {"get_transaction", "create_transaction"}
    assert result.report.skipped == []


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        ("#/definitions/Gone", "points at nothing"),
        ("other.yaml#/definitions/Widget", "external $ref 'other.yaml#/definitions/Widget' is not supported"),
    ],
)
def test_a_broken_ref_costs_its_operation_not_the_document(tmp_path: Path, broken: str, reason: str) -> None:
    """One operation whose response `$ref` leads nowhere (or to another file) is skipped with that reason; the
    document's other operations still map. A path item that is itself such a `$ref` is skipped whole."""
    paths = {**_collection("widgets", "#/definitions/Widget"), **_collection("gadgets", broken)}
    paths["/parts"] = {"$ref": broken}
    document = {
        "swagger": "2.0",
        "info": {"title": "Shop", "version": "1"},
        "paths": paths,
        "definitions": {"Widget": _thing("Widget")},
    }
    result = import_openapi(_write(tmp_path, document))
    assert {t.tool for t in result.report.tools} == {"list_widgets", "get_widgets"}
    skipped = {(s.method, s.path): s.reason for s in result.report.skipped}
    assert set(skipped) == {("get", "/gadgets"), ("get", "/gadgets/{id}"), ("any", "/parts")}
    assert all(reason in why for why in skipped.values()), skipped


def test_a_document_of_only_broken_refs_is_refused_in_one_line(tmp_path: Path) -> None:
    document = {"swagger": "2.0", "info": {"title": "Gone", "version": "1"}, "paths": _collection("gadgets", "#/x/Y")}
    with pytest.raises(OpenAPIError, match="no operation maps to a record tool; skipped: GET /gadgets: \\$ref") as e:
        import_openapi(_write(tmp_path, document))
    assert "\n" not in str(e.value)


LENIENT = """openapi: 3.0.0
info: {title: Orders, version: '1'}
x-shared: &status {type: string, enum: [open, closed]}
x-again: &status {type: string, enum: [open, closed, void]}
paths:
  /orders:
    get:
      operationId: listOrders
      description: "Lists orders\x85 \x9f pasted from a word processor"
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {type: array, items: {$ref: '#/components/schemas/Order'}}}}
  /orders/{id}:
    get:
      operationId: getOrder
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Order'}}}}
components:
  schemas:
    Order:
      type: object
      properties:
        id: {type: string}
        status: *status
        placed: {type: string, format: date-time, example: 2019-01-01T24:00:00Z}
        operator: {type: string, enum: [=, '<']}
        tags: !include tags.yaml
        pair: !!python/tuple [1, 2]
"""


def test_yaml_other_parsers_accept_is_read(tmp_path: Path) -> None:
    """A redefined anchor (its later definition serves), an impossible timestamp (once a crash: `hour must be in
    0..23`), `=` (YAML 1.1's value type), unknown tags and forbidden control characters: the document imports."""
    path = tmp_path / "orders.yaml"
    path.write_text(LENIENT, "utf-8")
    result = import_openapi(path)
    assert {t.tool for t in result.report.tools} >= {"list_orders", "get_order"}
    columns = result.spec["entities"]["orders"]["columns"]
    assert columns["status"]["enum"] == ["open", "closed", "void"]
    assert columns["operator"]["enum"] == ["=", "<"]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("bad.yaml", b"openapi: 3.0.0\npaths:\n\t/x: {}\n", "not valid YAML"),
        ("bad.json", b'{"openapi": "3.0.0", "paths": ', "not valid JSON"),
        ("latin.json", b'{"openapi": "3.0.0", "info": {"title": "Caf\xe9"}, "paths": {}}', "no operations"),
        ("bom.json", b'\xef\xbb\xbf{"openapi": "3.0.0", "paths": {}}', "no operations"),
    ],
)
def test_unreadable_bytes_are_one_line_reasons(tmp_path: Path, name: str, data: bytes, message: str) -> None:
    """Bytes that are no UTF-8 are replaced and a BOM dropped (the document is read on); text that is no JSON or
    YAML is refused in one line naming the file."""
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(OpenAPIError, match=message) as caught:
        import_openapi(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_backslashes_in_descriptions_survive_into_the_served_listing(tmp_path: Path) -> None:
    """Real descriptions carry backslashes (`the org\\'s change log`, `C:\\temp`, `\\d+`); the generated server
    wrote them into docstrings as escapes, so the listing differed from the spec and verification failed."""
    from functools import partial

    import anyio

    from envfarm.factory.build import build_all
    from envfarm.factory.importers.openapi import write_spec_folder
    from envfarm.factory.verify.report import VerifyOptions

    paths = _collection("logs", "#/definitions/Log")
    paths["/logs"]["get"]["description"] = "Reads the org\\'s change log, saved under C:\\temp\\new as \\d+ rows\\"
    paths["/logs/{id}"]["get"]["description"] = 'One entry of the org\\\'s log, "quoted"'
    log = _thing("Log")
    log["description"] = "A line of the org\\'s log \\n not a newline"
    document = {
        "swagger": "2.0",
        "info": {"title": "Logs", "version": "1"},
        "paths": paths,
        "definitions": {"Log": log},
    }
    specs, farm = tmp_path / "specs", tmp_path / "farm"
    write_spec_folder(import_openapi(_write(tmp_path, document), name="logs"), specs / "logs")
    built = anyio.run(partial(build_all, [specs], farm, options=VerifyOptions()))
    assert [s.status for s in built.servers] == ["published"], [
        f.model_dump() for s in built.servers for f in s.problems
    ]
