"""Prompts the factory sends a model that are not part of one stage's own loop (those stay beside their loop in
`generate.py`): here the instruction that turns a deterministic OpenAPI import into an enrichment task."""

from __future__ import annotations

import json
from typing import Any

# How much of the imported spec the enrichment prompt quotes (a large API's spec would crowd out the rest).
SPEC_CHARS = 30_000


def enrich_import_context(report_markdown: str, spec: dict[str, Any], policy: str) -> str:
    """What `envfarm import openapi --model` asks of the model, around the deterministic import: its report
    (what was mapped and skipped), the spec it produced, and the policy drafted from the document."""
    return (
        "Enrich this environment, imported deterministically from a real OpenAPI document: clearer tool "
        "descriptions, realistic seed rows, business rules (with example calls that break them) the API "
        "describes, and custom tools with handlers for skipped operations whose effect the document states. "
        "Keep every tool's name and params.\n\nImport report:\n"
        f"{report_markdown}\n\nSpec:\n{json.dumps(spec, indent=1, default=str)[:SPEC_CHARS]}\n\n"
        f"policy.md (drafted from the document; keep what it says the API requires):\n{policy}"
    )
