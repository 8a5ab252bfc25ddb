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
  the customer (their name, email, date of birth, ...) comes before the write. Where a staff server's
  rule names what identifies a customer, every governed write gets one, with exactly those values
  (`identify`: the persona's values, one hop away where the rule says so: a card's last four digits),
  and the gold is given the lookup that matches them when its chain had none.
- `must_refuse`: none of the rule's tools succeeds (a request the policy forbids: a third party asking
  to act on a customer's records); the explanation is free text an LLM judge may grade.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from envfarm.clients.connect import Connections
from envfarm.clients.graph import ToolSpec, is_id_like, output_of
from envfarm.clients.grounding import (
    ArgSource,
    Drop,
    Grounded,
    Grounder,
    IdentityValue,
    ServerWorld,
    persona_rows,
)
from envfarm.clients.sampling import Role, Step
from envfarm.clients.tasks import GoldCall, PolicyCheck
from envfarm.servers.runtime.control import ControlError
from envfarm.servers.runtime.identification import identification, identification_parts

RULES_RESOURCE = "policy_rules"
RuleKind = Literal["confirm", "identify", "forbid", "other"]

# An assistant asking to go ahead with an action ("Shall I book it?", "Is it OK if I cancel it now?", "Can you
# confirm you want me to pay it?"), as opposed to asking for a detail ("Could you confirm your date of birth?").
ASKS_CONFIRMATION = re.compile(
    r"\b(shall i|should i|do you want me to|would you like me to|want me to|(?:is it|is that|would it be) "
    r"(?:ok(?:ay)?|alright|all right|fine)|ok(?:ay)? (?:if i|for me to|to)|(?:can|may) i (?:go ahead|proceed|"
    r"(?!have|get|ask|take|see|check|look|help)\w+ \w+)|good to go|do you approve|approve\?|"
    r"what you(?:'d| would) like|go ahead|proceed|confirm (?:that )?(?:you|i|this|the change|we)\b|"
    r"(?:is|does) (?:that|this|everything|all (?:of )?that) (?:look |sound )?(?:right|correct|ok(?:ay)?|good)|"
    r"sounds? good|(?:are you|you're) (?:sure|happy)|ready for me to|do i have your (?:ok|okay|go-ahead|permission)|"
    r"any objections?|green light|can you confirm (?:that )?(?:you|i|this)|do you confirm|confirm\?|"
    r"(?:is )?(?:this|that) what you (?:want|wanted|meant)|(?:yes|ok|okay|right|correct)\?\s*$)",
    re.IGNORECASE,
)
# The same, said without a question mark: "Please confirm and I'll go ahead.", "Let me know if I should proceed."
REQUESTS_CONFIRMATION = re.compile(
    r"\b(please confirm(?! your| the (?:email|name|date|phone|number|account))|let me know if (?:you(?:'d| would)? "
    r"(?:like|want) me to|i should|that'?s (?:ok|okay|right|correct|fine))|(?:reply|say|answer) (?:yes|ok)|"
    r"once you confirm|with your (?:ok|okay|go-ahead)|if you(?:'re| are) happy (?:for me )?to)",
    re.IGNORECASE,
)
# "Anything else I can help with?" waits on nothing: the request is answered.
ANYTHING_ELSE = re.compile(
    r"\b(anything else|something else|any other (?:questions?|requests?|way)|else (?:i|we) can|further questions?|"
    r"help you with (?:anything|something))\b",
    re.IGNORECASE,
)
# An assistant asking the user for a detail: who they are, which record they mean.
ASKS_DETAIL = re.compile(
    r"\b(what(?:'s| is| was| are) (?:your|the)|which (?:one|\w+)|(?:could|can|would|will) you (?:please )?"
    r"(?:tell|give|send|share|provide|confirm|let me know|spell|remind)|(?:may|can|could) i (?:have|get|ask|take)|"
    r"please (?:tell|give|share|provide|confirm|send)|do you (?:have|know|remember)|"
    r"i(?:'ll| will)? need (?:your|the|a|to know)|what (?:\w+ ){0,3}(?:is it|was it|do you)|"
    r"how (?:many|much|would)|when (?:is|was|did|do|does|should)|who (?:is|was|am i))",
    re.IGNORECASE,
)
# The same, said as a request: "For security, please state your full name and date of birth."
REQUESTS_DETAIL = re.compile(
    r"\b((?:please|kindly) (?:provide|give|state|share|tell|send|verify|enter|spell|let me know)|(?:please|kindly) "
    r"confirm (?:your|the) (?:\w+ ){0,2}(?:e-?mail|name|date|birth|phone|number|address|account|reference|code|id)|"
    r"i(?:'ll| will)? need (?:your|the)|i(?:'d| would) need (?:your|the)|send me (?:your|the))\b",
    re.IGNORECASE,
)
WH_QUESTION = re.compile(
    r"^\W*(?:(?:and|so|also|sure|ok(?:ay)?|great|thanks|first|then),?\s+)*(what|which|where|when|who|whom|how)\b",
    re.IGNORECASE,
)
# What a person's details are called: a question naming one of them asks for it (not for a go-ahead).
DETAIL_NAMES = re.compile(
    r"\b(e-?mail|date of birth|dob|birth ?date|birthday|born|phone|number|name|address|postcode|zip|"
    r"licen[cs]e|passport|member(?:ship)?|card|account|reference|ref|code|id\b|identity|details?|last (?:four|4))",
    re.IGNORECASE,
)
DECLINES = re.compile(
    r"^\s*(no\b|nope\b|nah\b|don'?t\b|do not\b|please don'?t\b|cancel that\b|stop\b|wait\b|hold on\b|"
    r"not (?:now|yet|that)\b|that'?s not (?:right|what)|i (?:don'?t|do not) want)",
    re.IGNORECASE,
)
# An assistant declining a request, and saying why.
REFUSES = re.compile(
    r"\b(can(?:no|')?t|cannot|can not|unable to|not able to|won't be able|(?:am|are|is) not (?:allowed|permitted|"
    r"authori[sz]ed)|not (?:allowed|permitted) to|must decline|have to decline|(?:won't|will not) (?:be )?"
    r"(?:do|make|change|proceed|process|book|cancel|update)|not something (?:i|we)\b|i'?m afraid not|i'?m not in a "
    r"position|only (?:\w+ ){1,4}(?:can|may)\b|need to (?:come|contact|call|ask|do|make) (?:this|it|us|the)|"
    r"have to (?:come|contact|call|ask|do|make) (?:this|it|us|the)|(?:must|should) (?:contact|call|ask|come|"
    r"do this|make this|request)|(?:can|may) only|(?:has|have|needs?|must) to come from|not in a position|"
    r"no can do|(?:isn't|is not|not) possible (?:for me )?to|not able to help|decline)",
    re.IGNORECASE,
)
REASON = re.compile(
    r"\b(because|since|as (?:you|they|he|she|it|the|i|we|this)|due to|polic(?:y|ies)|rules?|only the|"
    r"account ?holder|behalf|themselves|himself|herself|their own|his own|her own|in person|identit(?:y|ies)|"
    r"identify|verif\w*|authori[sz]\w*|permission|consent|privacy|private|secur\w*|protect\w*|"
    r"not the (?:account|owner|customer|patient|member|student|holder)|directly|someone else|another person|"
    r"third part(?:y|ies)|for (?:them|him|her)|owns?|owner|the person (?:who|whose)|"
    r"(?:their|his|her) (?:own )?account)\b",
    re.IGNORECASE,
)
# An assistant telling the user a change is made ("Done", "I've cancelled it", "It is now paid").
DONE_VERBS = (
    r"(?:updated|changed|cancell?ed|booked|paid|sent|created|deleted|removed|added|scheduled|rescheduled|moved|"
    r"archived|posted|submitted|refunded|processed|completed|made|transferred|recorded|issued|voided|assigned|closed|"
    r"opened|dropped|renamed|shared|saved|placed|replied|registered|enrolled|subscribed|unsubscribed|approved|"
    r"returned|renewed|confirmed|set up|logged|started|filed|noted|checked (?:you|them|him|her) in)"
)
CLAIMS_SUCCESS = re.compile(
    r"((?:^|[.!?:]\s+)done\b|\b(?:it'?s|it is|that'?s|that is|all|now|is|are|was|were)\s+done\b|all set|"
    rf"taken care of|\b(?:i'?ve|i have|i just|has been|have been|is now|are now|was|were|successfully|now)\s+"
    rf"(?:\w+\s+){{0,2}}?{DONE_VERBS}\b|\b(?:i|we) (?:went ahead and |just )?{DONE_VERBS}\b|"
    # "Paid: $68.32", "Cancelled your booking"
    rf"(?:^|[.!?]\s+){DONE_VERBS}(?::|\s+(?:your|the|it|them|just|now|\$|\d|[A-Z]{{2,}}[-_]?\d)))",
    re.IGNORECASE,
)
NEGATIONS = frozenset({"not", "never", "nothing", "no", "without", "haven't", "hasn't", "won't", "can't", "cannot"})
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


def requests_in(text: str) -> list[str]:
    """The sentences of `text` that ask something: those ending with a question mark, and requests said
    without one ("Please confirm and I'll go ahead.", "Please state your date of birth.")."""
    asked = [q.strip() for q in re.findall(r"[^.!?\n]*\?", text) if q.strip()]
    return asked + [
        sentence.strip()
        for sentence in re.findall(r"[^.!?\n]+[.!]?", text)
        if not sentence.rstrip().endswith("?")
        and (REQUESTS_CONFIRMATION.search(sentence) or REQUESTS_DETAIL.search(sentence))
    ]


def question_kind(question: str) -> str | None:
    """One question's kind: `detail` (asks for a fact: "Could you confirm the email on your account?",
    "What text would you like me to post?"), `confirmation` (asks to go ahead: "Is it OK if I cancel it now?"),
    or None (anything else)."""
    if ANYTHING_ELSE.search(question):
        return None
    if _detail_question(question) or WH_QUESTION.match(question) or REQUESTS_DETAIL.search(question):
        return "detail"
    if ASKS_CONFIRMATION.search(question) or REQUESTS_CONFIRMATION.search(question):
        return "confirmation"
    if ASKS_DETAIL.search(question) or DETAIL_NAMES.search(question):
        return "detail"
    return None


def _detail_question(question: str) -> bool:
    """ "Can you confirm your email?" asks for a detail; "Can you confirm you want me to cancel it?" does not."""
    asks_for = re.search(
        r"\b(confirm|give|tell|share|provide|have|get|spell)\s+(?:me\s+)?(?:with\s+)?(?:your|the|his|her|their)\b",
        question,
        re.IGNORECASE,
    )
    return bool(
        asks_for and DETAIL_NAMES.search(question) and not re.search(r"\b(want|like) me to\b", question, re.IGNORECASE)
    )


def asks_detail(text: str) -> bool:
    """Asks the user for a detail (who they are, which record)."""
    return any(question_kind(q) == "detail" for q in requests_in(text))


def asks_confirmation(text: str) -> bool:
    """Asks to go ahead with an action. A question for a detail is not one, even when it says "confirm"."""
    return any(question_kind(q) == "confirmation" for q in requests_in(text))


def asks_user(text: str) -> bool:
    """Waits on the user: asks to go ahead, or asks for a detail."""
    return any(question_kind(q) is not None for q in requests_in(text))


def declines(text: str) -> bool:
    return DECLINES.search(text) is not None


def refuses(text: str) -> bool:
    """Declines the request."""
    return REFUSES.search(text) is not None


def gives_reason(text: str) -> bool:
    """Says why (a rule, whose records they are, who may ask)."""
    return REASON.search(text) is not None


def claims_success(text: str) -> bool:
    """Tells the user a change was made; "nothing has been changed" and "I haven't cancelled it" do not."""
    for match in CLAIMS_SUCCESS.finditer(text):
        clause = re.split(r"[.!?,;:\n]|\bbut\b", text[: match.start()])[-1]
        after = re.split(r"[.!?,;:\n]", text[match.end() :])[0].lower().split()[:2]
        words = clause.lower().split()[-3:] + match.group(0).lower().split() + after
        if not NEGATIONS & set(words) and not any(w.endswith("n't") for w in words):
            return True
    return False


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


def identity_values(
    world: ServerWorld, rule: PolicyRule, persona: Any, calls: Sequence[GoldCall]
) -> list[IdentityValue]:
    """The values of the alternative `identity_alternatives` puts first."""
    alternatives = identity_alternatives(world, rule, persona, calls)
    return alternatives[0] if alternatives else []


def identity_alternatives(
    world: ServerWorld, rule: PolicyRule, persona: Any, calls: Sequence[GoldCall]
) -> list[list[IdentityValue]]:
    """The persona's values for the parts of one alternative of an identification rule: a column of their own
    row (full name, date of birth), else of a row one hop from it (a card on file, an order), the one the gold
    acts on where there is one. Of the alternatives the persona can answer, the one the gold's calls already
    use most ('card number, or full name and email'). Empty when none can be answered."""
    tables = {t: list(rows[0]) for t, rows in world.tables.items() if rows}
    hops = [persona_rows(world, persona, n) for n in range(3)] if persona.email else []
    mine = [c for c in calls if c.server == world.server]
    gold = json.dumps([[c.arguments, c.output] for c in mine], default=str)
    acted = json.dumps([c.arguments for c in mine], default=str)  # the rows the gold acts on (the card it charges)
    asked = [v for c in mine for v in flat_values(c.arguments)]
    complete: list[tuple[int, int, list[IdentityValue]]] = []
    for alternative in identification(rule.rule, tables):
        found: list[IdentityValue] = []
        for part in alternative:
            if part.table is None or part.column is None:
                break
            key = world.keys.get(part.table, "")
            # the persona's own row, else one or two hops from it (their card, their parcel's shipment); where
            # the customer is no person of the data (a store ordering from a warehouse), the row the gold acts on
            theirs = next((h[part.table] for h in hops if h.get(part.table)), None)
            if theirs is None:
                theirs = [r for r in world.tables.get(part.table, []) if isinstance(r.get(key), str) and r[key] in gold]
            rows = [r for r in theirs if r.get(part.column) not in (None, "")]
            if not rows:
                break
            tied = [r for r in rows if isinstance(r.get(key), str) and r[key] in acted] or [
                r for r in rows if isinstance(r.get(key), str) and r[key] in gold
            ]
            found.append(
                IdentityValue(
                    server=world.server,
                    table=part.table,
                    column=part.column,
                    phrase=part.phrase,
                    value=(tied or rows)[0][part.column],
                    own=bool(hops and hops[0].get(part.table)),
                )
            )
        else:
            used = sum(1 for v in found if _norm(str(v.value)) in {_norm(a) for a in asked})
            complete.append((used, -len(found), found))
    # the one the gold's calls use most first (stable: the rule's own order breaks ties)
    return [found for *_, found in sorted(complete, key=lambda c: (-c[0], -c[1]))]


def shows(call: GoldCall, value: Any) -> bool:
    """Whether a call's arguments or output show `value` (the agent can match what the user gives against it)."""
    wanted = _norm(str(value))
    return any(_norm(v) == wanted for v in [*flat_values(call.arguments), *flat_values(call.output)])


def _found_in(output: Any, field: str) -> list[Any]:
    """The values of `field` anywhere in an output."""
    hits: list[Any] = []
    if isinstance(output, dict):
        for key, value in output.items():
            if key == field and isinstance(value, str | int | float) and not isinstance(value, bool):
                hits.append(value)
            else:
                hits += _found_in(value, field)
    elif isinstance(output, list):
        for item in output:
            hits += _found_in(item, field)
    return hits


def _lookups(
    specs: Sequence[ToolSpec], value: IdentityValue, calls: Sequence[GoldCall], keyed: bool
) -> list[tuple[ToolSpec, dict[str, Any], list[int]]]:
    """Reads that look the customer up by `value` (`keyed`), or that show it, filled from earlier outputs (a
    card's last four digits: the cards of the customer found by email); each with the calls that fed it."""
    options: list[tuple[ToolSpec, dict[str, Any], list[int]]] = []
    for spec in specs:
        if not spec.read_only:
            continue
        if keyed:
            for param in spec.params:
                where = param.column or param.ref or ""
                if (param.name == value.column or where == f"{value.table}.{value.column}") and not any(
                    p.required and p.name != param.name for p in spec.params
                ):
                    options.append((spec, {param.name: value.value}, []))
            continue
        if value.column not in {f.name for f in spec.outputs}:
            continue
        if not any(p.required for p in spec.params):
            continue  # a read of everything shows the value among everyone's: no match of this customer
        args: dict[str, Any] = {}
        fed: list[int] = []
        for param in (p for p in spec.params if p.required):
            field = (param.ref or "").rpartition(".")[2] or param.name
            source = next(
                ((i, v) for i in range(len(calls) - 1, -1, -1) for v in _found_in(calls[i].output, field)), None
            )
            if source is None:
                break
            fed.append(source[0])
            args[param.name] = source[1]
        else:
            options.append((spec, args, sorted(set(fed))))
    return options


async def _insert_lookup(
    grounder: Grounder, grounded: Grounded, position: int, value: IdentityValue, keyed: bool
) -> Grounded:
    """The gold with a read put before call `position` that looks the customer up by `value`, or shows it;
    `Drop` when no read of the server can. Reads change nothing, so the expected state stays."""
    server = value.server
    if any(c.server == server and c.is_write for c in grounded.calls[:position]):
        raise Drop("identification lookup after a write", server)
    specs = grounder.catalog.by_server.get(server, [])
    for spec, args, fed in _lookups(specs, value, grounded.calls[:position], keyed):
        held = await grounder.pool.take(server, grounded.persona.email or None)
        try:
            result = await held[0].call_tool(spec.name, args)
        except ControlError as exc:
            await grounder.pool.give(server, held, clean=False)
            raise Drop("server unavailable", f"{server}.{spec.name}: {exc}", server) from exc
        await grounder.pool.give(server, held, clean=True)
        if result.is_error:
            continue
        call = GoldCall(
            server=server,
            tool=spec.name,
            arguments=args,
            output=output_of(result),
            turn=grounded.calls[position].turn,
            is_write=False,
            uses=fed,
        )
        if not shows(call, value.value):
            continue
        return _inserted(grounded, position, call, "lookup", dict.fromkeys(args, "output" if fed else "persona"))
    raise Drop("no lookup identifies the customer", f"{server}: {value.phrase}")


def _inserted(grounded: Grounded, position: int, call: GoldCall, role: Role, sources: dict[str, ArgSource]) -> Grounded:
    """The gold with `call` put before call `position`: every later index (a call's uses, a step's binds)
    shifted past it."""

    def shift(i: int) -> int:
        return i + 1 if i >= position else i

    calls = [c.model_copy(update={"uses": [shift(u) for u in c.uses]}) for c in grounded.calls]
    steps = [
        s.model_copy(update={"binds": {n: b.model_copy(update={"step": shift(b.step)}) for n, b in s.binds.items()}})
        for s in grounded.chain.steps
    ]
    steps.insert(position, Step(server=call.server, tool=call.tool, turn=call.turn, role=role))
    calls.insert(position, call)
    all_sources = list(grounded.sources)
    all_sources.insert(position, sources)
    targets = list(grounded.targets)
    targets.insert(position, None)
    return grounded.model_copy(
        update={
            "calls": calls,
            "chain": grounded.chain.model_copy(update={"steps": steps}),
            "sources": all_sources,
            "targets": targets,
        }
    )


# ---------------------------------------------------------------- reads the policy puts before a write


class RequiredRead(BaseModel):
    """A read the policy says comes before a write, naming the read tool in brackets: "Tell the guest the fee
    (get_cancellation_fee) before cancelling.", "Quote before booking (quote_stay)". The gold makes it, and the
    user asks to hear what it returns, so a task checks that the agent tells it before acting."""

    server: str
    rule: str = Field(description="the policy clause that asks for the read")
    read: str
    writes: list[str] = Field(description="the write tools the clause governs")


# "before booking", "before you ship or redirect to it": the verbs a clause puts its read before
_BEFORE = re.compile(r"\bbefore (?:you |they |we )?([a-z]+)(?:,? or ([a-z]+))?", re.IGNORECASE)
_BRACKETED = re.compile(r"\(([^)]*)\)")


def _stem(verb: str) -> str:
    """'cancelling' -> 'cancel', 'shipping' -> 'ship', 'booking' -> 'book', 'redirect' -> 'redirect'."""
    verb = verb.lower()
    if verb.endswith("ing") and len(verb) > 5:
        verb = verb[:-3]
        if len(verb) > 2 and verb[-1] == verb[-2]:
            verb = verb[:-1]
    return verb


def _does(spec: ToolSpec, stem: str) -> bool:
    """Whether a tool's description opens with the verb ('Book a room for a guest.' does 'book'; 'Change ...'
    does 'chang'): what a policy's gerund names, read from the tool's own words, never from its name."""
    first = re.match(r"\s*([A-Za-z]+)", spec.description)
    word = first[1].lower() if first else ""
    return len(stem) >= 3 and (word == stem or (word.startswith(stem) and len(word) - len(stem) <= 1))


def required_reads(server: str, policy: str, specs: Sequence[ToolSpec]) -> list[RequiredRead]:
    """The reads `policy` (the server's instructions) puts before writes: per clause, a read-only tool named in
    brackets and the writes whose description opens with a verb the clause puts it before. Clauses naming no
    tool of the server, or no write that does the verb, give nothing (a server's rules in prose stay prose)."""
    reads = {s.name: s for s in specs if s.read_only}
    writes = [s for s in specs if not s.read_only]
    found: list[RequiredRead] = []
    for line in policy.splitlines():
        for clause in re.split(r"[;:]|\.\s|\band\b", line):
            named = [
                t for group in _BRACKETED.findall(clause) for t in re.findall(r"[a-z_][a-z0-9_]*", group) if t in reads
            ]
            verbs = [_stem(v) for match in _BEFORE.finditer(clause) for v in match.groups() if v]
            governed = sorted({w.name for w in writes for v in verbs if _does(w, v)})
            if governed:
                rule = clause.strip(" .-")
                found += [RequiredRead(server=server, rule=rule, read=r, writes=governed) for r in dict.fromkeys(named)]
    return found


def _rows_with(output: Any, field: str) -> list[dict[str, Any]]:
    """Every object anywhere in an output that has `field`."""
    if isinstance(output, list):
        return [r for item in output for r in _rows_with(item, field)]
    if not isinstance(output, dict):
        return []
    here = [output] if field in output else []
    return here + [r for value in output.values() for r in _rows_with(value, field)]


def _read_arguments(spec: ToolSpec, write: GoldCall, earlier: Sequence[GoldCall]) -> dict[str, Any] | None:
    """The required read's arguments: each the write's own argument of that name, else the field of that name of
    the row an earlier output shows for what the write acts on (the room type of the room being booked); None
    when a required one has neither."""
    keys = {(k, v) for k, v in write.arguments.items() if isinstance(v, str) and len(v) > 2}
    args: dict[str, Any] = {}
    for param in spec.params:
        if write.arguments.get(param.name) is not None:
            args[param.name] = write.arguments[param.name]
            continue
        # the same thing under a qualified name: validate_address(address) for a redirect's new_address
        named = [v for k, v in write.arguments.items() if k.endswith(f"_{param.name}") and v is not None]
        if len(named) == 1:
            args[param.name] = named[0]
            continue
        if not (param.ref or is_id_like(param.name)):
            if param.required:
                return None  # free text (an address) is never taken from some other row that has one
            continue
        field = (param.ref or "").rpartition(".")[2] or param.name
        rows = [
            r
            for call in reversed(earlier)
            for r in _rows_with(call.output, field)
            if keys & {(k, v) for k, v in r.items() if isinstance(v, str)}
            and isinstance(r[field], str | int | float)
            and not isinstance(r[field], bool)
        ]
        if rows:
            args[param.name] = rows[0][field]
        elif param.required:
            return None
    return args


async def require_reads(grounder: Grounder, grounded: Grounded, reads: Sequence[RequiredRead]) -> Grounded:
    """The gold with each read the policy puts before a write made just before the first write it governs
    (the fee looked up before the cancellation, the quote before the booking), where the gold lacks it. Only
    before the server's first write, so the read sees the state the write acts on; a read that fails or cannot
    be filled is left out (the task stands as it was)."""
    for required in reads:
        position = next(
            (
                i
                for i, c in enumerate(grounded.calls)
                if c.server == required.server and c.is_write and c.tool in required.writes
            ),
            None,
        )
        if position is None:
            continue
        before = grounded.calls[:position]
        if any(c.server == required.server and (c.is_write or c.tool == required.read) for c in before):
            continue
        spec = next((s for s in grounder.catalog.by_server.get(required.server, []) if s.name == required.read), None)
        write = grounded.calls[position]
        args = _read_arguments(spec, write, before) if spec is not None else None
        if args is None:
            continue
        held = await grounder.pool.take(required.server, grounded.persona.email or None)
        try:
            result = await held[0].call_tool(required.read, args)
        except ControlError as exc:
            await grounder.pool.give(required.server, held, clean=False)
            raise Drop("server unavailable", f"{required.server}.{required.read}: {exc}", required.server) from exc
        await grounder.pool.give(required.server, held, clean=True)
        if result.is_error:
            continue
        said = grounded.sources[position]
        # fed by the last earlier call whose output shows each value (the room's type, the guest found)
        uses = sorted(
            {
                max(shown)
                for value in args.values()
                if isinstance(value, str) and len(value) > 2
                if (shown := [i for i in range(position) if json.dumps(value) in json.dumps(before[i].output)])
            }
        )
        call = GoldCall(
            server=required.server,
            tool=required.read,
            arguments=args,
            output=output_of(result),
            turn=write.turn,
            is_write=False,
            uses=uses,
        )
        sources: dict[str, ArgSource] = {n: said.get(n, "output") for n in args}
        grounded = _inserted(grounded, position, call, "required", sources)
    return grounded


async def _rekey(
    grounder: Grounder, grounded: Grounded, position: int, values: Sequence[IdentityValue]
) -> Grounded | None:
    """The gold with its lookup of the persona (by something the policy does not name: their name where it
    asks for email and a card) keyed on a value the policy names instead, where the same read finds the same
    rows by it; else None. A second lookup of the same person would be padding."""
    server = values[0].server
    specs = {s.name: s for s in grounder.catalog.by_server.get(server, [])}
    for index, call in enumerate(grounded.calls[:position]):
        if call.server != server or call.is_write or "persona" not in grounded.sources[index].values():
            continue
        spec = specs.get(call.tool)
        if spec is None:
            continue
        for value in (v for v in values if v.own):
            options = [o for o in _lookups([spec], value, [], keyed=True) if o[0].name == call.tool]
            if not options:
                continue
            held = await grounder.pool.take(server, grounded.persona.email or None)
            try:
                result = await held[0].call_tool(call.tool, options[0][1])
            except ControlError:
                await grounder.pool.give(server, held, clean=False)
                return None
            await grounder.pool.give(server, held, clean=True)
            if result.is_error or output_of(result) != call.output:
                continue
            calls = list(grounded.calls)
            calls[index] = call.model_copy(update={"arguments": options[0][1]})
            sources = list(grounded.sources)
            sources[index] = dict.fromkeys(options[0][1], "persona")
            return grounded.model_copy(update={"calls": calls, "sources": sources})
    return None


async def identify(
    grounder: Grounder, grounded: Grounded, rules: dict[str, list[PolicyRule]], servers: Iterable[str]
) -> Grounded:
    """The grounded chain with what each of `servers` (staff desks) identifies the persona by, per its policy's
    identification rule, and a gold that looks them up by it before the first write the rule governs: a read
    keyed on one of the values (find the driver by name), and every value shown by a read before that write
    (the card ending 4242 among their cards). `Drop` when the persona has no such values or nothing finds them."""
    wanted = set(servers)
    for server in grounded.chain.servers:
        rule = next((r for r in rules.get(server, []) if r.kind == "identify"), None)
        if server not in wanted or rule is None or not any(c.server == server for c in grounded.calls):
            continue
        if not identification_parts(rule.rule)[1]:
            continue  # "identify the customer" naming no field: nothing to hold back or match
        alternatives = identity_alternatives(grounder.worlds[server], rule, grounded.persona, grounded.calls)
        if not alternatives:
            raise Drop("nothing the policy identifies the customer by", server)
        writes = [i for i, c in enumerate(grounded.calls) if c.server == server and c.is_write and c.tool in rule.tools]
        if not writes:
            # No write the rule governs (a quote, a question): who they are is their own name, birth date or
            # email, never a code of some other row of theirs (the confirmation code of an unrelated stay)
            own = [a for a in alternatives if all(v.own for v in a)]
            if not own:
                continue
            alternatives = own + [a for a in alternatives if a not in own]
        values = alternatives[0]
        # the values of the other alternatives identify them too ("card number, or full name and email"): an
        # agent that asks for those instead follows the policy as well
        others = [
            v.model_copy(update={"chosen": False})
            for alternative in alternatives[1:]
            for v in alternative
            if all(v.value != w.value for w in values)
        ]
        grounded = grounded.model_copy(update={"identification": [*grounded.identification, *values, *others]})
        if not writes:
            continue
        first = writes[0]
        said = [str(v.value) for v in values]
        before = grounded.calls[:first]
        if not any(c.server == server and not c.is_write and identifies(c.arguments, said) for c in before):
            rekeyed = await _rekey(grounder, grounded, first, values)
            for value in [] if rekeyed is not None else sorted(values, key=lambda v: not v.own):
                try:
                    grounded = await _insert_lookup(grounder, grounded, first, value, keyed=True)
                except Drop:
                    continue
                first += 1
                break
            else:
                if rekeyed is None:
                    raise Drop("no lookup identifies the customer", server)
                grounded = rekeyed
        for value in values:
            if not any(c.server == server and not c.is_write and shows(c, value.value) for c in grounded.calls[:first]):
                try:  # their own value (an email): found by it, not shown in a listing of everyone
                    grounded = await _insert_lookup(grounder, grounded, first, value, keyed=value.own)
                except Drop:
                    if not value.own:
                        raise
                    grounded = await _insert_lookup(grounder, grounded, first, value, keyed=False)
                first += 1
    return grounded


def read_back_numbers(arguments: dict[str, Any]) -> list[str]:
    """The numbers a write's read-back must say (`must_confirm`): amounts and counts, never a row's key. An
    imported API's user 5 is read back as "Sana Haddad", as a built-in server's string ids are; `orgid` 3 too."""
    return [
        str(v)
        for k, v in arguments.items()
        if isinstance(v, int | float)
        and not isinstance(v, bool)
        and not is_id_like(k)
        and not (isinstance(v, int) and re.search(r"[a-z]{3,}id$", k.lower()))
    ]


def checks_for(
    grounded: Grounded,
    rules: dict[str, list[PolicyRule]],
    required: dict[str, list[RequiredRead]] | None = None,
) -> list[PolicyCheck]:
    """The checks a grounded chain exercises: one per (rule, governed gold write), where the chain follows it.
    Where `identify` found what a server's policy identifies the persona by, every governed write there is
    checked, with those values. A read the policy puts before a write (`required`) that the gold makes is a
    `must_call` check: the read comes before any of the writes it governs."""
    persona = grounded.persona
    who = identifying_values(persona.name, persona.email, persona.facts)
    checks: list[PolicyCheck] = []
    seen: set[tuple[str, str, str]] = set()
    for read in (r for rs in (required or {}).values() for r in rs):
        made = [i for i, c in enumerate(grounded.calls) if (c.server, c.tool) == (read.server, read.read)]
        governed = [
            i for i, c in enumerate(grounded.calls) if c.server == read.server and c.is_write and c.tool in read.writes
        ]
        if made and governed and made[0] < governed[0] and (read.rule, read.server, read.read) not in seen:
            seen.add((read.rule, read.server, read.read))
            checks.append(
                PolicyCheck(
                    rule=read.rule,
                    rule_id=f"before_{read.read}",
                    kind="must_call",
                    server=read.server,
                    tool=read.read,
                    tools=sorted({grounded.calls[i].tool for i in governed}),
                )
            )
    for index, call in enumerate(grounded.calls):
        if not call.is_write:
            continue
        server_rules = rules.get(call.server, [])
        confirm = governing(server_rules, "confirm", call.tool)
        if confirm is not None and (confirm.id, call.server, call.tool) not in seen:
            seen.add((confirm.id, call.server, call.tool))
            amounts = read_back_numbers(call.arguments)
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
        named = [str(v.value) for v in grounded.identification if v.server == call.server]
        # without values identification found, the persona's own, where a lookup of this server is keyed on them
        lookups = [
            earlier
            for earlier, before in enumerate(grounded.calls[:index])
            if before.server == call.server and not before.is_write
            if any(how == "persona" for how in grounded.sources[earlier].values())
        ]
        values = named or (who if any(identifies(grounded.calls[i].arguments, who) for i in lookups) else [])
        # every field the policy names, not one of them: "full name and date of birth" is both, told by the user
        chosen = [str(v.value) for v in grounded.identification if v.server == call.server and v.chosen]
        others = [str(v.value) for v in grounded.identification if v.server == call.server and not v.chosen]
        if values:
            seen.add((identify.id, call.server, call.tool))
            checks.append(
                PolicyCheck(
                    rule=identify.rule,
                    rule_id=identify.id,
                    kind="must_identify",
                    server=call.server,
                    tool=call.tool,
                    values=values,
                    alternatives=[a for a in (chosen, others) if a] if named else [],
                )
            )
    return checks
