"""The violation record the farm invariant checks share."""

from __future__ import annotations

from pydantic import BaseModel


class RowRef(BaseModel):
    """One row of one server's seed."""

    server: str
    table: str
    key: str

    def __str__(self) -> str:
        return f"{self.server}.{self.table}[{self.key}]"


class Violation(BaseModel):
    """A broken farm invariant and the rows that disagree."""

    rule: str
    message: str
    rows: list[RowRef]

    def __str__(self) -> str:
        return f"{self.rule}: {self.message} ({', '.join(map(str, self.rows))})"
