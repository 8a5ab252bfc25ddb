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
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from envfarm.factory.importers.openapi import OpenAPIError, import_openapi, write_spec_folder
from envfarm.factory.importers.openapi.models import ImportReport
from envfarm.factory.importers.openapi.readers import FEW_TOOLS
from envfarm.factory.spec import SpecError

DOCUMENT_SUFFIXES = (".json", ".yaml", ".yml")
SUMMARY_NAME = "IMPORT-SUMMARY"


class DocumentOutcome(BaseModel):
    """What became of one document."""

    document: str = Field(description="the document's path, relative to the folder imported")
    outcome: Literal["imported", "refused", "crashed"]
    name: str | None = Field(default=None, description="the spec folder written (imported only)")
    tools: int = 0
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
        short = Counter(_short_kind(d.reason) for d in self.documents if d.outcome == "imported" and d.reason)
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
    folder: Path, out: Path, seed_number: int = 0, on_document: Callable[[DocumentOutcome], None] | None = None
) -> FolderImport:
    """Import every document under `folder` into `out/<name>/`; names that collide get a numeric suffix.
    Writes `out/IMPORT-SUMMARY.json` and `.md`, and returns the summary."""
    summary = FolderImport(source=str(folder), out=str(out))
    used: set[str] = {p.name for p in out.iterdir() if p.is_dir()} if out.is_dir() else set()
    for path in find_documents(folder):
        started = time.perf_counter()
        relative = str(path.relative_to(folder))
        try:
            result = import_openapi(path, seed_number=seed_number)
        except (OpenAPIError, SpecError) as exc:
            text = str(exc).removeprefix(f"{path}: ").removeprefix(f"{path} (imported): ")
            outcome = DocumentOutcome(document=relative, outcome="refused", reason=_one_line(text))
        except Exception as exc:  # noqa: BLE001 - one document's importer bug must not stop the others
            outcome = DocumentOutcome(
                document=relative, outcome="crashed", reason=_one_line(f"{type(exc).__name__}: {exc}")
            )
        else:
            name = base = result.spec["name"]
            n = 2
            while name in used:
                name, n = f"{base}_{n}", n + 1
            used.add(name)
            result.spec["name"] = name
            write_spec_folder(result, out / name)
            outcome = DocumentOutcome(
                document=relative,
                outcome="imported",
                name=name,
                tools=len(result.report.tools),
                reason=few_tools_reason(result.report),
            )
        outcome.seconds = round(time.perf_counter() - started, 3)
        summary.documents.append(outcome)
        if on_document is not None:
            on_document(outcome)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{SUMMARY_NAME}.json").write_text(summary.model_dump_json(indent=1) + "\n", "utf-8")
    (out / f"{SUMMARY_NAME}.md").write_text(summary.markdown(), "utf-8")
    return summary
