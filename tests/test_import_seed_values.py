"""Imported seeds read as real data: a column's values come from what its name means (a country code, a postal
code, an order number, a note), never the column's own name with a number ('billing country 3'), and a server
whose seed has no person names its one account's holder, who is then the persona of its tasks."""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from envfarm.clients.audit import server_facts
from envfarm.factory.importers.openapi import import_openapi
from envfarm.factory.importers.openapi.intents import account_holder, spoken_request, topic
from envfarm.factory.importers.openapi.models import Column
from envfarm.factory.importers.openapi.seed import name_words, seed_value

DATA = Path(__file__).parent / "data" / "openapi"
DOCUMENTS = sorted(p for p in DATA.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
NOW = datetime(2026, 4, 13, 9, tzinfo=UTC)


def placeholder(column: str, value: object) -> bool:
    """The old fallback: the column's name, spaced, and the row's number ('location location 2')."""
    return isinstance(value, str) and re.fullmatch(re.escape(column.replace("_", " ")) + r" \d+", value) is not None


def cells(column: Column, table: str = "orders", seed: int = 0) -> list[object]:
    rng = random.Random(seed)
    return [seed_value(column, n, rng, NOW, "Maria Lopez", table) for n in range(6)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.stem for d in DOCUMENTS])
def test_no_imported_seed_value_is_its_column_name_and_a_number(document: Path, seed: int) -> None:
    spec = import_openapi(document, name=document.stem, seed_number=seed).spec
    found = [
        f"{table}.{column}={value!r}"
        for table, rows in spec["seed"].items()
        for row in rows
        for column, value in row.items()
        if placeholder(column, value)
    ]
    assert not found, found[:5]


@pytest.mark.parametrize(
    ("name", "description", "shape"),
    [
        ("country_code", "", r"[A-Z]{2}"),
        ("billing_country", "ISO 3166-1 alpha-2 code", r"[A-Z]{2}"),
        ("postal_code", "", r"\d{5}"),
        ("zipcode", "", r"\d{5}"),
        ("order_number", "", r"ORD-\d{5}"),
        ("card_expiry_month", "", r"(0[1-9]|1[0-2])"),
        ("card_expiry_year", "", r"20(2[7-9]|3[01])"),
        ("customer_ip", "", r"203\.0\.113\.\d{1,3}"),
        ("language", "", r"[a-z]{2}"),
        ("timezone", "", r"[A-Z][a-z]+/[A-Za-z_]+"),
        ("currency", "", r"[A-Z]{3}"),
        ("file_name", "", r"[a-z0-9-]+\.[a-z]+"),
        ("content_type", "", r"[a-z]+/[a-z-]+"),
        ("billing_province", "", r"[A-Z][a-z]+"),
        ("season", "", r"20\d\d-\d\d"),
    ],
)
def test_a_column_gets_values_of_what_its_name_means(name: str, description: str, shape: str) -> None:
    for seed in range(5):
        values = cells(Column(name=name, type="string", description=description), seed=seed)
        assert all(isinstance(v, str) and re.fullmatch(shape, v) for v in values), (name, values)


@pytest.mark.parametrize("name", ["status", "category", "notes", "title", "location", "swift", "service", "name"])
def test_a_columns_seeded_rows_tell_each_other_apart(name: str) -> None:
    """Six rows, six values: a person names a row by one (the intents' `refer` needs distinct values)."""
    for seed in range(5):
        values = cells(Column(name=name, type="string", description=""), table="branches", seed=seed)
        assert len(set(values)) == len(values), values
        assert not any(placeholder(name, v) for v in values)


def test_a_run_together_name_is_read_as_its_words() -> None:
    assert {"full", "name"} <= name_words("fullname")
    assert {"zip", "code"} <= name_words("billing_zipcode")
    assert name_words("update") == {"update"}  # too short a stem to split


def test_numbers_keep_to_what_the_name_means() -> None:
    for seed in range(5):
        assert all(-90 <= v <= 90 for v in cells(Column(name="latitude", type="number", description=""), seed=seed))
        assert all(1 <= v <= 12 for v in cells(Column(name="month", type="integer", description=""), seed=seed))
        bounded = Column(name="year", type="integer", description="", minimum=1990, maximum=1995)
        assert all(1990 <= v <= 1995 for v in cells(bounded, seed=seed))  # the document's bounds win
        # ... unless they are only the type's limits: AWS's TTL of 0 to 2147483647 seeded 'set the ttl to 200917231'
        ttl = Column(name="ttl", type="integer", description="", minimum=0, maximum=2147483647)
        assert all(60 <= v <= 3600 for v in cells(ttl, seed=seed))
        wide = Column(name="traffic_policy_version", type="integer", description="", minimum=1, maximum=2**31 - 1)
        assert all(1 <= v <= 120 for v in cells(wide, seed=seed))


def test_the_holder_of_an_account_without_people_is_named_and_read_back(tmp_path: Path) -> None:
    """A seed with no person (no email anywhere): the policy names the account's holder, the same for the same
    seed number, and the driver reads that name as the persona; a seed with people names none."""
    spec = {"name": "weather", "seed_number": 3, "seed": {"stations": [{"id": "st_1", "city": "Lisbon"}]}}
    holder = account_holder(spec)
    assert holder is not None and re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", holder)
    assert account_holder(spec) == holder
    spec["seed"]["stations"].append({"id": "st_2", "owner_email": "ana.silva@example.com"})
    assert account_holder(spec) is None
    policy = f"- Every record here belongs to the one account this API serves, held by {holder}: the person asking"
    facts = server_facts(policy)
    assert facts.one_account and facts.holder == holder
    assert server_facts("- Every record here belongs to the one account this API serves: the").holder is None


def test_an_imported_policy_names_its_holder_only_without_people() -> None:
    named = 0
    for document in DOCUMENTS:
        result = import_openapi(document, name=document.stem)
        holder = server_facts(result.policy).holder
        emails = [v for rows in result.spec["seed"].values() for r in rows for v in r.values() if "@" in str(v)]
        assert holder is None or not emails, document.name
        named += holder is not None
    assert named >= 1  # some test document serves one account with no person in its seed


@pytest.mark.parametrize(
    ("summary", "said"),
    [
        ("Deletes the specified pipeline.", "delete the pipeline"),
        ("Retrieves a user by ID", "retrieve a user"),
        ("Rename fleet wing", "rename fleet wing"),
        ("Get", ""),  # no request: the effect's own phrasing is used
        ("Given a word as a string, returns the WordObject that represents it", ""),
        ("Returns subscription resources that match the API request criteria.", ""),
        ("The IP Blocklist API will detect potentially malicious IP addresses", ""),
        ("Regenerate the Primary or Secondary ConnectionStrings to the HybridConnection", ""),
        ("Get the value of the quota counter associated with the counter-key in the policy", ""),
    ],
)
def test_a_summary_is_said_as_a_request_or_not_at_all(summary: str, said: str) -> None:
    assert spoken_request(summary) == said


def test_a_computed_reads_topic_drops_the_verb_of_its_tool_name() -> None:
    assert topic("get_exchange_rates_answers") == "exchange rates"
    assert topic("get") == "get"


def test_the_name_of_a_persons_row_is_the_persons() -> None:
    """CallFire's `get_account` answer holds a first and last name beside `name`, seeded 'Ironbridge Get Account':
    a persona introduced themself by it ('Good morning, it's Ironbridge Get Account')."""
    name = Column(name="name", type="string", description="")
    rng = random.Random(0)
    assert seed_value(name, 0, rng, NOW, "Maria Lopez", "get_account_answers", personal=True) == "Maria Lopez"
    assert cells(name, "get_account_answers")[0] != "Maria Lopez"  # a thing's name where the row is no person's


@pytest.mark.parametrize("seed", range(3))
def test_a_key_people_name_records_by_is_seeded_as_a_name_they_know(tmp_path: Path, seed: int) -> None:
    """AWS keys a budget by its `BudgetName`: seeded `budg_0001`, a budget could only be named by what its notes
    say. Seeded as a name, distinct per row, the key is a column people know and the table's first referent."""
    budget = {
        "type": "object",
        "properties": {"BudgetName": {"type": "string"}, "Notes": {"type": "string"}, "Limit": {"type": "number"}},
    }
    document = {
        "swagger": "2.0",
        "info": {"title": "Budgets", "version": "1"},
        "paths": {
            "/budgets": {
                "get": {
                    "operationId": "listBudgets",
                    "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": budget}}},
                },
                "post": {
                    "operationId": "createBudget",
                    "parameters": [{"name": "body", "in": "body", "required": True, "schema": budget}],
                    "responses": {"200": {"description": "ok", "schema": budget}},
                },
            },
            "/budgets/{BudgetName}": {
                "delete": {
                    "operationId": "deleteBudget",
                    "parameters": [{"name": "BudgetName", "in": "path", "required": True, "type": "string"}],
                    "responses": {"200": {"description": "ok", "schema": budget}},
                }
            },
        },
    }
    path = tmp_path / "budgets.json"
    path.write_text(json.dumps(document), "utf-8")
    spec = import_openapi(path, seed_number=seed).spec
    entity = spec["entities"]["budgets"]
    assert entity["primary_key"] == "budget_name"
    names = [row["budget_name"] for row in spec["seed"]["budgets"]]
    assert len(set(names)) == len(names) and all(re.fullmatch(r"[A-Z][a-z]+ Budget", n) for n in names), names
    assert entity["columns"]["budget_name"].get("user_known") is True
    assert entity["refer"][0] == "the {budget_name}"
