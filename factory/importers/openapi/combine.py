"""One provider's small documents as one document: a server of one or two tools trains nothing, and public
collections split a provider's API into one document per endpoint (Apitore publishes 37 documents of one
operation each, the New York Times five of one or two). Combined, they make one server of the provider's tools.

The documents are read (Swagger 2.0 already restated as OpenAPI 3) and merged: every path and operation kept,
each document's components kept under their names, except where two documents give one name different
schemas: the later one is renamed after its document (`NewsFeedEntity`), and its `$ref`s follow. A schema two
documents define alike is kept once, so their tools share its table. A path two documents both declare is told
apart by its document's name as a fragment (`/#news_feeds`), which the importer reads as a variant of the path.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from envfarm.factory.importers.openapi.words import METHODS, safe_name, snake

COMPONENT_SECTIONS = ("schemas", "parameters", "responses", "requestBodies", "headers", "examples", "securitySchemes")


def provider_name(provider: str) -> str:
    """A server name for a provider: its host without the public suffix (`apitore.com` -> `apitore`,
    `api.nytimes.com` -> `nytimes`)."""
    labels = [label for label in provider.lower().split(".") if label and label not in ("api", "apis", "www")]
    if len(labels) > 1:
        labels = labels[:-1]  # the top-level domain
    return safe_name("_".join(labels[-1:]) or "provider")


def combine_documents(documents: list[tuple[str, dict[str, Any]]], provider: str) -> dict[str, Any]:
    """One OpenAPI 3 document holding every path and component of `documents` ((a short name, the document)
    pairs, in order), titled for `provider`."""
    paths: dict[str, Any] = {}
    components: dict[str, dict[str, Any]] = {section: {} for section in COMPONENT_SECTIONS}
    titles: list[str] = []
    categories: list[Any] = []
    for short, document in documents:
        about = _mapping(document.get("info"))
        titles.append(" ".join(str(about.get("title") or short).split()))
        categories += [c for c in about.get("x-apisguru-categories") or [] if c not in categories]
        own = _mapping(document.get("components"))
        renames: dict[str, str] = {}
        for section in COMPONENT_SECTIONS:
            entries = _mapping(own.get(section))
            for name in entries:
                kept = components[section].get(name)
                if kept is not None and kept != entries[name]:
                    renames[f"#/components/{section}/{name}"] = f"#/components/{section}/{_renamed(short, name)}"
        document = _with_refs(document, renames) if renames else document
        own = _mapping(document.get("components"))
        for section in COMPONENT_SECTIONS:
            entries = _mapping(own.get(section))
            for name, node in entries.items():
                target = renames.get(f"#/components/{section}/{name}", f"#/components/{section}/{name}")
                components[section].setdefault(target.rsplit("/", 1)[-1], node)
        for path, item in _mapping(document.get("paths")).items():
            if path in paths and isinstance(item, dict) and any(m in METHODS for m in item):
                path = f"{path}#{snake(short)}"
            paths.setdefault(path, item)
    title = f"{provider} APIs"
    description = f"{len(documents)} APIs of {provider}, served together: " + "; ".join(titles) + "."
    info: dict[str, Any] = {"title": title, "version": "", "description": description, "x-providerName": provider}
    if categories:
        info["x-apisguru-categories"] = categories
    return {
        "openapi": "3.0.0",
        "info": info,
        "paths": paths,
        "components": {section: entries for section, entries in components.items() if entries},
    }


def _mapping(node: Any) -> dict[str, Any]:
    return node if isinstance(node, dict) else {}


def _renamed(short: str, name: str) -> str:
    """A component's name made the document's own (`feeds` + `FeedEntity` -> `FeedsFeedEntity`)."""
    prefix = "".join(word.capitalize() for word in snake(short).split("_") if word)
    return f"{prefix}{name}"


def _with_refs(document: dict[str, Any], renames: dict[str, str]) -> dict[str, Any]:
    """`document` with every `$ref` in `renames` pointing at the new name (percent-escaped refs included)."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {key: walk(value) for key, value in node.items()}
            ref = out.get("$ref")
            if isinstance(ref, str) and unquote(ref) in renames:
                out["$ref"] = renames[unquote(ref)]
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    copied = json.loads(json.dumps(document))
    walked = walk(copied)
    components = _mapping(walked.get("components"))
    for section in COMPONENT_SECTIONS:
        entries = components.get(section)
        if not isinstance(entries, dict):
            continue
        components[section] = {
            renames.get(f"#/components/{section}/{name}", f"#/components/{section}/{name}").rsplit("/", 1)[-1]: node
            for name, node in entries.items()
        }
    return walked
