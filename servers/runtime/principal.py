"""Whom an episode acts for, and the instructions that tell the agent: date, time zone, principal, policy.

A server either acts for nobody in particular, or for one principal per episode: a `user` (the
authenticated person: tools act as them, other people's rows are invisible) or `staff` of a business
serving customers (the policy says how a customer is identified). The principal lives in the episode's
database (`database.EPISODE_TABLE`), so a fork, a reset and a persistent file all carry it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class PrincipalDefinition:
    """What a generated server declares about its principal. `table.column` lists the principals
    (user kind); else `values` does. `scopes`: table -> SQL condition (with `:principal`) a row
    must meet to be visible."""

    kind: str
    description: str
    default: str
    table: str | None = None
    column: str | None = None
    values: tuple[str, ...] = ()
    time_zone: str = "UTC"
    customers: str | None = None
    scopes: dict[str, str] = field(default_factory=dict)

    def known(self, seed: sqlite3.Connection, principal: str) -> bool:
        """Whether `principal` is one this server can act for."""
        if self.table is None or self.column is None:
            return principal in self.values
        sql = f"SELECT 1 FROM {self.table} WHERE {self.column} = ?"
        return seed.execute(sql, (principal,)).fetchone() is not None

    def examples(self, seed: sqlite3.Connection, n: int = 3) -> list[str]:
        if self.table is None or self.column is None:
            return list(self.values[:n])
        rows = seed.execute(f"SELECT {self.column} FROM {self.table} ORDER BY 1 LIMIT ?", (n,)).fetchall()
        return [str(r[0]) for r in rows]


def describe_now(now: str, time_zone: str) -> str:
    """`Monday 13 April 2026, 09:00 UTC (10:00 in Europe/Lisbon)`: the frozen clock as a person reads it."""
    moment = datetime.fromisoformat(now)
    text = f"{moment:%A} {moment.day} {moment:%B %Y, %H:%M} UTC"
    if time_zone != "UTC":
        local = moment.astimezone(ZoneInfo(time_zone))
        day = "" if local.date() == moment.date() else f"{local:%A} {local.day} {local:%B}, "
        text += f" ({day}{local:%H:%M} in {time_zone})"
    return text


def render_instructions(
    title: str,
    description: str,
    now: str,
    principal: PrincipalDefinition | None,
    acting_for: str | None,
    policy: str,
) -> str:
    """The MCP instructions of one episode: what the service is, now, whom the agent acts for, the policy."""
    zone = principal.time_zone if principal else "UTC"
    lines = [f"{title}. {description.strip()}", "", f"Now: {describe_now(now, zone)}. Time zone: {zone}."]
    if principal is not None:
        if principal.kind == "user":
            hidden = " Other people's private records do not exist for you." if principal.scopes else ""
            lines.append(
                f"You act for {acting_for}, {principal.description}. Act as them: never give someone else's "
                f"identity to a tool.{hidden}"
            )
        else:
            lines.append(f"You are {principal.description} ({acting_for}), serving customers.")
            if principal.customers:
                lines.append(f"Identify the customer first: {principal.customers}")
    if policy.strip():
        lines += ["", "Policy:", policy.strip()]
    return "\n".join(lines)
