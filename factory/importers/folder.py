"""Import a folder of API documents at once: every document ends in a spec folder or a one-line reason.

`envfarm import openapi DIR --out SPECS` walks DIR for `.json`, `.yaml` and `.yml` documents, imports each
with `envfarm.factory.importers.openapi.import_openapi`, writes `SPECS/<name>/`, and goes on past a document
that fails. The summary (`SPECS/IMPORT-SUMMARY.json` and `.md`) lists every document: the spec it became, its
tool count and the import time, or why it was refused. An unexpected exception is a bug of the importer, not
of the document: it is kept as its own outcome (`crashed`), with its type and message on one line, so a bulk
run over hundreds of documents never stops on one and never hides one."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from envfarm.factory.importers.openapi import OpenAPIError, write_spec_folder
from envfarm.factory.importers.openapi.combine import combine_documents, provider_name
from envfarm.factory.importers.openapi.entry import import_document, read_openapi
from envfarm.factory.importers.openapi.models import ImportReport, ImportResult
from envfarm.factory.importers.openapi.readers import FEW_TOOLS
from envfarm.factory.spec import SpecError
from envfarm.servers.runtime.registry import Source

DOCUMENT_SUFFIXES = (".json", ".yaml", ".yml")
SUMMARY_NAME = "IMPORT-SUMMARY"


class DocumentOutcome(BaseModel):
    """What became of one document."""

    document: str = Field(description="the document's path, relative to the folder imported")
    outcome: Literal["imported", "refused", "crashed"]
    name: str | None = Field(default=None, description="the spec folder written (imported only)")
    tools: int = Field(default=0, description="the tools of the server it is served by")
    combined: bool = Field(
        default=False, description="served together with other small documents of its provider (`name`)"
    )
    reason: str = Field(
        default="",
        description=(
            "one line: why it was refused, the exception it crashed with, or why an import has fewer than 3 tools"
        ),
    )
    seconds: float = 0.0


class FolderImport(BaseModel):
    """Every document of a folder and what became of it."""

    source: str
    out: str
    documents: list[DocumentOutcome] = Field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(d.outcome == outcome for d in self.documents)

    def count_served(self, tools: int) -> int:
        """The documents imported into a server of at least `tools` tools."""
        return sum(d.outcome == "imported" and d.tools >= tools for d in self.documents)

    def markdown(self) -> str:
        seconds = [d.seconds for d in self.documents]
        lines = [
            f"# Import of {self.source}",
            "",
            (
                f"{len(self.documents)} documents: {self.count('imported')} imported, {self.count('refused')} "
                f"refused, {self.count('crashed')} crashed; {sum(seconds):.1f} s in all, "
                f"{max(seconds, default=0.0):.2f} s at most per document."
            ),
            "",
            (
                f"{self.count_served(FEW_TOOLS)} of them served by a server of {FEW_TOOLS} tools or more "
                f"({sum(d.combined for d in self.documents)} of those combined with other small documents of their "
                "provider)."
            ),
            "",
            "Publish with `envfarm build " + self.out + " --out FARM` (verification decides what is served).",
            "",
            "| document | outcome | spec | tools | why |",
            "|---|---|---|---|---|",
        ]
        for d in self.documents:
            reason = d.reason.replace("|", "\\|")
            lines.append(f"| `{d.document}` | {d.outcome} | {d.name or ''} | {d.tools or ''} | {reason} |")
        refusals = Counter(_reason_kind(d.reason) for d in self.documents if d.outcome != "imported")
        if refusals:
            lines += ["", "## Why documents were refused", "", "| reason | documents |", "|---|---|"]
            lines += [f"| {kind} | {n} |" for kind, n in refusals.most_common()]
        combined = Counter((d.name, d.tools) for d in self.documents if d.combined)
        if combined:
            lines += [
                "",
                "## Small documents combined by provider",
                "",
                "| spec | tools | documents |",
                "|---|---|---|",
            ]
            lines += [f"| {name} | {tools} | {n} |" for (name, tools), n in sorted(combined.items(), key=str)]
        short = Counter(
            _short_kind(d.reason) for d in self.documents if d.outcome == "imported" and d.reason and not d.combined
        )
        if short:
            lines += ["", f"## Imported with fewer than {FEW_TOOLS} tools", "", "| why | documents |", "|---|---|"]
            lines += [f"| {kind} | {n} |" for kind, n in short.most_common()]
        return "\n".join(lines) + "\n"


def few_tools_reason(report: ImportReport) -> str:
    """Why an import has fewer than three tools, in one line: how many operations the document declares, how many
    tools were derived (reads of what it keeps, no operation of the API), and the first skip's reason; empty
    for an import of three tools or more. A bulk summary then says of every short import what it is short of."""
    if len(report.tools) >= FEW_TOOLS:
        return ""
    derived = sum(t.path.startswith("(") for t in report.tools)
    declared = len(report.tools) - derived + len(report.skipped)
    line = f"{len(report.tools)} tool(s): the document declares {declared} operation(s)"
    if derived:
        line += f", {derived} read(s) derived from what it keeps"
    if report.skipped:
        first = report.skipped[0]
        line += f"; skipped {first.method.upper()} {first.path}: {first.reason}"
        if len(report.skipped) > 1:
            line += f" (and {len(report.skipped) - 1} more)"
    return _one_line(line)


def _reason_kind(reason: str) -> str:
    """The reason without its document-specific tail, to count alike refusals together."""
    return reason.split(";", 1)[0].split(" (", 1)[0][:120]


def _short_kind(reason: str) -> str:
    """A short import's reason as a count of operations, to count alike ones together."""
    declared = reason.split("declares ", 1)[-1].split(" ", 1)[0]
    return f"the document declares {declared} operation(s)" + (", some skipped" if "; skipped" in reason else "")


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def find_documents(folder: Path) -> list[Path]:
    """The API documents under `folder`, in a stable order."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES)


def import_folder(
    folder: Path,
    out: Path,
    seed_number: int = 0,
    on_document: Callable[[DocumentOutcome], None] | None = None,
    combine: bool = True,
) -> FolderImport:
    """Import every document under `folder` into `out/<name>/`; names that collide get a numeric suffix.
    With `combine`, the documents of one provider that import with fewer than three tools each are served
    together (`combine_documents`) where that import succeeds. Writes `out/IMPORT-SUMMARY.json` and `.md`,
    and returns the summary."""
    summary = FolderImport(source=str(folder), out=str(out))
    used: set[str] = {p.name for p in out.iterdir() if p.is_dir()} if out.is_dir() else set()
    held: list[_Held] = []  # small imports, written once it is known whether they are combined
    for path in find_documents(folder):
        started = time.perf_counter()
        relative = str(path.relative_to(folder))
        try:
            data, kind, source = read_openapi(path)
            result = import_document(data, path, None, seed_number, kind, source=source)
        except (OpenAPIError, SpecError) as exc:
            text = str(exc).removeprefix(f"{path}: ").removeprefix(f"{path} (imported): ")
            outcome = DocumentOutcome(document=relative, outcome="refused", reason=_one_line(text))
        except Exception as exc:  # noqa: BLE001 - one document's importer bug must not stop the others
            outcome = DocumentOutcome(
                document=relative, outcome="crashed", reason=_one_line(f"{type(exc).__name__}: {exc}")
            )
        else:
            outcome = DocumentOutcome(
                document=relative,
                outcome="imported",
                tools=len(result.report.tools),
                reason=few_tools_reason(result.report),
            )
            if combine and source.provider and len(result.report.tools) < FEW_TOOLS:
                held.append(_Held(outcome, result, data, path, source.provider))
            else:
                outcome.name = _write(result, out, used)
        outcome.seconds = round(time.perf_counter() - started, 3)
        summary.documents.append(outcome)
        if on_document is not None and not (held and held[-1].outcome is outcome):
            on_document(outcome)
    for group in _by_provider(held):
        if len(group) < 2 or not _write_combined(group, out, used, seed_number):
            for small in group:
                small.outcome.name = _write(small.result, out, used)
        for small in group:
            if on_document is not None:
                on_document(small.outcome)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{SUMMARY_NAME}.json").write_text(summary.model_dump_json(indent=1) + "\n", "utf-8")
    (out / f"{SUMMARY_NAME}.md").write_text(summary.markdown(), "utf-8")
    return summary


@dataclass
class _Held:
    """A small import waiting to learn whether its provider's other small documents join it."""

    outcome: DocumentOutcome
    result: ImportResult
    data: dict[str, Any]
    path: Path
    provider: str


def _by_provider(held: list[_Held]) -> list[list[_Held]]:
    groups: dict[str, list[_Held]] = {}
    for small in held:
        groups.setdefault(small.provider.lower(), []).append(small)
    return list(groups.values())


def _write(result: ImportResult, out: Path, used: set[str]) -> str:
    """Write `result` as `out/<name>/` under a name no other spec folder has; return the name."""
    name = base = result.spec["name"]
    n = 2
    while name in used:
        name, n = f"{base}_{n}", n + 1
    used.add(name)
    result.spec["name"] = name
    write_spec_folder(result, out / name)
    return name


def _write_combined(group: list[_Held], out: Path, used: set[str], seed_number: int) -> bool:
    """Import one provider's small documents as one and write it, when that import succeeds with more tools
    than any of them alone; each document's outcome then names the combined server. False, writing nothing,
    otherwise."""
    started = time.perf_counter()
    provider = group[0].provider
    shorts = [small.path.stem for small in group]
    data = combine_documents([(short, small.data) for short, small in zip(shorts, group, strict=True)], provider)
    documents = [small.path.name for small in group]
    first = group[0].result.spec.get("source") or {}
    source = Source(title=data["info"]["title"], provider=provider, format=first.get("format", ""), documents=documents)
    try:
        result = import_document(
            data,
            Path(f"{provider_name(provider)}.json"),
            provider_name(provider),
            seed_number,
            source.format,
            source=source,
        )
    except (OpenAPIError, SpecError):
        return False
    if len(result.report.tools) <= max(small.outcome.tools for small in group):
        return False
    name = _write(result, out, used)
    share = round((time.perf_counter() - started) / len(group), 3)
    for small in group:
        small.outcome.name = name
        small.outcome.combined = True
        small.outcome.seconds = round(small.outcome.seconds + share, 3)
        small.outcome.reason = _one_line(
            f"combined with {len(group) - 1} other document(s) of {provider} into one server of "
            f"{len(result.report.tools)} tools (alone: {small.outcome.reason or f'{small.outcome.tools} tool(s)'})"
        )
        small.outcome.tools = len(result.report.tools)
    return True
