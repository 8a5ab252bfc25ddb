"""What an import produces and works on: the report and result models, and the table (`Entity`) and column
(`Column`) drafts that schemas become before they are written as a spec.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from envfarm.factory.importers.openapi.words import SEED_ROWS


class OpenAPIError(Exception):
    """The document cannot be imported at all (not OpenAPI, no paths); the message names the file."""


class UnresolvedRefError(OpenAPIError):
    """A `$ref` the importer cannot follow (to another file, or to nothing in this one). Real documents often
    carry one broken reference among hundreds of good ones: the operations that use it are skipped with this as
    their reason, and the document keeps the others (it is refused only when nothing else maps)."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.reason = reason


class MappedOperation(BaseModel):
    """One operation of the document and the tool it became."""

    method: str
    path: str
    operation_id: str | None = None
    tool: str
    effect: str
    entity: str


class SkippedOperation(BaseModel):
    method: str
    path: str
    operation_id: str | None = None
    reason: str


class ImportReport(BaseModel):
    """What an import mapped, what it skipped and why, and what it could not carry over."""

    source: str
    format: str
    title: str
    entities: dict[str, str] = Field(default_factory=dict, description="table -> the schema it came from")
    tools: list[MappedOperation] = Field(default_factory=list)
    skipped: list[SkippedOperation] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def markdown(self) -> str:
        lines = [f"# Imported from {self.source}", "", f"{self.title} ({self.format}).", ""]
        lines += ["## Entities", "", "| table | from schema |", "|---|---|"]
        lines += [f"| `{t}` | `{s}` |" for t, s in self.entities.items()]
        lines += ["", "## Tools", "", "| operation | tool | effect | entity |", "|---|---|---|---|"]
        lines += [f"| `{o.method.upper()} {o.path}` | `{o.tool}` | {o.effect} | `{o.entity}` |" for o in self.tools]
        if self.skipped:
            lines += ["", "## Skipped operations", "", "| operation | why |", "|---|---|"]
            lines += [f"| `{s.method.upper()} {s.path}` | {s.reason} |" for s in self.skipped]
        if self.notes:
            lines += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


class ImportResult(BaseModel):
    """A spec document (validated), its policy.md and the report of how it was made."""

    spec: dict[str, Any]
    report: ImportReport
    policy: str = Field(default="", description="policy.md drafted from the document")


def schema_type(schema: dict[str, Any]) -> str | None:
    """The schema's JSON type (3.1 `type: [x, "null"]` -> x); `properties` alone means object."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and "properties" in schema:
        return "object"
    if kind is None and "items" in schema:
        return "array"
    return kind


def _nullable(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return bool(schema.get("nullable")) or (isinstance(kind, list) and "null" in kind)


def is_scalar(schema: dict[str, Any]) -> bool:
    return schema_type(schema) in ("string", "integer", "number", "boolean") or (
        schema_type(schema) is None and "enum" in schema
    )


LIST_TEXT = "(the API's list, as comma-separated text)"  # a list column's note; its seed values follow it
NESTED_TEXT = "(the API's nested data, as text)"  # a nested object's or deeper list's column note


class Column(BaseModel):
    name: str
    type: str
    description: str
    enum: list[str] | None = None
    ref: str | None = None
    json_text: str | None = None  # "list" (an array of scalars) or "nested data", kept as text
    format: str | None = None
    example: Any = None
    minimum: float | None = None
    maximum: float | None = None
    source: str = ""  # the property path in the document
    part: str = ""  # the nested object it was flattened from (`invoice_address` of `invoice_address_city`)


class Entity(BaseModel):
    table: str
    schema_name: str
    description: str
    columns: dict[str, Column] = Field(default_factory=dict)
    primary_key: str = ""
    id_format: str = ""
    parents: dict[str, str] = Field(default_factory=dict, description="column -> parent table")
    added_key: bool = False
    seed_rows: int = SEED_ROWS  # one for the answer of a read that takes no input


def column_type(schema: dict[str, Any]) -> tuple[str, str | None]:
    kind, fmt = schema_type(schema), schema.get("format")
    if kind == "integer":
        return "integer", fmt
    if kind == "number":
        return "number", fmt
    if kind == "boolean":
        return "boolean", fmt
    if kind == "string" and fmt == "date":
        return "date", fmt
    if kind == "string" and fmt == "date-time":
        return "datetime", fmt
    return "string", fmt
