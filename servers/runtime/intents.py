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

A slot whose value is one of a few codes (an enum: `duplicate`, `pass_fail`) or a yes/no is said through
`words`, how a person words each value ("I was charged twice", "with a full tank"): per tool for its params,
per table for its columns (the table's words also serve a param that fills that column, and a
`{param.column}` slot). A boolean's words are keyed `true` and `false`.
"""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple

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


Words = dict[str, dict[str, str]]
"""A param or column -> each of its values (an enum's code, `true`/`false`) -> how a person says it."""


def value_key(value: Any) -> str:
    """The key `words` gives a value under: `true`/`false` for a boolean, the value's text otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _keyed(words: Any) -> Any:
    """YAML reads `true:` as a boolean key: keep every key as the text `words` is looked up by."""
    if not isinstance(words, dict):
        return words
    return {
        str(name): {value_key(k): v for k, v in said.items()} if isinstance(said, dict) else said
        for name, said in words.items()
    }


def word_for(words: Words, name: str, value: Any) -> str | None:
    """How a person says `value` of `name` (a param, column or `param.column`); None when `words` has none.
    A boolean stored as 0/1 (SQLite) is looked up as `false`/`true` where those are the keys."""
    said = words.get(name)
    if not said:
        return None
    if value_key(value) in said:
        return said[value_key(value)]
    if isinstance(value, int) and value in (0, 1) and set(said) <= {"true", "false"}:
        return said.get("true" if value else "false")
    return None


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
    words: Words = Field(
        default_factory=dict,
        description="param -> value -> how a person says it ({reason: {duplicate: 'I was charged twice'}})",
    )

    @field_validator("words", mode="before")
    @classmethod
    def _word_keys(cls, words: Any) -> Any:
        return _keyed(words)

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
    words: dict[str, Words] = Field(
        default_factory=dict, description="table -> column -> value -> how a person says it (for `refer` slots)"
    )

    @field_validator("words", mode="before")
    @classmethod
    def _word_keys(cls, words: Any) -> Any:
        return {t: _keyed(w) for t, w in words.items()} if isinstance(words, dict) else words
