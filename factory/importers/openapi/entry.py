"""The entry points: a document path or a parsed document becomes an `ImportResult`, written as a spec folder."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from envfarm.factory.importers.openapi.document import ApiDocument, auth_notes, swagger2
from envfarm.factory.importers.openapi.importer import Importer
from envfarm.factory.importers.openapi.intents import derive_intents, draft_policy, draft_scenarios
from envfarm.factory.importers.openapi.models import ImportReport, ImportResult, OpenAPIError, SkippedOperation
from envfarm.factory.importers.openapi.principal import infer_principal
from envfarm.factory.importers.openapi.reading import read_api_document
from envfarm.factory.importers.openapi.words import first_paragraph, safe_name, snake
from envfarm.factory.source import MAX_SPEC_FILE_BYTES
from envfarm.factory.spec import POLICY_NAME, SpecError, parse_spec
from envfarm.servers.runtime.registry import Source


def import_openapi(path: Path, name: str | None = None, seed_number: int = 0) -> ImportResult:
    """Read an OpenAPI 3.x (or Swagger 2.0) document and return a validated spec and its report.

    Raises `OpenAPIError` when the document is not one, and `SpecError` (every problem, located) if
    what it describes cannot make a valid spec.
    """
    data, kind, source = read_openapi(path)
    return import_document(data, path, name, seed_number, kind, source=source)


def read_openapi(path: Path) -> tuple[dict[str, Any], str, Source]:
    """The document at `path` in the OpenAPI 3 shape the importer reads (Swagger 2.0 restated), its format
    (`Swagger 2.0`) and where it comes from. Raises `OpenAPIError` when it is no document of a version read."""
    data = read_api_document(path)
    if not isinstance(data, dict) or not ("openapi" in data or "swagger" in data):
        raise OpenAPIError(f"{path}: not an OpenAPI document (no `openapi` or `swagger` version at the top)")
    version = str(data.get("openapi") or data.get("swagger"))
    kind = "Swagger" if "swagger" in data else "OpenAPI"
    source = document_source(data, path, f"{kind} {version}")
    if "swagger" in data:
        if not version.startswith("2"):
            raise OpenAPIError(f"{path}: Swagger {version} is not supported (2.0 and OpenAPI 3.x are)")
        data = swagger2(data)
    elif not version.startswith("3"):
        raise OpenAPIError(f"{path}: OpenAPI {version} is not supported (3.0 and 3.1 are)")
    return data, f"{kind} {version}", source


def document_source(data: dict[str, Any], path: Path, kind: str) -> Source:
    """Where an imported server comes from (registry.json's `source`): the document's title and version,
    and its provider (APIs.guru's `x-providerName`, else the host the API is served at)."""
    info = data.get("info")
    info = info if isinstance(info, dict) else {}
    servers = data.get("servers")
    servers = servers if isinstance(servers, list) else []
    url = next((str(s.get("url")) for s in servers if isinstance(s, dict) and s.get("url")), "")
    host = str(data.get("host") or urlsplit(url).hostname or "")
    return Source(
        title=" ".join(str(info.get("title") or path.stem).split()),
        version=str(info.get("version") or ""),
        provider=str(info.get("x-providerName") or host),
        format=kind,
        document=path.name,
    )


def import_document(
    data: dict[str, Any],
    path: Path,
    name: str | None,
    seed_number: int,
    kind: str,
    skipped: list[SkippedOperation] | None = None,
    source: Source | None = None,
) -> ImportResult:
    """Import an OpenAPI 3 document already read (`path` names it in errors and the report); `skipped`
    are operations a caller already refused (`envfarm import metadata` restates tools as operations); `source`,
    where given, is the spec's `source` (registry.json tags the server with it)."""
    info = data.get("info") or {}
    title = " ".join(str(info.get("title") or path.stem).split())
    words = [
        w
        for w in snake(re.sub(r"\b(api|openapi|rest|swagger)\b", " ", title, flags=re.IGNORECASE)).split("_")
        if not w.isdigit()
    ]
    server_name = name or "_".join(words[:3]) or "imported"
    server_name = safe_name(server_name)
    report = ImportReport(source=path.name, format=kind, title=title, skipped=list(skipped or []))
    importer = Importer(ApiDocument(data, str(path)), server_name, report)
    importer.plan()
    if not importer.tools:
        raise OpenAPIError(
            f"{path}: no operation maps to a record tool; skipped: "
            + "; ".join(f"{s.method.upper()} {s.path}: {s.reason}" for s in report.skipped)
        )
    importer.link_refs()
    report.notes += auth_notes(data)
    report.notes.append(
        "pagination: page, limit, offset and cursor parameters are dropped; a search returns at most its `limit` rows"
    )
    categories = info.get("x-apisguru-categories") or []
    domain = safe_name(categories[0]) if categories else "imported"
    description = first_paragraph(info.get("description")) or f"A stateful twin of {title}."
    notes = list(report.notes)
    while True:
        try:
            result = _draft(importer, data, path, title, description, domain, seed_number)
        except SpecError as exc:
            report.notes = list(notes)
            if not _drop_invalid_tools(importer, exc):
                raise
            continue
        if source is not None:
            result.spec["source"] = source.model_dump()
        size = len(spec_text(result).encode("utf-8"))
        if size <= MAX_SPEC_FILE_BYTES or not _fewer_seed_rows(importer):
            return result
        rows = max(e.seed_rows for e in importer.entities.values())
        notes.append(f"seed: at most {rows} rows a table (with more, the spec's {size:,} bytes pass the size limit)")
        report.notes = list(notes)


def _fewer_seed_rows(importer: Importer) -> bool:
    """Halve every table's seed rows (two at least), so that a document of hundreds of resources (Compute
    Engine's 222 tables) still makes a spec under the size limit a spec file is read with; False when no
    table has rows to spare."""
    fewer = False
    for entity in importer.entities.values():
        if entity.seed_rows > 2:
            entity.seed_rows = max(2, entity.seed_rows // 2)
            fewer = True
    return fewer


TOOL_PROBLEM = re.compile(r"^tools\.\d+\((\w+)\)")


def _drop_invalid_tools(importer: Importer, exc: SpecError) -> bool:
    """A tool the spec's validation refuses (a param it cannot type, a column a create cannot fill) is skipped with
    the problem as its reason, so one odd operation does not cost the document its other tools. False when a
    problem lies outside a tool, or no tool would be left: then the document is refused with every problem."""
    bad: dict[str, str] = {}
    for where, what in exc.problems:
        match = TOOL_PROBLEM.match(where)
        if match is None:
            return False
        inside = where[match.end() :].lstrip(".")
        bad.setdefault(match.group(1), f"{inside}: {what}" if inside else what)
    if len(bad) >= len(importer.tools):
        return False
    importer.tools = [t for t in importer.tools if t["name"] not in bad]
    for mapped in [m for m in importer.report.tools if m.tool in bad]:
        importer.report.tools.remove(mapped)
        importer.report.skipped.append(
            SkippedOperation(
                method=mapped.method,
                path=mapped.path,
                operation_id=mapped.operation_id,
                reason=f"the tool it maps to is not a valid spec tool ({bad[mapped.tool]})",
            )
        )
    return True


def _draft(
    importer: Importer,
    data: dict[str, Any],
    path: Path,
    title: str,
    description: str,
    domain: str,
    seed_number: int,
) -> ImportResult:
    """The spec, its intents, rules, scenarios and policy drafted from what the importer mapped, validated."""
    report = importer.report
    spec = importer.spec(title, description, domain, seed_number)
    spec["principal"], notes = infer_principal(importer, data, spec, title)
    report.notes += notes
    parts = {
        table: {n: c.part for n, c in entity.columns.items() if c.part} for table, entity in importer.entities.items()
    }
    derive_intents(spec, importer.asked, parts)
    writes = [t["name"] for t in spec["tools"] if t["effect"] in ("create", "update", "delete")]
    if writes:
        spec["unenforced_rules"] = [
            {
                "id": "confirm_before_write",
                "rule": "Read the change back and get an explicit yes before making it.",
                "tools": writes,
            }
        ]
    scenarios = draft_scenarios(spec)
    if scenarios:
        spec["scenarios"] = scenarios
    policy = draft_policy(spec, description)
    report.notes.append(
        f"policy.md: drafted from the document (whom the agent acts for, confirm before {len(writes)} write "
        f"tool(s), the required fields and allowed values the schemas state); {len(scenarios)} scenario(s) chain "
        "a create into the calls that use its key"
    )
    parse_spec({**spec, "policy": policy}, f"{path} (imported)")
    return ImportResult(spec=spec, report=report, policy=policy)


def write_spec_folder(result: ImportResult, out: Path) -> Path:
    """Write `spec.yaml` and `IMPORT.md` into `out` (created); return the spec file."""
    out.mkdir(parents=True, exist_ok=True)
    spec_file = out / "spec.yaml"
    spec_file.write_text(spec_text(result), "utf-8")
    (out / "IMPORT.md").write_text(result.report.markdown(), "utf-8")
    if result.policy.strip():
        (out / POLICY_NAME).write_text(result.policy, "utf-8")
    return spec_file


def spec_text(result: ImportResult) -> str:
    """`spec.yaml` as written: a header naming the document, then the spec."""
    header = f"# Imported by `envfarm import` from {result.report.source}; see IMPORT.md.\n"
    return header + yaml.safe_dump(result.spec, sort_keys=False, allow_unicode=True, width=120)
