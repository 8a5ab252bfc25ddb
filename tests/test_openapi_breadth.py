"""Constructs of real public API documents that cost imports their tools (found on a sample of APIs.guru's
directory; the documents here are small and written for these tests, in the shape of those APIs):
a few-operation document whose resource only a create touches, Google-style custom methods on a whole
resource name (`POST /v1/{name}:disable`), a schema whose table would be an SQL keyword, a parent path
parameter named `id` beside the child's own `id`, list-phrased text parameters, and one tool the spec refuses.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest
import yaml

from envfarm.factory.build import build_all
from envfarm.factory.importers.openapi import OpenAPIError, import_openapi, write_spec_folder
from envfarm.factory.importers.openapi.document import ApiDocument
from envfarm.factory.importers.openapi.entry import _drop_invalid_tools
from envfarm.factory.importers.openapi.importer import Importer
from envfarm.factory.importers.openapi.models import ImportReport
from envfarm.factory.spec import SpecError
from envfarm.factory.verify.report import VerifyOptions
from envfarm.servers.runtime.registry import load_registry

CUSTOM_APPS = """
openapi: 3.0.3
info: {title: Custom App Publishing, version: "1"}
paths:
  /accounts/{account}/customApps:
    post:
      operationId: createCustomApp
      summary: Create and publish a new custom app.
      parameters:
        - {name: account, in: path, required: true, schema: {type: string}, description: Developer account}
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/CustomApp'}
      responses:
        '200':
          description: the app
          content:
            application/json:
              schema: {$ref: '#/components/schemas/CustomApp'}
components:
  schemas:
    CustomApp:
      type: object
      properties:
        id: {type: string, readOnly: true}
        title: {type: string, description: Title of the app}
        languageCode: {type: string, description: Default listing language}
"""

SIMILARITY = """
openapi: 3.0.3
info: {title: Similarity, version: "1"}
paths:
  /similarity:
    post:
      operationId: compareWords
      summary: Compare two words.
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                first: {type: string}
                second: {type: string}
      responses:
        '200':
          description: how alike
          content:
            application/json:
              schema: {$ref: '#/components/schemas/SimilarityResponse'}
components:
  schemas:
    SimilarityResponse:
      type: object
      properties:
        id: {type: string}
        first: {type: string}
        second: {type: string}
        similarity: {type: number}
"""


def test_a_few_operation_document_reads_back_what_it_creates(tmp_path: Path) -> None:
    """One create and nothing that reads its table: the server keeps what it creates, so a get by key and a
    list read it back; their descriptions say they are no operation of the original API."""
    path = tmp_path / "apps.yaml"
    path.write_text(CUSTOM_APPS, encoding="utf-8")
    result = import_openapi(path)
    tools = {t["name"]: t for t in result.spec["tools"]}
    assert set(tools) == {"create_custom_app", "get_custom_app", "list_custom_apps"}
    assert tools["get_custom_app"]["effect"] == "get" and tools["get_custom_app"]["key"] == "id"
    assert tools["list_custom_apps"]["effect"] == "search"
    assert tools["list_custom_apps"]["params"]["title"]["match"] == "contains"
    for name in ("get_custom_app", "list_custom_apps"):
        assert "Not an operation of the original API" in tools[name]["description"]
    assert "custom_apps" not in result.spec.get("unlisted", {})
    assert any("reads back the custom_apps" in n for n in result.report.notes)
    # and the server verifies
    specs, farm = tmp_path / "specs", tmp_path / "farm"
    write_spec_folder(result, specs / "apps")
    built = anyio.run(partial(build_all, [specs], farm, options=VerifyOptions(coverage_gate=True)))
    assert [s.status for s in built.servers] == ["published"]
    entry = load_registry(farm).get(built.servers[0].name)
    assert entry is not None and entry.verification == "passed" and entry.tool_count == 3


def test_no_read_back_of_a_computation_or_in_a_document_of_many_tools(tmp_path: Path) -> None:
    """A create whose record is an operation's output (`SimilarityResponse`) is a computation, not a resource
    kept: nothing reads it back. A document whose own operations make three tools gets no read-backs either."""
    path = tmp_path / "similarity.yaml"
    path.write_text(SIMILARITY, encoding="utf-8")
    assert [t["name"] for t in import_openapi(path).spec["tools"]] == ["compare_words"]
    many = yaml.safe_load(CUSTOM_APPS)
    for verb in ("put", "delete"):
        many["paths"]["/accounts/{account}/customApps/{appId}"] = many["paths"].get(
            "/accounts/{account}/customApps/{appId}", {}
        )
        many["paths"]["/accounts/{account}/customApps/{appId}"][verb] = {
            "operationId": f"{verb}CustomApp",
            "parameters": [
                {"name": "account", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "appId", "in": "path", "required": True, "schema": {"type": "string"}},
            ],
            **(
                {"requestBody": many["paths"]["/accounts/{account}/customApps"]["post"]["requestBody"]}
                if verb == "put"
                else {}
            ),
            "responses": {"204": {"description": "done"}},
        }
    (tmp_path / "many.yaml").write_text(yaml.safe_dump(many), encoding="utf-8")
    effects = sorted(t["effect"] for t in import_openapi(tmp_path / "many.yaml").spec["tools"])
    assert effects == ["create", "delete", "update"]


SERVICES = """
openapi: 3.0.3
info: {title: Service User, version: "1"}
paths:
  /v1/{parent}/services:
    get:
      operationId: serviceuser.projects.services.list
      summary: List enabled services.
      parameters:
        - {name: parent, in: path, required: true, schema: {type: string}}
      responses:
        '200':
          description: the services
          content:
            application/json:
              schema:
                type: object
                properties:
                  services: {type: array, items: {$ref: '#/components/schemas/Service'}}
  /v1/{name}:disable:
    post:
      operationId: serviceuser.projects.services.disable
      summary: Disable a service.
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}, description: The service's resource name}
      responses:
        '200': {description: done}
  /v1/{name}:enable:
    post:
      operationId: serviceuser.projects.services.enable
      summary: Enable a service.
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}, description: The service's resource name}
      responses:
        '200': {description: done}
components:
  schemas:
    Service:
      type: object
      properties:
        name: {type: string, description: The resource name}
        title: {type: string}
        state: {type: string, enum: [ENABLED, DISABLED]}
"""


def test_google_custom_methods_act_on_the_resource_their_operation_id_names(tmp_path: Path) -> None:
    """`POST /v1/{name}:disable` names a whole resource name (`projects/p/services/s`), so no collection path
    holds it; its operationId (`serviceuser.projects.services.disable`) names the collection: an update that sets
    the state the verb leaves it in (before, both were skipped as "creates a record from nothing")."""
    path = tmp_path / "services.yaml"
    path.write_text(SERVICES, encoding="utf-8")
    result = import_openapi(path)
    tools = {t["name"]: t for t in result.spec["tools"]}
    disable = tools["serviceuser_projects_services_disable"]
    assert disable["effect"] == "update" and disable["entity"] == "services"
    assert disable["set"] == {"state": "DISABLED"}
    assert tools["serviceuser_projects_services_enable"]["set"] == {"state": "ENABLED"}
    assert not result.report.skipped


KEYWORDS_AND_IDS = """
openapi: 3.0.3
info: {title: Ledger, version: "1"}
paths:
  /references:
    get:
      operationId: listReferences
      parameters:
        - {name: label, in: query, schema: {type: string}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/Reference'}}
  /invoices:
    get:
      operationId: listInvoices
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/Invoice'}}
  /invoices/{id}:
    get:
      operationId: getInvoice
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Invoice'}
  /invoices/{id}/items:
    post:
      operationId: createInvoiceItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}, description: The invoice}
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/InvoiceItem'}
      responses:
        '201':
          description: made
          content:
            application/json:
              schema: {$ref: '#/components/schemas/InvoiceItem'}
  /tags/{tags}/faq:
    get:
      operationId: tagFaq
      parameters:
        - name: tags
          in: path
          required: true
          schema: {type: string}
          description: String list (semicolon delimited).
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/Question'}}
components:
  schemas:
    Reference:
      type: object
      properties:
        id: {type: string}
        label: {type: string}
    Invoice:
      type: object
      properties:
        id: {type: string}
        customer: {type: string}
    InvoiceItem:
      type: object
      required: [amount]
      properties:
        id: {type: string, readOnly: true, description: The item's own identifier}
        amount: {type: number}
        description: {type: string}
    Question:
      type: object
      properties:
        question_id: {type: integer}
        title: {type: string}
        tags: {type: string}
"""


def test_keyword_tables_parent_ids_and_list_phrased_params(tmp_path: Path) -> None:
    """A schema `Reference` becomes the table `references_records` (`references` is an SQL keyword), noted; the
    parent path parameter `{id}` of `/invoices/{id}/items` is the invoice's, so it fills `invoice_id` and leaves
    the item's own `id` alone; a text param described as "semicolon delimited" holds that text whole and says
    only what it is (before, each of these made the whole document unbuildable)."""
    path = tmp_path / "ledger.yaml"
    path.write_text(KEYWORDS_AND_IDS, encoding="utf-8")
    result = import_openapi(path)
    assert "references_records" in result.spec["entities"] and "references" not in result.spec["entities"]
    assert any("`references` is a keyword" in n for n in result.report.notes)
    create = next(t for t in result.spec["tools"] if t["name"] == "create_invoice_item")
    assert create["params"]["invoice_id"]["required"] is True and "id_value" not in create["params"]
    assert result.spec["entities"]["invoice_items"]["columns"]["invoice_id"]["ref"] == "invoices.id"
    faq = next(t for t in result.spec["tools"] if t["name"] == "tag_faq")
    assert "delimited" not in yaml.safe_dump(faq["params"])


def _planned(document: str, tmp_path: Path) -> Importer:
    path = tmp_path / "doc.yaml"
    path.write_text(document, encoding="utf-8")
    importer = Importer(
        ApiDocument(yaml.safe_load(document), str(path)), "doc", ImportReport(source="d", format="f", title="t")
    )
    importer.plan()
    return importer


def test_a_tool_the_spec_refuses_is_skipped_and_the_document_kept(tmp_path: Path) -> None:
    """A problem inside one tool drops that tool, with the problem as its skip reason; a problem outside any
    tool, or one in every tool, still refuses the document with every problem."""
    importer = _planned(KEYWORDS_AND_IDS, tmp_path)
    names = [t["name"] for t in importer.tools]
    bad = SpecError("doc", [(f"tools.1({names[1]}).params.x", "cannot be typed")])
    assert _drop_invalid_tools(importer, bad) is True
    assert names[1] not in [t["name"] for t in importer.tools]
    (skip,) = [s for s in importer.report.skipped if "not a valid spec tool" in s.reason]
    assert skip.reason.endswith("(params.x: cannot be typed)")
    assert _drop_invalid_tools(importer, SpecError("doc", [("entities.x", "bad table")])) is False
    every = SpecError("doc", [(f"tools.{i}({t['name']})", "bad") for i, t in enumerate(importer.tools)])
    assert _drop_invalid_tools(importer, every) is False


def test_a_document_with_nothing_to_map_is_still_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "upload.yaml"
    path.write_text(
        "openapi: 3.0.3\ninfo: {title: Upload, version: '1'}\npaths:\n  /files/content:\n    post:\n"
        "      requestBody:\n        content:\n          multipart/form-data:\n            schema: {type: object}\n"
        "      responses:\n        '201': {description: stored}\n",
        encoding="utf-8",
    )
    with pytest.raises(OpenAPIError, match="no operation maps to a record tool") as raised:
        import_openapi(path)
    assert "\n" not in str(raised.value)


SOUNDS = """
openapi: 3.0.3
info: {title: Sounds, version: "1"}
paths:
  /sounds:
    get:
      operationId: searchSounds
      parameters:
        - {name: name, in: query, schema: {type: string}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/Sound'}}
  /sounds/{soundId}:
    get:
      operationId: getSound
      summary: Details of a sound.
      parameters:
        - {name: soundId, in: path, required: true, schema: {type: integer}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Sound'}
components:
  schemas:
    Sound:
      type: object
      properties:
        id: {type: integer}
        name: {type: string}
        duration: {type: number, description: Length in seconds}
        license: {type: string, enum: [cc0, by, by-nc]}
        previewUrl: {type: string}
        packId: {type: integer}
        tags: {type: array, items: {type: string}}
        explicit: {type: boolean}
"""


def test_a_read_named_by_what_the_person_knows_still_has_facts_to_hear_back(tmp_path: Path) -> None:
    """The sound asked for by its name: the name is what the person said, so the intent's `hear` goes on to the
    record's plain facts (its duration, its license), never an id, a reference, a link, a list or a flag."""
    path = tmp_path / "sounds.yaml"
    path.write_text(SOUNDS, encoding="utf-8")
    result = import_openapi(path)
    get = next(t for t in result.spec["tools"] if t["effect"] == "get")
    hear = get["intent"]["hear"]
    assert next(iter(hear)) == "name" and {"duration", "license"} <= set(hear)
    assert not {"id", "preview_url", "pack_id", "tags", "explicit"} & set(hear)
    assert hear["duration"] == "the duration"


def test_all_of_over_a_scalar_is_that_scalar(tmp_path: Path) -> None:
    """`id: {allOf: [{$ref: ResourceId}], readOnly: true}` (Rebilly's shape) is a string, so the table is keyed by
    its own `id`, not a synthetic key beside an `id` kept as nested text."""
    document = yaml.safe_load(KEYWORDS_AND_IDS)
    document["components"]["schemas"]["ResourceId"] = {"type": "string", "maxLength": 50}
    document["components"]["schemas"]["Invoice"]["properties"]["id"] = {
        "allOf": [{"$ref": "#/components/schemas/ResourceId"}],
        "readOnly": True,
    }
    path = tmp_path / "ledger.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    invoices = import_openapi(path).spec["entities"]["invoices"]
    assert invoices["primary_key"] == "id" and invoices["columns"]["id"]["type"] == "string"
    assert "nested data" not in invoices["columns"]["id"].get("description", "")
