"""Policy checks: the rules a server's policy leaves to the agent, turned into checks a task is graded on.

A server lists the rules its tools do not enforce as the MCP resource `policy_rules` (JSON
`{"unenforced_rules": [{id, rule, tools}]}`). What a rule asks for is read from its wording, never
from its id or a server's tool names: *confirm* (read the change back and get a yes before the
write), *identify* (identify the customer before acting for them), *forbid* (do not ...). From a
grounded chain, synthesis adds a check for every gold write a rule governs, only where the gold
chain itself follows the rule (so the oracle scores 1.0):

- `must_confirm`: an assistant message asking to go ahead, answered by the user (not with a no),
  comes before each successful call of the tool; it states the numbers of the change (an amount, a
  quantity: the gold write's numeric arguments), as a read-back does.
- `must_identify`: a successful read on the same server whose arguments hold a value that identifies
  the customer (their name, email, date of birth, ...) comes before the write.
- `must_refuse`: none of the rule's tools succeeds (a request the policy forbids: a third party asking
  to act on a customer's records); the explanation is free text an LLM judge may grade.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from clients.connect import Connections
from clients.grounding import Grounded
from clients.tasks import PolicyCheck

RULES_RESOURCE = "policy_rules"
RuleKind = Literal["confirm", "identify", "forbid", "other"]

# An assistant asking to go ahead with an action ("Shall I book it?"), not asking for a detail
# ("Could you confirm your date of birth?").
ASKS_CONFIRMATION = re.compile(
    r"\b(shall i|should i|do you want me to|would you like me to|ok(ay)? to proceed|"
    r"go ahead|proceed|confirm (?!your\b)|is that (right|correct|ok(ay)?))",
    re.IGNORECASE,
)
DECLINES = re.compile(r"^\s*(no\b|nope\b|don'?t\b|do not\b|please don'?t\b|cancel that\b|stop\b)", re.IGNORECASE)
# Facts that identify a person (what a desk would match), as opposed to other things they know.
IDENTIFYING = re.compile(r"email|birth|dob|phone|licen[cs]e|passport", re.IGNORECASE)


class PolicyRule(BaseModel):
    """One rule a server's tools leave to the agent, with the kind its wording asks for."""

    server: str
    id: str
    rule: str
    tools: list[str] = Field(default_factory=list)
    kind: RuleKind = "other"


class _Listed(BaseModel):
    id: str
    rule: str
    tools: list[str] = Field(default_factory=list)


class _Resource(BaseModel):
    unenforced_rules: list[_Listed] = Field(default_factory=list)


def rule_kind(text: str) -> RuleKind:
    """What a rule asks for, from its wording."""
    if re.search(r"\bidentif|\bverify (the |their )?identity", text, re.IGNORECASE):
        return "identify"
    if re.search(r"\bconfirm|\bexplicit yes|\bget a (clear )?yes|\bread .{0,40}\bback\b", text, re.IGNORECASE):
        return "confirm"
    if re.match(r"\s*(do not|don't|never)\b", text, re.IGNORECASE):
        return "forbid"
    return "other"


async def load_rules(connections: Connections, server: str) -> list[PolicyRule]:
    """The server's unenforced rules over MCP; [] for a server that lists none (a foreign server)."""
    text = await connections.resource_text(server, RULES_RESOURCE)
    if not text:
        return []
    try:
        listed = _Resource.model_validate(json.loads(text))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ValueError(
            f"{server}: the resource {RULES_RESOURCE!r} is not {{unenforced_rules: [...]}}: {exc}"
        ) from exc
    return [
        PolicyRule(server=server, id=r.id, rule=r.rule, tools=r.tools, kind=rule_kind(r.rule))
        for r in listed.unenforced_rules
    ]


def asks_confirmation(text: str) -> bool:
    return "?" in text and ASKS_CONFIRMATION.search(text) is not None


def declines(text: str) -> bool:
    return DECLINES.search(text) is not None


def identifying_values(name: str, email: str | None, facts: dict[str, Any]) -> list[str]:
    """What identifies a person at a desk: their name (or a part of it, as a first or last name field holds),
    email and facts named like identity (date of birth, phone...); not other names they know (a product's)."""
    parts = set(name.split())
    values = [name, email or ""] + [
        str(v)
        for k, v in facts.items()
        if v not in (None, "") and (IDENTIFYING.search(k) or ("name" in k.lower() and str(v) in parts))
    ]
    return sorted({v for v in values if len(v) >= 3})


def flat_values(value: Any) -> Iterable[str]:
    """Every scalar of an argument object, as text (lists and nested objects included)."""
    if isinstance(value, dict):
        for inner in value.values():
            yield from flat_values(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from flat_values(inner)
    elif value is not None:
        yield str(value)


def _norm(value: str) -> str:
    return re.sub(r"\s+", " ", value.strip().lower())


def identifies(arguments: Any, values: Sequence[str]) -> bool:
    wanted = {_norm(v) for v in values}
    return any(_norm(v) in wanted for v in flat_values(arguments))


def governing(rules: Sequence[PolicyRule], kind: RuleKind, tool: str) -> PolicyRule | None:
    return next((r for r in rules if r.kind == kind and tool in r.tools), None)


def checks_for(grounded: Grounded, rules: dict[str, list[PolicyRule]]) -> list[PolicyCheck]:
    """The checks a grounded chain exercises: one per (rule, governed gold write), where the chain follows it."""
    persona = grounded.persona
    who = identifying_values(persona.name, persona.email, persona.facts)
    checks: list[PolicyCheck] = []
    seen: set[tuple[str, str, str]] = set()
    for index, call in enumerate(grounded.calls):
        if not call.is_write:
            continue
        server_rules = rules.get(call.server, [])
        confirm = governing(server_rules, "confirm", call.tool)
        if confirm is not None and (confirm.id, call.server, call.tool) not in seen:
            seen.add((confirm.id, call.server, call.tool))
            amounts = [
                str(v) for v in call.arguments.values() if isinstance(v, int | float) and not isinstance(v, bool)
            ]
            checks.append(
                PolicyCheck(
                    rule=confirm.rule,
                    rule_id=confirm.id,
                    kind="must_confirm",
                    server=call.server,
                    tool=call.tool,
                    values=amounts,
                )
            )
        identify = governing(server_rules, "identify", call.tool)
        if identify is None or (identify.id, call.server, call.tool) in seen:
            continue
        lookups = [
            earlier
            for earlier, before in enumerate(grounded.calls[:index])
            if before.server == call.server and not before.is_write
            if any(how == "persona" for how in grounded.sources[earlier].values())
        ]
        if lookups and any(identifies(grounded.calls[i].arguments, who) for i in lookups):
            seen.add((identify.id, call.server, call.tool))
            checks.append(
                PolicyCheck(
                    rule=identify.rule,
                    rule_id=identify.id,
                    kind="must_identify",
                    server=call.server,
                    tool=call.tool,
                    values=who,
                )
            )
    return checks
