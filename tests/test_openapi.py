"""`envfarm import openapi`: real public OpenAPI documents become spec folders that verify.

Every document in tests/data/openapi/ is imported (deterministically, no model) and built into a
temporary farm through the same verifier as any spec; the mapping itself is checked on the Petstore
and the Xero Projects API, and bad documents fail with an error naming the file.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import anyio
import pytest
import yaml

from envfarm.cli import main
from envfarm.factory.build import BuildResult, build_all
from envfarm.factory.importers.openapi import OpenAPIError, import_openapi, write_spec_folder
from envfarm.factory.importers.openapi.actions import state_change
from envfarm.factory.importers.openapi.models import Column, Entity
from envfarm.factory.importers.openapi.rpc import _noun_keys, rpc_name, split_operation
from envfarm.factory.verify.report import VerifyOptions
from envfarm.render import render
from envfarm.servers.runtime.registry import load_registry

DATA = Path(__file__).parent / "data" / "openapi"


def no_mutation_sample(builds: Path) -> list[str]:
    """The build folder, and no mutation sample (these tests are about the import, not the kill rate)."""
    return ["--build-dir", str(builds), "--mutants", "0"]


DOCUMENTS = sorted(p for p in DATA.iterdir() if p.suffix in (".yaml", ".yml", ".json"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BuildResult]:
    """Every test document imported into a spec folder and built (verified) into one temporary farm."""
    specs = tmp_path_factory.mktemp("imported")
    for document in DOCUMENTS:
        write_spec_folder(import_openapi(document, name=document.stem), specs / document.stem)
    farm = tmp_path_factory.mktemp("farm")
    # With the coverage gate: every write and rejection of the imported servers runs under an expectation.
    return farm, anyio.run(partial(build_all, [specs], farm, options=VerifyOptions(coverage_gate=True)))


def test_there_are_at_least_three_real_documents() -> None:
    assert len(DOCUMENTS) >= 3 and (DATA / "petstore.yaml").is_file()
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    assert all(d.name in readme for d in DOCUMENTS), "every document names its source and license"


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.stem for d in DOCUMENTS])
def test_each_document_yields_a_verified_server(built: tuple[Path, BuildResult], document: Path) -> None:
    farm, result = built
    outcome = next(r for r in result.servers if r.name == document.stem)
    assert outcome.status == "published", render(result)
    entry = load_registry(farm).get(document.stem)
    assert entry is not None and entry.verification == "passed" and entry.tool_count >= 5


def test_petstore_operations_map_to_the_right_effects() -> None:
    result = import_openapi(DATA / "petstore.yaml", name="petstore")
    effects = {t.operation_id: (t.tool, t.effect, t.entity) for t in result.report.tools}
    assert effects["addPet"] == ("add_pet", "create", "pets")
    assert effects["getPetById"] == ("get_pet_by_id", "get", "pets")
    assert effects["findPetsByStatus"] == ("find_pets_by_status", "search", "pets")
    assert effects["updatePet"] == ("update_pet", "update", "pets")  # PUT /pet: the key is in the body
    assert effects["updatePetWithForm"][1] == "update"  # POST /pet/{petId}: an update of that row
    assert effects["deletePet"] == ("delete_pet", "delete", "pets")
    assert effects["placeOrder"] == ("place_order", "create", "orders")
    assert effects["getUserByName"] == ("get_user_by_name", "get", "users")
    skipped = {s.operation_id: s.reason for s in result.report.skipped}
    assert "uploads a file" in skipped["uploadFile"]
    assert "authentication" in skipped["loginUser"] and "authentication" in skipped["logoutUser"]
    assert "bulk" in skipped["createUsersWithListInput"]
    # A map of counts answers no record: a computed read that takes no input, one answer row.
    assert effects["getInventory"] == ("get_inventory", "search", "get_inventory_answers")
    assert len(result.spec["seed"]["get_inventory_answers"]) == 1
    spec = result.spec
    get_pet = next(t for t in spec["tools"] if t["name"] == "get_pet_by_id")
    assert get_pet["key"] == "pet_id" and get_pet["params"]["pet_id"] == {
        "type": "integer",
        "description": "ID of pet to return",
        "required": True,
        "column": "id",
    }
    by_status = next(t for t in spec["tools"] if t["name"] == "find_pets_by_status")
    assert by_status["params"]["status"]["enum"] == ["available", "pending", "sold"]
    assert spec["entities"]["orders"]["columns"]["pet_id"]["ref"] == "pets.id"  # a foreign key by name
    pets = spec["entities"]["pets"]["columns"]
    assert pets["category_name"]["type"] == "string"  # Category {id, name} flattened one level
    assert "comma-separated" in pets["photo_urls"]["description"]  # an array kept as text
    add_pet = next(t for t in spec["tools"] if t["name"] == "add_pet")
    photos = add_pet["params"]["photo_urls"]  # ... but written as an array, never as separated text
    assert photos["items"] is True and "comma" not in photos["description"]
    assert add_pet["examples"][0]["args"]["photo_urls"] == ["New photo urls"]
    assert spec["seed"]["pets"][0]["name"] == "doggie"  # the schema's example seeds the first row
    assert any("api_key" in n and "principal" in n for n in result.report.notes)  # auth -> our principal
    # Writes carry expectations: a delete removes an unreferenced row, an update sets what it names.
    delete_pet = next(t for t in spec["tools"] if t["name"] == "delete_pet")
    assert delete_pet["examples"] == [
        {"args": {"pet_id": 6}, "expect": {"state": {"pets[6]": None}, "rows": {"pets": {"removed": 1}}}}
    ]
    update = next(t for t in spec["tools"] if t["name"] == "update_pet_with_form")["examples"]
    assert update[0]["expect"]["rows"] == {"pets": {"updated": 1}} and update[1]["expect"] == {
        "error": "Nothing to change"
    }


def test_nested_resources_become_foreign_keys_and_required_filters() -> None:
    spec = import_openapi(DATA / "xero_projects.yaml", name="xero_projects").spec
    tasks = spec["entities"]["tasks"]
    assert tasks["primary_key"] == "task_id" and tasks["columns"]["project_id"]["ref"] == "projects.project_id"
    assert tasks["id_format"] == "50586597-0000-4000-8000-{:012d}"  # format: uuid keys stay UUIDs, one group per table
    assert spec["entities"]["projects"]["id_format"] != tasks["id_format"]
    get_tasks = next(t for t in spec["tools"] if t["name"] == "get_tasks")
    assert get_tasks["effect"] == "search" and get_tasks["params"]["project_id"]["required"] is True
    create = next(t for t in spec["tools"] if t["name"] == "create_time_entry")
    assert create["params"]["project_id"]["required"] and create["params"]["duration"]["type"] == "integer"
    assert spec["entities"]["time_entries"]["columns"]["user_id"]["ref"] == "project_users.user_id"
    assert {t["name"] for t in spec["tools"]} >= {"patch_project", "delete_time_entry", "update_task"}


def test_import_is_deterministic(tmp_path: Path) -> None:
    for n in (1, 2):
        write_spec_folder(import_openapi(DATA / "xero_projects.yaml"), tmp_path / str(n))
    assert (tmp_path / "1" / "spec.yaml").read_bytes() == (tmp_path / "2" / "spec.yaml").read_bytes()
    assert (tmp_path / "1" / "IMPORT.md").read_bytes() == (tmp_path / "2" / "IMPORT.md").read_bytes()


def test_swagger_2_documents_are_restated(tmp_path: Path) -> None:
    document = {
        "swagger": "2.0",
        "info": {"title": "Notes API", "version": "1"},
        "paths": {
            "/notes": {
                "get": {
                    "operationId": "listNotes",
                    "responses": {
                        "200": {
                            "description": "ok",
                            "schema": {"type": "array", "items": {"$ref": "#/definitions/Note"}},
                        }
                    },
                },
                "post": {
                    "operationId": "addNote",
                    "parameters": [{"in": "body", "name": "body", "schema": {"$ref": "#/definitions/Note"}}],
                    "responses": {"201": {"description": "ok", "schema": {"$ref": "#/definitions/Note"}}},
                },
            },
            "/notes/{noteId}": {
                "get": {
                    "operationId": "getNote",
                    "parameters": [{"in": "path", "name": "noteId", "type": "string", "required": True}],
                    "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Note"}}},
                }
            },
        },
        "definitions": {
            "Note": {
                "type": "object",
                "required": ["text"],
                "properties": {
                    "id": {"type": "string", "readOnly": True},
                    "text": {"type": "string"},
                    "pinned": {"type": "boolean"},
                },
            }
        },
    }
    path = tmp_path / "notes.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = import_openapi(path)
    assert result.spec["name"] == "notes" and result.report.format == "Swagger 2.0"
    assert [(t.tool, t.effect) for t in result.report.tools] == [
        ("list_notes", "search"),
        ("add_note", "create"),
        ("get_note", "get"),
    ]
    assert result.spec["tools"][1]["params"] == {
        "text": {"type": "string", "description": "text", "required": True},
        "pinned": {"type": "boolean", "description": "pinned"},
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: not an api\n", "not an OpenAPI document"),
        ("openapi: 3.0.0\ninfo: {title: x}\npaths: {}\n", "no operations"),
        ("openapi: 4.0.0\npaths: {}\n", "OpenAPI 4.0.0 is not supported"),
        (
            "openapi: 3.0.0\npaths:\n  /x:\n    get:\n      responses:\n        '200': {$ref: 'other.yaml#/r'}\n",
            "external \\$ref",
        ),
        ("openapi: 3.0.0\npaths: [\n", "not valid YAML"),
        ("openapi: 3.0.0\npaths:\n  /x: not a path item\n", "paths./x: a path item must be an object, found a string"),
        (
            "openapi: 3.0.0\npaths:\n  /x:\n    get: [1]\n",
            "paths./x.get: an operation must be an object, found a list",
        ),
        (
            "openapi: 3.0.0\npaths:\n  /x:\n    parameters: [oops]\n    get: {responses: {}}\n",
            "paths./x.get.parameters.0: a parameter must be an object",
        ),
        (
            (
                "openapi: 3.1.0\npaths:\n  /x/{id}:\n    get:\n      responses:\n        '200':\n          content:\n"
                "            application/json: {schema: {$ref: '#/components/schemas/Gone'}}\n"
            ),
            "no operation maps to a record tool; skipped: GET /x/\\{id\\}: \\$ref '#/components/schemas/Gone' points",
        ),
        (
            "openapi: 3.0.0\npaths:\n  /x:\n    get:\n      responses:\n"
            "        '200': {content: {application/json: 7}}\n",
            "GET /x: a construct of an unexpected shape",
        ),
    ],
)
def test_a_bad_document_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "api.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(OpenAPIError, match=message) as caught:
        import_openapi(path)
    assert str(path) in str(caught.value)


def test_the_command_writes_a_spec_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "assets"
    assert main(["import", "openapi", str(DATA / "xero_assets.yaml"), "--name", "assets", "--out", str(out)]) == 0
    spec = yaml.safe_load((out / "spec.yaml").read_text(encoding="utf-8"))
    assert spec["name"] == "assets" and "## Tools" in (out / "IMPORT.md").read_text(encoding="utf-8")
    printed = capsys.readouterr().out
    # GET /Settings reads the one settings record there is: a read that takes no input, its answer one row.
    assert "6 tools over 3 entities" in printed and "skipped" not in printed
    assert spec["seed"]["get_asset_settings_answers"][0]["lookup_id"] == "lkp_0001"
    assert main(["import", "openapi", str(tmp_path / "missing.yaml")]) == 2


def test_a_model_enriches_the_import_and_only_a_verified_draft_replaces_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --model the deterministic import is the model's starting point; its draft (here: clearer
    descriptions) is verified in the build folder before it replaces the spec folder."""
    from scripted_openai import scripted_openai

    imported = import_openapi(DATA / "xero_assets.yaml", name="assets")
    spec = imported.spec
    enriched = {**spec, "description": "Fixed assets of a small business: register assets and their types."}
    out, builds = tmp_path / "assets", tmp_path / "builds"
    args = ["import", "openapi", str(DATA / "xero_assets.yaml"), "--name", "assets", "--out", str(out)]
    answer = {"spec": enriched, "handlers": "", "policy": imported.policy}
    with scripted_openai([json.dumps(answer, default=str)]) as server:
        code = main([*args, "--model", "openai:scripted", "--base-url", server.base_url, *no_mutation_sample(builds)])
    assert code == 0, capsys.readouterr()
    assert "Import report" in server.requests[0]["messages"][1]["content"]
    written = yaml.safe_load((out / "spec.yaml").read_text(encoding="utf-8"))
    assert written["description"] == enriched["description"] and written["tools"] == spec["tools"]
    assert json.loads((builds / "assets" / "round-1" / "round.json").read_text(encoding="utf-8"))["passed"]


def test_build_takes_an_api_description_directly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`envfarm build api.yaml`: imported as `envfarm import openapi` would, then the same verifier and publish."""
    assert main(["build", str(DATA / "petstore.yaml"), "--out", str(tmp_path / "farm")]) == 0, capsys.readouterr()
    entry = load_registry(tmp_path / "farm").get("petstore")
    assert entry is not None and entry.verification == "passed" and entry.tool_count == 15


@pytest.mark.parametrize(
    ("document", "principal"),
    [
        ("petstore.yaml", ("user", "users", "email")),  # OAuth 2 and an API key, and a users resource
        ("realworld_conduit.yaml", ("user", "users", "email")),  # an API key and the current-user path /user
        ("issue_tracker_31.yaml", ("user", "simple_users", "email")),  # /user returns an allOf of simple-user
        ("billing_swagger2.json", ("staff", None, None)),  # a secret key (basic auth) is the business's, not a user's
        ("xero_assets.yaml", ("staff", None, None)),  # OAuth 2, but no users resource to act as
    ],
)
def test_auth_schemes_and_current_user_paths_map_to_a_principal(
    tmp_path: Path, document: str, principal: tuple[str, str | None, str | None]
) -> None:
    result = import_openapi(DATA / document)
    declared = result.spec["principal"]
    assert (declared["kind"], declared.get("table"), declared.get("column")) == principal
    notes = "\n".join(result.report.notes)
    assert f"principal: {principal[0]}" in notes and "policy.md: drafted from the document" in notes
    # The policy is drafted from the document: whom the agent acts for, confirmation, required fields.
    assert result.policy.startswith(f"You are {declared['description']}.")
    assert "get an explicit yes" in result.policy and "needs `" in result.policy
    assert result.spec["unenforced_rules"][0]["id"] == "confirm_before_write"
    write_spec_folder(result, tmp_path / "out")
    assert (tmp_path / "out" / "policy.md").read_text(encoding="utf-8") == result.policy
    assert result.spec["scenarios"] and all(s["steps"][0]["name"] == "made" for s in result.spec["scenarios"])


def test_owner_fields_are_named_for_scoping_a_user_principal() -> None:
    """An imported user principal is not scoped by guesswork: the notes name the owner fields the document
    has (GitHub's repository owner) and how to scope them; a document without any says so."""
    notes = "\n".join(import_openapi(DATA / "issue_tracker_31.yaml").report.notes)
    assert "owner fields (`repositories.owner_login`, `repositories.owner_id`)" in notes
    assert "principal.scope" in notes and "WHERE email = :principal" in notes
    petstore = "\n".join(import_openapi(DATA / "petstore.yaml").report.notes)
    assert "does not say which are private" in petstore


def test_the_published_servers_carry_the_drafted_policy(built: tuple[Path, BuildResult]) -> None:
    farm, _ = built
    for document in DOCUMENTS:
        policy = (farm / "servers" / document.stem / "policy.md").read_text(encoding="utf-8")
        assert policy.startswith("You are ") and "has_more" in policy, document.name


def test_openapi_3_1_and_swagger_2_constructs_are_read() -> None:
    issues = import_openapi(DATA / "issue_tracker_31.yaml")
    entities = issues.spec["entities"]
    assert entities["issues"]["primary_key"] == "id" and entities["issues"]["id_format"] == "{:d}"  # integer ids
    columns = entities["issues"]["columns"]
    assert columns["state"]["enum"] == ["open", "closed"] and columns["title"]["type"] == "string"  # allOf + oneOf
    assert columns["state_reason"]["enum"] == ["completed", "reopened", "not_planned"]  # type [string, "null"]
    assert columns["repo_id"]["ref"] == "repositories.id"  # the path-level parent parameter
    assert columns["milestone_title"]["type"] == "string"  # anyOf [null, $ref] flattened one level
    tools = {t["name"]: t for t in issues.spec["tools"]}
    assert tools["issues_list_for_repo"]["params"]["state"]["enum"][:2] == ["open", "closed"]
    lock = tools["issues_lock"]  # an action on one issue: sets the flag its verb names, takes its reason
    assert (
        lock["effect"] == "update"
        and lock["set"] == {"locked": True}
        and set(lock["params"])
        == {
            "issue_number",
            "lock_reason",
        }
    )
    billing = import_openapi(DATA / "billing_swagger2.json")
    assert billing.report.format == "Swagger 2.0"
    tools = {t["name"]: t for t in billing.spec["tools"]}
    assert tools["post_customers"]["params"]["name"]["required"] is True  # a formData body
    assert tools["post_prices"]["params"]["currency"]["enum"] == ["usd", "eur", "gbp"]
    assert tools["get_customers"]["limit"] == 100  # the list envelope unwraps; paging maps to ours
    skipped = {s.path: s.reason for s in billing.report.skipped}
    assert "action" in skipped["/v1/invoices/{invoice}/pay"] and "uploads a file" in skipped["/v1/files"]


def test_keyword_field_names_are_renamed_and_noted() -> None:
    """`default`, `order`, `group` ... stand bare in generated SQL, where SQLite refuses them: renamed."""
    result = import_openapi(DATA / "keyword_names.yaml")
    columns = next(iter(result.spec["entities"].values()))["columns"]
    for name in ("default", "order", "group", "from", "class", "import", "select"):
        assert name not in columns and f"{name}_value" in columns
        assert f"`Shelf.{name}` is the column `{name}_value`" in result.report.markdown()


def test_a_hand_written_spec_naming_a_column_like_an_sql_keyword_is_refused() -> None:
    from envfarm.factory.spec import SpecError, parse_spec

    spec = import_openapi(DATA / "keyword_names.yaml").spec
    table = next(iter(spec["entities"]))
    columns = spec["entities"][table]["columns"]
    spec["entities"][table]["columns"] = {("order" if k == "order_value" else k): v for k, v in columns.items()}
    with pytest.raises(SpecError, match=r"columns\.order: 'order' is an SQL keyword"):
        parse_spec(spec, "hand-written")


NESTED_AND_FLAT = """
openapi: 3.0.3
info: {title: Projects and tasks, version: "1.0"}
paths:
  /projects:
    get:
      operationId: listProjects
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {type: array, items: {$ref: '#/components/schemas/Project'}}}}
    post:
      operationId: createProject
      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/Project'}}}}
      responses:
        '201': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Project'}}}}
  /projects/{projectId}/tasks:
    get:
      operationId: listProjectTasks
      parameters: [{name: projectId, in: path, required: true, schema: {type: string}}]
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {type: array, items: {$ref: '#/components/schemas/Task'}}}}
  /tasks:
    post:
      operationId: createTask
      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/Task'}}}}
      responses: {'201': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Task'}}}}}
components:
  schemas:
    Project: {type: object, properties: {id: {type: string}, name: {type: string}}}
    Task: {type: object, properties: {id: {type: string}, title: {type: string}}}
"""


def test_a_parent_reference_a_create_cannot_fill_is_optional(tmp_path: Path) -> None:
    """`POST /tasks` beside `/projects/{projectId}/tasks`: the task's project is an optional reference
    (before, the spec was unbuildable: "create cannot fill required column tasks.project_id")."""
    path = tmp_path / "projects.yaml"
    path.write_text(NESTED_AND_FLAT, encoding="utf-8")
    result = import_openapi(path)
    column = result.spec["entities"]["tasks"]["columns"]["project_id"]
    assert column["ref"] == "projects.id" and column.get("nullable") is True
    assert any(
        "tasks.project_id: an optional reference (not always filled by create_task)" in n for n in result.report.notes
    )


def test_a_folder_of_documents_imports_each_and_goes_on_past_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    (docs / "a").mkdir(parents=True)
    (docs / "b").mkdir()
    for sub in ("a", "b"):  # the same title twice: the second spec folder gets a suffix
        (docs / sub / "petstore.yaml").write_text((DATA / "petstore.yaml").read_text("utf-8"), "utf-8")
    (docs / "keywords.yaml").write_text((DATA / "keyword_names.yaml").read_text("utf-8"), "utf-8")
    (docs / "not_openapi.json").write_text('{"hello": "world"}', "utf-8")
    (docs / "broken.yaml").write_text("openapi: 3.0.0\npaths: [unclosed", "utf-8")
    out = tmp_path / "specs"
    assert main(["import", "openapi", str(docs), "--out", str(out)]) == 0
    summary = json.loads((out / "IMPORT-SUMMARY.json").read_text("utf-8"))
    outcomes = {d["document"]: d for d in summary["documents"]}
    assert {d["outcome"] for d in summary["documents"]} == {"imported", "refused"}
    assert outcomes["a/petstore.yaml"]["name"] != outcomes["b/petstore.yaml"]["name"]
    assert all((out / outcomes[d]["name"] / "spec.yaml").is_file() for d in ("a/petstore.yaml", "keywords.yaml"))
    assert "not an OpenAPI document" in outcomes["not_openapi.json"]["reason"]
    assert outcomes["broken.yaml"]["outcome"] == "refused" and "\n" not in outcomes["broken.yaml"]["reason"]
    assert "3 imported, 2 refused, 0 crashed" in (out / "IMPORT-SUMMARY.md").read_text("utf-8")
    assert "[5/5]" in capsys.readouterr().out
    assert main(["import", "openapi", str(docs)]) == 2  # a folder needs --out


COMPUTED_READ = """
openapi: 3.0.3
info: {title: Language detector, version: "1.0"}
paths:
  /detect:
    get:
      operationId: detectLanguage
      summary: Detect the language of a text.<BR/>See <a href="https://example.org/docs">the docs</a>.
      parameters:
        - {name: text, in: query, required: true, schema: {type: string}, description: The text to look at}
        - {name: access_token, in: query, required: true, schema: {type: string}}
      responses:
        '200':
          description: the guess
          content:
            application/json:
              schema:
                type: object
                properties:
                  language: {type: string, description: ISO 639-1 code of the language}
                  confidence: {type: number, description: How sure the detector is, 0-1}
"""


def test_a_computed_read_becomes_a_read_over_a_seeded_lookup_table(tmp_path: Path) -> None:
    """A GET that answers its inputs with fields of no stored record (a detector, a geocoder): one lookup
    table row per input, searched by the operation's own inputs; credentials are no input; HTML is stripped."""
    path = tmp_path / "detector.yaml"
    path.write_text(COMPUTED_READ, encoding="utf-8")
    result = import_openapi(path)
    (tool,) = result.spec["tools"]
    assert tool["effect"] == "search" and tool["entity"] == "detect_language_answers"
    assert set(tool["params"]) == {"text"} and tool["params"]["text"]["required"] is True
    assert set(result.spec["entities"]["detect_language_answers"]["columns"]) == {
        "lookup_id",
        "text",
        "language",
        "confidence",
    }
    assert tool["description"] == "Detect the language of a text. See the docs."
    assert len(result.spec["seed"]["detect_language_answers"]) > 0


def test_rpc_operations_named_in_a_header_map_by_their_name_and_shapes() -> None:
    """AWS JSON as Swagger 2.0 restates it (`POST /#X-Amz-Target=TicketService.CreateTicket`): the verb says
    the effect, the noun the table (the `Ticket` schema, not `CreateTicketResponse`), the input's key field
    the row; a state change sets the status; what is no record effect is skipped with its reason."""
    result = import_openapi(DATA / "aws_json_tickets.json")
    effects = {t.operation_id: (t.effect, t.entity) for t in result.report.tools}
    assert effects == {
        "CreateTicket": ("create", "tickets"),
        "DescribeTicket": ("get", "tickets"),
        "ListTickets": ("search", "tickets"),
        "UpdateTicket": ("update", "tickets"),
        "ResolveTicket": ("update", "tickets"),
        "DeleteTicket": ("delete", "tickets"),
    }
    assert set(result.spec["entities"]) == {"tickets"}  # no table per request or response envelope
    assert result.spec["entities"]["tickets"]["primary_key"] == "ticket_id"
    tools = {t["name"]: t for t in result.spec["tools"]}
    assert tools["describe_ticket"]["key"] == "ticket_id"
    assert set(tools["list_tickets"]["params"]) == {"status"}  # MaxResults and NextToken are paging
    assert set(tools["update_ticket"]["params"]) == {"ticket_id", "subject", "severity"}
    assert tools["resolve_ticket"]["set"] == {"status": "RESOLVED"}
    assert tools["create_ticket"]["params"]["subject"]["description"] == "What the ticket is about."
    skipped = {s.operation_id: s.reason for s in result.report.skipped}
    assert "tags a resource" in skipped["TagResource"]
    assert "verb `escalate` is no record effect" in skipped["EscalateTicket"]


def test_rpc_operations_named_by_an_action_query_parameter() -> None:
    """The AWS query protocol (`POST /?Action=CreateQueue`, form bodies): a queue keyed by the name its
    create takes; `Set...Attributes` updates, `PauseQueue` sets the status the verb names."""
    result = import_openapi(DATA / "query_action_queues.yaml")
    effects = {t.operation_id: t.effect for t in result.report.tools}
    assert effects == {
        "CreateQueue": "create",
        "GetQueue": "get",
        "ListQueues": "search",
        "SetQueueAttributes": "update",
        "PauseQueue": "update",
        "DeleteQueue": "delete",
    }
    spec = result.spec
    assert spec["entities"]["queues"]["primary_key"] == "queue_name"
    tools = {t["name"]: t for t in spec["tools"]}
    assert tools["create_queue"]["params"]["queue_name"]["required"] is True  # the caller names the key
    assert tools["pause_queue"]["set"] == {"queue_status": "PAUSED"}
    assert tools["pause_queue"]["examples"][0]["expect"]["rows"] == {"queues": {"updated": 1}}
    assert "verb `send` is no record effect" in result.report.skipped[0].reason


@pytest.mark.parametrize(
    ("path", "params", "name"),
    [
        ("/#X-Amz-Target=Svc_20240101.CreateThing", [], "CreateThing"),
        ("/#CreateThing", [], "CreateThing"),  # APIs.guru's restatement of the AWS protocols
        ("/?Action=CreateThing&Version=2012-11-05", [], "CreateThing"),
        ("/", [{"name": "Action", "in": "header"}], "opId"),  # `/` holds the first operation
        ("/", [{"name": "X-Amz-Target", "in": "header"}], "opId"),
        ("/things", [], None),
        ("/assetservers#name", [], None),  # a lower-case fragment is a variant of a resource path
        ("/{Bucket}?tagging#PutBucketTagging", [], None),  # REST with a fragment (S3): a resource path
        ("/things/{id}", [{"name": "Action", "in": "header"}], None),
        ("/projects", [{"name": "Action", "in": "header"}], None),  # an AWS REST API: resource paths
    ],
)
def test_the_operation_an_rpc_request_names(path: str, params: list[dict[str, str]], name: str | None) -> None:
    assert rpc_name(path, {"operationId": "opId"}, params) == name


def test_rpc_names_split_into_a_verb_and_the_tables_its_noun_may_name() -> None:
    assert split_operation("CreateNamedQuery") == ("create", "NamedQuery")
    assert split_operation("AdminDeleteUser") == ("delete", "User")
    assert split_operation("describeDBClusters") == ("describe", "DBClusters")
    assert _noun_keys("BuildsForProject") == ["builds_for_project", "build"]
    assert _noun_keys("RepositoryDescription") == ["repository_description", "repository"]


def test_actions_on_a_record_set_the_state_their_verb_names(tmp_path: Path) -> None:
    """`POST /orders/{id}:cancel` sets the status enum's past participle (and takes the body's reason);
    `POST /favorite` sets the flag it names, `DELETE /favorite` clears it; `/reset` changes nothing the
    schema says, so it is skipped with that reason."""
    result = import_openapi(DATA / "record_actions.yaml")
    tools = {t["name"]: t for t in result.spec["tools"]}
    cancel = tools["cancel_order"]
    assert cancel["effect"] == "update" and cancel["set"] == {"status": "cancelled"}
    assert set(cancel["params"]) == {"order_id", "cancel_reason"} and cancel["params"]["order_id"]["column"] == "id"
    assert cancel["examples"][0]["expect"]["state"]["orders[orde_0006].status"] == "cancelled"
    assert tools["favorite_order"]["set"] == {"favorited": True}
    assert tools["unfavorite_order"]["set"] == {"favorited": False}
    (reset,) = result.report.skipped
    assert reset.path == "/orders/{orderId}/reset" and "no status value or flag column" in reset.reason


@pytest.mark.parametrize(
    ("verb", "columns", "change"),
    [
        ("cancel", {"status": ["open", "canceled"]}, ("status", "canceled")),
        ("cancel", {"status": ["OPEN", "CANCELLED"]}, ("status", "CANCELLED")),
        ("stop", {"state": ["running", "stopped"]}, ("state", "stopped")),
        ("reboot", {"cluster_status": ["available", "rebooting"]}, ("cluster_status", "rebooting")),
        ("archive", {"is_archived": None}, ("is_archived", True)),
        ("unarchive", {"is_archived": None}, ("is_archived", False)),
        ("close", {"status": ["open", "pending"]}, None),
        ("reset", {"status": ["open", "closed"]}, None),
    ],
)
def test_the_state_an_action_verb_leaves_a_record_in(
    verb: str, columns: dict[str, list[str] | None], change: tuple[str, object] | None
) -> None:
    entity = Entity(table="things", schema_name="Thing", description="a thing")
    for name, enum in columns.items():
        entity.columns[name] = Column(
            name=name, type="boolean" if enum is None else "string", description="", enum=enum
        )
    assert state_change(verb, entity) == change
