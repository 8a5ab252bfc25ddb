"""The user's request: written from a grounded chain, then calibrated, then measured.

The offline writer composes the persona's request from what they know and what they want (the goal
of each turn), never from the chain's steps: lookups stay implicit. Calibration keeps one detail in
the message and holds the rest back as hidden facts the simulated user gives when asked, and no
message may carry a tool name, an internal id or a step list. `over_specification` measures that
(before: the chain read out as instructions; after: the calibrated message). An LLM writer
(`ChatModel`) can replace the offline one; an answer that is unusable or breaks the rules falls
back to the offline message and is counted.
"""

from __future__ import annotations

import calendar
import json
import random
import re
from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from envfarm.clients.audit import (
    DETERMINED,
    HEAD_NOUNS,
    NUMBER_WORDS,
    PAGING,
    PLACE_PHRASE,
    POINTER,
    SENTENCE_CASE,
    Finding,
    common_words,
    mentions,
    rows_of,
    same,
    spoken,
    spoken_date,
    user_text,
    value_of,
)
from envfarm.clients.flow import Carry, aside, carries, grain, inside, is_window, refer_in, referring, short_booking
from envfarm.clients.graph import ToolSpec, is_id_like, words
from envfarm.clients.grounding import (
    FREE_TEXT,
    Drop,
    Grounded,
    PersonaRecord,
    Row,
    ServerWorld,
    persona_rows,
    value_index,
)
from envfarm.clients.sampling import Catalog
from envfarm.clients.speech import ID_SHAPE, say_slot
from envfarm.clients.tasks import DERIVED, Claim, HiddenFact, OverSpecification, Task
from envfarm.llm import ChatModel, UnusableAnswer
from envfarm.servers.runtime.intents import Intent, slots, word_for

STEP_WORDS = ("then", "first", "next", "after that", "afterwards", "finally", "step", "call", "tool", "use the")
STEP_PATTERN = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in STEP_WORDS) + r")\b", re.IGNORECASE)
# A label that is a clause ('when it starts'): said as "The when it starts is ..." it garbles; held back instead.
QUESTION_LABEL = re.compile(r"(?:when|whether|how|who|what|which|where|why)\b")
PREPOSITIONS = frozenset({"to", "for", "from", "with", "into", "on", "at", "about"})
PARTICLES = frozenset({"in", "out", "up", "down", "on", "off", "over", "back"})
NEW_VERBS = frozenset(
    {
        "create",
        "add",
        "book",
        "schedule",
        "make",
        "open",
        "post",
        "send",
        "place",
        "submit",
        "register",
        "issue",
        "request",
        "start",
        "log",
        "record",
        "enroll",
        "reserve",
        "draft",
        "write",
    }
)
GREETINGS = {
    "polite": ("Hi, this is {name}.", "Hello, {name} here.", "Good morning, it's {name}."),
    "terse": ("{name} here.", "It's {name}.", "{first} here."),
    "chatty": (
        "Hey there! {name} here, hope your day is going well.",
        "Hi! It's {name}, hoping you can help.",
        "Hi there, {first} here.",
    ),
}
ASK_WRITE = {
    "polite": ("Could you {phrase} for me, please?", "Would you be able to {phrase}?", "I'd like to {phrase}, please."),
    "terse": ("Need to {phrase}.", "Please {phrase}.", "{Phrase}, thanks."),
    "chatty": (
        "I was hoping you could {phrase} today.",
        "So I really need to {phrase}, can you help?",
        "Long story short, I want to {phrase}.",
    ),
}
ASK_READ = {
    "polite": ("Could you tell me {what}?", "Would you look up {what} for me?", "I'd like to know {what}, please."),
    "terse": ("Tell me {what}.", "Need to know {what}.", "Look up {what}, please."),
    "chatty": (
        "I've been trying to remember {what}, could you look?",
        "Quick question: can you tell me {what}?",
        "Can you find out {what} for me? I keep forgetting.",
    ),
}
# Asking to hear what an intent's `hear` names ("the new total"): the claims are what the user asked for.
HEAR = {
    "polite": ("Could you tell me {what}?", "I'd also like to know {what}, please."),
    "terse": ("Tell me {what}.", "I need to know {what}."),  # never "I need whether it is paid"
    # never "what's {what}": a label may be a clause ("whether it is paid") or plural ("the amounts")
    "chatty": ("And could you let me know {what}? I like to have it written down.", "Oh, and can you tell me {what}?"),
}
MY = re.compile(r"\bmy\b", re.IGNORECASE)
# A greeting a phrasing opens with ('Hi, I'm here for ...'): the message's own greeting already said it.
GREETED = re.compile(r"^(?:hi|hello|hey)(?: there)?[,!]?\s+(?=\S)", re.IGNORECASE)
# 'me' where a phrasing's person is the subject ('what else is me selling?'): no first-person form fits there.
SUBJECT_ME = re.compile(r"\b(?:is|are|was|were|has|does) me\b|^me\b|[.?!] me\b|\bme (?:is|has|was)\b")
# A unit after a number slot ('{weight:number} kg'): 1 stays a figure there ('1 kg', never 'one kg').
UNIT_AFTER = re.compile(r"\s*(?:kg|km|g|lb|cm|mm|m|ml|l|h|%|litres|liters|euros|dollars)\b")
# A slot for free words of the person's own (a note, a reason): where grounding's filler text may stand.
NOTE_SLOT = re.compile(r"reason|note|message|comment|memo|description|purpose|summary|content|body|text")
MORE = ("One more thing: ", "Thanks! Also, ", "Great. And ", "While you're at it, ")
STYLES = tuple(GREETINGS)


# A code a person reads off a card or a letter ('LC-201213', 'RA17771', 'INV-1037'): letters and digits, a digit in it.
CODE = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Z])[A-Z0-9][A-Z0-9-]{3,}(?![\w-])")
AGAIN_SAID = re.compile(r"\bagain\b", re.IGNORECASE)  # a phrasing telling of something done before
AGAIN = "again"  # the key under which `OfflineWriter.refer` keeps a row's second, shorter name


def said_once(message: str, refs: dict[tuple[str, str, Any], str]) -> str:
    """`message` with a row named twice in the same words ('in #general in the Northwind workspace' twice) named
    the second time by its shorter name, as a person does once they have said which one they mean."""
    for (kind, text, _), short in refs.items():
        if kind != AGAIN or len(text.split()) < 3:
            continue
        first = message.find(text)
        second = message.find(text, first + len(text)) if first >= 0 else -1
        if second >= 0:
            message = message[:second] + short + message[second + len(text) :]
    # A code said again after 'my <thing>' ('My card is LC-201213. ... change it on my card LC-201213?'): once
    # a person has given their card number they say 'my card', as they do with any row named before.
    for code in dict.fromkeys(CODE.findall(message)):
        first = message.find(code)
        for match in reversed(list(re.finditer(rf"\b[Mm]y (?:[a-z]+ ){{1,2}}({re.escape(code)})(?![\w-])", message))):
            if match.start(1) > first:
                message = message[: match.start(1) - 1] + message[match.end(1) :]
    # Two rows at the same place ('my stay at the Central Oslo', 'room 301 at the Central Oslo'): the place once.
    for match in PLACE_PHRASE.finditer(message):
        second = message.find(match.group(0), match.end())
        if second >= 0:
            return message[:second] + message[second + len(match.group(0)) :]
    return message


def hear_line(rng: random.Random, style: str, what: str, earlier: Sequence[str]) -> str:
    """Asking to hear `what` in one of the style's ways, never one whose words the turn already used: a second
    "I like to have it written down" (or a second "please") in one message reads as a template run twice."""
    options = HEAR[style]

    def used(option: str) -> bool:
        parts = [p.strip(" ?.,!").lower() for p in option.split("{what}")]  # ', please.' after 'Please ...'
        return any(len(p) >= 6 and p in text.lower() for p in parts for text in earlier)

    return rng.choice([o for o in options if not used(o)] or options).format(what=what)


class Vocabulary(BaseModel):
    """What a message must not give away: tool names and internal ids; and the literal argument values."""

    tool_names: list[str]
    internal_ids: list[str]
    literals: list[str]
    # tool names whose words are plain speech on their server (it has intents): only the raw name gives one away
    spoken_tools: list[str] = Field(default_factory=list)


def _names_a_key(ref: str | None) -> bool:
    """Whether a reference (`table.column`) points at another table's key: `owner_email` -> `people.email` refers
    to a row by its email, which a person says, not by an internal id."""
    if not ref:
        return False
    return is_id_like(ref.rpartition(".")[2] or ref)


def vocabulary(grounded: Grounded, catalog: Catalog) -> Vocabulary:
    names: set[str] = set()
    spoken_tools: set[str] = set()
    for server in grounded.chain.servers:
        # A server with intents is asked in its people's words, where a tool's name is plain English ("send
        # invoice INV-1044", "fill prescription 610001"): scrubbing those words ('send it INV-1044') garbles.
        # Its raw names (`send_invoice`) never come from a phrasing; the audit's snake_case check would catch one.
        found = catalog.intents.get(server)
        names.update(t.name for t in catalog.by_server[server])
        if found is not None and found.tools:
            spoken_tools.update(t.name for t in catalog.by_server[server])
    ids: set[str] = set()
    literals: set[str] = set()
    for call in grounded.calls:
        spec = catalog.spec(call.server, call.tool)
        for name, value in call.arguments.items():
            param = spec.param(name)
            if isinstance(value, str) and (_names_a_key(param.ref) or is_id_like(name)) and not param.user_known:
                ids.add(value)
            elif value not in (None, "", True, False):
                literals.add(_fmt(value))
        for field in spec.outputs:
            if field.user_known or not (_names_a_key(field.ref) or is_id_like(field.name)):
                continue
            ids.update(_values_of(call.output, field.name))
    ids = {i for i in ids if isinstance(i, str) and len(i) >= 3}
    return Vocabulary(
        tool_names=sorted(names),
        internal_ids=sorted(ids),
        literals=sorted(literals - ids),
        spoken_tools=sorted(spoken_tools),
    )


def _values_of(node: Any, key: str) -> Iterable[Any]:
    if isinstance(node, list):
        for item in node:
            yield from _values_of(item, key)
    elif isinstance(node, dict):
        for k, v in node.items():
            if k == key and not isinstance(v, (dict, list)):
                yield v
            elif isinstance(v, (dict, list)):
                yield from _values_of(v, key)


def _occurs(needle: str, text: str) -> bool:
    if needle.lower() not in text.lower():
        return False
    return re.search(rf"(?<![\w@.-]){re.escape(needle)}(?![\w@-])", text, re.IGNORECASE) is not None


def over_specification(text: str, vocab: Vocabulary) -> OverSpecification:
    """Count what a message gives away: tool names (as written, or their words in a row), internal ids,
    literal argument values, and step words."""
    spoken = set(vocab.spoken_tools)
    tools = sum(
        1
        for n in vocab.tool_names
        if len(words(n)) > 1 and (_occurs(n, text) or (n not in spoken and _occurs(" ".join(words(n)), text)))
    )
    ids = sum(1 for i in vocab.internal_ids if _occurs(i, text))
    literals = sum(1 for v in vocab.literals if len(v) >= 2 and _occurs(v, text))
    steps = len(STEP_PATTERN.findall(text))
    return OverSpecification(tool_names=tools, internal_ids=ids, literal_arguments=literals, step_words=steps)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _say(name: str) -> str:
    """A field name as words, unfolded: `starts_at` -> 'starts at'."""
    return " ".join(t.lower() for t in re.split(r"[^A-Za-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)) if t)


def _typed_value(text: str) -> Any:
    """A claim's value (always a string) as the number it may be, so '57.00' matches '57'."""
    try:
        return float(text) if re.fullmatch(r"-?\d+\.\d+", text) else int(text) if text.isdigit() else text
    except ValueError:
        return text


def _the(label: str, owner: str = "the") -> str:
    """'issue date' -> 'the issue date'; 'when it was submitted' stays as it is."""
    if re.match(r"(?:when|whether|how|who|what|which|where)\b", label):
        return label
    return f"{owner} {label}"


def _amount(value: Any) -> str:
    """A number as a person says it: '5', not '5.00'; '12.50' stays."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return spoken(value)


def detail_sentence(label: str, value: Any, own: bool = False) -> str:
    """One detail of a request said as a clause a person writes ('The title is “Q3 plan”.', 'The amount is
    126.', 'My email is ...' for the persona's own), never as a form's 'Label: value.' line."""
    the = _the(label, "my" if own else "the")
    the = the[:1].upper() + the[1:]
    verb = "are" if re.search(r"[^su]s$", label) else "is"  # 'the notes are'
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{the} {verb} {_amount(value)}."
    text = spoken(value)
    free = isinstance(value, str) and "_" not in value and not spoken_date(value) and not own
    if free and (" " in text or text[:1].isupper()):
        return f"{the} {verb} “{text}”."
    return f"{the} {verb} {text}."


def held(name: str, value: Any, label: str, owner: str = "the", worded: str | None = None) -> HiddenFact:
    """A fact the user holds back, said as a person states it: a code in its intent's words (`worded`: "the
    kind is pre-trip", never "pre trip"), a date with its year and no weekday ("my date of birth is 12 March
    1988", never "Saturday 12 March"), anything else as `spoken` says it."""
    day = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}).*)?", value) if isinstance(value, str) else None
    if worded is not None:
        said = worded
    elif day:
        said = f"{int(day[3])} {calendar.month_name[int(day[2])]} {day[1]}"
        if day[4] is not None and (day[4], day[5]) != ("00", "00"):
            said += f" at {day[4]}:{day[5]}"
    else:
        said = spoken(value)
    return HiddenFact(key=name, value=value, description=f"{_the(label, owner)} is {said}")


# Labels that say nothing of what they belong to ('my name is Marketing' for a cost center's name).
BARE_LABELS = frozenset({"name", "title", "code", "number", "label", "type", "kind"})
# Labels of where a thing is: said of the thing ('the branch is in Austin'), never 'the city is Austin'.
PLACE_LABELS = frozenset({"city", "country", "town", "region", "location"})


def _singular(noun: str) -> str:
    """'cost centers' -> 'cost center', 'categories' -> 'category', 'branches' -> 'branch'; also the stems
    `graph.words` leaves ('branche', 'categorie')."""
    head, _, last = noun.rpartition(" ")
    endings = [("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss"), ("xes", "x"), ("s", "")]
    endings += [("ie", "y"), ("che", "ch"), ("she", "sh"), ("sse", "ss"), ("xe", "x")]
    for plural, one in endings:
        if last.endswith(plural) and not last.endswith("ss"):
            last = last[: -len(plural)] + one
            break
    return f"{head} {last}".strip()


def lookup_fact(
    spec: ToolSpec, name: str, value: Any, label: str, owner: str = "the", worded: str | None = None
) -> HiddenFact:
    """A value a lookup is keyed on, held back as the person knows it: of the thing the lookup finds ('my cost
    center name is Marketing', never 'my name is Marketing'; 'the branch is in Austin', never 'the city is
    Austin'); any other label as `held` says it."""
    thing = _singular(_entity(spec))
    if label in PLACE_LABELS and isinstance(value, str) and thing != "request":
        return HiddenFact(key=name, value=value, description=f"{owner} {thing} is in {worded or spoken(value)}")
    if label in BARE_LABELS and thing != "request":
        label = f"{thing} {label}"
    return held(name, value, label, owner, worded)


def _claim(verb: str, label: str, field: str, value: Any) -> Claim:
    return Claim(text=f"{verb} {_the(label)}: {spoken(value)}", values=[_fmt(value)], field=field)


def _heard_claim(verb: str, words: str, field: str, value: Any) -> Claim:
    """A claim on a field an intent's `hear` names, in the person's words; a yes/no field ('whether it needs a
    prescription') as a yes/no claim, which the answer states as 'yes' or 'no, it doesn't'."""
    if isinstance(value, bool):
        return Claim(text=f"{verb} {words}: {spoken(value)}", values=[json.dumps(value)], field=field, kind="yes_no")
    return Claim(text=f"{verb} {words}: {spoken(value)}", values=[_fmt(value)], field=field)


class Request(BaseModel):
    """What the user says (one message per turn), what they hold back, and what the answer must state."""

    turns: list[str]
    hidden_facts: list[HiddenFact] = Field(default_factory=list)
    claims: list[Claim] = Field(default_factory=list)
    uncalibrated: str = ""
    writer: str = "offline"
    asked: dict[int, str] = Field(
        default_factory=dict, description="gold call index -> the request for that change as the user said it"
    )


def uncalibrated(grounded: Grounded) -> str:
    """The chain read out as instructions: the over-specified request calibration must avoid."""
    parts = []
    for call in grounded.calls:
        args = ", ".join(f"{k}={_fmt(v)}" for k, v in call.arguments.items())
        parts.append(f"call {call.tool} with {args}" if args else f"call {call.tool}")
    return "Please " + ", then ".join(parts) + "."


def _entity(spec: ToolSpec) -> str:
    object_words = [w for w in words(spec.name)[1:] if w not in PARTICLES]
    if object_words:
        return " ".join(object_words)
    entities = [f.entity for f in spec.outputs if f.entity]
    return " ".join(words(entities[0])).lower() if entities else "request"


def _phrase(spec: ToolSpec, mine: bool) -> str:
    """`pay_invoice` -> 'pay my invoice'; `check_in` -> 'check me in'; a determiner keeps the tool name out."""
    tokens = words(spec.name)
    verb, rest = tokens[0], tokens[1:]
    if rest and all(t in PARTICLES for t in rest):
        return f"{verb} me {' '.join(rest)}"
    if not rest:  # 'unsubscribe': the verb alone says it ('unsubscribe a unsubscribe' does not)
        return verb
    det = "a new" if verb in NEW_VERBS else ("my" if mine else "the")
    if rest[0] in PREPOSITIONS and len(rest) > 1:  # respond_to_invitation -> respond to my invitation
        return f"{verb} {rest[0]} {'my' if mine else 'the'} {' '.join(rest[1:])}"
    return f"{verb} {det} {' '.join(rest)}"


def _known(spec: ToolSpec) -> set[str]:
    """Output fields of a tool that a user would know (names, dates, amounts; not ids or flags)."""
    return {f.name for f in spec.outputs if f.user_known and f.type != "boolean" and not is_id_like(f.name)}


def _ended(sentence: str) -> str:
    """The sentence with a full stop when it ends in none (nor a question mark, quote or bracket)."""
    return sentence if re.search(r"[.?!\"”)]\s*$", sentence) else sentence.rstrip() + "."


def self_phrase(phrase: str, name: str, email: str | None) -> str:
    """A `refer` phrase that names the speaker, said by the speaker: 'the card of Emma Dubois
    (emma.dubois@example.com)' -> 'my card', "Grace Dubois's team calendar" -> 'my team calendar', 'the
    Grace Dubois calendar' -> 'my calendar', 'driver Samuel Haddad' (the person themselves) -> 'me'. A phrase
    that does not name them is returned as it is."""
    if not _names(phrase, name, email):
        return phrase
    text = phrase
    if email:
        # 'my account under keiko@example.com' -> 'my account', never 'my account under'
        pattern = rf"\s*\(\s*{re.escape(email)}\s*\)|(?:\s+(?:under|with|at|for|by|via|as))?,?\s*{re.escape(email)}"
        text = re.sub(pattern, "", text).strip()
    if not name or name not in text:
        return text if text else "me"
    who = re.escape(name)
    if m := re.fullmatch(rf"(?:the |a |an )?(.+?) (?:of|for|belonging to) {who}", text):
        return f"my {m[1]}"
    if re.search(rf"(?:\bthe )?{who}(?:'s|’s)\s", text):
        return re.sub(rf"(?:\bthe )?{who}(?:'s|’s)\s", "my ", text, count=1)
    if m := re.fullmatch(rf"the {who} (.+)", text):
        return f"my {m[1]}"
    return "me"  # the phrase names the person: 'Samuel Haddad', 'driver Samuel Haddad', 'the customer ...'


def _named_within(text: str, output: Any, after: Any, before: Any) -> bool:
    """Whether `text` names a row of `output` by a date (and its hour, where it has one) inside the window
    `after`..`before`: a class asked for as "the 09:15 Morning Vinyasa Flow on Monday 13 April" needs no "during
    that rental" besides."""
    if isinstance(output, dict):
        return any(_named_within(text, v, after, before) for v in output.values())
    if isinstance(output, list):
        return any(_named_within(text, v, after, before) for v in output)
    if not inside(output, after, before) or not _says(text, output):
        return False
    clock = re.search(r"T(\d{2}:\d{2})", str(output))
    return clock is None or clock.group(1) in text


def _names_a_row(text: str, output: Any) -> bool:
    """Whether `text` names a row of `output` by a name of its own (a title, a name: a text of two words or more
    that is no id): "the Howth Coastal Hike" found by a search in a city needs no "It's in the same city as that
    branch" besides."""
    return any(
        isinstance(v, str) and len(v.split()) >= 2 and not is_id_like(k) and not re.match(r"\d{4}-", v) and v in text
        for row in rows_of(output)
        for k, v in row.items()
    )


def _says(text: str, value: Any) -> bool:
    """Whether `text` says `value`: as `mentions` finds it, or a small count in words ('one seat')."""
    word = NUMBER_WORDS.get(value) if isinstance(value, int) and not isinstance(value, bool) else None
    return mentions(text, value) or (word is not None and re.search(rf"\b{word}\b", text, re.IGNORECASE) is not None)


def _names(text: str, name: str, email: str | None) -> bool:
    """Whether `text` names the person by their full name or email."""
    return bool((name and re.search(rf"\b{re.escape(name)}\b", text)) or (email and email in text))


def first_person(text: str, name: str, email: str | None) -> str:
    """A request as its speaker says it: their own name, said where a phrasing names a person, becomes 'me',
    and a self-introduction inside the request ('This is Noah Moreau.') goes (the greeting already has one)."""
    if not name or not _names(text, name, email):
        return text
    who = re.escape(name)
    text = re.sub(rf"(?:(?<=^)|(?<=[.!?] ))(?:This is|It's|I'm|I am|My name is) {who}[.!]\s*", "", text)
    text = re.sub(rf"\b(?:This is|It's|I'm|I am|My name is) {who},?\s+", "I'm ", text)
    text = re.sub(r"\bI'm me\b[.,]?\s*", "", text)
    if email:
        text = re.sub(rf"\s*\(\s*{re.escape(email)}\s*\)", "", text)
    text = re.sub(rf"(?:\bthe )?{who}(?:'s|’s)\s", "my ", text)
    roles = r"(?:driver|member|patient|guest|customer|student|employee|user|subscriber)"
    text = re.sub(rf"\b(by|for|to|with|from|on|of) (?:the |a )?(?:{roles} )?{who}\b", r"\1 me", text)
    text = re.sub(rf"\b(?:the |a )?{roles} {who}\b", "me", text)
    return re.sub(r"\s{2,}", " ", text).strip()


# Words a reason starts with that make it a clause already ("plans changed", "my card was stolen").
_CLAUSE_START = frozenset(
    ["i", "i'm", "i've", "we", "we're", "it", "it's", "my", "our", "they", "there", "this", "that"]
)
# Past-tense verbs that say what happened of themselves ('Plans changed', 'Item arrived damaged'); another '-ed' after
# a noun is done to it ('Hours billed twice', 'Discount agreed after delivery').
_HAPPENED = frozenset(
    [
        "arrived",
        "changed",
        "failed",
        "stopped",
        "expired",
        "ended",
        "closed",
        "moved",
        "happened",
        "crashed",
        "broke",
        "came",
        "went",
        "died",
        "overlapped",
        "slipped",
        "fell",
        "dropped",
        "increased",
        "decreased",
        "doubled",
        "shifted",
        "finished",
        "started",
    ]
)
# Past-tense verbs a reason starts with when the person did it ("Took an equivalent course" -> "I took ...").
_DID = frozenset(["took", "left", "lost", "got", "found", "bought", "went", "made", "forgot", "broke", "paid", "saw"])
# How a reason sits in a phrasing as a form field: "Why? {reason}", "...: {reason}", "...; {reason}", "... - {reason}",
# "... . {reason}" (a full stop before it); the tail of the text before the slot.
_FORM_BEFORE = re.compile(r"(?:(?:\s*[.?!])?\s*(?:Why\?|Reason:)|\s*[:;\u2013\u2014.]|\s+-)\s*$")
# A reason asked to be filed as a field's value: 'Please record the reason as "{reason}"' (a parameter sentence),
# 'please note "{reason}" as the reason', 'a credit for "{reason}"': the instruction goes, the reason is said.
_FILE_VERB = r"(?:record|note|log|put|enter|give|mark|list|file|write)(?: down)?"
_REASON_AS = re.compile(
    rf"(?:(?<=[.?!])\s+|\s*[;,]\s*|\s+)(?:please |kindly |and )?{_FILE_VERB} (?:the |a |my |our )?reason"
    r" (?:as|is|to be)\s*$",
    re.IGNORECASE,
)
_FILED = re.compile(rf"(?:(?<=[.?!])\s+|\s*[;,]\s*|\s+)(?:please |kindly |and )?{_FILE_VERB}\s*$", re.IGNORECASE)
_AS_THE_REASON = re.compile(r"^\s+as (?:the|my|our) reason\b", re.IGNORECASE)
_FOR_QUOTED = re.compile(r"\s+for\s*$")
_QUOTE_PAIRS = {'"': '"', "\u201c": "\u201d"}


#: Who does things in a reason ('Traveller cancelled', 'Customer requested a refund'): the first word of a clause.
_PEOPLE = frozenset(
    "traveller traveler customer client guest driver operator patient student tutor member host guide seller buyer "
    "passenger doctor organizer organiser owner vendor supplier carrier courier teacher instructor manager".split()
)


#: The customer's own role, in a reason ('Traveller cancelled'): said by that customer, "because the traveller
#: cancelled" speaks of someone else, and the words of the value cannot turn into "I".
_CUSTOMER = frozenset("traveller traveler customer client guest patient student member buyer passenger owner".split())


#: Who a business is, in a reason: what they did ('Cancelled by the operator') is their reason, not the customer's.
_BUSINESS = frozenset("operator organizer organiser host guide store shop seller supplier carrier staff bank".split())


def because(reason: str) -> str | None:
    """A free-text reason as the clause a person says after 'because': 'No longer relevant' -> 'because it's no
    longer relevant', 'Too many emails' -> 'because I get too many emails', 'Took an equivalent course' -> 'because
    I took an equivalent course', 'Quarter-end calls' -> 'because of quarter-end calls'. The value's own words stay
    whole (a later check finds them in the message). None for a note that is no reason ('see the note', 'thanks')."""
    text = reason.strip().rstrip(".")
    if not text:
        return None
    low = text if text[:2].isupper() else text[:1].lower() + text[1:]
    first, *rest = low.lower().split()
    if first in {"as", "see", "thanks", "thank", "please", "ok", "fyi"}:
        return None
    if first in _CLAUSE_START or (first.endswith("s") and rest and rest[0] in _HAPPENED):
        return f"because {low}"  # 'Plans changed'
    if first.endswith("s") and rest and re.fullmatch(r"\w+ed", rest[0]):
        return f"because of {low}"  # 'Hours billed twice': done to them, never 'because hours billed twice'
    if first in {"no", "not"} or low.split()[-1] in {"compensation", "goodwill", "refund", "rebate"}:
        return f"because it's {low}"  # 'Service outage compensation': what the credit is, not its cause
    if first in {"never", "already", "just", "accidentally"}:
        return f"because I {low}"  # 'Never signed up'
    if rest and rest[0] == "not":
        det = "" if first in {"a", "an", "the", "this", "that"} else "the "
        return f"because I find {det}{low}"  # 'Content not useful': 'I find the content not useful'
    if first == "too" and rest and rest[0] in {"many", "much"}:
        return f"because I get {low}"
    passive = bool(rest) and rest[0] == "by"  # 'Cancelled by the operator': it was, not I did
    if passive and len(rest) > 1 and rest[-1] in _BUSINESS:
        return None  # what the business did ('Cancelled by the operator') is its reason, never the customer's
    if len(rest) == 1 and re.fullmatch(r"\w+(?:ed|en)", rest[0]) and first not in _PEOPLE | _CLAUSE_START:
        return None  # 'Trip postponed': 'because of the trip postponed' garbles, and the words must stay whole
    if (not rest or passive) and (re.fullmatch(r"\w+ed", first) or first in {"lost", "stolen", "broken"}):
        return f"because it was {low}"  # 'lost', 'damaged': said of the thing itself
    if first in _DID or re.fullmatch(r"\w+ed", first):
        return f"because I {low}"
    if first.endswith("ing"):
        return f"because I'm {low}"  # 'Moving to another provider'
    if rest and rest[0] in _HAPPENED and first not in {"a", "an", "the"}:
        return f"because the {low}"  # 'Item arrived damaged'
    if rest and re.fullmatch(r"\w+ed", rest[0]) and first in _CUSTOMER:
        return None  # the customer's own reason in the third person: no one says it of themselves
    if rest and re.fullmatch(r"\w+ed", rest[0]) and first in _PEOPLE:
        return f"because the {low}"  # 'Traveller cancelled': a person did it, never 'because of the traveller ...'
    if rest and re.fullmatch(r"\w+ed", rest[0]) and first not in {"a", "an", "the"}:
        return f"because of the {low}"  # 'Discount agreed after delivery': the discount was agreed
    if rest and re.fullmatch(r"\w+en", rest[0]) and first not in {"a", "an", "the"}:
        return f"because of the {low}"  # 'Prerequisite taken concurrently ...'
    head = low.split(" of ")[0].split()[-1]  # 'change' of 'Change of plans'
    if rest and first not in {"a", "an", "the"} and re.fullmatch(r"[a-z]+[^s]", head):
        article = "an" if low[0] in "aeiou" else "a"
        return f"because of {article} {low}"  # 'Duplicate charge', 'Change of plans', 'an injury recovery'
    return f"because of {low}"


def _reason_slot(name: str, description: str) -> bool:
    """A slot for why the person asks (free text): said as a clause of the sentence, never as a form field."""
    return name == "reason" or name.endswith("_reason") or description.lower().startswith("why ")


def said_reason(text: str, slot_text: str, value: Any) -> tuple[str, str] | None:
    """`text` with its reason slot `slot_text` said as a clause: where the phrasing puts it as a form field ("Why?
    {reason}", "...: {reason}", "X. {reason}") the field marker goes and 'because ...' joins the sentence; after a
    question it is a sentence of its own ("It's because ..."); a reason in brackets joins the sentence too;
    elsewhere ("for {reason}") the value stays as said. Returns the new text and the words put in; None when
    the value is no reason."""
    if not isinstance(value, str):
        return None
    clause = because(value)
    if clause is None:
        return None
    at = text.index(slot_text)
    before, after = text[:at], text[at + len(slot_text) :]
    if before[-1:] in _QUOTE_PAIRS and after[:1] == _QUOTE_PAIRS[before[-1]]:
        # a quoted reason is a value typed into a field; said, it loses its quotes and the filing instruction
        before, after = before[:-1], after[1:]
        field = _REASON_AS.search(before)
        filed = _FILED.search(before) if field is None else None
        if field is not None:
            before = before[: field.start()]
        elif filed is not None and (named := _AS_THE_REASON.match(after)) is not None:
            before, after = before[: filed.start()], after[named.end() :]
        elif (plain := _FOR_QUOTED.search(before)) is not None:
            before = before[: plain.start()]
        else:
            return None
        if before.rstrip()[-1:] in {".", "?", "!"}:
            before = before.rstrip() + " "  # the reason starts a sentence of its own
        else:
            return f"{before.rstrip()} {clause}{after}", clause
    form = _FORM_BEFORE.search(before)
    if form is not None:
        return f"{before[: form.start()]} {clause}{after}", clause
    if before.endswith("(") and after.startswith(")"):  # "cancel booking TB-1 (cancelled by the operator)"
        return f"{before[:-1].rstrip()} {clause}{after[1:]}", clause
    if before.endswith("? "):
        # a sentence of its own: "I left it at a restaurant.", "It's no longer relevant.", "It's because of ..."
        bare = clause.removeprefix("because ")
        words_ = f"It's {clause}" if bare.startswith("of ") else bare[:1].upper() + bare[1:]
        return f"{before}{words_}{after}", words_
    return None


def _same_object(grounded: Grounded, goal: int, index: int) -> bool:
    """Whether read `index` looks up the very row goal `goal` names: a text argument of both calls (a booking
    code, a title; not a date or a number, which many rows share) that is not who the person is (their email,
    name or card: those key many rows)."""
    persona = grounded.persona
    own = {persona.email, persona.name, *(str(v) for v in persona.facts.values())}

    def naming(call: Any) -> set[str]:
        return {
            v
            for v in call.arguments.values()
            if isinstance(v, str) and len(v) >= 4 and v not in own and not re.match(r"\d{4}-\d{2}-\d{2}", v)
        }

    return bool(naming(grounded.calls[goal]) & naming(grounded.calls[index]))


# What kind of answer a question sentence wants, by its question words; a request put as a question ("Can you
# move ...?", "Could I have ...?") wants none.
_REQUEST = re.compile(r"^(?:can|could|would|will|may)\s+(?:you|we|i)\b|^please\b|^i'd\b|^i\b")
_YES_NO = re.compile(r"^(?:is|are|am|was|were|has|have|had|do|does|did|will)\b")
_MONEY_WORDS = re.compile(
    r"\b(?:cost|costs|price|prices|priced|fee|fees|charge[sd]?|amounts?|totals?|owed?|bill|paid|pays?|copays?|"
    r"balance|rate|deposit|fine|fines|limit|subtotal|refund(?:ed)?|spent|money)\b|\$"
)


def _question_core(sentence: str) -> str:
    """The question itself, lower-cased: without a lead-in ('Oh, and ...') or a condition before it ('If I cancel
    now, is there a fee?' asks 'is there a fee?')."""
    text = re.sub(r"^\W*(?:(?:and|oh|also|so|then|ok|okay|well|now)\W+)*", "", sentence.lower())
    return re.sub(r"^(?:if|before|once|after)\b[^,?]*,\s*", "", text)


def _question_kind(sentence: str) -> str | None:
    """What a question sentence asks for: 'date' (when, what time), 'money' (how much), 'number' (how many,
    how long), 'yes_no' ('is it ...?', 'do I need ...?'), 'what' (any other question); None for a request."""
    text = _question_core(sentence)
    # 'what does it cost?', 'what would it cost to cancel?', "what's the price?": an amount, like 'how much'
    if re.search(r"\bhow much\b|\bwhat (?:does|did|would|will)\b[^?]*\b(?:cost|charge)\b", text) or re.search(
        r"\bwhat(?:'s| is| was| are) the (?:cost|price|charge|fee)s?\b", text
    ):
        return "money"
    if re.search(r"\bhow (?:many|long|far|often)\b", text):
        return "number"
    if re.search(r"\b(?:when|what time|what dates?|which dates?|what day|which days?|until when)\b", text):
        return "date"
    if re.match(r"where\b", text) and not re.search(r"\bstands?\b", text):
        return "place"  # 'where does it start?' asks a place; 'where does my claim stand?' its status
    if re.match(r"(?:can|could|would|will) you (?:tell|let me know|check|show|list|read|walk|find|give)\b", text):
        return "what"  # "Could you tell me more about the tour: price, group size and meeting point?"
    if re.match(r"(?:can|could) i\b", text):
        return "may_i"  # "can I buy it without a prescription?" asks a yes/no; "Can I book ...?" asks for a booking
    if _REQUEST.match(text):
        return None
    if _YES_NO.match(text):
        return "yes_no"
    return "what" if re.match(r"(?:what|what's|which|who|whose|where|why)\b", text) else None


def _field_kind(field: str, words_: str, value: Any) -> str:
    """What kind of answer an output field gives: 'yes_no' (a flag, or a field heard as 'whether ...'), 'date',
    'money', 'number' or 'other'; read from its value and from the person's words for it."""
    said = f"{field.replace('_', ' ')} {words_}".lower()
    if isinstance(value, bool) or words_.lower().startswith("whether"):
        return "yes_no"
    if (isinstance(value, str) and re.match(r"\d{4}-\d{2}-\d{2}", value)) or re.search(
        r"\b(?:when|date|dates|day|days|deadline|time|times)\b", words_.lower()
    ):
        return "date"
    if isinstance(value, (int, float)) or re.match(r"how (?:much|many)\b", words_.lower()):
        return "money" if _MONEY_WORDS.search(said) else "number"
    if isinstance(value, str) and _PLACE_WORDS.search(said):
        return "place"
    return "other"


# What a field names when it says where something is: 'where does the tour start?' asks its meeting point.
_PLACE_WORDS = re.compile(
    r"\b(?:address|location|place|meeting|venue|branch|station|city|destination|terminal|gate|where)\b"
)


_FITS = {"date": {"date"}, "place": {"place"}, "money": {"money", "number"}, "number": {"number", "money"}}


# Past forms whose stem is not the present's: 'the net amount spent' answers 'my total spending'.
_IRREGULAR = {
    "spent": "spend",
    "paid": "pay",
    "sold": "sell",
    "bought": "buy",
    "sent": "send",
    "lent": "lend",
    "owed": "owe",
    "held": "hold",
    "made": "make",
    "taken": "take",
    "given": "give",
    "won": "win",
}
# Words that say an answer is a number without saying of what ('my total spending' asks the spending, not any
# total): a field named by one of them alone is a weaker match than one named by what the amount is of.
_GENERIC = frozenset({"total", "totals", "amount", "amounts", "number", "count", "sum"})


def _stem_match(named: set[str], said: set[str]) -> bool:
    """A word of a field's name or words that is one of the question's, or shares a five-letter stem with it
    ('renews' and 'renew', 'copays' and 'copay', 'spent' and 'spending'; never 'work' and 'workshop', 'date' and
    'dated')."""
    for w in named:
        for q in said:
            w, q = _IRREGULAR.get(w, w), _IRREGULAR.get(q, q)
            a, b = w.rstrip("s") if len(w) > 3 else w, q.rstrip("s") if len(q) > 3 else q
            if a == b or (min(len(a), len(b)) >= 5 and (a[:5] == b[:5] or a.startswith(b) or b.startswith(a))):
                return True
    return False


# Words a question or a field's words share without being about the same thing ('has it been paid?', 'how much
# has been spent').
_FILLER = frozenset(
    "whether each one any still its has been does did can will get got there now right yet far so".split()
)


def _name_words(field: str) -> str:
    """The words of a field's name that say what it is: none for a derived one (its parts are other fields)."""
    return "" if DERIVED.match(field) else field.replace("_", " ")


def asked_fields(question: str, options: Sequence[tuple[str, str, Any]]) -> list[str]:
    """The fields of `options` ((field, the person's words, value), in the intent's `hear` order) that the
    question sentences of `question` ask for, by meaning: a field whose name or words share a stem with the
    question and whose kind of answer fits it ('when' a date, 'where' a place, 'how much' an amount); where none
    does, the first field of the kind the question wants ("How much would I pay?" -> the copay, "Do you still
    take my plan?" -> whether it is accepted, when that is the only yes/no). A request ('Could you book ...?')
    asks for nothing. Pass the phrasing with its slots taken out: a value said in it ('account 4410-...') is no
    question."""
    found: list[str] = []
    for _, fields in asked_by_clause(question, options):
        found += [f for f in fields if f not in found]
    return found


def unanswered_questions(question: str, options: Sequence[tuple[str, str, Any]]) -> list[str]:
    """The question clauses of `question` that ask for a value of a kind (where, when, how much, how many) no
    field of `options` answers: "Where does the tour start?" of a tour whose meeting point the intent's words
    never tie to 'start'. A broad question ('what's happening with my claim?') is answered by the fields the
    writer then asks for in words; a yes/no may rightly be answered by none ('is anything missing?')."""
    return [c for c, fields in asked_by_clause(question, options) if not fields and _question_kind(c) in _VALUE]


_VALUE = frozenset({"place", "date", "money", "number"})


def asked_by_clause(question: str, options: Sequence[tuple[str, str, Any]]) -> list[tuple[str, list[str]]]:
    """Each question clause of `question` with the fields of `options` it asks for (see `asked_fields`)."""
    asked: list[tuple[str, list[str]]] = []
    found: list[str] = []
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", question) if s.strip().endswith("?")]
    clauses = [
        c
        for s in sentences
        for c in re.split(r",?\s+and\s+(?=(?:what|when|how|which|where|who|whether|is|are|can|do|does|did)\b)", s)
    ]
    kinds = {f: _field_kind(f, w, v) for f, w, v in options}
    for clause in clauses:
        want = _question_kind(clause)
        if want is None:
            continue
        named_by = {  # a derived field ('capacity - seats_booked') is named by its words alone, not its parts'
            field: {w for w in re.findall(r"[a-z]+", f"{_name_words(field)} {words_}".lower()) if len(w) >= 3}
            - _ASKING_WORDS
            - _FILLER
            for field, words_, _ in options
        }
        # Each thing a clause lists is asked for ("price, group size and meeting point"); within one, the field
        # it names most closely ("my copay for generics": the generic copay, not the brand-name one)
        stemmed: list[str] = []
        for item in re.split(r",\s+(?:and\s+|or\s+)?|\s+(?:and|or)\s+|:\s+", _question_core(clause)):
            words_said = re.findall(r"[a-z]+", item)
            said = {w for w in words_said if len(w) >= 3 and w not in _ASKING_WORDS and w not in _FILLER}
            said |= {a + b for a, b in zip(words_said, words_said[1:], strict=False)}  # 'pick up' -> 'pickup'
            if "stand" in said:
                said.add("status")  # 'where does it stand?' asks its status
            score = {
                f: sum(_stem_match({w}, said) * (0.5 if w in _GENERIC else 1.0) for w in named_by[f])
                for f, _, _ in options
            }
            # a field derived from two others ('the seats left') only where it is named more closely than any
            # field the server returns: 'how many seats does it have?' is the capacity
            plain = max((n for f, n in score.items() if not DERIVED.match(f)), default=0)
            score = {f: n if not DERIVED.match(f) or n > plain else 0 for f, n in score.items()}
            best = max(score.values(), default=0)
            stemmed += [f for f, _, _ in options if best and score[f] == best and f not in stemmed]
        fits = _FITS.get(want)
        # 'How much is the plan a month?': the monthly fee (an amount), not the classes a week the plan also names
        matched = [f for f in stemmed if fits is None or kinds[f] == want]
        matched = matched or [f for f in stemmed if fits is None or kinds[f] in fits]
        if not matched and fits is not None:
            # "how much would I pay, and how much would insurance pay?": each clause its own amount
            fresh = [f for f, _, _ in options if f not in found]
            first = next((f for f in fresh if kinds[f] == want), None) or next(
                (f for f in fresh if kinds[f] in fits), None
            )
            matched = [first] if first else []
        elif want == "may_i":
            matched = [f for f in stemmed if kinds[f] == "yes_no"]
        elif not matched and want == "yes_no":
            # "Do you still take my plan?": the one yes/no field; "has it been approved?": its status
            flags = [f for f, _, _ in options if kinds[f] == "yes_no"]
            matched = flags if len(flags) == 1 else [f for f, _, _ in options if f == "status"]
            if re.search(r"\bany(?:thing|one|body)?\b", clause.lower()):
                matched = []  # "is anything missing?" asks whether something is there, not the flag beside it
        asked.append((clause, matched))
        found += [f for f in matched if f not in found]
    return asked


def _asking(text: str, intent: Intent) -> str:
    """The words of the intent's phrasing that `text` was written from, its slots taken out: what the person
    asks, without the values and the row names said in it (the phrasing sharing the most words with `text`)."""
    said = set(re.findall(r"[a-z']+", text.lower()))

    def shared(phrasing: str) -> int:
        return len(set(re.findall(r"[a-z']+", re.sub(r"\{[^}]*\}", " ", phrasing).lower())) & said)

    best = max(intent.say, key=shared, default="")
    return re.sub(r"\s+", " ", re.sub(r"\{[^}]*\}", " ", best)).strip()


def _hearable(call: Any, intent: Intent, told: list[Any], persona: PersonaRecord) -> list[tuple[str, str, Any]]:
    """(field, the person's words, value) for each field the intent's `hear` names, in its order, that one row of
    the answer holds (never a page's count beside a list, nor a value the user said or knows of themselves)."""
    told = [*told, persona.email, *persona.facts.values()]
    output = call.output
    listed = isinstance(output, dict) and any(isinstance(v, list) for v in output.values())
    # ids the answer shows in its id fields, or anything shaped like one: a text that carries one ("Card purchase
    # Ironbridge Hardware (ch_aes8g7)") is never what a person asks to hear; read back, it says an internal id
    ids = {str(v) for r in rows_of(output) for k, v in r.items() if is_id_like(k) and isinstance(v, str) and len(v) > 3}
    options = []
    for field, words_ in intent.hear.items():
        if field in PAGING and listed:
            continue
        holding = [r for r in rows_of(output) if value_of(r, field) not in (None, "")]
        if len(holding) != 1:
            continue
        value = value_of(holding[0], field)
        if isinstance(value, (dict, list)) or (not isinstance(value, bool) and any(same(value, t) for t in told)):
            continue  # a yes/no ('whether it needs a prescription') is never something the user said
        carries_id = isinstance(value, str) and (any(i in value for i in ids) or ID_SHAPE.search(value))
        if carries_id and not is_id_like(field):
            continue
        options.append((field, words_, value))
    return options


def _wanted(claims: list[Claim]) -> str:
    """What the claims of an intent's `hear` ask for, in the person's words: 'the balance and the fee'."""
    said = [c.text.split(":")[0].split(" ", 1)[1] for c in claims]
    return " and ".join(said) if len(said) < 3 else ", ".join(said[:-1]) + " and " + said[-1]


# Words too common to say what a question asks about ("when is it due" and "the due date" share "due").
_ASKING_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "you",
        "are",
        "was",
        "its",
        "our",
        "not",
        "any",
        "how",
        "who",
        "what",
        "when",
        "where",
        "which",
        "whether",
        "much",
        "many",
        "have",
        "with",
        "that",
        "this",
        "from",
        "your",
        "them",
        "they",
    ]
)


def _unasked(claims: list[Claim], asking: str) -> list[Claim]:
    """The claims the question (`asking`: the phrasing, slots taken out) does not ask for by meaning
    (`asked_fields`): the writer asks for them in words ("Could you tell me the due date?")."""
    options = [
        (
            c.field or "",
            c.text.split(":")[0].split(" ", 1)[-1],
            True if c.kind == "yes_no" else _typed_value(c.values[0]) if c.values else None,
        )
        for c in claims
    ]
    asked = asked_fields(asking, options)
    return [c for c in claims if (c.field or "") not in asked]


class OfflineWriter:
    """Templates by persona style and effect (read or write); no model, deterministic per `rng`. Where the
    server has intents (`catalog.intents`), a goal is asked for in its intent's words and the rows it acts
    on are named by their tables' `refer` phrasings, rendered from the seed rows in `worlds`."""

    name = "offline"

    def __init__(self, catalog: Catalog, worlds: dict[str, ServerWorld] | None = None) -> None:
        self.catalog = catalog
        self.worlds = worlds or {}
        self._index: dict[str, dict[str, list[tuple[str, int]]]] = {}
        self._own: dict[tuple[str, str], dict[str, list[Row]]] = {}
        self._people: dict[tuple[str, str], tuple[set[Any], set[Any]]] = {}  # (server, email) -> their keys, others'
        self._refs: dict[str, dict[str, str]] = {}
        # each server's ordinary words (its data writes them in lower case): not names; another server's "Organic
        # Chemistry" makes no proper name of its "Organic carrots"
        self.common = {s: common_words([w]) for s, w in self.worlds.items()}

    # -- intents: how a person asks, and how they name a row

    def _ref_table(self, server: str, name: str) -> str | None:
        """The table a column or param named `name` references (`hotel_id` -> hotels), from the listed refs."""
        if server not in self._refs:
            refs: dict[str, str] = {}
            for spec in self.catalog.by_server.get(server, []):
                for column, ref in [*((p.name, p.ref) for p in spec.params), *((f.name, f.ref) for f in spec.outputs)]:
                    if ref and "." in ref:
                        refs.setdefault(column, ref.split(".", 1)[0])
            world = self.worlds.get(server)
            for table, key in (world.keys if world else {}).items():
                refs.setdefault(key, table)
            self._refs[server] = refs
        return self._refs[server].get(name)

    def _own_rows(self, server: str, persona: PersonaRecord) -> dict[str, list[Row]]:
        """The persona's rows of a server (theirs, and rows pointing at theirs), as grounding finds them."""
        key = (server, persona.email or persona.name)
        if key not in self._own:
            world = self.worlds.get(server)
            if world is None:
                return {}
            if server not in self._index:
                self._index[server] = value_index(world)
            self._own[key] = persona_rows(world, persona, 2, self._index[server])
        return self._own[key]

    def _names_another(self, server: str, table: str, row: Row, persona: PersonaRecord) -> bool:
        """Whether `row` names another person and never the persona: by email (`someone_elses`), or by the key of
        a row of a people table (one whose rows hold the persona's email, like members): a message whose author
        is someone else, a review another guest wrote."""
        if someone_elses(row, persona.email):
            return True
        world = self.worlds.get(server)
        if world is None or not persona.email:
            return False
        if (server, persona.email) not in self._people:
            self._own_rows(server, persona)  # builds the value index
            hits = self._index[server].get(persona.email, [])
            theirs = {world.tables[t][n].get(world.keys.get(t, "")) for t, n in hits}
            keyed = {r.get(world.keys.get(t, "")) for t in {t for t, _ in hits} for r in world.tables.get(t, [])}
            self._people[server, persona.email] = (theirs, keyed - theirs)
        theirs, others = self._people[server, persona.email]
        named = {v for k, v in row.items() if k != world.keys.get(table, "") and isinstance(v, str)}
        return not named & theirs and bool(named & others)

    def _had_before(self, call: Any, phrasing: str, persona: PersonaRecord) -> bool:
        """Whether every row a phrasing's slots name is one the persona had to do with before: a row of theirs
        (a past reservation) holds its value, other than the row the value keys."""
        own = self._own_rows(call.server, persona)
        world = self.worlds.get(call.server)
        keys = world.keys if world else {}
        for slot in slots(phrasing):
            value = call.arguments.get(slot.name)
            if not is_id_like(slot.name) or not isinstance(value, str):
                continue
            if not any(
                v == value and column != keys.get(table)
                for table, rows in own.items()
                for row in rows
                for column, v in row.items()
            ):
                return False
        return True

    def _seed_row(self, server: str, table: str, value: Any) -> Row | None:
        world = self.worlds.get(server)
        key = world.keys.get(table) if world else None
        if world is None or not key:
            return None
        return next((r for r in world.tables.get(table, []) if r.get(key) == value), None)

    def _row(self, grounded: Grounded, before: int, server: str, table: str, key: str, value: Any) -> Row | None:
        """The row of `table` whose `key` is `value` as the person knows it before call `before`: the seed row,
        updated by what earlier calls of the task showed of it (a row made earlier in the task has only that)."""
        row = dict(self._seed_row(server, table, value) or {})
        world = self.worlds.get(server)
        columns = set(world.tables[table][0]) if world and world.tables.get(table) else set()
        for call in grounded.calls[:before]:
            if call.server != server:
                continue
            for found in rows_of(call.output):
                if same(found.get(key), value) and (not columns or set(found) <= columns):
                    row.update(found)
        return row or None

    def _render_refer(self, server: str, table: str, phrasing: str, row: Row) -> str | None:
        """A table's `refer` phrasing said of one row (a coded value in its table's `words`); None when a slot
        has no value in it."""
        text = phrasing
        intents = self.catalog.intents.get(server)
        for slot in slots(phrasing):
            value, worded_by = row.get(slot.name), table
            if slot.follow:
                worded_by = self._ref_table(server, slot.name) or ""
                other = self._seed_row(server, worded_by, value) if worded_by else None
                value = other.get(slot.follow) if other else None
            column = slot.follow or slot.name
            words = intents.words.get(worded_by, {}) if intents else {}
            said = word_for(words, column, value) if value not in (None, "") else None
            further = self._ref_table(server, slot.follow) if slot.follow and is_id_like(slot.follow) else None
            if said is None and further is not None and further != table:
                # a key followed one step further ('{section_id.course_id}'): the row it names, said as its own
                # table names it ('my HIST 210 class'), never the key itself
                said = self._named_by_refer(server, further, value)
                if said is None:
                    return None
            said = said if said is not None else say_slot(value, slot.format)
            if said is None:
                return None
            # a row is found by its name through a search that ignores case: said as a person writes it
            text = put(
                text, slot.text, casual(said, text[: text.index(slot.text)], self.common.get(server, frozenset()))
            )
        return text

    def _named_by_refer(self, server: str, table: str, key: Any) -> str | None:
        """The seed row of `table` whose key is `key`, said by the first of its table's `refer` phrasings that
        renders ('HIST 210' for a course); None when none does."""
        intents = self.catalog.intents.get(server)
        row = self._seed_row(server, table, key)
        if intents is None or row is None:
            return None
        rendered = (self._render_refer(server, table, p, row) for p in intents.refer.get(table, []))
        return next((text for text in rendered if text is not None), None)

    def refer(
        self, rng: random.Random, grounded: Grounded, server: str, table: str, row: Row, refs: dict[Any, str]
    ) -> str | None:
        """How the persona names `row`: a `refer` phrasing whose words fit no other row of theirs in that table
        (of the whole table, when the row is not theirs, like a room to book; then never a 'my ...' phrasing),
        or two phrasings together when no one alone does; None when nothing tells the row apart."""
        world = self.worlds.get(server)
        intents = self.catalog.intents.get(server)
        key = world.keys.get(table, "") if world else ""
        ident = row.get(key)
        if (server, table, ident) in refs:
            return refs[server, table, ident]
        phrasings = intents.refer.get(table, []) if intents else []
        own = self._own_rows(server, grounded.persona).get(table, [])
        mine = any(same(r.get(key), ident) for r in own)
        pool = own if mine else (world.tables.get(table, []) if world else [])
        others = [r for r in pool if not same(r.get(key), ident)]
        # "my message" of a message someone else wrote (found through the persona's channel) is not theirs
        mine = mine and not self._names_another(server, table, row, grounded.persona)
        usable = [p for p in phrasings if mine or not MY.search(p)]
        texts = {p: t for p in usable if (t := self._render_refer(server, table, p, row)) is not None}

        def unique(chosen: tuple[str, ...]) -> bool:
            said = tuple(texts[p].lower() for p in chosen)
            return all(
                tuple((self._render_refer(server, table, p, o) or "").lower() for p in chosen) != said for o in others
            )

        single = [(p,) for p in texts if unique((p,))]
        pairs = [] if single else [c for c in combinations(texts, 2) if unique(c)]
        if not single and not pairs:
            return None
        # The words the gold's searches are keyed on (a book's title, a course's code) name it best: then the
        # agent searches by what the user said, and nothing else needs holding back.
        keyed = [v for c in grounded.calls if not c.uses for v in c.arguments.values() if isinstance(v, str)]
        persona = grounded.persona
        fits: list[tuple[str, ...]] = [*(single or pairs)]
        # A person does not name themselves in the third person: a phrasing without their name, where one fits
        fits = [c for c in fits if not any(_names(texts[p], persona.name, persona.email) for p in c)] or fits
        keyed_fits = [c for c in fits if any(mentions(texts[p], v) for p in c for v in keyed)] or fits
        # Their own row in their own words ('my bookshelf listing in Seattle'), not as a buyer would find it ('the
        # bookshelf listed for $54.00 in Seattle'), where a 'my ...' phrasing fits as well
        chosen = rng.choice([c for c in keyed_fits if mine and any(MY.search(p) for p in c)] or keyed_fits)
        said = [self_phrase(texts[p], persona.name, persona.email) for p in chosen]
        refs[server, table, ident] = ", ".join(dict.fromkeys(said))
        # named again in the same message: a shorter way of its own ('the #general channel' after '#general in
        # the Northwind workspace'), never the same words twice
        shorter = sorted((t for p, t in texts.items() if p not in chosen and len(t) < len(texts[chosen[0]])), key=len)
        if shorter:
            refs[AGAIN, refs[server, table, ident], None] = self_phrase(shorter[0], persona.name, persona.email)
        return refs[server, table, ident]

    def _intent_request(
        self, rng: random.Random, grounded: Grounded, index: int, intent: Intent, told: list[Any], refs: dict[Any, str]
    ) -> tuple[str, set[str]]:
        """Call `index` asked for in one of its intent's phrasings (chosen by `rng` among those whose slots its
        arguments fill), and the params it says. Raises `Drop` when no phrasing fits, or when a row it names
        cannot be told apart from the persona's other rows."""
        call = grounded.calls[index]
        spec = self.catalog.spec(call.server, call.tool)
        params = {p.name: p for p in spec.params}
        fitting = [
            p
            for p in intent.say
            if all(s.name in params and call.arguments.get(s.name) not in (None, "", []) for s in slots(p))
        ]
        persona = grounded.persona
        # "I'd like room 102 again" tells of a stay the person had: said only where one of their rows holds the
        # value beside the row it names (a past reservation of that room), never of a room they never had
        fitting = [p for p in fitting if not AGAIN_SAID.search(p) or self._had_before(call, p, persona)]
        if not fitting:
            raise Drop("intent: no phrasing fits the call", f"{call.server}.{call.tool}")
        rng.shuffle(fitting)
        naming = False  # a phrasing fitted but still names the speaker ('what else is Olga Weber selling?')
        # A phrasing that says every optional detail of the call first: one it leaves out would have to be held
        # back, and nobody is asked for a memo or a filter they never mentioned.
        optional = {
            n for n, v in call.arguments.items() if n in params and not params[n].required and v not in (None, "")
        }
        fitting.sort(key=lambda p: len(optional - {s.name for s in slots(p)}))
        carried = self.carried(grounded, index)
        for phrasing in fitting:
            # A value carried from an earlier turn is said as what it is ("for the same dates as that rental"),
            # never as the literal: the agent has to carry it over (`envfarm.clients.flow`).
            texts: dict[str, list[str]] = {}
            for slot in slots(phrasing):
                texts.setdefault(slot.name, []).append(slot.text)
            spoken_as = refer_in(phrasing, texts, carried) if carried else phrasing
            if spoken_as is None:
                continue
            text, said = spoken_as, []
            for slot in slots(spoken_as):
                value, param = call.arguments[slot.name], params[slot.name]
                table = param.ref.split(".", 1)[0] if param.ref else None
                if table is None and (slot.follow or is_id_like(slot.name)):
                    table = self._ref_table(call.server, slot.name)
                if table is None and (slot.follow or (is_id_like(slot.name) and not param.user_known)):
                    break  # an id whose table is unknown: said plainly it would be the id itself
                if table is not None and (slot.follow or not param.user_known or is_id_like(slot.name)):
                    key = param.ref.split(".", 1)[1] if param.ref and "." in param.ref else slot.name
                    row = self._row(grounded, index, call.server, table, key, value)
                    if row is None:
                        break
                    if self.worlds.get(call.server) and self._seed_row(call.server, table, value) is None:
                        # a row the task itself made: the person cannot name it by what the answer showed
                        raise Drop("intent: names a row made in the task", f"{call.server}.{call.tool}")
                    if slot.follow:
                        followed = row.get(slot.follow)
                        words = word_for(intent.words, f"{slot.name}.{slot.follow}", followed)
                        words = words if words is not None else say_slot(followed, slot.format)
                    else:
                        words = self.refer(rng, grounded, call.server, table, row, refs)
                    said += [
                        v for v in row.values() if words and not isinstance(v, (dict, list)) and mentions(words, v)
                    ]
                else:
                    if value in FREE_TEXT and not NOTE_SLOT.search(slot.name):
                        break  # filler text ('thanks for checking') where a name belongs: 'Call them thanks for ...'
                    # a code (an enum, a yes/no) in the intent's words: "I was charged twice", never "duplicate"
                    words = word_for(intent.words, slot.name, value)
                    # what is given is stored or looked up as it is: only a code the schema lists is said in words
                    words = words if words is not None else say_slot(value, slot.format, bool(param.enum))
                    if isinstance(value, str) and f":{slot.text}:" in phrasing:
                        words = value  # a code typed between colons (':white_check_mark:'), never unfolded
                if words is not None and _reason_slot(slot.name, param.description) and not intent.words.get(slot.name):
                    # "Why? No longer relevant." reads as a form: "... because it's no longer relevant"
                    reasoned = said_reason(text, slot.text, value)
                    if reasoned is not None:
                        text, words = reasoned
                        said.append(value)
                        continue
                    before = text[: text.index(slot.text)]
                    if _FORM_BEFORE.search(before) or not before or before.endswith("("):
                        break  # a note that is no reason, or one no customer gives, in a reason's place
                if words is None:
                    break
                said.append(value)
                after = phrasing[phrasing.index(slot.text) + len(slot.text) :]
                times = re.search(r"(?:\bx|×)\s*$", phrasing[: phrasing.index(slot.text)]) is not None  # 'x 1'
                if words == "1" and not isinstance(value, bool) and not UNIT_AFTER.match(after) and not times:
                    # '{adults} adults' said of one: 'one adult'; 'I need {quantity}.': 'I need one.'
                    text = re.sub(rf"{re.escape(slot.text)} (\w+[^s\W])s\b", rf"{slot.text} \1", text, count=1)
                    # 'for {seats} of us' said of one: 'for one person', never 'for one of us'
                    text = text.replace(f"{slot.text} of us", f"{slot.text} person", 1)
                    words = "one"
                if spec.read_only or table is not None:  # searches ignore case; a value a write stores is kept
                    words = casual(words, text[: text.index(slot.text)], self.common.get(call.server, frozenset()))
                text = put(text, slot.text, words)
            else:
                # The speaker's own name said where a phrasing names a person ("by driver Samuel Haddad", "This
                # is Noah Moreau."): 'by me', or gone; a phrasing that still names them is a last resort.
                text = first_person(text, persona.name, persona.email)
                if _names(text, persona.name, None) or SUBJECT_ME.search(text):
                    naming = True
                    continue
                told.extend(said)
                return text, {s.name for s in slots(phrasing)}
        if naming:
            raise Drop("intent: the speaker would name themselves", f"{call.server}.{call.tool}")
        raise Drop("intent: no way to name the row", f"{call.server}.{call.tool}")

    def carried(self, grounded: Grounded, index: int) -> list[Carry]:
        """The inputs of call `index` filled from an earlier turn's call on another server, as the sampler bound
        them (`envfarm.clients.flow.carries`)."""
        step, call = grounded.chain.steps[index], grounded.calls[index]
        spec = self.catalog.spec(call.server, call.tool)
        found = [
            c
            for c in carries(self.catalog.spec, grounded.chain.steps, spec, step.turn)
            if c.param in step.binds
            and step.binds[c.param].step == c.step
            and grounded.sources[index].get(c.param) == "output"
        ]
        if short_booking(found, call.arguments):
            raise Drop("flow: a booking carried over a span shorter than a day", f"{call.server}.{call.tool}")
        return found

    def _worded(self, call: Any, name: str, value: Any) -> str | None:
        """How the call's intent words a coded value of `name` ('pre-trip' for `pre_trip`); None when it has none."""
        found = self.catalog.intents.get(call.server)
        intent = found.tools.get(call.tool) if found else None
        return word_for(intent.words, name, value) if intent is not None else None

    def _heard(
        self,
        rng: random.Random,
        call: Any,
        intent: Intent,
        told: list[Any],
        read: bool,
        persona: PersonaRecord,
        question: str = "",
    ) -> tuple[list[Claim], list[tuple[str, list[str]]]]:
        """Claims on the fields the intent's `hear` names, labelled with the person's words: only a field one row
        of the answer holds (never a page's count beside a list, nor a value the user said or knows of
        themselves: their email, their phone). A read whose question (`question`: its phrasing, slots taken out)
        asks for fields claims exactly those ("How much would I pay, and how much would insurance pay?": both,
        nothing beside them); otherwise up to two drawn by `rng`, which the writer then asks for in words. With
        them, each question clause that asks for fields and those fields: one of them must stay claimed."""
        options = _hearable(call, intent, told, persona)
        # A field the request itself asks for ("When is my rental RA1 due back?" asks the return time) is always
        # heard: a question no claim checks passes any answer; a field it does not ask for is never claimed.
        clauses = [(c, f) for c, f in asked_by_clause(question, options) if f] if read else []
        asked = [f for _, fields in clauses for f in fields]
        if read and question:
            # "..., and how many does my plan allow?" where the plan allows any number (the field is empty), or
            # several rows answer it: part of the question no claim can check, so another request is written
            types = {o.name: o.type for o in self.catalog.spec(call.server, call.tool).outputs}
            stand_in = {"integer": 0, "number": 0.0, "boolean": False}  # the kind of answer an empty field has
            every = [
                (f, w, next((v for r in rows_of(call.output) if (v := value_of(r, f)) is not None), None))
                for f, w in intent.hear.items()
            ]
            every = [(f, w, stand_in.get(types.get(f, ""), v) if v is None else v) for f, w, v in every]
            held = {f for f, _, _ in options}
            unheard = [f for f in asked_fields(question, every) if f not in held and f not in PAGING]
            if unheard:
                raise Drop("intent: asks what no claim can check", f"{call.server}.{call.tool}.{unheard[0]}")
            # "Where does the tour start?" where no field the intent hears is tied to it: no claim would check it
            missing = unanswered_questions(question, every)
            if missing:
                raise Drop("intent: asks what no claim can check", f"{call.server}.{call.tool}: {missing[0]!r}")
        wanted = [o for o in options if o[0] in asked]
        drawn = [] if wanted else rng.sample(options, min(2, len(options)))
        chosen = sorted([*wanted, *drawn], key=lambda o: list(intent.hear).index(o[0]))
        verb = "states" if read else "confirms"
        return [_heard_claim(verb, w, f, v) for f, w, v in chosen], clauses

    def _required(self, call: Any, told: list[Any], persona: PersonaRecord) -> Claim | None:
        """A read the policy puts before a write (the cancellation fee, the quote) asked for in the user's words:
        the first field its intent's `hear` names that one row of the answer holds; None when none does."""
        intent = self.catalog.intent(call.server, call.tool)
        options = _hearable(call, intent, told, persona) if intent is not None else []
        if not options:
            return None
        field, words_, value = options[0]
        return _heard_claim("states", words_, field, value)

    def write(self, rng: random.Random, grounded: Grounded, style: str) -> Request:
        """Each goal as the persona asks for it: fields named by human labels (never column names),
        details said as a person gives them, everything the lookups are keyed on either said or held
        back as a hidden fact, and claims only on values the user did not say themselves."""
        persona = grounded.persona
        first = persona.name.split()[0]
        hidden: list[HiddenFact] = []
        claims: list[Claim] = []
        messages: list[str] = []
        told: list[Any] = [persona.name]  # values the user says or holds back (never claimed back)
        refs: dict[tuple[str, str, Any], str] = {}  # a row already named in this task: named the same way again
        asked_back: list[list[Claim]] = []  # per follow-up question: the claims it asks for
        # per question said (a clause of a read's phrasing, a 'could you tell me ...'): the claims that check it,
        # and whether the sentence may be left out (one asking to hear back a change or a fee: the request stands)
        questions: list[tuple[str, list[Claim], bool]] = []
        requested: dict[int, str] = {}  # per gold write: the request as the user said it (the oracle reads it back)
        goals = [i for i, s in enumerate(grounded.chain.steps) if s.role == "goal"]
        for turn, goal in enumerate(goals):
            call, spec = grounded.calls[goal], self.catalog.spec(grounded.calls[goal].server, grounded.calls[goal].tool)
            sources = grounded.sources[goal]
            target = grounded.targets[goal]
            mine = target is not None or any(v == "persona" for v in sources.values())
            said: list[str] = []
            details = [
                (n, v)
                for n, v in call.arguments.items()
                if sources.get(n) in {"seed", "free"} and spec.param(n).user_known and v not in (None, "")
            ]
            rng.shuffle(details)
            intent = self.catalog.intent(call.server, call.tool)
            slotted: set[str] = set()
            early: set[int] = set()  # a policy read asked for with the goal's own question
            if intent is not None:
                # Goal-first: the person asks in one of the intent's own phrasings, names rows as people do, and
                # asks to hear what the intent says they want back; other details of the call are held back.
                request, slotted = self._intent_request(rng, grounded, goal, intent, told, refs)
                if not spec.read_only:
                    requested[goal] = request
                for name, value in details:
                    if name in slotted or value in told or _says(request, value):  # said ("my 114.74 payment")
                        told.append(value)
                        continue
                    if not spec.param(name).required and not isinstance(value, bool):
                        # an optional detail (a memo, a line's text, a branch that narrows "which branches have
                        # it") the user never says: a hidden fact nobody has a reason to ask for
                        raise Drop(
                            "intent: an optional detail the user never gives", f"{call.server}.{call.tool}.{name}"
                        )
                    label = self.label(call.server, name, spec.param(name).description)
                    told.append(value)
                    if label is not None and not isinstance(value, bool):
                        hidden.append(held(name, value, label, worded=self._worded(call, name, value)))
                asking = _asking(request, intent)
                heard, asks = self._heard(rng, call, intent, told, spec.read_only, persona, asking)
                questions += [(clause, [c for c in heard if c.field in fields], False) for clause, fields in asks]
                if spec.read_only and not heard:
                    # "What kinds of rooms do you have?" with nothing one row answers: no claim would check it
                    raise Drop("intent: nothing to hear back", f"{call.server}.{call.tool}")
                claims += heard
                # the read the policy puts just before this write (the quote before a booking): asked for with it
                before = goal - 1
                if before >= 0 and grounded.chain.steps[before].role == "required":
                    required = self._required(grounded.calls[before], told, persona)
                    if required is not None and not any(c.field == required.field for c in claims):
                        claims.append(required)
                        heard = [*heard, required]
                    early.add(before)
                if _unasked(heard, asking):
                    said.append(hear_line(rng, style, _wanted(_unasked(heard, asking)), [request, *said]))
                    questions.append((said[-1], _unasked(heard, asking), not spec.read_only))
            for index, (name, value) in enumerate(details if intent is None else []):
                label = self.label(call.server, name, spec.param(name).description)
                told.append(value)
                if label is None or isinstance(value, bool):
                    continue
                if index == 0 and not QUESTION_LABEL.match(label):
                    said.append(detail_sentence(label, value, own=value in (persona.name, persona.email)))
                else:
                    hidden.append(held(name, value, label, worded=self._worded(call, name, value)))
            if intent is None and spec.read_only:
                asked = self._asked(rng, call, spec, told)
                what = " and ".join(_the(label) for _, label, _ in asked) or "the details"
                row = next((r for r in _rows(call.output) if all(r.get(k) == v for k, _, v in asked)), None)
                whose = "my" if mine and not someone_elses(row, persona.email) else "the"
                request = rng.choice(ASK_READ[style]).format(what=f"{what} for {whose} {_entity(spec)}")
                claims += [_claim("states", label, name, value) for name, label, value in asked]
                questions.append((request, claims[len(claims) - len(asked) :], False))
            elif intent is None:
                phrase = _phrase(spec, mine)
                request = rng.choice(ASK_WRITE[style]).format(phrase=phrase, Phrase=phrase[:1].upper() + phrase[1:])
                claims += self._write_claims(call, spec, told)
            wanted: list[Claim] = []  # what the reads the policy puts before a write give, asked for last
            for index in range(len(grounded.calls)):
                if grounded.chain.steps[index].turn != turn:
                    continue
                if grounded.chain.steps[index].role == "required":
                    # the fee before a cancellation, the quote before a booking: the user wants to hear it, asked
                    # after the request it belongs to
                    if index in early:
                        continue
                    required = self._required(grounded.calls[index], told, persona)
                    if required is not None and not any(c.field == required.field for c in claims):
                        claims.append(required)
                        wanted.append(required)
                    continue
                step_spec = self.catalog.spec(grounded.calls[index].server, grounded.calls[index].tool)
                follow_intent = (
                    self.catalog.intent(step_spec.server, step_spec.name)
                    if grounded.chain.steps[index].role == "follow"
                    else None
                )
                if follow_intent is not None:
                    # A follow-up in its own intent's words; a read with nothing to hear back is not asked (its
                    # call feeds nothing, and pruning drops it).
                    follow_call = grounded.calls[index]
                    asked_at_all = not step_spec.read_only or (
                        bool(_hearable(follow_call, follow_intent, told, persona))
                        # "I'd like to collect my car RA17855. Also, could you check booking RA17855? When do I
                        # pick up?": a second request on the row the goal acts on reads as two templates glued;
                        # not asked, its call feeds nothing and pruning drops it
                        and not (index != goal and _same_object(grounded, goal, index))
                    )
                    heard, asks = [], []
                    if asked_at_all:
                        # the question first, then what it asks for: "What are the copays under my plan?" is
                        # answered by every copay, and by nothing it does not ask
                        text, _ = self._intent_request(rng, grounded, index, follow_intent, told, refs)
                        asking = _asking(text, follow_intent)
                        heard, asks = self._heard(
                            rng, follow_call, follow_intent, told, step_spec.read_only, persona, asking
                        )
                    if step_spec.read_only:
                        asked_back.append(heard)
                    if heard or not step_spec.read_only:
                        if not step_spec.read_only:
                            requested[index] = text
                        text = GREETED.sub("", text)
                        said.append("Also, " + (text if re.match(r"I\b", text) else text[:1].lower() + text[1:]))
                        claims += heard
                        questions += [(c, [h for h in heard if h.field in fields], False) for c, fields in asks]
                    if heard and _unasked(heard, asking):  # a follow-up question is not asked twice either
                        said.append(hear_line(rng, style, _wanted(_unasked(heard, asking)), [request, *said]))
                        questions.append((said[-1], _unasked(heard, asking), not step_spec.read_only))
                for name, how in grounded.sources[index].items():
                    value = grounded.calls[index].arguments[name]
                    # Held back unless already said or held back: a number the user said of something else
                    # ("for 5 nights") says nothing of this one ("5 stars").
                    if intent is not None and name in slotted and index != goal and value != call.arguments[name]:
                        # a lookup for other dates than the ones asked about reads as a second, unasked request
                        raise Drop("intent: a lookup contradicts the request", f"{call.server}.{call.tool}.{name}")
                    if intent is not None:
                        known_now = any(same(value, h.value) for h in hidden) or _says(
                            " ".join([request, *said]), value
                        )
                        known_now = known_now or (isinstance(value, str) and value in told)
                    else:
                        known_now = value in told
                    if how not in {"persona", "seed", "free"} or known_now or value in (None, ""):
                        continue
                    if isinstance(value, bool) or not step_spec.param(name).user_known:
                        continue
                    if step_spec.param(name).enum and index != goal:
                        # a lookup narrowed by a category ("the role is viewer"): nothing a person holds back
                        raise Drop("a lookup narrowed by a category the user never gives", f"{step_spec.name}.{name}")
                    label = self.label(step_spec.server, name, step_spec.param(name).description)
                    if label is None:
                        continue
                    told.append(value)
                    own = {persona.email, persona.name, *(v for v in persona.facts.values() if isinstance(v, str))}
                    owner = "my" if how == "persona" and value in own else "the"
                    if value == persona.email:  # "my email is ...", never "my owner email is ..."
                        label, owner = "email", "my"
                    worded = self._worded(grounded.calls[index], name, value)
                    if value not in (persona.name, persona.email):
                        hidden.append(lookup_fact(step_spec, name, value, label, owner, worded))
                    else:
                        hidden.append(held(name, value, label, owner, worded))
                follow = grounded.chain.steps[index]
                if follow.role == "follow" and follow_intent is None:
                    follow_spec = self.catalog.spec(follow.server, follow.tool)
                    if follow_spec.read_only:
                        asked = self._asked(rng, grounded.calls[index], follow_spec, told)
                        asked_back.append([_claim("states", label, name, value) for name, label, value in asked])
                        if asked:
                            what = " and ".join(_the(label) for _, label, _ in asked)
                            said.append(f"I'd also like to know {what}{self._about(grounded, index, asked)}.")
                            claims += [_claim("states", label, name, value) for name, label, value in asked]
                            questions.append((said[-1], claims[len(claims) - len(asked) :], False))
                    else:
                        said.append(f"And please {_phrase(follow_spec, mine)} as well.")
            if wanted:
                said.append(hear_line(rng, style, _wanted(wanted), [request, *said]))
                questions.append((said[-1], wanted, True))
            # A value this turn takes from an earlier turn's answer: nothing to add where the user says it or holds
            # it back anyway ("My email is ...", "because hours were billed twice"); else they point at it by what
            # it is ("The list is the same as in my last request."), never "use what you found".
            spoken_now = " ".join([request, *said])
            across = [
                (bind, name, grounded.calls[i], self.catalog.spec(grounded.calls[i].server, grounded.calls[i].tool))
                for i, step in enumerate(grounded.chain.steps)
                if step.turn == turn
                for name, bind in step.binds.items()
                if grounded.calls[bind.step].turn < turn and grounded.sources[i].get(name) == "output"
            ]
            # A value carried into a lookup of this turn (the city of a branch search) is said as what it is; a
            # window searched inside a rental, as "during that rental", and not at all where the request names
            # its row by a date and hour inside it already ("the 09:15 class on Monday 13 April").
            lookups = {
                c.param: c
                for i, step in enumerate(grounded.chain.steps)
                if step.turn == turn and i != goal
                for c in self.carried(grounded, i)
            }
            for kind in dict.fromkeys(c.kind for c in lookups.values() if c.kind != "end"):
                first_carry = next(c for c in lookups.values() if c.kind == kind)
                window = is_window(first_carry.param)
                words_ = referring([kind], first_carry.entity, grain(first_carry.param), window=window)
                shown = " ".join([request, *said])
                taking = [
                    c
                    for i, c in enumerate(grounded.calls)
                    if grounded.chain.steps[i].turn == turn and first_carry.param in c.arguments
                ]
                if words_ in shown or any(_says(shown, c.arguments.get(first_carry.param)) for c in taking):
                    continue
                end = next((c.param for c in lookups.values() if c.kind == "end"), None)
                if window and any(
                    _named_within(shown, c.output, c.arguments.get(first_carry.param), c.arguments.get(end or ""))
                    for c in taking
                ):
                    continue
                if kind == "city" and any(_names_a_row(shown, c.output) for c in taking):
                    continue
                booked = [c.arguments.get(first_carry.param) for c in taking]
                if (
                    kind == "start"
                    and not window
                    and not any(same(v, b) for v in call.arguments.values() for b in booked)
                ):
                    # a room searched over a freeze's dates, then booking HB99457 (its own dates) moved to the room
                    # found: "It's for the same dates as that freeze" would be false of the goal's row
                    raise Drop("flow: a lookup searched over a carried span the goal does not book", call.tool)
                said.append(aside(first_carry))
            unsaid = [
                (bind, name, call_, spec_)
                for bind, name, call_, spec_ in across
                if not _says(spoken_now, call_.arguments.get(name))
                and not any(same(call_.arguments.get(name), h.value) for h in hidden)
                and not (
                    call_ is call and name in slotted and any(c.param == name for c in self.carried(grounded, goal))
                )
                and name not in lookups
            ]
            pointed = [
                label
                for bind, name, call_, spec_ in unsaid
                if not bind.own
                and (label := self.label(call_.server, name, spec_.param(name).description)) is not None
                and not is_id_like(label.replace(" ", "_"))
            ]
            if pointed:
                said.append(f"The {pointed[0]} is the same as in my last request.")
            elif any(not b.own for b, *_ in unsaid):
                said.append("It's for the same thing as my last request.")
            elif unsaid:
                said.append("You have my details from before.")
            opener = (
                rng.choice(GREETINGS[style]).format(name=persona.name, first=first) + " "
                if turn == 0
                else rng.choice(MORE)
            )
            request = GREETED.sub("", request)  # the opener greets already
            request = request[:1].upper() + request[1:]
            body = request if turn == 0 or re.match(r"I\b", request) else request[:1].lower() + request[1:]
            # A phrasing may end in a said value ("... the reason is: too many emails"): it still ends a sentence.
            message = " ".join([opener.strip(), *(_ended(part) for part in [body, *said] if part)]).strip()
            messages.append(said_once(message, refs))
        # A claim on something the user said or knows themselves checks nothing ("move it to my inbox" ->
        # "confirms the folder: inbox"); the same value asked twice is one claim.
        known = "\n".join(
            [*messages, *(str(h.value) for h in hidden), persona.email, *map(str, persona.facts.values())]
        )
        kept: list[Claim] = []
        for claim in claims:
            if any(c.values == claim.values and c.field == claim.field for c in kept):
                continue
            if not any(mentions(known, _typed_value(v)) for v in claim.values):
                kept.append(claim)
        for group in asked_back:
            # A follow-up question whose every answer the user already knows asks for nothing ("and tell me my
            # email"): its sentence would stay in the message with no claim to check it.
            if group and not any(any(k.values == c.values and k.field == c.field for k in kept) for c in group):
                raise Drop("intent: a follow-up asks only for what the user said")
        # A question whose every claim was removed above ("Was the claim for 610026 approved?" says 'approved', so
        # the claim 'whether the claim was approved: approved' echoes it) would stay in the message with nothing
        # to check it, and any answer would pass: a sentence asking to hear back a change or a fee ("Could you
        # tell me the planned arrival?" after the user gave it) is left out, the task with any other is not asked.
        for question, checking, optional in questions:
            if not checking or any(c in kept for c in checking):
                continue
            sentence = f" {_ended(question)}"
            at = next((i for i, m in enumerate(messages) if sentence in m), None)
            if not optional or at is None:
                raise Drop("a question no claim checks", question[:80])
            messages[at] = messages[at].replace(sentence, "", 1)
        written = (
            "offline (intents)" if any(self.catalog.intent(c.server, c.tool) for c in grounded.calls) else "offline"
        )
        return Request(
            turns=messages,
            hidden_facts=hidden,
            claims=kept,
            uncalibrated=uncalibrated(grounded),
            writer=written,
            asked=requested,
        )

    def label(self, server: str, name: str, description: str = "", spec: ToolSpec | None = None) -> str | None:
        """How a person names a field: the description of the column it reads (the tool's own output
        first, else the parameter's), cut to its head ('Price billed in USD' -> 'price billed'); a plain
        unfolded name only when it is an ordinary noun phrase ('daily rate'); None when neither reads
        like something a person says."""
        plain = _say(name)
        if (len(plain.split()) == 1 and plain not in PAGING) or plain.split()[-1] in HEAD_NOUNS:
            return plain  # an ordinary word or noun phrase says it best ('the amount', 'the issue date')
        tools = [spec] if spec is not None else self.catalog.by_server.get(server, [])
        texts = [f.description for t in tools for f in t.outputs if f.name == name]
        for text in [*texts[:1], description]:
            head = re.split(r"\s*(?:\(|;|:|, e\.g\.|\be\.g\.|, or\b)", text.strip())[0]
            head = re.sub(r"\s+(?:in|as) (?:USD|EUR|GBP|[A-Z]{3}|ISO[\w -]*)\b.*$", "", head).strip(" .")
            if not head or "_" in head or len(head.split()) > 6:
                continue
            if re.search(r"\b(?:id|ids|internal|part of|only|filter|cursor|page)\b", head, re.IGNORECASE):
                continue
            head = re.sub(r"^(?:the|a|an) ", "", head, flags=re.IGNORECASE)
            return head if head[:2].isupper() else head[:1].lower() + head[1:]
        return None

    def _asked(self, rng: random.Random, call: Any, spec: ToolSpec, told: list[Any]) -> list[tuple[str, str, Any]]:
        """Up to two fields of one row of the answer the user wants to hear, by label; never ids,
        flags, paging fields or a value the user said."""
        rows = [r for r in _rows(call.output) if set(r) & _known(spec)]
        row = rng.choice(rows[:10]) if rows else None
        options = []
        for key, value in (row or {}).items():
            if key not in _known(spec) or key in PAGING or value in (None, "") or isinstance(value, bool):
                continue
            if any(same(value, t) for t in told) or (isinstance(value, str) and len(value) > 80):
                continue
            label = self.label(spec.server, key, spec=spec)
            if label is not None:
                options.append((key, label, value))
        rng.shuffle(options)
        return sorted(options[:2])

    def _about(self, grounded: Grounded, index: int, asked: list[tuple[str, str, Any]]) -> str:
        """What a follow-up question is about, when one plain word names it: ' for my appointment' (the row
        names the persona), ' for the claim' (it does not); '' when the tool names no plain thing
        ('room availability' is not something a person asks the title of)."""
        call = grounded.calls[index]
        entity = _entity(self.catalog.spec(call.server, call.tool))
        if " " in entity or entity in PREPOSITIONS or QUESTION_LABEL.match(asked[-1][1]):
            return ""  # 'when it was posted for the channel' garbles
        row = next((r for r in _rows(call.output) if all(r.get(k) == v for k, _, v in asked)), None)
        mine = row is not None and grounded.persona.email in [v for v in row.values() if isinstance(v, str)]
        return f" for {'my' if mine else 'the'} {entity}"

    def _write_claims(self, call: Any, spec: ToolSpec, told: list[Any]) -> list[Claim]:
        """What a write's answer tells the user that they did not say: a new status, a price, a date."""
        row = _first_row(call.output)
        claims = []
        for key, value in (row or {}).items():
            if key not in _known(spec) or key in PAGING or key in call.arguments or value in (None, ""):
                continue
            if (
                isinstance(value, bool)
                or any(same(value, t) for t in told)
                or any(same(value, v) for v in call.arguments.values())
            ):
                continue
            if isinstance(value, str) and len(value) > 80:
                continue
            label = self.label(spec.server, key, spec=spec)
            if label is not None:
                claims.append(_claim("confirms", label, key, value))
        return claims[:2]

    def as_own(
        self,
        rng: random.Random,
        grounded: Grounded,
        requester: PersonaRecord,
        code: str,
        style: str,
        label: str | None = None,
    ) -> Request | None:
        """Someone else asks for the persona's change as if the row were theirs, naming it by `code` (a booking
        reference only that row has): "I need to cancel booking HB90797". Only the lookup of that code shows the
        row is another customer's, so the refusal rests on data, not on the opening. The requester holds back
        their email (how the desk identifies them). With a `label`, the code is another row's the goal's row hangs
        on (the card a hold is on), said as theirs: "My card number is LC-201213." None when no phrasing of the
        goal names the row by the code (or, with a label, every phrasing names the owner)."""
        index, goal = next(
            (i, c)
            for i, (c, s) in enumerate(zip(grounded.calls, grounded.chain.steps, strict=True))
            if s.role == "goal"
        )
        intent = self.catalog.intent(goal.server, goal.tool)
        if intent is None:
            return None
        for _ in range(4):
            try:
                words, _ = self._intent_request(rng, grounded, index, intent, [], {})
            except Drop:
                return None
            owner = grounded.persona.name.lower()
            if (label is not None or code in words) and not any(part in words.lower() for part in owner.split()):
                greeting = rng.choice(GREETINGS[style]).format(name=requester.name, first=requester.name.split()[0])
                stated = f" My {label} is {code}." if label is not None and code not in words else ""
                message = f"{greeting} {_ended(words)}{stated}"
                hidden = [held("email", requester.email, "email", "my")] if requester.email else []
                return Request(turns=[message], uncalibrated=message, hidden_facts=hidden)
        return None


def casual(words: str, before: str, common: frozenset[str]) -> str:
    """A sentence-case catalog name said as a common noun the way a person writes it: 'add the child seat',
    never 'add the Child seat'; unchanged unless a determiner or a number comes before it (bare, it is a name:
    'in Onboarding flow'), and when its first word is a name (`common` holds the data's ordinary words)."""
    if not SENTENCE_CASE.fullmatch(words) or not DETERMINED.search(before):
        return words
    first = words.split()[0]
    return first.lower() + words[len(first) :] if first.lower() in common else words


def put(text: str, slot: str, words: str) -> str:
    """`text` with its `slot` said as `words`; a word the phrasing repeats right after the slot goes ('the {name}
    plan' of 'Lakeshore Student Plan': the name already says what it is)."""
    last = re.search(r"(\w+)\W*$", words)
    if last:
        text = re.sub(rf"{re.escape(slot)}\s+{re.escape(last[1])}\b", slot, text, count=1, flags=re.IGNORECASE)
    if words.endswith("s") and not words.endswith("ss"):  # "{merchant}'s" of 'Silverleaf Books': "Books'"
        text = text.replace(f"{slot}'s ", f"{slot}' ", 1)
    if words.endswith((".", "!", "?")):  # 'with reason code {code}.' of 'Call before any change.': one stop
        text = re.sub(rf"{re.escape(slot)}(”?)\.(?!\w)", rf"{slot}\1", text, count=1)  # 'says “Done.”.'
    if words.endswith(".") and re.search(rf"{re.escape(slot)}[?!]", text):  # '... {code}?': the question's mark
        words = words[:-1]
    return text.replace(slot, words, 1)


def someone_elses(row: Row | None, email: str) -> bool:
    """Whether a row names another person by email (a comment's author, a message's sender) and never the
    persona: then it is not "my comment", whatever the chain found it through."""
    emails = [v for k, v in (row or {}).items() if k.lower().endswith("email") and isinstance(v, str) and "@" in v]
    return bool(emails) and email not in emails


def _rows(output: Any) -> list[Row]:
    """The rows of an answer: the objects inside its lists, or the answer itself when it lists nothing."""
    listed: list[Row] = []

    def walk(node: Any, in_list: bool) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, True)
        elif isinstance(node, dict):
            if in_list and any(not isinstance(v, (dict, list)) for v in node.values()):
                listed.append(node)
            for value in node.values():
                if isinstance(value, (dict, list)):
                    walk(value, in_list)

    walk(output, False)
    if listed:
        return listed
    return [output] if isinstance(output, dict) else []


def _first_row(output: Any) -> Row | None:
    rows = _rows(output)
    return rows[0] if rows else None


def scrub(text: str, vocab: Vocabulary) -> str:
    """Remove whatever a message must not carry: tool names, internal ids, step words."""
    for name in sorted(vocab.tool_names, key=len, reverse=True):
        if len(words(name)) < 2:  # one plain word ('unsubscribe', 'search') gives no tool away
            continue
        if name in vocab.spoken_tools:  # 'send invoice INV-1044' is how its people talk: only `send_invoice` goes
            text = re.sub(rf"(?<![\w@.-]){re.escape(name)}(?![\w@-])", "it", text, flags=re.IGNORECASE)
            continue
        if name.lower() not in text.lower() and " ".join(words(name)) not in text.lower():
            continue
        text = re.sub(rf"(?<![\w@.-]){re.escape(name)}(?![\w@-])", "it", text, flags=re.IGNORECASE)
        if len(words(name)) > 1:
            text = re.sub(
                rf"\b{re.escape(' '.join(words(name)))}\b", " ".join(words(name)[:1]) + " it", text, flags=re.IGNORECASE
            )
    for value in sorted(vocab.internal_ids, key=len, reverse=True):
        if value.lower() not in text.lower():
            continue
        text = re.sub(rf"(?<![\w@.-]){re.escape(value)}(?![\w@-])", "that one", text, flags=re.IGNORECASE)
    return re.sub(r"\s{2,}", " ", text).strip()


def point_at(task: Task, finding: Finding, writer: OfflineWriter | None = None) -> Task | None:
    """The task with one more thing the user says about the row they mean (`finding`: a referent the audit
    could not resolve): a value of that row no other row of the same answer shares, said in words.
    None when no such value exists (then the task is dropped)."""
    if finding.call is None or finding.field is None:
        return None
    call = task.gold_calls[finding.call]
    rows = [r for r in rows_of(call.output) if finding.field in r]
    target = next((r for r in rows if same(r[finding.field], finding.value)), None)
    if target is None:
        return None
    said = user_text(task)
    claimed = {v for c in task.claims for v in c.values}
    options = []
    for key, value in target.items():
        if is_id_like(key) or key in PAGING or value in (None, "") or isinstance(value, (bool, dict, list, int)):
            continue
        if isinstance(value, str) and (len(value) > 80 or "@" in value or "_" in value and not spoken_date(value)):
            continue
        if _fmt(value) in claimed or value in claimed or mentions(said, value):
            continue
        if any(r is not target and same(r.get(key), value) for r in rows):
            continue
        if isinstance(value, str) and spoken_date(value):
            day = value[:10]
            if any(r is not target and isinstance(r.get(key), str) and r[key][:10] == day for r in rows):
                options.append((3, key, value))  # only the minute tells it apart: a last resort
            else:
                options.append((1, key, day))  # the day alone is what a person remembers
        elif isinstance(value, str) and (len(value.split()) > 6 or re.search(r"[;.!?]", value)):
            options.append((4, key, value))  # a sentence of text: how nobody points at a row
        elif isinstance(value, str) and value == value.lower():
            options.append((2, key, value))  # a status or kind: said with its label
        else:
            options.append((0 if isinstance(value, str) else 2, key, value))  # a name or title first
    if not options:
        return None
    _, key, value = min(options, key=lambda o: (o[0], o[1]))
    turn = min(call.turn, len(task.turns) - 1) if task.turns else 0
    if task.turns and POINTER.search(task.turns[turn].message):
        return None  # a second "I mean the ..." in one message reads as a form, not a person: drop instead
    spec = writer.catalog.spec(call.server, call.tool) if writer else None
    entity = _entity(spec) if spec else "one"
    if entity.split()[0] in PREPOSITIONS:  # shared_with_me: 'with me' names nothing
        entity = "one"
    label = writer.label(call.server, key, spec=spec) if writer and spec else None
    plain = label and not re.match(r"(?:when|whether|how|who|what|which|where|why)\b", label)
    if isinstance(value, str) and not spoken_date(value) and value == value.lower() and plain:
        sentence = f"I mean the {entity} whose {label} is {spoken(value)}."
    elif isinstance(value, str) and not spoken_date(value):
        sentence = f"I mean the {entity} “{spoken(value)}”."
    elif plain:
        sentence = f"I mean the {entity} whose {label} is {spoken(value)}."
    elif isinstance(value, str):
        sentence = f"I mean the {entity} on {spoken(value)}."
    else:
        return None  # "the package for 0.00": a bare number with no label is not how a person points
    fixed = task.model_copy(deep=True)
    if fixed.turns:
        fixed.turns[turn].message = f"{fixed.turns[turn].message} {sentence}"
    if turn == 0:
        fixed.opening_message = f"{fixed.opening_message} {sentence}"
    return fixed


class LLMAnswer(BaseModel):
    message: str
    hidden_facts: dict[str, Any] = Field(default_factory=dict)


WRITER_PROMPT = """You write the first message a user sends to an assistant. The user is {name} ({style}).
What they want, in the system's terms (never repeat these names or any ids): {goals}
Facts they know and may say: {facts}
Rules: write as the person would, one short paragraph; no tool or function names; no ids; no step list;
mention at most one of the facts, keep the others back. Answer with JSON only:
{{"message": "...", "hidden_facts": {{"<fact name>": "<value>", ...}}}}"""


class LLMWriter:
    """The writer as an LLM prompt; the offline request is its fallback when the answer is unusable."""

    def __init__(self, model: ChatModel, fallback: OfflineWriter) -> None:
        self.model = model
        self.fallback = fallback
        self.name = model.name

    async def write(self, offline: Request, grounded: Grounded, style: str, vocab: Vocabulary) -> tuple[Request, bool]:
        """The LLM's wording of the offline request (turn 0), or `offline` and True when the answer broke the rules."""
        goals = "; ".join(
            self.fallback.catalog.spec(c.server, c.tool).description
            for c, s in zip(grounded.calls, grounded.chain.steps, strict=True)
            if s.role == "goal"
        )
        facts = {**grounded.persona.facts, **{h.key: h.value for h in offline.hidden_facts}}
        prompt = WRITER_PROMPT.format(
            name=grounded.persona.name, style=style, goals=goals, facts=json.dumps(facts, default=str)
        )
        return await written_request(self.model, prompt, offline, vocab)


async def written_request(model: ChatModel, prompt: str, offline: Request, vocab: Vocabulary) -> tuple[Request, bool]:
    """The model's request for `prompt`, or `offline` and True when its answer is unusable (no text, not the
    JSON asked for, or giving away tool names or ids). An endpoint that fails outright stays an `LLMError`."""
    try:
        text = await model.text([{"role": "user", "content": prompt}])
        answer = LLMAnswer.model_validate_json(_json_block(text))
    except (UnusableAnswer, ValidationError, ValueError):
        return offline, True
    measure = over_specification(answer.message, vocab)
    if not answer.message.strip() or measure.tool_names or measure.internal_ids:
        return offline, True
    hidden = [
        HiddenFact(key=k, value=v, description=f"my {_say(k)} is {_fmt(v)}") for k, v in answer.hidden_facts.items()
    ]
    turns = [answer.message.strip(), *offline.turns[1:]]
    return Request(
        turns=turns,
        hidden_facts=hidden or offline.hidden_facts,
        claims=offline.claims,
        uncalibrated=offline.uncalibrated,
        writer=model.name,
        asked=offline.asked,  # the change as the offline request words it: the oracle's read-back stays true
    ), False


def _json_block(text: str) -> str:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the answer")
    return text[start : end + 1]
