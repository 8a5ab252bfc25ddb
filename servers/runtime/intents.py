"""Intents: what a person wants from a tool, and how a person names one row of a table.

The offline task writer has data and schemas but no sense of how the users of a service talk. A spec carries
that knowledge as intents, written by someone who knows the domain (or derived from an API document's
summaries, or proposed by a model): per tool, who may ask for it, two or more ways a person asks, and what
they want to hear back; per table, how a person refers to one of its rows. The server serves them as its
`intents` resource, so the driver reads them over MCP like everything else it knows about a server.

A phrasing holds slots in braces, `{name}` or `{name:format}`:
- in a tool's `say`, `name` is one of the tool's params; a param that references a table (an id) is said
  through that table's `refer` phrasing ("cancel {reservation_id}" -> "cancel my stay at Casa Azul from
  Mar 04"); `{param.column}` says a column of the referenced row instead ("a room at {hotel_id.name}");
- in a table's `refer`, `name` is one of its columns; `{column.other}` follows a column's foreign key to a
  column of the referenced row ("the {starts_at:time} slot with Dr. {doctor_id.name}").
`format` is one of `SLOT_FORMATS`, or a strftime pattern starting with `%` ("{check_in:%b %d}").
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Asker = Literal["user", "customer", "internal"]
"""Who may ask for a tool: `user` the signed-in principal for themselves; `customer` a customer asking staff
(the principal) to act for them; `internal` nobody: work staff do on their own (receive stock), never a goal."""

SLOT_FORMATS = ("date", "day", "time", "datetime", "money", "number")
"""date: 12 March; day: Thursday 12 March; time: 10:30; datetime: Thursday 12 March at 10:30;
money: 1,250.00; number: a count or measure as a person says it."""

_SLOT = re.compile(r"\{([^{}]*)\}")
_SLOT_NAME = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$")


class Slot(NamedTuple):
    """One `{name:format}` of a phrasing: `name` (a param or column), `follow` (a column of the row it
    references, or None) and `format` (None: said as the value is)."""

    name: str
    follow: str | None
    format: str | None
    text: str  # the slot as written, braces included


def slots(phrasing: str) -> list[Slot]:
    """The slots of a phrasing, in order. Raises ValueError on a malformed one (unbalanced braces, a bad
    name, an unknown format), naming it."""
    if phrasing.count("{") != phrasing.count("}"):
        raise ValueError(f"unbalanced braces in {phrasing!r}")
    found: list[Slot] = []
    for match in _SLOT.finditer(phrasing):
        body = match.group(1)
        name, _, fmt = body.partition(":")
        if not _SLOT_NAME.match(name):
            raise ValueError(f"slot {match.group(0)!r}: a slot names a param or column, e.g. {{check_in}}")
        if fmt and fmt not in SLOT_FORMATS and not fmt.startswith("%"):
            raise ValueError(
                f"slot {match.group(0)!r}: format {fmt!r} is none of {', '.join(SLOT_FORMATS)} or a %-pattern"
            )
        head, _, follow = name.partition(".")
        found.append(Slot(head, follow or None, fmt or None, match.group(0)))
    return found


class Intent(BaseModel):
    """What a person wants from one tool."""

    model_config = ConfigDict(extra="forbid")

    asks: Asker
    say: list[str] = Field(
        default_factory=list, description="two or more ways a person asks for this, with {param} slots"
    )
    hear: dict[str, str] = Field(
        default_factory=dict,
        description="output field -> how the person names it when they want it back ('the new total')",
    )

    @field_validator("say")
    @classmethod
    def _parsable(cls, say: list[str]) -> list[str]:
        for phrasing in say:
            slots(phrasing)
        return say

    @model_validator(mode="after")
    def _enough_phrasings(self) -> Intent:
        if self.asks != "internal" and len(self.say) < 2:
            raise ValueError(f"asks: {self.asks} needs two or more `say` phrasings (got {len(self.say)})")
        return self


class ServerIntents(BaseModel):
    """The `intents` resource of a server: every tool's intent and every table's reference phrasings."""

    model_config = ConfigDict(extra="forbid")

    tools: dict[str, Intent] = Field(default_factory=dict)
    refer: dict[str, list[str]] = Field(default_factory=dict, description="table -> how a person names a row")
