"""Auditing a task as a strict annotator would, without trusting its gold: `envfarm tasks --audit FILE`.

Every check reads only the task and the live servers' listed tools, seed rows, clocks and principals:

- **determinacy**: a solver that sees the messages, the hidden facts and the persona's name (never
  the gold ids) replays the gold's data flow: every argument of every gold call must be something the
  user said, or a value in the output of an earlier gold call that is itself keyed on what they said.
- **referents**: where such a value comes from a list, the row it comes from must be the only one the
  user's words pick out (or every row must agree on it); the same holds for every row a claim reports on.
- **roles**: a customer never asks for a staff-internal action; on a server whose principal is a
  signed-in user, that user is the persona; on a staff server every write acts on the persona's own
  rows; a refusal cites a rule that itself forbids the request; where a staff server's policy names what
  identifies a customer, the user gives (or holds back) exactly those values, the gold looks them up
  before the first write the rule governs, and every such write has a `must_identify` check.
- **claims**: no claim on paging fields (count, total, has_more, cursor) or ids, none that echoes what
  the user said, and every claimed value is in a gold output; every question the user asks ("when does it
  renew?", "I'd like to know the total") has a claim that checks its answer.
- **verify**: there is something to verify (a state change, a claim or a refusal) and every server a
  gold write touched changed.
- **clock**: all servers of a task share one "now".
- **garble**: no snake_case or raw field name, no phrase made of column names, no ISO timestamp, no
  parameter-style sentence, no form line ("Quantity: 5.00."), no second "I mean the ..." pointer or a bare
  number as one, no step word in what the user says or holds back.

`Auditor.check` returns the findings of one task; synthesis keeps only tasks with none.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from envfarm.clients.connect import Connections
from envfarm.clients.graph import ToolSpec, is_id_like, load_intents, load_specs, words
from envfarm.clients.grounding import PersonaRecord, Row, ServerWorld, observe, persona_rows
from envfarm.clients.policy_checks import PolicyRule, identifies, identity_alternatives, load_rules, shows
from envfarm.clients.tasks import Claim, Task
from envfarm.servers.runtime.identification import identification_parts
from envfarm.servers.runtime.intents import ServerIntents, value_key, word_for

CHECKS = ("determinacy", "referents", "roles", "claims", "verify", "clock", "garble", "depth")
PAGING = frozenset({"count", "total", "has_more", "cursor", "next_cursor", "offset", "limit", "page", "page_size"})
PAGING_ARGS = frozenset({"limit", "cursor", "offset", "page", "page_size"})
# Work a business does internally, never a customer's goal (the staff principal does it on its own account).
STAFF_VERBS = frozenset(
    {"receive", "assign", "unassign", "cycle", "restock", "putaway", "dispatch", "complete", "adjust", "reassign"}
    | {"departure", "stock", "inventory"}
)
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
SNAKE = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")
ISO_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
PARAMETER_SENTENCE = re.compile(r"\b[Tt]he [\w ]{1,40} should be\b")
SCRUBBED_VERB = re.compile(
    r"\b(?:you|to|please|Please|I want to|Need to|need to) it\b|\bit (?:a|my|the) it\b|"
    r"\b(\w{4,}) (?:a|my|the|a new) \1\b"
)
# "I mean the report on ...": the pointer a writer adds to pick one row; one per message reads naturally.
# 'full tank: yes', 'frequency: monthly', 'the reason is: Never signed up': a form's field, not a sentence.
CODE_FIELD = re.compile(
    r"\b[a-z]+(?: [a-z]+)?: (?:yes|no|true|false)\b|[;,(] ?[a-z]+(?: [a-z]+)?: [a-z]+\b|\b(?:is|are): (?=\w)"
)
POINTER = re.compile(r"\bI mean the\b")
# A form line in a message: "Body: Thanks.", "Quantity: 5.00." (a label, a colon, the value), outside quotes.
FORM_LINE = re.compile(r"(?:^|[.!?]\s+)(?!One more thing:|Quick question:)([A-Z][a-z]+(?: [a-z]+){0,4}): (?=\S)")
QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"")
STEPS = re.compile(r"\b(?:afterwards|after that|first|then|next|finally|step)\b", re.IGNORECASE)
EMAIL = re.compile(r"\S+@\S+")
CLOCK = re.compile(r"Now: (?:\w+ )?(\d{1,2} \w+ \d{4}), (\d{2}:\d{2})")
# The policy line of an imported API with no users or customers resource (factory/importers/openapi/intents.py).
ONE_ACCOUNT = re.compile(r"\bEvery record here belongs to the one account\b")
FORBIDS_THIRD_PARTY = re.compile(
    r"\b(?:never|do not|don't)\b[^.]*\b(?:another person|someone else|other people|another customer|a third party)",
    re.IGNORECASE,
)
# Head nouns that make a column name an ordinary phrase ("the company name", "the daily rate"); any other
# multi-word column name said as is reads as a schema ("the placed at", "the hours purchased").
HEAD_NOUNS = frozenset(
    [
        "name",
        "birth",  # 'date of birth' is what a person says
        "code",
        "number",
        "date",
        "time",
        "rate",
        "cost",
        "fee",
        "price",
        "amount",
        "address",
        "note",
        "notes",
        "type",
        "reason",
        "title",
        "balance",
        "email",
        "phone",
        "status",
        "level",
        "method",
        "plan",
        "size",
        "day",
        "city",
        "country",
        "description",
        "comment",
        "message",
        "subject",
        "body",
    ]
)
SLOT_TEXT = re.compile(r"\{[^{}]*\}")
# A listed part of a question that asks for nothing ("..., please?", "While you're at it, ...").
# A listed part that only narrows the question ("how much have I spent, after refunds?"): nothing asked of its own.
MODIFIER = re.compile(
    r"(?:after|before|since|for|from|in|on|at|with|by|to|of|through|during|until|per|including|excluding|without|"
    r"not|but|except|so)\b",
    re.IGNORECASE,
)
COURTESY = re.compile(
    r"(?:please|thanks|thank you|if you can|if possible|while you.re at it|one more thing|by the way|also|oh|great)\b",
    re.IGNORECASE,
)
CLAIM_FIELD = re.compile(r"^(?:states|confirms) the ([\w ]+?):")
# A sentence asking to be told something: a wh- or yes/no question, or "tell me / let me know / I'd like to know".
ASKS_VALUE = re.compile(
    r"\b(?:tell me|let me know|like to know|need to know|want to know|find out|look up|remind me)\b|"
    r"^\W*(?:(?:and|oh|also|so|quick question|one more thing)[,:]?\s+)*(?:what|when|how|which|where|who|whether|"
    r"is|are|has|have|did|does|do|was|were|will)\b|\b(?:what|when|how much|how many|how long|which|whether)\b[^?]*\?$",
    re.IGNORECASE,
)
# Stems that ask for the same thing ("what did it cost" and "the price"; "where does it stand" and "the status").
MONEY_STEMS = ("cost", "pric", "fee", "fees", "char", "amou", "tota", "owe", "owed", "bill", "paid", "copa")
ASKED_AS = dict.fromkeys(MONEY_STEMS, "money") | {"stan": "stat"}
# Words that say nothing of what is asked ("could you tell me the ...").
ASKING = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "for",
        "in",
        "on",
        "at",
        "my",
        "me",
        "i",
        "you",
        "your",
        "it",
        "its",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "please",
        "could",
        "can",
        "would",
        "will",
        "tell",
        "let",
        "know",
        "like",
        "need",
        "want",
        "find",
        "out",
        "look",
        "up",
        "also",
        "oh",
        "and",
        "so",
        "quick",
        "question",
        "one",
        "more",
        "thing",
        "what",
        "when",
        "how",
        "which",
        "where",
        "who",
        "whether",
        "much",
        "many",
        "long",
        "did",
        "does",
        "do",
        "has",
        "have",
        "this",
        "that",
        "there",
        "here",
        "any",
        "just",
    ]
)


class Finding(BaseModel):
    """One failed check of one task, with the fact that decided it."""

    check: str
    detail: str
    call: int | None = Field(default=None, description="referents: the gold call whose output holds the row meant")
    field: str | None = Field(default=None, description="referents: the field of that row the gold uses")
    value: Any = Field(default=None, description="referents: the value the gold uses")


class ServerFacts(BaseModel):
    """What the audit knows of one server: its clock, its principal's kind and its policy's third-party rule."""

    clock: str | None = None
    kind: str | None = Field(default=None, description="'user' (a signed-in user), 'staff' (serving customers) or None")
    third_party_rule: str | None = Field(
        default=None, description="the policy sentence forbidding acting for another person"
    )
    identify_rule: str | None = Field(
        default=None, description="the policy sentence naming what identifies a customer ('Identify the ...')"
    )
    one_account: bool = Field(
        default=False,
        description="the policy says every record belongs to the one account the API serves (an imported API with "
        "no users or customers resource): no row is a customer's own, so a write's ownership is not checked",
    )


def staff_internal(tool: str) -> bool:
    """Work a business does on its own account (receive stock, assign a guide): never a customer's goal."""
    return bool(set(words(tool)) & STAFF_VERBS)


def server_facts(instructions: str | None) -> ServerFacts:
    """Read a server's clock, principal kind and third-party rule from its MCP instructions."""
    text = instructions or ""
    clock = CLOCK.search(text)
    kind = "staff" if "serving customers" in text else ("user" if re.search(r"\bYou act for\b", text) else None)
    rule = next((line.strip("- ").strip() for line in text.splitlines() if FORBIDS_THIRD_PARTY.search(line)), None)
    identify = next(
        (line.strip("- ").strip() for line in text.splitlines() if re.match(r"\s*-?\s*Identify the\b", line)), None
    )
    return ServerFacts(
        clock=" ".join(clock.groups()) if clock else None,
        kind=kind,
        third_party_rule=rule,
        identify_rule=identify,
        one_account=ONE_ACCOUNT.search(text) is not None,
    )


# ---------------------------------------------------------------- how values are said


def spoken_date(value: str) -> str | None:
    """'2026-05-02' -> 'Saturday 2 May'; '2026-03-03T12:00:00Z' -> 'Tuesday 3 March at 12:00' (None: not a date)."""
    match = re.match(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?", value)
    if not match:
        return None
    try:
        moment = datetime(int(match[1]), int(match[2]), int(match[3]), int(match[4] or 0), int(match[5] or 0))
    except ValueError:
        return None
    day = f"{moment:%A} {moment.day} {moment:%B}"
    if match[4] is None or (moment.hour, moment.minute) == (0, 0):
        return day
    return f"{day} at {moment:%H:%M}"


def spoken(value: Any) -> str:
    """A value as a person says it: dates in words, amounts with two decimals, enum words unfolded."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, str):
        return spoken_date(value) or (value.replace("_", " ") if SNAKE.fullmatch(value) else value)
    return str(value)


def _forms(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        forms = {f"{value:.2f}", str(value), f"{value:,.2f}"}  # 1,250.00: money as a person writes it
        if float(value).is_integer():
            forms.add(str(int(value)))
        return sorted(forms)
    text = str(value)
    forms = {text, text.replace("_", " ")}
    date = spoken_date(text)
    if date:
        forms.add(date)
        day = date.split(" at ")[0]
        forms |= {date.split(" ", 1)[1], day, day.split(" ", 1)[1]}  # without the weekday, without the time
        moment = datetime.fromisoformat(text[:10])
        forms |= {
            f"{moment:%B} {moment.day}",
            f"{moment:%b} {moment.day}",
            f"{moment:%b %d}",
            f"{moment.day} {moment:%b}",
        }
    return sorted(f for f in forms if f)


def mentions(text: str, value: Any) -> bool:
    """Whether `text` says `value` (as written, or as `spoken` renders it), as whole words."""
    lowered = text.lower()
    for form in _forms(value):
        if len(form) < 2 and not form.isdigit():
            continue
        if form.lower() not in lowered:
            continue
        if re.search(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)", text, re.IGNORECASE):
            return True
    return False


# ---------------------------------------------------------------- rows of an output


def rows_of(output: Any) -> list[Row]:
    """Every object of an output that holds scalars (the output itself included)."""
    found: list[Row] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if any(not isinstance(v, (dict, list)) for v in node.values()):
                found.append(node)
            for value in node.values():
                if isinstance(value, (dict, list)):
                    walk(value)

    walk(output)
    return found


def same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) < 1e-9
    return a == b


def _describing(row: Row) -> list[Any]:
    """The values of a row a person could say: not ids, flags or long text."""
    return [
        v
        for k, v in row.items()
        if not is_id_like(k)
        and k not in PAGING
        and v not in (None, "")
        and not isinstance(v, (bool, dict, list))
        and not (isinstance(v, str) and len(v) > 80)
    ]


def pick(rows: Sequence[Row], text: str) -> list[Row]:
    """The rows the user's words point at: those that share the most said values with the text. Words and
    dates count before numbers: "room 203 ... for 1" points at room 203, not at every room on floor 1."""

    def score(row: Row) -> tuple[int, int]:
        said = [v for v in _describing(row) if mentions(text, v)]
        return sum(1 for v in said if isinstance(v, str)), sum(1 for v in said if not isinstance(v, str))

    scored = [(score(r), r) for r in rows]
    top = max((s for s, _ in scored), default=(0, 0))
    return [r for s, r in scored if s == top and top > (0, 0)]


class Resolution(BaseModel):
    """Where a value can come from, as the solver sees it."""

    found: bool = False
    ambiguous: int = Field(default=0, description="rows that hold different values and that nothing said tells apart")
    call: int | None = None
    field: str = ""
    value: Any = None


def locate(
    value: Any, outputs: Sequence[tuple[int, Any]], text: str, key: str | None = None, row: bool = False
) -> Resolution:
    """Find `value` in the outputs of earlier resolved calls at a row the user's words determine. With `row`
    (a claim: an answer about one thing), rows that merely share the value do not count as determined: "how
    is my enrollment graded" with two enrollments asks about one of them, whichever the answer."""
    worst = Resolution()
    for index, output in outputs:
        rows = rows_of(output)
        for field in sorted({k for r in rows for k, v in r.items() if same(v, value) and (key is None or k == key)}):
            holding = [r for r in rows if field in r]
            if all(same(r[field], value) for r in holding) and (not row or len(holding) == 1):
                return Resolution(found=True, call=index, field=field)
            chosen = pick(holding, text)
            if len(chosen) == 1 and same(chosen[0][field], value):
                return Resolution(found=True, call=index, field=field)
            distinct = len({repr(r[field]) for r in (chosen or holding)}) if len(chosen) != 1 else 0
            if row and distinct == 1:
                distinct = len(chosen or holding)  # one value, several rows: which one the answer is about
            if not worst.call or distinct < worst.ambiguous:
                worst = Resolution(ambiguous=distinct, call=index, field=field, value=value)
    return worst


# ---------------------------------------------------------------- the audit


def claim_field(claim: Claim) -> str:
    """The output field a claim reports: its `field`, else read from its text ('states the total: 0')."""
    if claim.field:
        return claim.field
    match = CLAIM_FIELD.match(claim.text)
    return "_".join(match[1].split()) if match else ""


def user_text(task: Task) -> str:
    """Everything the agent can know from the user: the messages, the hidden facts and the persona's name."""
    parts = [task.opening_message, *(t.message for t in task.turns), task.persona.name]
    parts += [f"{h.description} {h.value}" for h in task.hidden_facts]
    return "\n".join(parts)


class Auditor:
    """The checks, over the servers' specs, seed worlds and facts (read once, shared by every task)."""

    def __init__(
        self,
        specs: Iterable[ToolSpec],
        worlds: dict[str, ServerWorld],
        facts: dict[str, ServerFacts],
        intents: dict[str, ServerIntents] | None = None,
        rules: dict[str, list[PolicyRule]] | None = None,
    ) -> None:
        self.specs = {(s.server, s.name): s for s in specs}
        self.rules = rules or {}
        # The words a server's intents give people ("the total charges", "the check-in time"): a phrase there
        # is how the service's users talk, even where it matches a column name.
        self.intent_words = {
            server: " ".join(
                [
                    *(SLOT_TEXT.sub(" ", p).lower() for i in found.tools.values() for p in i.say),
                    *(w.lower() for i in found.tools.values() for w in i.hear.values()),
                    *(SLOT_TEXT.sub(" ", p).lower() for ps in found.refer.values() for p in ps),
                ]
            )
            for server, found in (intents or {}).items()
        }
        # How people say a tool's coded values ("I was charged twice" for `duplicate`): said, the value is said.
        self.words = {
            (server, tool): intent.words
            for server, found in (intents or {}).items()
            for tool, intent in found.tools.items()
            if intent.words
        }
        self.coded = {
            (server, tool): {
                value.lower()
                for said in intent.words.values()
                for value, phrase in said.items()
                if value.lower() not in phrase.lower() and value.replace("_", " ").lower() not in phrase.lower()
            }
            for server, found in (intents or {}).items()
            for tool, intent in found.tools.items()
        }
        self.worlds = worlds
        self.facts = facts
        self.columns: dict[str, set[str]] = {}
        for spec in self.specs.values():
            names = self.columns.setdefault(spec.server, set())
            names.update(p.name for p in spec.params)
            names.update(f.name for f in spec.outputs)
        self._owned: dict[tuple[str, str], set[Any]] = {}
        self._keyed: dict[str, dict[str, Row]] = {}  # server -> every seed row by its key

    def check(self, task: Task) -> list[Finding]:
        findings: list[Finding] = []
        for check in (self.determinacy, self.claims, self.verify, self.roles, self.clock, self.garble, self.depth):
            findings += check(task)
        return findings

    @staticmethod
    def depth(task: Task) -> list[Finding]:
        """A read that feeds no later call and shows no claimed value an earlier call had not already shown (a
        get after a search that returned every asked field; a re-read of the row a write just returned): the
        task asks for one lookup dressed as two, and any agent that stops early answers it."""
        if any(c.kind == "must_refuse" for c in task.policy_checks):
            return []

        def holds(output: Any, claim: Claim, value: str) -> bool:
            return any(
                claim.field in r and (str(r[claim.field]) == value or json.dumps(r[claim.field]) == value)
                for r in rows_of(output)
            )

        fed = {u for call in task.gold_calls for u in call.uses}
        findings = []
        for index, call in enumerate(task.gold_calls):
            if index == 0 or call.is_write or index in fed:
                continue
            shown = [(c, v) for c in task.claims if c.field for v in c.values if holds(call.output, c, v)]
            earlier = [task.gold_calls[j].output for j in range(index)]
            if shown and all(any(holds(o, c, v) for o in earlier) for c, v in shown):
                findings.append(
                    Finding(check="depth", detail=f"{call.tool} shows nothing an earlier call had not: it pads")
                )
        return findings

    # -- determinacy and referents

    def determinacy(self, task: Task) -> list[Finding]:
        text = user_text(task)
        findings: list[Finding] = []
        resolved: list[tuple[int, Any]] = []
        for index, call in enumerate(task.gold_calls):
            spec = self.specs.get((call.server, call.tool))
            ok = True
            for name, value in call.arguments.items():
                if name in PAGING_ARGS or value is None or value == [] or value == {}:
                    continue
                if self._worded(call.server, call.tool, name, value, text):
                    continue
                if isinstance(value, bool):
                    said = any(mentions(text, w) for w in words(name) if len(w) > 3)
                    if not said and value:
                        findings.append(
                            Finding(check="determinacy", detail=f"{call.tool}.{name}=true is never asked for")
                        )
                        ok = False
                    continue
                if not is_id_like(name) and (spec is None or spec.param(name).user_known) and mentions(text, value):
                    continue
                where = locate(value, resolved, text)
                # An id a lookup returned among others, picked by words said of the row it keys ("the Junior
                # Suite at the Park Osaka" among a hotel's rooms): the user's words tell the agent which.
                named = where.call is not None and is_id_like(name) and self._named(call.server, value, text)
                if where.found or named:
                    continue
                ok = False
                if where.call is not None:
                    findings.append(self._referent(task, where, f"{call.tool}.{name}"))
                else:
                    findings.append(
                        Finding(
                            check="determinacy",
                            detail=(
                                f"{call.tool}.{name}={_short(value)} is neither said nor found by a lookup keyed on "
                                "what is said"
                            ),
                        )
                    )
            if ok and call.is_write and spec is not None:
                # A write must say something of the change itself: what it names, sets or creates. A value
                # copied from a lookup ("create a new report" filled from the last one) was never asked for.
                details = [
                    v
                    for n, v in call.arguments.items()
                    if n in {p.name for p in spec.params if p.user_known and not p.ref}
                    and not is_id_like(n)
                    and not isinstance(v, bool)
                    and v not in (None, "")
                ]
                if details and not any(mentions(text, v) for v in details):
                    findings.append(
                        Finding(check="determinacy", detail=f"{call.tool}: the user says nothing of what to write")
                    )
                # Words a write sets (a title, a body, a choice) are the user's to give; only a number may
                # come from a lookup (the amount due). A report titled with the employee's job title was
                # found by name, not asked for.
                for name, value in call.arguments.items():
                    if isinstance(value, str) and value in details and not mentions(text, value):
                        findings.append(
                            Finding(check="determinacy", detail=f"{call.tool}.{name}={_short(value)} is never said")
                        )
            if ok:
                resolved.append((index, call.output))
        for claim in task.claims:
            field = claim_field(claim) or None
            for value in claim.values:
                where = locate(_typed(value), resolved, text, field, row=True) if field else Resolution()
                if not where.found and field:
                    where = locate(_typed(value), resolved, text, row=True)
                if where.found:
                    continue
                unresolved = [(i, c.output) for i, c in enumerate(task.gold_calls) if i not in dict(resolved)]
                if not where.call and any(
                    rows_of(o) and locate(_typed(value), [(i, o)], "").call for i, o in unresolved
                ):
                    continue  # it comes from a call already reported as unresolved
                if where.call is not None:
                    findings.append(self._referent(task, where, f"claim '{claim.text[:50]}'"))
                else:
                    findings.append(
                        Finding(
                            check="determinacy", detail=f"claim '{claim.text[:60]}' is in no resolvable gold output"
                        )
                    )
        return findings

    def _worded(self, server: str, tool: str, name: str, value: Any, text: str) -> bool:
        """Whether the user says `value` of `name` in the words the intent gives it ("I was charged twice" for
        `duplicate`), or says a small count in words ("one seat")."""
        words_ = self.words.get((server, tool), {})
        phrase = word_for(words_, name, value)
        if phrase is not None and phrase.lower() in text.lower():
            return True
        number = NUMBER_WORDS.get(value) if isinstance(value, int) and not isinstance(value, bool) else None
        return number is not None and re.search(rf"\b{number}\b", text, re.IGNORECASE) is not None

    def _named(self, server: str, value: Any, text: str) -> bool:
        """Whether the user's words single out the seed row whose key is `value` among all rows of its table,
        by its own words or those of the rows it points at ("room 203 at the Central Nairobi"): then the
        agent can find its id by searching for what was said."""
        world = self.worlds.get(server)
        if world is None or not isinstance(value, str):
            return False
        if server not in self._keyed:
            self._keyed[server] = {
                r[k]: r for t, k in world.keys.items() for r in world.tables.get(t, []) if isinstance(r.get(k), str)
            }
        keyed = self._keyed[server]
        if value not in keyed:
            return False
        table = next(t for t, k in world.keys.items() if any(r.get(k) == value for r in world.tables.get(t, [])))
        key = world.keys[table]
        described = [
            {
                **row,
                **{
                    f"{column}.{k}": v
                    for column, ref in row.items()
                    if column != key and isinstance(ref, str) and ref in keyed
                    for k, v in keyed[ref].items()
                    if isinstance(v, str)
                },
            }
            for row in world.tables[table]
        ]
        chosen = pick(described, text)
        return len(chosen) == 1 and chosen[0].get(key) == value

    @staticmethod
    def _referent(task: Task, where: Resolution, what: str) -> Finding:
        producer = task.gold_calls[where.call or 0].tool
        how = (
            f"{where.ambiguous} rows of {producer} fit"
            if where.ambiguous
            else f"the row of {producer} picked is another"
        )
        return Finding(
            check="referents",
            detail=f"{what}: {how} what the user says",
            call=where.call,
            field=where.field,
            value=where.value,
        )

    # -- claims and what there is to verify

    def claims(self, task: Task) -> list[Finding]:
        text = "\n".join([task.opening_message, *(t.message for t in task.turns)])
        own = [task.persona.name, task.persona.email or "", *(str(v) for v in task.persona.known_facts.values())]
        hidden = "\n".join([*(str(h.value) for h in task.hidden_facts), *own])
        findings = []
        for claim in task.claims:
            field = claim_field(claim)
            if (field in PAGING and _paging(task, claim, field)) or (field and is_id_like(field)):
                findings.append(Finding(check="claims", detail=f"claim on a paging field or id: {claim.text[:60]}"))
            elif any(mentions(text, _typed(v)) or mentions(hidden, _typed(v)) for v in claim.values):
                findings.append(Finding(check="claims", detail=f"claim echoes what the user says: {claim.text[:60]}"))
            elif not claim.values:
                findings.append(Finding(check="claims", detail=f"claim with no value to look for: {claim.text[:60]}"))
        findings += self._unanswered(task)
        # "It was bought on May 4 ... It was bought on March 25": one question, two answers; which row is meant?
        labels: dict[str, set[tuple[str, ...]]] = {}
        for claim in task.claims:
            labels.setdefault(claim.text.split(":")[0], set()).add(tuple(claim.values))
        findings += [
            Finding(check="claims", detail=f"two claims '{label}' with different values")
            for label, values in labels.items()
            if len(values) > 1
        ]
        return findings

    @staticmethod
    def _unanswered(task: Task) -> list[Finding]:
        """A question the user asks ("when does it renew?", "I'd also like to know the total") that no claim
        answers: any reply to that part passes, so the task teaches nothing of it. A yes/no question ("is it
        full?") is answered by any claim; one asking when, by a claim stating a date; how much or many, by a
        number; any other, by a claim whose label shares a word stem with it ('renew' and 'renews')."""
        if any(c.kind == "must_refuse" for c in task.policy_checks):
            return []

        def stems(text: str) -> set[str]:
            found = {w[:4] for w in re.findall(r"[a-z]+", text.lower()) if w not in ASKING and len(w) > 2}
            return {ASKED_AS.get(w, w) for w in found}

        labels = [stems(c.text.split(":")[0].split(" ", 1)[-1]) for c in task.claims]  # not 'states', 'confirms'
        values = [v for c in task.claims for v in c.values]
        dated = any(
            spoken_date(v)
            or re.search(
                r"\b(?:January|February|March|April|May|June|July|August|"
                r"September|October|November|December)\b",
                c.text,
            )
            for c in task.claims
            for v in c.values
        )
        numeric = any(re.fullmatch(r"-?[\d,]+(?:\.\d+)?", v) for v in values)

        def answers(part: str) -> bool:
            """Whether a claim answers `part`: a date a 'when', a number a 'how much', else a label word."""
            return bool(
                re.search(r"\b(?:when|dates?|days?|times?)\b", part, re.IGNORECASE)
                and dated
                or re.search(r"\bhow (?:much|many|long)\b", part, re.IGNORECASE)
                and numeric
                or any(label & stems(part) for label in labels)
            )

        findings = []
        for message in [task.opening_message, *(t.message for t in task.turns[1:])]:
            text = QUOTED.sub("", message)
            sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z])|\n", text)
            # "how much is still owed, and when is it due?": two questions, each to be answered
            clauses = [
                c
                for s in sentences
                for c in re.split(r",?\s+and\s+(?=(?:what|when|how|which|where|who|whether)\b)", s, flags=re.IGNORECASE)
            ]
            for sentence in clauses:
                sentence = sentence.strip()
                if not sentence or not ASKS_VALUE.search(sentence):
                    continue
                lowered = sentence.lower()
                yes_no = re.match(
                    r"\W*(?:(?:and|oh|also|so)[,]?\s+)*(?:is|are|has|have|did|does|do|was|were|will)\b", lowered
                )

                if not task.claims:
                    answered = False
                elif yes_no:
                    answered = True
                else:
                    # "about the tour: price, group size and meeting point?", "when do I pick up and return the
                    # car?": each thing listed is asked for, so each needs a claim of its own, not one of them
                    listed = sentence.rsplit(":", 1)[-1] if ":" in sentence else sentence
                    items = re.split(r",\s+(?:and\s+|or\s+)?(?=[a-z])|\s+(?:and|or)\s+(?=[a-z])", listed)
                    answered = answers(sentence) and all(
                        answers(item)
                        or bool(re.match(r"\W*(?:is|are|has|have|did|does|do|was|were|will)\b", item, re.IGNORECASE))
                        for item in items
                        if len(items) > 1
                        and stems(item)
                        and not COURTESY.match(item.strip())
                        and not MODIFIER.match(item.strip())
                    )
                if not answered:
                    findings.append(
                        Finding(check="claims", detail=f"asks '{sentence[:60]}' and no claim checks the answer")
                    )
        return findings

    def verify(self, task: Task) -> list[Finding]:
        refusal = any(c.kind == "must_refuse" for c in task.policy_checks)
        changed = any(s.diff for s in task.expected_state.values())
        findings = []
        if not refusal and not changed and not task.claims:
            findings.append(Finding(check="verify", detail="nothing to verify: no state change, no claim, no refusal"))
        # A claim answers the turn of the first gold call whose output holds its value.
        outputs = [json.dumps(c.output, default=str) for c in task.gold_calls]
        answered = {
            task.gold_calls[first].turn
            for claim in task.claims
            for value in claim.values
            if (first := next((i for i, o in enumerate(outputs) if json.dumps(value)[1:-1] in o), None)) is not None
        }
        for number, turn in enumerate(task.turns):
            calls = [task.gold_calls[i] for i in turn.gold_calls if i < len(task.gold_calls)]
            if refusal or any(c.is_write for c in calls) or number in answered:
                continue
            findings.append(Finding(check="verify", detail=f"turn {number} asks for something no claim checks"))
        for server in sorted({c.server for c in task.gold_calls if c.is_write}):
            state = task.expected_state.get(server)
            if state is not None and state.hash is not None and not state.diff:
                findings.append(Finding(check="verify", detail=f"the gold writes on {server} change nothing"))
        return findings

    # -- roles

    def _owned_values(self, server: str, task: Task) -> set[Any]:
        key = (server, task.persona.email or task.persona.name)
        if key not in self._owned:
            world = self.worlds.get(server)
            values: set[Any] = {task.persona.name, *([task.persona.email] if task.persona.email else [])}
            if world is not None and task.persona.email:
                record = PersonaRecord(name=task.persona.name, email=task.persona.email)
                for table, rows in persona_rows(world, record, hops=2).items():
                    column = world.keys.get(table, "")
                    values.update(r[column] for r in rows if r.get(column) is not None)
            self._owned[key] = values
        return self._owned[key]

    def _people_keys(self, servers: Sequence[str]) -> set[Any]:
        """Keys of rows that are people (a row with an email): acting on one that is not the persona's
        reads or changes someone else's records."""
        keys: set[Any] = set()
        for server in servers:
            world = self.worlds.get(server)
            for table, rows in (world.tables if world else {}).items():
                column = world.keys.get(table, "") if world else ""
                keys.update(row[column] for row in rows if column and row.get("email") and row.get(column) is not None)
        return keys

    def identify_rule(self, server: str) -> PolicyRule | None:
        """The server's identification rule: from its `policy_rules` (with the tools it governs), else the
        instructions' "Identify the ..." line, governing every write tool of the server."""
        listed = next((r for r in self.rules.get(server, []) if r.kind == "identify"), None)
        if listed is not None:
            return listed
        text = self.facts.get(server, ServerFacts()).identify_rule
        if not text:
            return None
        writes = [name for (owner, name), spec in self.specs.items() if owner == server and not spec.read_only]
        return PolicyRule(server=server, id="identify", rule=text, tools=writes, kind="identify")

    def _identification(self, task: Task) -> list[Finding]:
        """On a staff server whose policy names what identifies a customer, a task with work there (even one
        that finds the row by an invoice or tracking number) must have the user give every one of those
        values (said or held back), not one of them; one hop away too (a card's last four digits). Before the
        first write the rule governs, the gold looks the customer up by one of them and shows every one of them
        (what the agent matches), and every governed write has a `must_identify` check with those values."""
        if any(c.kind == "must_refuse" for c in task.policy_checks):
            return []
        findings = []
        said = user_text(task)
        for server in task.servers:
            facts = self.facts.get(server, ServerFacts())
            rule = self.identify_rule(server)
            world = self.worlds.get(server)
            if facts.kind != "staff" or rule is None or world is None:
                continue
            if not any(c.server == server for c in task.gold_calls) or not identification_parts(rule.rule)[1]:
                continue  # a rule naming no field asks for nothing the audit can check
            persona = PersonaRecord(name=task.persona.name, email=task.persona.email or "")
            alternatives = identity_alternatives(world, rule, persona, task.gold_calls)
            if not alternatives:
                findings.append(Finding(check="roles", detail=f"{server}: nothing the policy identifies the user by"))
                continue
            # any alternative the user gives in full will do ("card number, or full name and email")
            values = next((a for a in alternatives if all(mentions(said, v.value) for v in a)), alternatives[0])
            findings += [
                Finding(check="roles", detail=f"{server}: the policy identifies by {v.phrase}; the user never gives it")
                for v in values
                if not mentions(said, v.value)
            ]
            wanted = [str(v.value) for v in values]
            governed = [
                i for i, c in enumerate(task.gold_calls) if c.server == server and c.is_write and c.tool in rule.tools
            ]
            if not governed:
                continue
            before = [c for c in task.gold_calls[: governed[0]] if c.server == server and not c.is_write]
            # the alternative the gold follows: given by the user and shown by its lookups (else the one said)
            values = next(
                (
                    a
                    for a in alternatives
                    if all(mentions(said, v.value) and any(shows(c, v.value) for c in before) for v in a)
                ),
                values,
            )
            wanted = [str(v.value) for v in values]
            if not any(identifies(c.arguments, wanted) for c in before):
                findings.append(
                    Finding(check="roles", detail=f"{server}: the gold never looks the customer up before writing")
                )
            findings += [
                Finding(check="roles", detail=f"{server}: no gold lookup shows {v.phrase} to match it against")
                for v in values
                if not any(shows(c, v.value) for c in before)
            ]
            for tool in dict.fromkeys(task.gold_calls[i].tool for i in governed):
                checked = [
                    c
                    for c in task.policy_checks
                    if c.kind == "must_identify"
                    and (c.server, c.tool) == (server, tool)
                    and set(wanted) <= set(c.values)
                ]
                if not checked:
                    findings.append(
                        Finding(
                            check="roles",
                            detail=(
                                f"{server}.{tool}: the policy requires identification; no must_identify check with it"
                            ),
                        )
                    )
        return findings

    def roles(self, task: Task) -> list[Finding]:
        findings = []
        for check in task.policy_checks:
            if check.kind != "must_refuse":
                continue
            if not FORBIDS_THIRD_PARTY.search(check.rule):
                findings.append(
                    Finding(check="roles", detail=f"refusal cites a rule that does not forbid it: {check.rule[:60]}")
                )
        for server in task.servers:
            facts = self.facts.get(server, ServerFacts())
            acts = [c for c in task.gold_calls if c.server == server]
            if facts.kind == "user" and acts and task.principal != task.persona.email:
                findings.append(
                    Finding(check="roles", detail=f"{server}: the signed-in user is {task.principal}, not the persona")
                )
        findings += self._identification(task)
        people = self._people_keys(task.servers)
        for call in task.gold_calls:
            owned = self._owned_values(call.server, task)
            others = sorted(
                str(v) for n, v in call.arguments.items() if is_id_like(n) and v in people and v not in owned
            )
            if others:
                findings.append(
                    Finding(
                        check="roles", detail=f"{call.tool} reads or changes another person's records ({others[0]})"
                    )
                )
        created: set[Any] = set()
        for call in task.gold_calls:
            if not call.is_write:
                continue
            facts = self.facts.get(call.server, ServerFacts())
            if facts.kind == "staff":
                if staff_internal(call.tool):
                    findings.append(
                        Finding(check="roles", detail=f"{call.tool} is staff-internal work, not a customer's goal")
                    )
                owned = self._owned_values(call.server, task) | created
                spec = self.specs.get((call.server, call.tool))
                keys = [
                    v
                    for n, v in call.arguments.items()
                    if isinstance(v, str) and (is_id_like(n) or (spec is not None and spec.param(n).ref))
                ] + [v for v in call.arguments.values() if isinstance(v, str) and v in owned]
                # Inapplicable where the policy says every record is the one account's (an imported API of no
                # users or customers resource: its fleets, its queues): no record there is any customer's.
                if not facts.one_account and not any(v in owned for v in keys):
                    findings.append(
                        Finding(check="roles", detail=f"{call.tool} acts on nothing of the persona's on {call.server}")
                    )
            created.update(
                v for r in rows_of(call.output) for k, v in r.items() if is_id_like(k) and isinstance(v, str)
            )
        return findings

    # -- one clock

    def clock(self, task: Task) -> list[Finding]:
        clocks = {s: self.facts[s].clock for s in task.servers if s in self.facts and self.facts[s].clock}
        if len(set(clocks.values())) > 1:
            return [
                Finding(
                    check="clock", detail="servers disagree on now: " + ", ".join(f"{s} {c}" for s, c in clocks.items())
                )
            ]
        return []

    # -- garble

    def garble(self, task: Task) -> list[Finding]:
        columns = {c for s in task.servers for c in self.columns.get(s, set())}
        phrases = {c.replace("_", " ").lower() for c in columns if "_" in c and not is_id_like(c)}
        phrases = {p for p in phrases if p.split()[-1] not in HEAD_NOUNS}
        intent_words = " ".join(self.intent_words.get(s, "") for s in task.servers)
        phrases = {p for p in phrases if not re.search(rf"\b{re.escape(p)}\b", intent_words)}
        findings = []
        said = [("message", task.opening_message), *(("turn", t.message) for t in task.turns[1:])]
        said += [("hidden fact", h.description) for h in task.hidden_facts]
        for fact in task.hidden_facts:
            value = str(fact.value)
            if fact.description.startswith("my ") and EMAIL.fullmatch(value) and value != task.persona.email:
                findings.append(
                    Finding(check="garble", detail=f"hidden fact: another person's email as 'my' ({value})")
                )
        # A code the intent words for people ("duplicate": "I was charged twice") said raw in the user's words.
        raw = set()
        for call in task.gold_calls:
            for name, value in call.arguments.items():
                phrase = word_for(self.words.get((call.server, call.tool), {}), name, value)
                code = value_key(value).lower()
                if phrase is not None and code not in phrase.lower() and code.replace("_", " ") not in phrase.lower():
                    raw.add(code)
        for where, message in said:
            text = EMAIL.sub("", message)
            problems = [
                f"raw value '{code}' (its intent words it for people)"
                for code in sorted(raw)
                if where != "hidden fact" and code not in ("true", "false") and mentions(QUOTED.sub("", text), code)
            ]
            if m := CODE_FIELD.search(QUOTED.sub("“…”", text)):
                problems.append(f"a value said as a form field '{m[0].strip()}'")
            if m := SNAKE.search(text):
                problems.append(f"raw field name or id '{m[0]}'")
            if m := ISO_TIME.search(text):
                problems.append(f"ISO timestamp '{m[0]}'")
            if m := PARAMETER_SENTENCE.search(text):
                problems.append(f"parameter-style sentence '{m[0]}'")
            if m := SCRUBBED_VERB.search(text):
                problems.append(f"broken phrase '{m[0]}'")
            if m := re.search(r"\bthe (?:with|to|for|from|of|in|on|at|by) (?:me|my|it)\b", text):
                problems.append(f"broken phrase '{m[0]}'")
            if where != "hidden fact" and (m := FORM_LINE.search(QUOTED.sub("“…”", text))):
                problems.append(f"form line '{m[0].strip()}'")
            if where != "hidden fact" and len(POINTER.findall(text)) > 1:
                problems.append("two 'I mean the ...' pointers in one message")
            if where != "hidden fact" and (m := re.search(r"\bI mean the [\w ]+ for [\d.,]+\b", text)):
                problems.append(f"a bare number as a pointer '{m[0]}'")
            if where != "hidden fact" and (m := STEPS.search(text)):
                problems.append(f"step word '{m[0]}'")
            lowered = text.lower()
            for phrase in sorted(phrases):
                if re.search(rf"\b{re.escape(phrase)}\b", lowered):
                    problems.append(f"column name '{phrase}'")
                    break
            pair = re.search(r"\bthe (\w+) and the (\w+)\b", lowered)
            heard = pair is not None and all(f"the {w}" in intent_words for w in (pair[1], pair[2]))
            if pair and pair[1] in columns and pair[2] in columns and not heard:
                problems.append(f"column names '{pair[0]}'")
            findings += [Finding(check="garble", detail=f"{where}: {p}") for p in problems]
        return findings


def _paging(task: Task, claim: Claim, field: str) -> bool:
    """Whether the claimed `field` ('total', 'count') is a page's field in the task's gold: beside a list in
    the output holding the claimed value, or in no output at all. A quote's `total` (the price of a stay) is
    an answer, not paging."""
    values = [_typed(v) for v in claim.values]
    holders = [
        r
        for c in task.gold_calls
        for r in rows_of(c.output)
        if field in r and any(same(r[field], v) or str(r[field]) == str(v) for v in values)
    ]
    return not holders or any(any(isinstance(v, list) for v in r.values()) for r in holders)


def _typed(value: str) -> Any:
    """A claim's value (a string) as the number it may be."""
    try:
        return float(value) if re.fullmatch(r"-?\d+\.\d+", value) else int(value) if value.isdigit() else value
    except ValueError:
        return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class AuditReport(BaseModel):
    """Per task, the findings; in total, the failed tasks per check."""

    tasks: int
    failed: int
    per_check: dict[str, int] = Field(description="tasks failing each check")
    findings: dict[str, list[Finding]] = Field(description="task id -> its findings (failing tasks only)")


async def build_auditor(connections: Connections, servers: Sequence[str]) -> Auditor:
    """An auditor over the connected servers: their listed tools, seed rows and instructions."""
    specs = await load_specs(connections, servers)
    by_server: dict[str, list[ToolSpec]] = {}
    for spec in specs:
        by_server.setdefault(spec.server, []).append(spec)
    worlds = {s: await observe(connections, s, by_server.get(s, [])) for s in servers}
    facts = {s: server_facts(await connections.instructions(s)) for s in servers}
    intents = {s: found for s in servers if (found := await load_intents(connections, s)) is not None}
    rules = {s: await load_rules(connections, s) for s in servers}
    return Auditor(specs, worlds, facts, intents, rules)


def audit_tasks(auditor: Auditor, tasks: Sequence[Task]) -> AuditReport:
    findings = {t.id: found for t in tasks if (found := auditor.check(t))}
    per_check: Counter[str] = Counter()
    for found in findings.values():
        per_check.update({f.check for f in found})
    return AuditReport(
        tasks=len(tasks),
        failed=len(findings),
        per_check={c: per_check.get(c, 0) for c in CHECKS},
        findings=findings,
    )


def render_audit(report: AuditReport, tasks: Sequence[Task]) -> str:
    lines = []
    for task in tasks:
        found = report.findings.get(task.id, [])
        status = "ok" if not found else "FAIL " + ", ".join(sorted({f.check for f in found}))
        lines.append(f"{task.id}: {status}")
        lines += [f"  - {f.check}: {f.detail}" for f in found]
    lines.append(
        f"{report.tasks - report.failed}/{report.tasks} tasks pass every check; failing per check: "
        + ", ".join(f"{c} {n}" for c, n in report.per_check.items())
    )
    return "\n".join(lines)
