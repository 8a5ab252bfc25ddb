"""What a tool does to the state, and the MCP annotation hints that follow from it.

Generated code declares only the effect (plus the rare override); the runtime derives all four hints
from it, so the hints and the effect cannot disagree.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Effect = Literal["search", "get", "create", "update", "delete", "custom"]
READ_EFFECTS: frozenset[Effect] = frozenset({"search", "get"})
# Replaying an update or delete leaves the state as the first call did; a create adds another row.
IDEMPOTENT_WRITES: frozenset[Effect] = frozenset({"update", "delete"})
# Writes that may overwrite or remove what is there (a create only adds).
DESTRUCTIVE_WRITES: frozenset[Effect] = frozenset({"update", "delete", "custom"})


class Hints(BaseModel):
    """All four MCP tool annotation hints, explicit (a client must not have to guess the defaults)."""

    model_config = ConfigDict(frozen=True)

    read_only_hint: bool
    destructive_hint: bool
    idempotent_hint: bool
    open_world_hint: bool = False


def effect_hints(
    effect: Effect, *, read_only: bool | None = None, destructive: bool | None = None, idempotent: bool | None = None
) -> Hints:
    """The hints `effect` implies; `read_only` marks a custom tool that writes nothing, the other two
    override the derived value. A read-only tool is never destructive."""
    reads_only = effect in READ_EFFECTS if read_only is None else read_only
    if destructive is None:
        destructive = effect in DESTRUCTIVE_WRITES
    if idempotent is None:
        idempotent = reads_only or effect in IDEMPOTENT_WRITES
    return Hints(
        read_only_hint=reads_only,
        destructive_hint=destructive and not reads_only,
        idempotent_hint=idempotent,
    )
