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

Reported, not checked: each task's **chain depth** (`chain_depth`), the rubric's criterion D counted by
following values: the needed, motivated gold calls in the largest group linked by data, and its histogram.
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
from envfarm.clients.datafit import (
    ISO_DATE,
    clock_day,
    retires_what_was_used,
    row_conflicts,
    value_conflicts,
    written_values,
)
from envfarm.clients.flow import refers
from envfarm.clients.graph import ToolSpec, is_id_like, load_intents, load_specs, words
from envfarm.clients.grounding import PersonaRecord, Row, ServerWorld, observe, persona_rows
from envfarm.clients.policy_checks import PolicyRule, identifies, identity_alternatives, load_rules, shows
from envfarm.clients.tasks import DERIVED, Claim, Task
from envfarm.servers.runtime.identification import identification_parts
from envfarm.servers.runtime.intents import ServerIntents, value_key, word_for

CHECKS = ("determinacy", "referents", "roles", "claims", "verify", "clock", "data", "garble", "depth")
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
# Words of a question about what is ahead: a room free, a courier coming, a registration still open.
ASKS_AHEAD = re.compile(r"\b(?:still|coming|will|upcoming|free|available)\b", re.IGNORECASE)
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
# Meeting days as a timetable's letter code ('on TR at 16:00', 'MWF'): a person says 'Tuesdays and Thursdays'.
DAY_CODE = re.compile(r"\bon (?:[MTWRF]{2,5}|TTh)\b|\b(?:MWF|MTWRF|MTWR|TTh)\b")
# A passive that names the speaker as the doer ('It was filled up by me.'): a column ('filled by') said as a clause.
BY_ME = re.compile(r"\b(?:was|were|is|been) \w+(?: up| out| off| in)? by me\b", re.IGNORECASE)
# A label then a colon inside a sentence ('for this: Planning offsite', 'with the note: Can pick up'): a slot glued on.
GLUED_LABEL = re.compile(
    r"\b(?:for this|the note|a note|the details|the purpose is|the reason is|note|details): (?=\w)"
)
# A code a person types between colons (':white_check_mark:'): its underscores are how it is typed.
EMOJI_CODE = re.compile(r"(?<![\w:]):[a-z0-9_+-]+:(?![\w:])")
# A code typed between colons, unfolded into words (':white check mark:' for ':white_check_mark:').
UNFOLDED_CODE = re.compile(r"(?<![\w:]):[a-z]+(?: [a-z]+)+:(?![\w:])")
# A reason that is a column's value pasted after 'because of' ('because of the trip postponed').
PASTED_REASON = re.compile(r"\bbecause of (?:the |a |an )?\w+ \w+(?:ed|en)(?:[.,;!?]|$)")
# A reason filed as a field's value ('Please record the reason as "Returned hardware"', 'note "..." as the reason').
FILED_REASON = re.compile(
    r"\b(?:record|note|log|put|enter|mark|list|file|write)(?: down)? (?:the |a |my |our )?reason (?:as|is|to be)\b"
    r"|\bas (?:the|my|our) reason\b",
    re.IGNORECASE,
)
# A count of one said as a share of a group ('for one of us'): a template's plural slot filled with one.
ONE_OF_US = re.compile(r"\b(?:one|1) of us\b", re.IGNORECASE)
# A message that greets twice ('Hi! It's Priya again, sorry to bother you. Hi, I'm here for ...').
GREETING = re.compile(r"(?:^|[.!?]\s+)(?:Hi|Hello|Hey)\b")
# A catalog name in sentence case ('Child seat', 'Cast iron pan set', 'Salted butter 250g'): capitalised only
# because it heads its own catalog line (`common_words` tells it from a proper name such as 'Lisbon hub').
SENTENCE_CASE = re.compile(r"[A-Z][a-z]+(?:-[a-z]+)*(?: [a-z0-9][\w'.,/-]*)+")
# Where a catalog name is a common noun ('the child seat', '4 crunchy peanut butter'); bare, it is a name ('in
# Onboarding flow') or a line of an invoice ('Add Cloud hosting x 1').
DETERMINED = re.compile(r"\b(?:the|a|an|my|your|our|their|this|that|some|any|\d+)\s$", re.IGNORECASE)
# A place named by a preposition and its capitalised name ('at the Central Oslo', 'at FreshCart Lisbon'), ending
# where the phrase does.
PLACE_PHRASE = re.compile(
    r" (?:at|in) (?:the )?[A-Z][\w'-]*(?: [A-Z][\w'-]*)+(?=[.,;:?!]|\s+(?:from|on|for|to|at|in|with|there)\b|$)"
)
# How many words a phrase said twice in one message must have to read as a template run twice.
REPEATED_WORDS = 5
# The last word of a column name that makes it a schema's, not a person's ('hours purchased', 'posted at', 'weight kg').
SCHEMA_TAIL = re.compile(
    r"(?:[a-z]{2,}(?<!e)ed|\b(?:taken|given|written|chosen|driven|at|on|by|min|pct|usd|eur|utc)|(?<!per )\b(?:kg|km))$"
)
# A form line in a message: "Body: Thanks.", "Quantity: 5.00." (a label, a colon, the value), outside quotes.
FORM_LINE = re.compile(r"(?:^|[.!?]\s+)(?!One more thing:|Quick question:)([A-Z][a-z]+(?: [a-z]+){0,4}): (?=\S)")
# Where a sentence ends: a stop before a capital, but not the stop of a title before a name ("Dr. Elena Hughes").
SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)\s+(?=[A-Z])|\n")
QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"")
STEPS = re.compile(r"\b(?:afterwards|after that|first|then|next|finally|step)\b", re.IGNORECASE)
EMAIL = re.compile(r"\S+@\S+")
CLOCK = re.compile(r"Now: (?:\w+ )?(\d{1,2} \w+ \d{4}), (\d{2}:\d{2})")
# The policy line of an imported API with no users or customers resource (factory/importers/openapi/intents.py).
ONE_ACCOUNT = re.compile(r"\bEvery record here belongs to the one account\b")
# Its holder, named where no seeded row is a person's: the persona of a task there.
ACCOUNT_HOLDER = re.compile(r"\bthe one account this API serves, held by ([A-Z][\w'-]+(?: [A-Z][\w'.-]+)+):")
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
    holder: str | None = Field(
        default=None, description="the one account's holder the policy names (an import whose seed has no people)"
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
        holder=holder.group(1) if (holder := ACCOUNT_HOLDER.search(text)) else None,
    )


# ---------------------------------------------------------------- how values are said


def common_words(worlds: Iterable[ServerWorld]) -> frozenset[str]:
    """The ordinary words of the servers' data, in lower case: those it writes in lower case somewhere (in the
    middle of a name, a note), and those that only ever head a sentence-case value ('Leather ankle boots') and
    are never a name: a name is capitalised inside a value ('FreshCart Seattle', 'Meeting with Bluepeak'),
    in a title-case value ('Bluepeak Fitness') or alone ('Lisbon')."""
    lower: set[str] = set()
    proper: set[str] = set()
    heads: set[str] = set()
    for world in worlds:
        for rows in world.tables.values():
            for row in rows:
                for value in row.values():
                    if not isinstance(value, str) or re.search(r"[@_/]|://", value):
                        continue
                    tokens = re.findall(r"[A-Za-z]+(?:-[A-Za-z]+)*", value)
                    if len(value.split()) > 1:  # a code alone ('visa', a card's brand) is no word of a sentence
                        lower.update(w for w in tokens if w.islower() and len(w) > 1)
                    capital = [w for w in tokens if w[:1].isupper()]
                    if len(capital) == len(tokens) or SENTENCE_CASE.fullmatch(value) is None:
                        proper.update(capital)  # a title, a name, a sentence: its capitals may be names
                    elif tokens and not re.search(r"\d$", value):  # not a label ('Visa ending 2843', 'exit 2')
                        heads.add(tokens[0])
    return frozenset(lower | {w.lower() for w in heads - proper})


def catalog_cased(text: str, values: Iterable[str], common: frozenset[str]) -> list[str]:
    """The sentence-case catalog names of `values` that `text` says mid-sentence with their capital ('add the
    Child seat'), outside quotes: a person writes 'the child seat'."""
    unquoted = QUOTED.sub("\u201c\u2026\u201d", text)
    found = []
    for value in values:
        if not SENTENCE_CASE.fullmatch(value) or value.split()[0].lower() not in common:
            continue
        for match in re.finditer(rf"(?<![\w.]){re.escape(value)}(?!\w)", unquoted):
            if DETERMINED.search(unquoted[: match.start()]):
                found.append(value)
                break
    return found


def repeated_phrase(text: str, size: int = REPEATED_WORDS) -> str | None:
    """A run of `size` words said twice in one message, outside quotes ('in #general in the Northwind
    workspace' twice, 'I like to have it written down' twice), or a place named twice ('my stay at the Central
    Oslo ... to room 301 at the Central Oslo'); None when every such run is said once."""
    unquoted = QUOTED.sub(" \u2026 ", text)
    for match in PLACE_PHRASE.finditer(unquoted):
        if unquoted.find(match.group(0), match.end()) >= 0:
            return match.group(0).strip()
    tokens = re.findall(r"[\w#@'$.,-]+", unquoted.lower())
    tokens = [t.strip(".,") for t in tokens]
    seen: set[tuple[str, ...]] = set()
    for i in range(len(tokens) - size + 1):
        gram = tuple(tokens[i : i + size])
        if gram in seen:
            return " ".join(gram)
        seen.add(gram)
    return None


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


def has_field(row: Row, field: str | None) -> bool:
    """Whether the row holds `field`, or both numbers a derived field ('capacity - seats_booked') is made of."""
    if not field:
        return False
    if field in row:
        return True
    parts = DERIVED.match(field)
    return parts is not None and all(
        isinstance(row.get(k), (int, float)) and not isinstance(row.get(k), bool) for k in parts.groups()
    )


def value_of(row: Row, field: str) -> Any:
    """The row's value of `field`: a column's, or a derived field's difference ('capacity - seats_booked' -> the
    seats left, what a person asks about when the server gives the parts); None when the row has no such field."""
    if field in row:
        return row[field]
    parts = DERIVED.match(field)
    if parts is None or not has_field(row, field):
        return None
    difference = row[parts[1]] - row[parts[2]]
    return round(difference, 2) if isinstance(difference, float) else difference


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


def stems(text: str) -> set[str]:
    """The content words of a question or a claim's label, cut to four letters, alike ones folded ('price',
    'cost' -> 'money'): a question and a claim that share one are about the same thing."""
    found = {w[:4] for w in re.findall(r"[a-z]+", text.lower()) if w not in ASKING and len(w) > 2}
    return {ASKED_AS.get(w, w) for w in found}


#: A yes/no question ("Do you still take my plan?", "Is it ready?") anywhere in what the user says.
YES_NO_QUESTION = re.compile(
    r"(?:^|[.!?]\s+|,\s+and\s+|\b(?:also|oh|so|and)[,]?\s+)"
    r"(?:is|are|am|has|have|did|does|do|was|were|will|can i)\b[^.!?]*\?",
    re.IGNORECASE,
)


def off_request(task: Task) -> list[Claim]:
    """The claims on a read that the user never asked about: a label sharing no word with anything the user
    says ("How much is my checkup?" and 'states whether it is paid: open'), unless it is the amount of a 'how
    much' or the date of a 'when'. A read-back of a change ('confirms ...') is a key value of what was asked."""
    said = " ".join([task.opening_message, *(t.message for t in task.turns[1:])])
    heard = stems(said)
    found = []
    for claim in task.claims:
        verb, _, rest = claim.text.partition(" ")
        label = rest.split(":")[0]
        if verb != "states" or stems(label) & heard:
            continue
        written = [r for c in task.gold_calls if c.is_write for r in rows_of(c.output)]
        if any(claim.field in r and any(_same_claim_value(r[claim.field], v) for v in claim.values) for r in written):
            continue  # what the change did (its status now): a key value of what the user asked for
        if claim.kind == "yes_no" and YES_NO_QUESTION.search(said):
            continue  # "Do you still take my plan?" asks 'whether you accept it' in other words
        numeric = all(re.fullmatch(r"-?[\d,]+(?:\.\d+)?", v) for v in claim.values)
        if numeric and re.search(r"\bhow (?:much|many|long)\b", said, re.IGNORECASE):
            continue
        if any(spoken_date(v) for v in claim.values) and re.search(
            r"\b(?:when|what dates?|which days?)\b", said, re.IGNORECASE
        ):
            continue
        found.append(claim)
    return found


def claims_of_turn(task: Task, turn: int) -> list[Claim]:
    """The claims on what the calls of one turn return (a claim's field holding one of its values in a row of
    their outputs); a claim no call's output shows belongs to every turn. A task of one turn has all its claims."""
    if len(task.turns) < 2:
        return list(task.claims)

    def shown_by(claim: Claim, calls: Iterable[int]) -> bool:
        return any(
            has_field(row, claim.field)
            and any(_same_claim_value(value_of(row, claim.field or ""), v) for v in claim.values)
            for i in calls
            if 0 <= i < len(task.gold_calls)
            for row in rows_of(task.gold_calls[i].output)
        )

    every = range(len(task.gold_calls))
    mine = task.turns[turn].gold_calls if turn < len(task.turns) else []
    return [c for c in task.claims if not c.field or shown_by(c, mine) or not shown_by(c, every)]


def _same_claim_value(value: Any, said: str) -> bool:
    return (
        str(value) == said
        or json.dumps(value) == said
        or spoken(value) == said
        or (isinstance(value, float) and f"{value:.2f}" == said)
    )


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
        # each server's own ordinary words, as the writer reads them: the check of a task never depends on which
        # other servers the auditor was built over (a file audited alone, or the whole farm at synthesis)
        self.common = {s: common_words([w]) for s, w in worlds.items()}

    def check(self, task: Task) -> list[Finding]:
        findings: list[Finding] = []
        for check in (
            self.determinacy,
            self.claims,
            self.verify,
            self.roles,
            self.clock,
            self.data,
            self.garble,
            self.depth,
        ):
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
                has_field(r, claim.field)
                and (
                    str(value_of(r, claim.field or "")) == value or json.dumps(value_of(r, claim.field or "")) == value
                )
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
                # A value an earlier turn found on another server, which this turn refers to by what it is ("for
                # the same dates as that rental"), is the user's to give as much as one they spell out.
                details = [v for v in details if not carried(task, index, v)]
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
                if (
                    field
                    and DERIVED.match(field)
                    and field not in {k for _, o in resolved for r in rows_of(o) for k in r}
                ):
                    # the seats left: the difference of two fields of a row a resolved call showed
                    if any(
                        same(value_of(r, field), _typed(value))
                        for _, o in resolved
                        for r in rows_of(o)
                        if has_field(r, field)
                    ):
                        continue
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
        findings += self._stale(task)
        findings += [
            Finding(check="claims", detail=f"claim on what the user never asked: {c.text[:60]}")
            for c in off_request(task)
        ]
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
    def _stale(task: Task) -> list[Finding]:
        """A claim that a later gold write made stale: "INV-1034 is due Monday 11 May", then the gold moves the due
        date to 18 May. An agent that reports the end state fails the claim, one that reports the first read
        passes it: the claim rewards the wrong answer. The row is the one whose field first shows the claimed
        value, followed by its key (an id-like field) into the outputs of the writes after it."""
        findings = []
        for claim in task.claims:
            field = claim_field(claim)
            if not field:
                continue
            claimed = [_typed(v) for v in claim.values]
            shown = next(
                (
                    (index, row)
                    for index, call in enumerate(task.gold_calls)
                    for row in rows_of(call.output)
                    if has_field(row, field)
                    and any(same(value_of(row, field), v) or str(value_of(row, field)) == str(v) for v in claimed)
                ),
                None,
            )
            if shown is None:
                continue
            index, row = shown
            keys = {k: v for k, v in row.items() if is_id_like(k) and isinstance(v, str) and v}
            for later in task.gold_calls[index + 1 :]:
                if not later.is_write:
                    continue
                for after in rows_of(later.output):
                    ours = keys and all(after.get(k) in (None, v) for k, v in keys.items())
                    ours = ours and any(after.get(k) == v for k, v in keys.items())
                    if ours and has_field(after, field) and not same(value_of(after, field), value_of(row, field)):
                        findings.append(
                            Finding(
                                check="claims",
                                detail=f"claim a later write made stale ({later.tool}): {claim.text[:50]}",
                            )
                        )
                        break
                else:
                    continue
                break
        return findings

    @staticmethod
    def _unanswered(task: Task) -> list[Finding]:
        """A question the user asks ("when does it renew?", "I'd also like to know the total") that no claim
        answers: any reply to that part passes, so the task teaches nothing of it. A yes/no question ("is it
        full?") is answered by any claim; one asking when, by a claim stating a date; how much or many, by a
        number; any other, by a claim whose label shares a word stem with it ('renew' and 'renews')."""
        if any(c.kind == "must_refuse" for c in task.policy_checks):
            return []

        findings = []
        for turn, message in enumerate([task.opening_message, *(t.message for t in task.turns[1:])]):
            # A question is answered by a claim on what that turn's calls return: the date of turn one's offer
            # does not answer turn two's "when does my membership renew?"
            claims = claims_of_turn(task, turn)
            labels = [stems(c.text.split(":")[0].split(" ", 1)[-1]) for c in claims]  # not 'states', 'confirms'
            values = [v for c in claims for v in c.values]
            dated = any(
                spoken_date(v)
                or re.search(
                    r"\b(?:January|February|March|April|May|June|July|August|"
                    r"September|October|November|December)\b",
                    c.text,
                )
                for c in claims
                for v in c.values
            )
            numeric = any(re.fullmatch(r"-?[\d,]+(?:\.\d+)?", v) for v in values)

            def answers(
                part: str, labels: list[set[str]] = labels, dated: bool = dated, numeric: bool = numeric
            ) -> bool:
                """Whether a claim answers `part`: a date a 'when', a number a 'how much', else a label word."""
                return bool(
                    re.search(r"\b(?:when|dates?|days?|times?)\b", part, re.IGNORECASE)
                    and dated
                    or re.search(r"\bhow (?:much|many|long)\b", part, re.IGNORECASE)
                    and numeric
                    or any(label & stems(part) for label in labels)
                )

            text = QUOTED.sub("", message)
            sentences = SENTENCE_END.split(text)  # not after "Dr." ("from Dr. Elena Hughes ready to pick up?")
            # "how much is still owed, and when is it due?": two questions, each to be answered
            clauses = [
                c
                for s in sentences
                for c in re.split(r",?\s+and\s+(?=(?:what|when|how|which|where|who|whether)\b)", s, flags=re.IGNORECASE)
            ]
            for at, sentence in enumerate(clauses):
                sentence = sentence.strip()
                if not sentence or not ASKS_VALUE.search(sentence):
                    continue
                lowered = sentence.lower()
                yes_no = re.match(
                    r"\W*(?:(?:and|oh|also|so)[,]?\s+)*(?:is|are|has|have|did|does|do|was|were|will)\b", lowered
                )

                if not claims:
                    answered = False
                elif yes_no:
                    # "do I need a prescription?" is answered by a claim on that, not by the price beside it
                    # or by the details the next sentence asks of it ("Did you receive our payment? Tell me the
                    # amount and the date it arrived."), unless it asks of something else ("I'd also like ...")
                    after = clauses[at + 1].strip() if at + 1 < len(clauses) else ""
                    answered = (
                        any(label & stems(sentence) for label in labels)
                        or any(c.kind == "yes_no" for c in claims)  # a yes or a no answers it
                        or any(stems(v) & stems(sentence) for v in values)
                        or bool(
                            after
                            and ASKS_VALUE.search(after)
                            and not re.search(r"\balso\b", after, re.IGNORECASE)
                            and re.search(r"\b(?:it|its|they|them|their)\b", after, re.IGNORECASE)
                            and answers(after)
                        )
                    )
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
        return self.asked_ahead_of_the_past(task)

    def asked_ahead_of_the_past(self, task: Task) -> list[Finding]:
        """A question that looks ahead ('Is the Cedar room free on Wednesday 8 April?', 'When is the courier
        coming?', 'Until when can I still register?') about a day the farm clock has passed: a read of that turn
        keyed on a past date, or a claim it answers with one. No person asks whether a room is free last week."""
        findings = []
        for index, turn in enumerate(task.turns):
            questions = [q for q in re.findall(r"[^.?!]*\?", turn.message) if ASKS_AHEAD.search(q)]
            if not questions:
                continue
            for call in (c for c in task.gold_calls if c.turn == index and not c.is_write):
                today = clock_day(self.facts[call.server].clock if call.server in self.facts else None)
                if today is None:
                    continue
                past = [
                    v for v in call.arguments.values() if isinstance(v, str) and ISO_DATE.match(v) and v[:10] < today
                ]
                answered = json.dumps(call.output)
                past += [
                    v
                    for c in task.claims
                    for v in c.values
                    if ISO_DATE.match(v) and v[:10] < today and json.dumps(v) in answered
                ]
                if past:
                    detail = f"{questions[0].strip()!r} about {past[0][:10]}, before today {today}"
                    findings.append(Finding(check="clock", detail=detail))
                    break
        return findings

    # -- data: what the gold writes fits the seed (`envfarm.clients.datafit`)

    def data(self, task: Task) -> list[Finding]:
        """A gold write that a careful agent would stop at: a new row copying another, one over the person's own
        (a meeting on top of another on their agenda), a date moved into the past, a reason the linked rows
        belie, an in-person note about a row in another city, places or a reason the data never combines, a second
        row in a one-at-a-time state, a later write that retires what an earlier one used."""
        who = {v for v in (task.persona.email, task.persona.name) if v}
        found: list[tuple[str, str]] = []
        for call in task.gold_calls:
            world = self.worlds.get(call.server)
            if call.is_write and world is not None:
                found += value_conflicts(call.arguments, world.tables, world.keys, who)
        for server, expected in task.expected_state.items():
            world = self.worlds.get(server)
            if world is not None:
                today = clock_day(self.facts[server].clock if server in self.facts else None)
                written = written_values(task.gold_calls, server)
                found += row_conflicts(expected.diff, world.tables, world.keys, who, today, written)
        diffs = {s: e.diff for s, e in task.expected_state.items() if s in self.worlds}
        retired = retires_what_was_used(task.gold_calls, diffs, {s: self.worlds[s].keys for s in diffs})
        if retired is not None:
            found.append(("a later write retires what an earlier one used", retired))
        findings = [Finding(check="data", detail=f"{reason}: {detail}") for reason, detail in found]
        return findings + self.pointed_only(task)

    def pointed_only(self, task: Task) -> list[Finding]:
        """A gold write that acts on a row its lookup only points at: search_messages found the reply (by the text
        held back) and the gold pins the reply's thread parent. The lookup's row is of the same kind (it has the
        write's id column, with another value) and names the acted-on row in another column only, so what the
        user said or held back describes a different row than the one the gold changes."""
        findings = []
        for call in task.gold_calls:
            world = self.worlds.get(call.server)
            if not call.is_write or world is None:
                continue
            keys = set(world.keys.values())  # a row's own key column: the row it is (a message), not a reference
            rows = [r for i in call.uses if 0 <= i < len(task.gold_calls) for r in rows_of(task.gold_calls[i].output)]
            for name, value in call.arguments.items():
                if name not in keys or not isinstance(value, str) or any(r.get(name) == value for r in rows):
                    continue
                via = [c for r in rows if name in r for c, v in r.items() if c != name and v == value]
                if via:
                    findings.append(
                        Finding(
                            check="data",
                            detail=f"a row the lookup only points at: {call.tool}.{name} is its {via[0]}",
                        )
                    )
        return findings

    # -- garble

    def garble(self, task: Task) -> list[Finding]:
        columns = {c for s in task.servers for c in self.columns.get(s, set())}
        phrases = {c.replace("_", " ").lower() for c in columns if "_" in c and not is_id_like(c)}
        phrases = {p for p in phrases if p.split()[-1] not in HEAD_NOUNS}
        intent_words = " ".join(self.intent_words.get(s, "") for s in task.servers)
        # A phrase the intents give people is how they talk ('the daily transfer limit'), unless it is itself a
        # column name of a schema's shape ('the credits earned', 'the hours purchased'): then the intent leaks it.
        spoken_by_intents = {p for p in phrases if re.search(rf"\b{re.escape(p)}\b", intent_words)}
        nouns = {p for p in spoken_by_intents if SCHEMA_TAIL.search(p)}  # said as a thing: 'the credits earned'
        phrases -= spoken_by_intents
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
        # Free text a write takes ('Planning offsite with the team'), said right after a colon, is a form's field.
        glued = {
            f": {value.lower()}"
            for call in task.gold_calls
            for value in call.arguments.values()
            if isinstance(value, str) and _sentence_like(value)
        }
        findings += [
            Finding(check="garble", detail=f"hidden fact: a search bound nobody holds ({fact.key})")
            for fact in task.hidden_facts
            if re.match(r"(?:max|min)(?:imum)?_", fact.key)
        ]
        # Names a search finds whatever their case (a catalog line, a listing's title): said mid-sentence in
        # lower case. A value a write stores as given (a plan's name) is said as it will be stored.
        stored = {v for c in task.gold_calls if c.is_write for n, v in c.arguments.items() if not is_id_like(n)}
        names: dict[str, set[str]] = {}  # server -> the names its outputs showed
        for c in task.gold_calls:
            for row in rows_of(c.output):
                names.setdefault(c.server, set()).update(
                    v for v in row.values() if isinstance(v, str) and v not in stored
                )
        for where, message in said:
            text = EMAIL.sub("", message)
            problems = [
                f"raw value '{code}' (its intent words it for people)"
                for code in sorted(raw)
                if where != "hidden fact" and code not in ("true", "false") and mentions(QUOTED.sub("", text), code)
            ]
            if m := CODE_FIELD.search(QUOTED.sub("“…”", text)):
                problems.append(f"a value said as a form field '{m[0].strip()}'")
            if m := SNAKE.search(EMOJI_CODE.sub("", text)):  # ':white_check_mark:' is typed so
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
            unquoted = QUOTED.sub("“…”", text)
            if m := DAY_CODE.search(unquoted):
                problems.append(f"meeting days as a code '{m[0]}'")
            if m := BY_ME.search(unquoted):
                problems.append(f"the speaker as a passive's doer '{m[0]}'")
            if where != "hidden fact" and (m := GLUED_LABEL.search(unquoted)):
                problems.append(f"a slot glued after a label '{m[0]}'")
            if m := UNFOLDED_CODE.search(unquoted):
                problems.append(f"a typed code unfolded into words '{m[0]}'")
            if m := PASTED_REASON.search(unquoted):
                problems.append(f"a value pasted after 'because of' '{m[0].strip()}'")
            if where != "hidden fact":
                if m := FILED_REASON.search(unquoted):
                    problems.append(f"a reason filed as a field's value '{m[0]}'")
                if m := ONE_OF_US.search(unquoted):
                    problems.append(f"a count of one said as a share '{m[0]}'")
                if len(GREETING.findall(unquoted)) > 1:
                    problems.append("a message that greets twice")
                if (phrase := repeated_phrase(text)) is not None:
                    problems.append(f"a phrase said twice in one message '{phrase}'")
                cased = [
                    v
                    for server, found in names.items()
                    for v in catalog_cased(text, found, self.common.get(server, frozenset()))
                ]
                problems += [f"a catalog name in its catalog case '{v}'" for v in cased]
            if where != "hidden fact":
                problems += [f"free text pasted after a colon '{v[:30]}'" for v in glued if v in unquoted.lower()]
            lowered = text.lower()
            for phrase in sorted(phrases):
                if re.search(rf"\b{re.escape(phrase)}\b", lowered):
                    problems.append(f"column name '{phrase}'")
                    break
            for phrase in sorted(nouns):
                if re.search(rf"\b(?:the|my|your|our) {re.escape(phrase)}\b(?! \w)", lowered):
                    problems.append(f"column name as a noun 'the {phrase}'")
                    break
            pair = re.search(r"\bthe (\w+) and the (\w+)\b", lowered)
            heard = pair is not None and all(f"the {w}" in intent_words for w in (pair[1], pair[2]))
            if pair and pair[1] in columns and pair[2] in columns and not heard:
                problems.append(f"column names '{pair[0]}'")
            findings += [Finding(check="garble", detail=f"{where}: {p}") for p in problems]
        return findings


def _sentence_like(value: str) -> bool:
    """Whether a value is free text (a purpose, a note): two or more words, one of them a lower-case word of four
    letters or more ('Planning offsite with the team'); a name ('Clearwater Water Co') is not."""
    tokens = value.split()
    return len(tokens) >= 2 and any(len(w) >= 4 and w.isalpha() and w.islower() for w in tokens)


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
    """A claim's value (a string) as the number it may be; a yes/no claim's 'true' or 'false' as that flag."""
    if value in ("true", "false"):
        return value == "true"
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
    depths: dict[str, int] = Field(
        default_factory=dict, description="task id -> its chain depth (`chain_depth`: the rubric's criterion D)"
    )
    chain_depths: dict[int, int] = Field(default_factory=dict, description="chain depth -> tasks")


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
        depths={t.id: chain_depth(t).depth for t in tasks},
        chain_depths=depth_histogram(tasks),
    )


def render_audit(report: AuditReport, tasks: Sequence[Task]) -> str:
    lines = []
    for task in tasks:
        found = report.findings.get(task.id, [])
        status = "ok" if not found else "FAIL " + ", ".join(sorted({f.check for f in found}))
        depth = report.depths.get(task.id)
        lines.append(f"{task.id}: {status}" + (f" (chain depth {depth})" if depth is not None else ""))
        lines += [f"  - {f.check}: {f.detail}" for f in found]
    lines.append(
        f"{report.tasks - report.failed}/{report.tasks} tasks pass every check; failing per check: "
        + ", ".join(f"{c} {n}" for c, n in report.per_check.items())
    )
    if report.chain_depths:
        deep = sum(n for d, n in report.chain_depths.items() if d >= 4)
        lines.append(
            "chain depth (needed calls linked by values: tasks): "
            + ", ".join(f"{d}: {n}" for d, n in report.chain_depths.items())
            + f"; >= 4: {deep}/{report.tasks}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- chain depth (criterion D of the rubric)

ENUM_WORD = re.compile(r"^[a-z][a-z_]*$")  # a coded value the agent chooses from the user's words ("cancelled")


class ChainDepth(BaseModel):
    """What of a task's gold is real multi-step work, as the rubric's criterion D counts it: calls that are
    needed (their output supplies a claim value or a write argument, directly or through later needed calls) and
    motivated (every input is said by the user or returned by an earlier motivated call), followed by the values
    themselves, never the `uses` field the generator recorded."""

    needed: list[int] = Field(default_factory=list, description="indices of the needed, motivated gold calls")
    depth: int = Field(0, description="calls in the largest group of needed, motivated calls linked by values")
    feeds: dict[int, list[int]] = Field(
        default_factory=dict, description="call -> the earlier calls whose output first showed a value it uses"
    )


def carried(task: Task, index: int, value: Any) -> bool:
    """Whether gold call `index` takes `value` from what a call of an earlier turn on another server returned, and
    its own turn's message refers to such a value (`envfarm.clients.flow.refers`)."""
    call = task.gold_calls[index]
    turn = next((i for i, t in enumerate(task.turns) if index in t.gold_calls), None)
    message = task.turns[turn].message if turn is not None else ""
    return refers(message) and any(
        c.turn < call.turn and c.server != call.server and _shows(c.output, value) for c in task.gold_calls[:index]
    )


def _traced(name: str, value: Any) -> bool:
    """Whether an argument's value is one to trace to an earlier output: not a paging knob, a flag, a small
    count or a coded word the agent picks from what the user says (those prove no data flow: 2 is in any output)."""
    if name in PAGING_ARGS or value is None or isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) >= 100 or is_id_like(name)
    if isinstance(value, float):
        return True
    return isinstance(value, str) and len(value) >= 3 and not (ENUM_WORD.match(value) and not is_id_like(name))


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [s for item in value for s in _scalars(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _scalars(item)]
    return [value]


def _shows(output: Any, value: Any, field: str | None = None) -> bool:
    """Whether a row of `output` has `value` (in `field`, when given)."""
    return any(
        same(v, value) or (isinstance(v, (int, float)) and isinstance(value, str) and same(v, _typed(value)))
        for row in rows_of(output)
        for k, v in row.items()
        if field is None or k == field
    )


def chain_depth(task: Task) -> ChainDepth:
    """The needed, motivated gold calls of `task` and the largest group of them linked by values (see
    `ChainDepth`). A value is traced to the first call whose output showed it (a get that re-reads the row a
    list already showed feeds nothing of its own); a value the user says (not an id) needs no call. A refusal's
    reads are what establish that the row is not the asker's: each is needed where it is motivated."""
    text = user_text(task)
    calls = task.gold_calls
    feeds: dict[int, list[int]] = {}
    motivated: set[int] = set()
    for index, call in enumerate(calls):
        sources: set[int] = set()
        ok = True
        for name, argument in call.arguments.items():
            for value in _scalars(argument):
                if not _traced(name, value):
                    continue
                said = mentions(text, value)
                if said and not is_id_like(name):
                    continue
                first = next((j for j in range(index) if _shows(calls[j].output, value)), None)
                if first is not None:
                    sources.add(first)
                    ok = ok and first in motivated
                elif not said and not ENUM_WORD.match(str(value)):
                    ok = False  # a literal the agent never receives
        feeds[index] = sorted(sources)
        if ok:
            motivated.add(index)
    refusal = any(c.kind == "must_refuse" for c in task.policy_checks)
    wanted: set[int] = {i for i, c in enumerate(calls) if c.is_write or refusal}
    for claim in task.claims:
        field = claim_field(claim) or None
        for value in claim.values:
            typed = _typed(value)
            first = next((j for j, c in enumerate(calls) if _shows(c.output, typed, field)), None)
            if first is None:
                first = next((j for j, c in enumerate(calls) if _shows(c.output, typed)), None)
            if first is not None:
                wanted.add(first)
    needed: set[int] = set()
    for index in range(len(calls) - 1, -1, -1):
        if index in wanted or any(index in feeds[k] for k in needed):
            needed.add(index)
    kept = needed & motivated
    group: dict[int, int] = {i: i for i in kept}

    def root(i: int) -> int:
        while group[i] != i:
            i = group[i]
        return i

    for index in kept:
        for source in feeds[index]:
            if source in kept:
                group[root(index)] = root(source)
    sizes = Counter(root(i) for i in kept)
    # A refusal's reads each check something of the asker's claim (who they are, whose the row is): together
    # they are the multi-step check, linked or not.
    depth = len(kept) if refusal else max(sizes.values(), default=0)
    return ChainDepth(needed=sorted(kept), depth=depth, feeds=feeds)


def depth_histogram(tasks: Sequence[Task]) -> dict[int, int]:
    """Chain depth (`chain_depth`) -> tasks."""
    return dict(sorted(Counter(chain_depth(t).depth for t in tasks).items()))
