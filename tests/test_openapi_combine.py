"""A folder's small documents of one provider served as one server (`envfarm import openapi DIR`): public
collections split an API into one document per endpoint, and a server of one tool trains nothing. Each document
here is small on purpose; two define a schema `Entry` alike (kept once), one defines another `Entry` (renamed)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from envfarm.factory.build import build_all
from envfarm.factory.importers.folder import import_folder
from envfarm.factory.importers.openapi.combine import combine_documents, provider_name
from envfarm.factory.verify.report import VerifyOptions
from envfarm.servers.runtime.registry import load_registry

ENTRY = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string", "description": "The entry's headline"},
        "published": {"type": "string", "format": "date-time"},
    },
}
SCORE = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "score": {"type": "number"}, "word": {"type": "string"}},
}


def _feed(title: str, path: str, operation: str, provider: str = "feeds.example") -> dict[str, Any]:
    """A Springfox-style document of one list operation (its id generated: `feedUsingGET_<n>`)."""
    return {
        "swagger": "2.0",
        "info": {"title": title, "version": "1.0", "x-providerName": provider},
        "paths": {
            path: {
                "get": {
                    "operationId": operation,
                    "summary": f"The latest {title.lower()} entries",
                    "responses": {
                        "200": {
                            "description": "Entries",
                            "schema": {"type": "array", "items": {"$ref": "#/definitions/Entry"}},
                        }
                    },
                }
            }
        },
        "definitions": {"Entry": ENTRY},
    }


SIMILARITY: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Word similarity", "version": "1.0", "x-providerName": "feeds.example"},
    "paths": {
        "/similarity": {
            "get": {
                "operationId": "similarityUsingGET",
                "summary": "The words nearest a word",
                "parameters": [{"name": "word", "in": "query", "required": True, "type": "string"}],
                "responses": {
                    "200": {
                        "description": "Scores",
                        "schema": {"type": "array", "items": {"$ref": "#/definitions/Entry"}},
                    }
                },
            }
        }
    },
    "definitions": {"Entry": SCORE},
}


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    documents = {
        "news.json": _feed("News feed", "/feeds/news", "feedUsingGET"),
        "game.json": _feed("Game feed", "/feeds/game", "feedUsingGET_1"),
        "similarity.json": SIMILARITY,
        "other.json": _feed("Other feed", "/feeds/other", "feedUsingGET", provider="elsewhere.example"),
    }
    for name, document in documents.items():
        (docs / name).write_text(json.dumps(document), "utf-8")
    return docs


def test_a_providers_small_documents_are_served_by_one_server(tmp_path: Path) -> None:
    """The three small documents of feeds.example become one server `feeds` with every operation (the feeds told
    apart by their paths, not numbered), the alike `Entry` one table, the other `Entry` its own; each document's
    outcome names that server and says what it was alone. A provider's single small document stays as it is."""
    specs = tmp_path / "specs"
    summary = import_folder(_folder(tmp_path), specs)
    outcomes = {d.document: d for d in summary.documents}
    for name in ("news.json", "game.json", "similarity.json"):
        outcome = outcomes[name]
        assert outcome.outcome == "imported" and outcome.combined and outcome.name == "feeds", outcome
        assert outcome.tools == 3 and outcome.reason.startswith("combined with 2 other document(s) of feeds.example")
        assert "(alone: 2 tool(s): the document declares 1 operation(s)" in outcome.reason
    alone = outcomes["other.json"]
    assert not alone.combined and alone.tools == 2 and alone.name != "feeds"
    assert summary.count_served(3) == 3
    assert sorted(p.name for p in specs.iterdir() if p.is_dir()) == sorted(["feeds", alone.name])
    spec_text = (specs / "feeds" / "spec.yaml").read_text("utf-8")
    assert "name: feed_news" in spec_text and "name: feed\n" in spec_text  # game.json comes first
    markdown = (specs / "IMPORT-SUMMARY.md").read_text("utf-8")
    assert "3 of them served by a server of 3 tools or more (3 of those combined" in markdown
    assert "| feeds | 3 | 3 |" in markdown

    farm = tmp_path / "farm"
    built = anyio.run(partial(build_all, [specs / "feeds"], farm, options=VerifyOptions()))
    assert [s.status for s in built.servers] == ["published"], [
        f.model_dump() for s in built.servers for f in s.problems
    ]
    entry = load_registry(farm).get("feeds")
    assert entry is not None and entry.tool_count == 3 and entry.source is not None
    assert entry.source.provider == "feeds.example"
    assert entry.source.documents == ["game.json", "news.json", "similarity.json"]


def test_without_combining_every_document_is_its_own_server(tmp_path: Path) -> None:
    summary = import_folder(_folder(tmp_path), tmp_path / "specs", combine=False)
    assert all(d.tools < 3 for d in summary.documents)
    assert not any(d.combined for d in summary.documents)
    assert len({d.name for d in summary.documents}) == 4


def test_combining_keeps_alike_schemas_once_and_renames_the_others_with_their_refs() -> None:
    news, game = _feed("News feed", "/feeds", "feedUsingGET"), _feed("Game feed", "/feeds", "feedUsingGET")
    scores = json.loads(json.dumps(SIMILARITY).replace("#/definitions/", "#/components/schemas/"))
    scores["components"] = {"schemas": scores.pop("definitions")}
    for document in (news, game):
        document["components"] = {"schemas": document.pop("definitions")}
        document["paths"] = json.loads(json.dumps(document["paths"]).replace("#/definitions/", "#/components/schemas/"))
    combined = combine_documents([("news", news), ("game", game), ("word_scores", scores)], "feeds.example")
    schemas = combined["components"]["schemas"]
    assert schemas == {"Entry": ENTRY, "WordScoresEntry": SCORE}
    answer = combined["paths"]["/similarity"]["get"]["responses"]["200"]["schema"]["items"]
    assert answer == {"$ref": "#/components/schemas/WordScoresEntry"}
    # the same path in two documents: the later one told apart by its document's name
    assert sorted(combined["paths"]) == ["/feeds", "/feeds#game", "/similarity"]
    assert (
        combined["info"]["title"] == "feeds.example APIs"
        and "News feed; Game feed; Word similarity" in (combined["info"]["description"])
    )


def test_a_providers_server_name_is_its_host_without_the_suffix() -> None:
    assert provider_name("apitore.com") == "apitore"
    assert provider_name("api.nytimes.com") == "nytimes"
    assert provider_name("googleapis.com") == "googleapis"
    assert provider_name("") == "provider"
