"""`envfarm import openapi` on the shapes public API documents often have, in a small document of our own: reads
with no response schema, reads that take no input, reads sent as a POST, actions on records whose schema names no
state, keys that only a path names, and Swagger 2.0 parameters and responses declared once for many operations.
Each maps to a tool (never a skip), and the server the import makes verifies."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from envfarm.factory.build import build_all
from envfarm.factory.importers.openapi import ImportResult, import_openapi, past_participle, write_spec_folder
from envfarm.factory.importers.openapi.intents import request_by_name, verbs_last, with_article
from envfarm.factory.importers.openapi.words import decoration_habits, record_nouns
from envfarm.factory.verify.report import VerifyOptions
from envfarm.servers.runtime.intents import slots
from envfarm.servers.runtime.registry import load_registry


def imported(tmp_path: Path, document: dict[str, Any]) -> ImportResult:
    """The import of a document written to a file of its own."""
    path = tmp_path / "document.json"
    path.write_text(json.dumps(document), "utf-8")
    return import_openapi(path)


def listed_and_deleted(record: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A Swagger 2.0 document of one record type (`Counter`): list them at `/counters`, delete one by its id."""
    path = f"/{record.lower()}s"
    return {
        "swagger": "2.0",
        "info": {"title": f"{record}s", "version": "1"},
        "paths": {
            path: {
                "get": {
                    "operationId": f"list{record}s",
                    "responses": {"200": {"schema": {"type": "array", "items": {"$ref": f"#/definitions/{record}"}}}},
                }
            },
            f"{path}/{{id}}": {
                "parameters": [{"name": "id", "in": "path", "required": True, "type": "string"}],
                "delete": {"operationId": f"delete{record}", "responses": {"204": {"description": "Deleted"}}},
            },
        },
        "definitions": {record: schema},
    }


ERROR = {"$ref": "#/responses/Error"}
JOB = {"$ref": "#/definitions/Job"}

# Swagger 2.0, in the shape of the public documents that lose most tools: no response schemas, parameters of a
# path item shared by its operations, a response declared once under `responses`.
STATIONS: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Weather stations", "version": "1.0"},
    "produces": ["application/json"],
    "paths": {
        "/stations": {
            "parameters": [{"name": "region", "in": "query", "type": "string", "description": "The station's region"}],
            "get": {
                "summary": "List stations",
                "parameters": [{"name": "page", "in": "query", "type": "integer"}],
                "responses": {"200": {"description": "No response was specified"}},
            },
        },
        "/stations/{stationId}": {
            "get": {
                "operationId": "getStation",
                "parameters": [{"name": "stationId", "in": "path", "required": True, "type": "string"}],
                "responses": {"200": {"description": "The station's latest reading"}, "default": ERROR},
            }
        },
        "/status": {"get": {"operationId": "getStatus", "responses": {"200": {"description": "OK"}}}},
        "/quotes": {
            "post": {
                "summary": "Calculate a delivery quote",
                "parameters": [
                    {"name": "weight", "in": "query", "type": "number", "required": True},
                    {"name": "zone", "in": "query", "type": "string", "enum": ["north", "south"]},
                ],
                "responses": {"200": {"description": "The quote"}},
            }
        },
        "/jobs": {
            "get": {
                "operationId": "listJobs",
                "responses": {"200": {"description": "Jobs", "schema": {"type": "array", "items": JOB}}},
            },
            "post": {
                "operationId": "createJob",
                "parameters": [{"name": "body", "in": "body", "schema": JOB}],
                "responses": {"201": {"description": "The job", "schema": JOB}, "default": ERROR},
            },
        },
        "/jobs/{jobId}": {
            "parameters": [{"name": "jobId", "in": "path", "required": True, "type": "integer"}],
            "get": {"operationId": "getJob", "responses": {"200": {"description": "The job", "schema": JOB}}},
        },
        "/jobs/{jobId}/cancel": {
            "parameters": [{"name": "jobId", "in": "path", "required": True, "type": "integer"}],
            "post": {"operationId": "cancelJob", "responses": {"200": {"description": "The job", "schema": JOB}}},
        },
        "/jobs/{jobId}/disable": {
            "parameters": [{"name": "jobId", "in": "path", "required": True, "type": "integer"}],
            "post": {"operationId": "disableJob", "responses": {"204": {"description": "Disabled"}}},
        },
    },
    "definitions": {
        "Job": {
            "type": "object",
            "required": ["title"],
            # `cancelled` says when, not whether: the flag the action sets is `is_cancelled`.
            "properties": {
                "title": {"type": "string"},
                "priority": {"type": "integer"},
                "cancelled": {"type": "string", "format": "date-time"},
            },
        },
        "Error": {"type": "object", "properties": {"code": {"type": "integer"}, "message": {"type": "string"}}},
    },
    "responses": {"Error": {"description": "An error", "schema": {"$ref": "#/definitions/Error"}}},
}


@pytest.fixture
def stations(tmp_path: Path) -> Path:
    path = tmp_path / "stations.json"
    path.write_text(json.dumps(STATIONS), "utf-8")
    return path


def test_every_operation_of_the_awkward_shapes_becomes_a_tool(stations: Path) -> None:
    result = import_openapi(stations)
    assert result.report.skipped == []
    tools = {t["name"]: t for t in result.spec["tools"]}
    entities, seed = result.spec["entities"], result.spec["seed"]
    # No response schema: a lookup read whose one `answer` column holds what the API answers; the path item's
    # `region` applies to its GET, paging is no input.
    listing = tools["get_stations"]
    assert listing["effect"] == "search" and set(listing["params"]) == {"region"}
    assert set(entities[listing["entity"]]["columns"]) == {"lookup_id", "region", "answer"}
    station = tools["get_station"]
    assert set(station["params"]) == {"station_id"} and station["params"]["station_id"]["required"] is True
    assert "The station's latest reading" in entities[station["entity"]]["columns"]["answer"]["description"]
    # A read that takes no input always gives the same answer: one row.
    assert tools["get_status"]["params"] == {} and len(seed[tools["get_status"]["entity"]]) == 1
    # A POST whose summary computes: a lookup keyed by its inputs, not a create.
    quote = tools["post_quotes"]
    assert quote["effect"] == "search" and set(quote["params"]) == {"weight", "zone"}
    assert quote["params"]["zone"]["enum"] == ["north", "south"]
    # The job schema has no key: the one its item path names (`jobId`, an integer) is added.
    jobs = entities["jobs"]
    assert jobs["primary_key"] == "job_id" and jobs["columns"]["job_id"]["type"] == "integer"
    # Actions whose record names no state set the flag their verb names; `disable` clears `enabled`.
    assert tools["cancel_job"]["set"] == {"is_cancelled": True}
    assert tools["disable_job"]["set"] == {"enabled": False}
    assert jobs["columns"]["is_cancelled"]["type"] == "boolean" and jobs["columns"]["cancelled"]["type"] == "datetime"
    assert any("jobs.is_cancelled: a flag added for the action `cancel`" in n for n in result.report.notes)


def test_the_awkward_shapes_verify(stations: Path, tmp_path: Path) -> None:
    specs, farm = tmp_path / "specs", tmp_path / "farm"
    write_spec_folder(import_openapi(stations, name="stations"), specs / "stations")
    result = anyio.run(partial(build_all, [specs], farm, options=VerifyOptions(coverage_gate=True)))
    assert [s.status for s in result.servers] == ["published"], [
        f.model_dump() for s in result.servers for f in s.problems
    ]
    entry = load_registry(farm).get("stations")
    assert entry is not None and entry.verification == "passed" and entry.tool_count == 9


@pytest.mark.parametrize(
    ("verb", "participle"),
    [
        ("cancel", "cancelled"),
        ("stop", "stopped"),
        ("archive", "archived"),
        ("verify", "verified"),
        ("open", "opened"),
        ("star", "starred"),
        ("submit", "submitted"),
        ("follow", "followed"),
    ],
)
def test_the_flag_an_action_verb_names(verb: str, participle: str) -> None:
    assert past_participle(verb) == participle


def test_imported_specs_carry_intents_for_every_write_and_the_rows_people_name() -> None:
    """Intents come from the document: the operation's summary is the request ('Deletes a pet' -> 'delete a pet'),
    its params the slots; a table's rows are named by a column people know whose seeded values tell them apart."""
    result = import_openapi(Path(__file__).parent / "data" / "openapi" / "petstore.yaml", name="petstore")
    spec = result.spec
    writes = [t for t in spec["tools"] if t["effect"] in ("create", "update", "delete")]
    assert writes and all(t["intent"]["asks"] == "user" and len(t["intent"]["say"]) >= 2 for t in writes)
    for tool in spec["tools"]:
        for phrasing in (tool.get("intent") or {}).get("say", []):
            assert all(slot.name in tool["params"] for slot in slots(phrasing)), (tool["name"], phrasing)
    delete = next(t for t in spec["tools"] if t["name"] == "delete_pet")
    assert delete["intent"]["say"][0] == "I need to delete {pet_id}."  # the row said in place of 'a pet'
    assert spec["entities"]["pets"]["refer"][0] == "the pet {name}"
    assert spec["entities"]["users"]["refer"][0] == "the user with email {email}"
    # A plain listing is no goal of a task; a computed read is.
    assert "intent" not in next(t for t in spec["tools"] if t["name"] == "find_pets_by_status")
    assert next(t for t in spec["tools"] if t["name"] == "get_inventory")["intent"]["hear"] == {"answer": "the answer"}


@pytest.mark.parametrize(
    ("phrase", "effect", "said"),
    [
        ("confirm transaction", "update", "confirm the transaction"),  # Taxamo's 'Confirm transaction'
        ("close accounting period", "update", "close the accounting period"),
        ("generate report", "create", "generate a report"),
        ("create account", "create", "create an account"),
        ("add contacts to a contact list", "update", "add contacts to a contact list"),  # a plural
        ("look up the weather", "search", "look up the weather"),  # a particle
        ("delete the pipeline", "delete", "delete the pipeline"),
        ("start recording", "update", "start recording"),  # a gerund
        ("update address", "update", "update the address"),
        ("check if email is available", "search", "check if email is available"),  # a clause, not a noun
        ("send a order for the site", "create", "send an order for the site"),  # Jirafe's own article, made right
        ("create user", "create", "create a user"),  # a 'u' said 'you'
        ("create update", "create", "create an update"),
        ("", "update", ""),
    ],
)
def test_a_summary_said_as_a_request_gets_its_article(phrase: str, effect: str, said: str) -> None:
    assert with_article(phrase, effect) == said


def _query_action(name: str, inputs: dict[str, Any], answer: str | None) -> dict[str, Any]:
    """One AWS query-protocol operation as OpenAPI 3 restates it: a GET whose input is its query and a POST with
    the same input as an XML form, each answering in XML."""
    params = [{"name": k, "in": "query", "required": True, "schema": v} for k, v in inputs.items()]
    params += [
        {"name": n, "in": "query", "required": True, "schema": {"type": "string"}} for n in ("Action", "Version")
    ]
    ok: dict[str, Any] = {"description": "Success"}
    if answer:
        ok["content"] = {"text/xml": {"schema": {"$ref": f"#/components/schemas/{answer}"}}}
    body = {"type": "object", "properties": inputs, "required": list(inputs)}
    return {
        f"/#Action={name}": {
            "get": {"operationId": f"GET_{name}", "parameters": params, "responses": {"200": ok}},
            "post": {
                "operationId": f"POST_{name}",
                "requestBody": {"content": {"text/xml": {"schema": body}}},
                "responses": {"200": ok},
            },
        }
    }


def test_the_aws_query_protocol_in_openapi_3_maps_once_per_operation(tmp_path: Path) -> None:
    """`GET /#Action=CreateQueue` (input in the query) and `POST /#Action=CreateQueue` (the same input as XML): one
    tool per operation, its input the query's fields, its record the XML answer's."""
    name = {"type": "string", "description": "The queue's name"}
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Queues", "version": "2012-11-05"},
        "paths": {
            **_query_action("CreateQueue", {"QueueName": name, "Delay": {"type": "integer"}}, "Queue"),
            **_query_action("GetQueue", {"QueueName": name}, "Queue"),
            **_query_action("DeleteQueue", {"QueueName": name}, None),
        },
        "components": {
            "schemas": {
                "Queue": {"type": "object", "properties": {"QueueName": name, "Delay": {"type": "integer"}}},
            }
        },
    }
    result = imported(tmp_path, document)
    effects = {t.tool: t.effect for t in result.report.tools}
    assert effects == {"get_create_queue": "create", "get_get_queue": "get", "get_delete_queue": "delete"}
    assert result.spec["entities"]["queues"]["primary_key"] == "queue_name"
    assert all("the same RPC operation as GET" in s.reason for s in result.report.skipped)
    assert len(result.report.skipped) == 3


@pytest.mark.parametrize(
    "paging",
    [
        {"Marker": {"type": "string"}, "NextMarker": {"type": "string"}, "MaxItems": {"type": "integer"}},
        {"NextToken": {"type": "string"}, "MaxResults": {"type": "integer"}, "IsTruncated": {"type": "boolean"}},
        {"nextLink": {"type": "string"}, "totalResults": {"type": "integer"}, "pageToken": {"type": "string"}},
    ],
)
def test_a_list_wrapped_in_paging_fields_is_a_list_of_its_items(paging: dict[str, Any], tmp_path: Path) -> None:
    """CloudFront's `DistributionList {Marker, NextMarker, MaxItems, IsTruncated, Quantity, Items: [...]}`: the
    records are the items, not one row of paging fields with the items as text."""
    summary = {
        "type": "object",
        "properties": {"Id": {"type": "string"}, "DomainName": {"type": "string"}, "Status": {"type": "string"}},
    }
    wrapper = {
        "type": "object",
        "properties": {**paging, "Quantity": {"type": "integer"}, "Items": {"type": "array", "items": summary}},
    }
    document = {
        "swagger": "2.0",
        "info": {"title": "Distributions", "version": "1"},
        "paths": {
            "/distribution": {
                "get": {
                    "operationId": "ListDistributions",
                    "responses": {"200": {"schema": {"$ref": "#/definitions/DistributionList"}}},
                }
            }
        },
        "definitions": {"DistributionList": wrapper},
    }
    spec = imported(tmp_path, document).spec
    (table,) = [t for t, e in spec["entities"].items() if "domain_name" in e["columns"]]
    assert not {"marker", "next_token", "next_link", "items"} & set(spec["entities"][table]["columns"])
    listing = next(t for t in spec["tools"] if t["entity"] == table)
    assert listing["effect"] in {"list", "search"}


GENERATED_NAMES = frozenset(
    {
        "GETAccountingPeriodWithoutSuccessType",
        "GETARPaymentTypewithSuccess",
        "GETARPaymentType",
        "GETEntitiesType",
        "UserType",
        "EventType",
        "Event",
        "ApiContract",
        "BackendContract",
        "LoggerContract",
        "PaymentResponse",
        "ActivityListResponse",
        "AchievementIncrementResponse",
        "BigOven.Model.API.RecipeInfo",
        "DistributionSummary",
    }
)


@pytest.mark.parametrize(
    ("schema", "noun"),
    [
        ("GETAccountingPeriodWithoutSuccessType", "accounting_period"),  # Zuora: verb, variant and suffix
        ("GETARPaymentTypewithSuccess", "ar_payment"),
        ("GETARPaymentType", "ar_payment"),
        ("GETEntitiesType", "entities"),
        ("UserType", "user"),  # Cognito: every shape ends in Type
        ("EventType", "event_type"),  # ... but `Event` is a schema of its own: the event type stays one
        ("ApiContract", "api"),  # Azure API Management's Contract
        ("PaymentResponse", "payment"),
        ("ActivityListResponse", "activity_list_response"),  # the answer of a `list` call, not a record
        ("AchievementIncrementResponse", "achievement_increment_response"),  # the document has an `increment` call
        ("BigOven.Model.API.RecipeInfo", "recipe_info"),  # a namespace
        ("DistributionSummary", "distribution_summary"),  # one Summary is a word, not a habit
    ],
)
def test_a_record_is_named_without_what_its_generator_added(schema: str, noun: str) -> None:
    """Generated schema names leaked into what people say ("the get accounting period without success type with
    created by ..."): the record's noun drops a decoration only where the document makes a habit of it."""
    verbs = frozenset({"increment", "list"})
    assert record_nouns(schema, decoration_habits(GENERATED_NAMES), GENERATED_NAMES, verbs)[0] == noun


def test_a_record_keyed_by_its_own_noun_with_hypermedia_links_is_a_record(tmp_path: Path) -> None:
    """Zoom Connect's `WebServiceGroup {groupId, links: [Link], name}` was read as a list of its links, so
    "delete a link" deleted a group. The group is the record; its `links` are never the items."""
    link = {"type": "object", "properties": {"href": {"type": "string"}, "rel": {"type": "string"}}}
    group = {
        "type": "object",
        "properties": {
            "groupId": {"type": "string"},
            "name": {"type": "string"},
            "links": {"type": "array", "items": {"$ref": "#/definitions/Link"}},
        },
    }
    document = {
        "swagger": "2.0",
        "info": {"title": "Groups", "version": "1"},
        "paths": {
            "/groups": {
                "get": {
                    "operationId": "listGroups",
                    "responses": {
                        "200": {"schema": {"type": "array", "items": {"$ref": "#/definitions/WebServiceGroup"}}}
                    },
                }
            },
            "/groups/{groupId}": {
                "parameters": [{"name": "groupId", "in": "path", "required": True, "type": "string"}],
                "get": {
                    "operationId": "getGroup",
                    "responses": {"200": {"schema": {"$ref": "#/definitions/WebServiceGroup"}}},
                },
                "delete": {"operationId": "deleteGroup", "responses": {"204": {"description": "Deleted"}}},
            },
        },
        "definitions": {"WebServiceGroup": group, "Link": link},
    }
    spec = imported(tmp_path, document).spec
    assert "links" not in spec["entities"]
    assert {t["name"]: t["entity"] for t in spec["tools"]} == {
        "list_groups": "web_service_groups",
        "get_group": "web_service_groups",
        "delete_group": "web_service_groups",
    }
    assert spec["entities"]["web_service_groups"]["primary_key"] == "group_id"


def test_springfox_operation_ids_lose_their_using_get_tail(tmp_path: Path) -> None:
    """Springfox names operations `predictUsingGET`, `getUsingGET_3`: tools were `predict_using_get` and
    `get_using_get_3`, said as 'look up predict using get'. The tail goes; a bare verb takes the path's word."""
    answer = {"type": "object", "properties": {"label": {"type": "string"}, "score": {"type": "number"}}}
    text = [{"name": "text", "in": "query", "required": True, "type": "string", "description": "The text"}]
    document = {
        "swagger": "2.0",
        "info": {"title": "Text labels", "version": "1"},
        "paths": {
            path: {"get": {"operationId": operation, "parameters": text, "responses": {"200": {"schema": answer}}}}
            for path, operation in (("/sentiment/predict", "predictUsingGET"), ("/language/detect", "getUsingGET_3"))
        },
    }
    tools = {t["name"] for t in imported(tmp_path, document).spec["tools"]}
    assert tools == {"predict", "get_detect"}


def test_rows_are_named_by_what_a_person_knows_not_by_a_measure_or_a_kind(tmp_path: Path) -> None:
    """Imported tasks said 'the quota counter with kb transferred 62.42' and 'the dataset with kind personal': a
    row is named by text or a reference number, never by a measure or a kind of record."""
    counter = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "kind": {"type": "string"},
            "kbTransferred": {"type": "number"},
            "callsCount": {"type": "integer"},
            "orderNumber": {"type": "integer"},
        },
    }
    document = listed_and_deleted("Counter", counter)
    refer = imported(tmp_path, document).spec["entities"]["counters"]["refer"]
    assert refer == ["the counter with order number {order_number}"]


def test_rows_are_named_by_their_own_fields_not_by_a_detail_of_a_part(tmp_path: Path) -> None:
    """Imported tasks said 'the transaction with invoice address street name Oakridge transaction': a nested
    object's fields (flattened into columns) name no row, unless the object is a wrapper of the record's own
    fields (Azure's `properties`), said without the wrapper's name (and without the noun, where its seeded names
    all end with it: 'the Greenfield Transaction'); a moment, a category and a count name none
    either. What it says comes after what it is called; a street name is seeded as a street, an ARN as an ARN and
    a `tax_entity_name` as a tax entity's name."""
    transaction = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "invoiceAddress": {
                "type": "object",
                "properties": {"streetName": {"type": "string"}, "city": {"type": "string"}},
            },
            "properties": {"type": "object", "properties": {"displayName": {"type": "string"}}},
            "createdAt": {"type": "string", "format": "date-time"},
            "countryCode": {"type": "string"},
            "numberItems": {"type": "string"},
            "description": {"type": "string"},
            "transactionArn": {"type": "string"},
            "taxEntityName": {"type": "string"},
        },
    }
    document = listed_and_deleted("Transaction", transaction)
    spec = imported(tmp_path, document).spec
    assert spec["entities"]["transactions"]["refer"] == [
        "the {properties_display_name}",  # seeded 'Greenfield Transaction': it says what it names
        "the transaction with tax entity name {tax_entity_name}",  # a name it holds before what it says
    ]
    rows = spec["seed"]["transactions"]
    assert all(row["invoice_address_street_name"].endswith(" Street") for row in rows), rows
    assert all("transaction" not in row["invoice_address_city"] for row in rows), rows
    assert all(row["transaction_arn"].startswith("arn:aws:") for row in rows), rows  # an id, never a referent
    assert all(row["tax_entity_name"].endswith(" Tax Entity") for row in rows), rows  # what it names
    note = {"type": "object", "properties": {"id": {"type": "string"}, "body": {"type": "string"}}}
    notes = imported(tmp_path, listed_and_deleted("Note", note)).spec["entities"]["notes"]
    assert notes["refer"] == ["the note that says “{body}”"]


def test_an_action_taking_a_body_changes_its_record_unless_it_makes_one_of_its_own(tmp_path: Path) -> None:
    """Taxamo's `POST /transactions/{key}/confirm` and `/unconfirm` take an `input_transaction_update`: they set and
    clear a flag on the transaction, where tasks said 'create a new input transaction update'. An action whose
    body's schema is named for it (`POST /transactions/{key}/refund` taking a `Refund`) makes a record: a create."""
    taxamo = import_openapi(Path(__file__).parent / "data" / "openapi" / "taxamo_transactions.json")
    tools = {t["name"]: t for t in taxamo.spec["tools"]}
    for name, flag in (("confirm_transaction", True), ("unconfirm_transaction", False)):
        assert (tools[name]["effect"], tools[name]["entity"]) == ("update", "transactions"), tools[name]
        assert tools[name]["set"] == {"confirmed": flag}
    assert "input_transaction_updates" not in taxamo.spec["entities"]

    transaction = {"type": "object", "properties": {"key": {"type": "string"}, "amount": {"type": "number"}}}
    refund = {"type": "object", "properties": {"id": {"type": "string"}, "amount": {"type": "number"}}}
    key = {"name": "key", "in": "path", "required": True, "type": "string"}
    document = {
        "swagger": "2.0",
        "info": {"title": "Payments", "version": "1"},
        "paths": {
            "/transactions": {
                "get": {
                    "operationId": "listTransactions",
                    "responses": {"200": {"schema": {"type": "array", "items": {"$ref": "#/definitions/Transaction"}}}},
                }
            },
            "/transactions/{key}/refund": {
                "post": {
                    "operationId": "refundTransaction",
                    "parameters": [key, {"name": "body", "in": "body", "schema": {"$ref": "#/definitions/Refund"}}],
                    "responses": {"200": {"schema": {"$ref": "#/definitions/Refund"}}},
                }
            },
        },
        "definitions": {"Transaction": transaction, "Refund": refund},
    }
    refund_tool = next(t for t in imported(tmp_path, document).spec["tools"] if t["name"] == "refund_transaction")
    assert (refund_tool["effect"], refund_tool["entity"]) == ("create", "refunds")


def test_a_request_is_said_by_the_operations_own_name_and_free_text_in_quotes(tmp_path: Path) -> None:
    """Route 53's `POST .../hostedzone/{Id}/deauthorizevpcassociation` (`DeleteVPCAssociationAuthorization`, no
    summary, a VPC body: mapped as a create) was asked for as 'create a new vpc'; a note's content was said bare
    inside a list ('with content Call first., tag finance')."""
    note = {"type": "object", "properties": {"id": {"type": "string"}, "content": {"type": "string"}}}
    vpc = {"type": "object", "properties": {"vpcId": {"type": "string"}, "vpcRegion": {"type": "string"}}}
    key = {"name": "id", "in": "path", "required": True, "type": "string"}

    def body(schema: str) -> dict[str, Any]:
        return {"name": "body", "in": "body", "required": True, "schema": {"$ref": f"#/definitions/{schema}"}}

    document = {
        "swagger": "2.0",
        "info": {"title": "Notes", "version": "1"},
        "paths": {
            "/notes": {
                "post": {
                    "operationId": "createNote",
                    "parameters": [body("Note")],
                    "responses": {"200": {"schema": {"$ref": "#/definitions/Note"}}},
                }
            },
            "/notes/{id}/deauthorize": {
                "post": {
                    "operationId": "deleteVpcAuthorization",
                    "parameters": [key, body("Vpc")],
                    "responses": {"200": {"description": "OK"}},
                }
            },
        },
        "definitions": {"Note": note, "Vpc": vpc},
    }
    tools = {t["name"]: t for t in imported(tmp_path, document).spec["tools"]}
    assert tools["create_note"]["intent"]["say"][0] == "Please create a new note, with content “{content}”."
    assert tools["delete_vpc_authorization"]["effect"] == "create"
    assert tools["delete_vpc_authorization"]["intent"]["say"][0].startswith("Please delete a vpc authorization")


def test_an_rpc_noun_takes_the_record_named_for_it_over_a_list_of_another(tmp_path: Path) -> None:
    """AWS Service Catalog's `CreatePortfolio` answers `{PortfolioDetail, Tags: [Tag]}` and `ListPortfolios` a list
    of `PortfolioDetail`: portfolios and products all became the table `tags` ('delete the portfolio; it is the
    tag ...')."""

    def shape(properties: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "properties": properties}

    def ref(name: str) -> dict[str, str]:
        return {"$ref": f"#/definitions/{name}"}

    def operation(name: str) -> dict[str, Any]:
        return {
            "post": {
                "operationId": name,
                "parameters": [{"name": "body", "in": "body", "required": True, "schema": ref(f"{name}Input")}],
                "responses": {"200": {"description": "Success", "schema": ref(f"{name}Output")}},
            }
        }

    text = {"type": "string"}
    detail = shape({"Id": text, "DisplayName": text, "ProviderName": text})
    document = {
        "swagger": "2.0",
        "info": {"title": "Catalog", "version": "1"},
        "paths": {
            f"/#X-Amz-Target=Catalog.{name}": operation(name)
            for name in ("CreatePortfolio", "ListPortfolios", "DeletePortfolio")
        },
        "definitions": {
            "Tag": shape({"Key": text, "Value": text}),
            "PortfolioDetail": detail,
            "CreatePortfolioInput": shape({"DisplayName": text, "ProviderName": text}),
            "CreatePortfolioOutput": shape(
                {"PortfolioDetail": ref("PortfolioDetail"), "Tags": {"type": "array", "items": ref("Tag")}}
            ),
            "ListPortfoliosInput": shape({"PageToken": text}),
            "ListPortfoliosOutput": shape({"PortfolioDetails": {"type": "array", "items": ref("PortfolioDetail")}}),
            "DeletePortfolioInput": {**shape({"Id": text}), "required": ["Id"]},
            "DeletePortfolioOutput": shape({}),
        },
    }
    tools = {t["name"]: t["entity"] for t in imported(tmp_path, document).spec["tools"]}
    assert tools["create_portfolio"] == tools["delete_portfolio"] == tools["list_portfolios"] == "portfolio_details"


def test_a_create_is_asked_for_with_every_required_detail_in_sentences(tmp_path: Path) -> None:
    """Jirafe's `post_product` requires five fields: a request naming three of them left the gold's other two
    unsaid (an unsolvable task). Every required field is a slot of each phrasing, and the second says them as
    sentences, a yes/no field by its label, never 'It is code ..., is order ...'."""
    product = {
        "type": "object",
        "required": ["code", "change_date", "create_date", "is_order", "is_sku"],
        "properties": {
            "id": {"type": "string"},
            "code": {"type": "string"},
            "change_date": {"type": "string", "format": "date-time"},
            "create_date": {"type": "string", "format": "date-time"},
            "is_order": {"type": "boolean"},
            "is_sku": {"type": "boolean"},
            "brand": {"type": "string"},
        },
    }
    document = {
        "swagger": "2.0",
        "info": {"title": "Shop", "version": "1"},
        "paths": {
            "/products": {
                "post": {
                    "operationId": "postProduct",
                    "summary": "Send a product",
                    "parameters": [{"name": "body", "in": "body", "required": True, "schema": product}],
                    "responses": {"200": {"description": "ok", "schema": product}},
                },
                "get": {
                    "operationId": "listProducts",
                    "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": product}}},
                },
            }
        },
    }
    tool = next(t for t in imported(tmp_path, document).spec["tools"] if t["name"] == "post_product")
    required = {p for p, v in tool["params"].items() if v.get("required")}
    assert required == {"code", "change_date", "create_date", "is_order", "is_sku"}
    for phrasing in tool["intent"]["say"]:
        assert {s.name for s in slots(phrasing)} == required, phrasing
    assert tool["intent"]["say"][1] == (
        "Could you send a product? The code is {code}, the change date is {change_date:datetime}, the create date is "
        "{create_date:datetime}, “is order” is {is_order} and “is sku” is {is_sku}."
    )


@pytest.mark.parametrize(
    ("tools", "tool", "said"),
    [
        # Neutrino names its operations noun first: a computed POST is asked for by what it does
        (["phone_validate", "bin_lookup", "html_extract", "ip_info"], "phone_validate", "validate phone"),
        (["phone_validate", "bin_lookup", "html_extract", "ip_info"], "bin_lookup", "look up bin"),
        (["phone_validate", "bin_lookup", "html_extract", "ip_info"], "ip_info", ""),  # no verb: 'create a new ...'
        # AWS and Azure name them verb first; a create's own verb keeps 'create a new ...'
        (["initiate_vault_lock", "list_vaults", "create_vault"], "initiate_vault_lock", "initiate vault lock"),
        (["initiate_vault_lock", "list_vaults", "create_vault"], "create_vault", ""),
        (["list_keys", "regenerate_keys", "get_namespace"], "list_keys", "list keys"),
        (["post_commands_send", "get_devices", "delete_device"], "post_commands_send", ""),  # verb-first document
        (
            ["post_mail_send", "contacts_delete", "lists_get"],
            "post_mail_send",
            "send mail",
        ),  # an HTTP method is no word
    ],
)
def test_a_create_without_a_summary_is_asked_for_by_what_its_name_does(tools: list[str], tool: str, said: str) -> None:
    """'Please create a new phone validate' named a record nobody keeps; Azure's POST `listKeys` and
    `regenerateKeys` were both 'create a new list key'. The name's verb, in the place the document puts verbs."""
    assert request_by_name(tool, verbs_last(tools)) == said
