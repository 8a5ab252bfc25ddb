"""Task-ready imports: real public API documents, imported and built, yield tasks that pass the audit.

The documents are real ones copied unchanged (Swagger Petstore, Xero Projects, Xero Assets; see
tests/data/openapi/README.md). None of their servers keeps a customer table the persona owns rows of: the
imported Petstore and Xero servers are staff desks over one account's records, where the audit's ownership
check has no customer to check against. Each seed must still give tasks on them that pass `--audit`.
"""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import anyio
import pytest

from envfarm.cli import main
from envfarm.clients.audit import server_facts
from envfarm.factory.build import build_all
from envfarm.factory.importers.openapi import import_openapi
from envfarm.factory.importers.openapi.words import verb_phrase

DATA = Path(__file__).parent / "data" / "openapi"
DOCUMENTS = ("petstore.yaml", "xero_projects.yaml", "xero_assets.yaml")
SPECS = Path(__file__).parents[1] / "factory" / "specs"


def test_only_a_staff_import_of_one_account_skips_the_ownership_check() -> None:
    """An import with no users resource (Xero Assets) says its records are the one account's, which the audit
    reads; one with a users resource (Petstore: a signed-in user) does not; no hand-written policy says it, so
    the built-in staff desks (invoicing, warehouse: no customer email on file) keep the check."""
    assets = import_openapi(DATA / "xero_assets.yaml", name="xero_assets")
    assert assets.spec["principal"]["kind"] == "staff" and server_facts(assets.policy).one_account
    petstore = import_openapi(DATA / "petstore.yaml", name="petstore")
    assert petstore.spec["principal"]["kind"] == "user" and not server_facts(petstore.policy).one_account
    policies = sorted(SPECS.glob("*/policy.md"))
    assert len(policies) >= 20 and not any(server_facts(p.read_text("utf-8")).one_account for p in policies)


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documents imported as a folder and built into a farm (verification is test_openapi's: each of these
    builds verified there; here only the tasks are under test)."""
    docs = tmp_path_factory.mktemp("docs")
    for name in DOCUMENTS:
        (docs / name.split(".")[0]).mkdir()
        shutil.copy(DATA / name, docs / name.split(".")[0] / name)
    specs = tmp_path_factory.mktemp("specs")
    assert main(["import", "openapi", str(docs), "--out", str(specs)]) == 0
    root = tmp_path_factory.mktemp("farm")
    result = anyio.run(partial(build_all, [specs], root, verify=False))
    assert result.succeeded == len(DOCUMENTS), [(s.name, s.message) for s in result.servers if not s.ok]
    return root


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tasks_over_real_imported_documents_pass_the_audit(farm: Path, tmp_path: Path, seed: int) -> None:
    out = tmp_path / "tasks.jsonl"
    args = ["--farm", str(farm), "tasks", "--n", "4", "--seed", str(seed), "--source", "imported", "--out", str(out)]
    assert main(args) == 0
    tasks = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert len(tasks) >= 2  # a seed may run out of attempts short of 4; none may give fewer than 2
    # writes on the account's records, not only reads: the staff desk acts on rows nobody owns
    assert any(c["is_write"] for t in tasks for c in t["gold_calls"])
    assert main(["--farm", str(farm), "tasks", "--audit", str(out)]) == 0


@pytest.mark.slow
def test_every_real_document_yields_a_task(farm: Path, tmp_path: Path) -> None:
    """Each Xero server on its own yields an audited task (not one server carrying the farm). Petstore is left
    out: its integer keys 1..6 repeat across pets and users, so a pet's id reads as a person's key to the audit's
    other-person check, and some seeds find no task there."""
    for server in ("xero_projects", "xero_assets"):
        # One server alone has few rows a person can name (by text or a reference number, never 'the task with
        # rate value 35.22'), so a seed may find none in its attempts: the first of four seeds that does counts.
        found = []
        for seed in range(4):
            out = tmp_path / f"{server}-{seed}.jsonl"
            args = ["--farm", str(farm), "tasks", "--n", "1", "--seed", str(seed), "--servers", server]
            if main([*args, "--max-servers", "1", "--out", str(out)]) == 0:
                found.append(out)
                break
        assert found, f"{server}: no task in seeds 0-3"
        assert main(["--farm", str(farm), "tasks", "--audit", str(found[0])]) == 0, server


@pytest.mark.parametrize(
    ("summary", "asked"),
    [
        ("[BETA] Delete a board", "delete a board"),
        ("Creates (or replaces) a rule.", "create a rule"),
        ("Deletes the specified pipeline.", "delete the specified pipeline"),
        ("Get {id}", "get id"),
    ],
)
def test_a_summary_tag_or_aside_is_no_word_of_the_request(summary: str, asked: str) -> None:
    assert " ".join(verb_phrase(summary).split()) == asked
