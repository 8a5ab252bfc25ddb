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

import json
import random
import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from clients.graph import ToolSpec, is_id_like, words
from clients.grounding import Grounded, Row
from clients.sampling import Catalog
from clients.tasks import Claim, HiddenFact, OverSpecification
from envfarm.llm import ChatModel, UnusableAnswer

STEP_WORDS = ("then", "first", "next", "after that", "afterwards", "finally", "step", "call", "tool", "use the")
STEP_PATTERN = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in STEP_WORDS) + r")\b", re.IGNORECASE)
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
    "terse": ("{name} here.", "It's {name}.", "{first}."),
    "chatty": (
        "Hey there! {name} here, hope your day is going well.",
        "Hi! It's {name} again, sorry to bother you.",
        "Hello hello, {first} here.",
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
    "polite": ("Could you tell me {what}?", "Would you check {what} for me?", "I'd like to know {what}, please."),
    "terse": ("What's {what}?", "Need {what}.", "Tell me {what}."),
    "chatty": (
        "I've been wondering about {what}, could you look?",
        "Quick question: what is {what}?",
        "Can you find out {what} for me? I keep forgetting.",
    ),
}
RELATIONS = ("my partner", "a relative", "a friend", "a neighbour of mine", "a colleague", "my flatmate")
ON_BEHALF = {
    "polite": (
        "I'm calling for {relation}, {owner}, who can't make it today. Could you {phrase} for them, please?",
        "I'm asking on behalf of {relation}, {owner}. Would you be able to {phrase} for them?",
    ),
    "terse": ("For {relation}, {owner}: please {phrase}.", "Need to {phrase} for {owner}, {relation}."),
    "chatty": (
        "So {relation}, {owner}, asked me to sort this out since they're swamped: could you {phrase} for them?",
        "Long story, but {relation} {owner} can't get to a phone, so I said I'd {phrase} for them. Can you help?",
    ),
}
MORE = ("One more thing: ", "Thanks! Also, ", "Great. Next, ", "While you're at it, ")
STYLES = tuple(GREETINGS)


class Vocabulary(BaseModel):
    """What a message must not give away: tool names and internal ids; and the literal argument values."""

    tool_names: list[str]
    internal_ids: list[str]
    literals: list[str]


def vocabulary(grounded: Grounded, catalog: Catalog) -> Vocabulary:
    names: set[str] = set()
    for server in grounded.chain.servers:
        names.update(t.name for t in catalog.by_server[server])
    ids: set[str] = set()
    literals: set[str] = set()
    for call in grounded.calls:
        spec = catalog.spec(call.server, call.tool)
        for name, value in call.arguments.items():
            param = spec.param(name)
            if isinstance(value, str) and (param.ref or is_id_like(name)) and not param.user_known:
                ids.add(value)
            elif value not in (None, "", True, False):
                literals.add(_fmt(value))
        for field in spec.outputs:
            if field.user_known or not (field.ref or is_id_like(field.name)):
                continue
            ids.update(_values_of(call.output, field.name))
    ids = {i for i in ids if isinstance(i, str) and len(i) >= 3}
    return Vocabulary(tool_names=sorted(names), internal_ids=sorted(ids), literals=sorted(literals - ids))


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
    tools = sum(
        1 for n in vocab.tool_names if _occurs(n, text) or (len(words(n)) > 1 and _occurs(" ".join(words(n)), text))
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


class Request(BaseModel):
    """What the user says (one message per turn), what they hold back, and what the answer must state."""

    turns: list[str]
    hidden_facts: list[HiddenFact] = Field(default_factory=list)
    claims: list[Claim] = Field(default_factory=list)
    uncalibrated: str = ""
    writer: str = "offline"


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
    if not rest:
        return f"{verb} {'my' if mine else 'a'} {_entity(spec)}"
    det = "a new" if verb in NEW_VERBS else ("my" if mine else "the")
    if rest[0] in PREPOSITIONS and len(rest) > 1:  # respond_to_invitation -> respond to my invitation
        return f"{verb} {rest[0]} {'my' if mine else 'the'} {' '.join(rest[1:])}"
    return f"{verb} {det} {' '.join(rest)}"


def _known(spec: ToolSpec) -> set[str]:
    """Output fields of a tool that a user would know (names, dates, amounts; not ids or flags)."""
    return {f.name for f in spec.outputs if f.user_known and f.type != "boolean" and not is_id_like(f.name)}


def _descriptor(
    rng: random.Random, row: Row | None, siblings: Sequence[Row], known: set[str]
) -> tuple[str, str] | None:
    """One thing the user would say to point at the row they mean ('the one issued on 2026-02-28'):
    a value a user knows that no other row of the same answer shares."""
    if not row or len(siblings) < 2:
        return None
    options = []
    for name, value in row.items():
        if name not in known or value in (None, "") or isinstance(value, bool):
            continue
        if isinstance(value, str) and (len(value) > 60 or "@" in value):
            continue
        if sum(1 for r in siblings if r.get(name) == value) == 1:
            options.append((name, _fmt(value)))
    return rng.choice(options) if options else None


class OfflineWriter:
    """Templates by persona style and effect (read or write); no model, deterministic per `rng`."""

    name = "offline"

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def write(self, rng: random.Random, grounded: Grounded, style: str) -> Request:
        persona = grounded.persona
        first = persona.name.split()[0]
        hidden: list[HiddenFact] = []
        claims: list[Claim] = []
        messages = []
        goals = [i for i, s in enumerate(grounded.chain.steps) if s.role == "goal"]
        for turn, goal in enumerate(goals):
            call, spec = grounded.calls[goal], self.catalog.spec(grounded.calls[goal].server, grounded.calls[goal].tool)
            sources = grounded.sources[goal]
            target = grounded.targets[goal]
            mine = target is not None or any(v == "persona" for v in sources.values())
            said: list[str] = []
            if spec.read_only:
                rows = [r for r in _rows(call.output) if set(r) & _known(spec)]
                row = rng.choice(rows[:10]) if rows else None
                pointer = _descriptor(rng, row, rows, _known(spec))
                asked = self._asked(rng, row, _known(spec) - {pointer[0] if pointer else ""})
                what = " and ".join(f"the {_say(n)}" for n, _ in asked) or "the details"
                request = rng.choice(ASK_READ[style]).format(what=f"{what} of my {_entity(spec)}")
                claims += [Claim(text=f"states the {_say(n)}: {_fmt(v)}", values=[_fmt(v)]) for n, v in asked]
            else:
                phrase = _phrase(spec, mine)
                request = rng.choice(ASK_WRITE[style]).format(phrase=phrase, Phrase=phrase[:1].upper() + phrase[1:])
                claims += self._write_claims(call.output, spec)
                pointer = None
                entity = set(_entity(spec).split())
                subject = [n for n, b in grounded.chain.steps[goal].binds.items() if set(words(n)) & entity]
                if target is not None and subject:
                    producer = grounded.calls[grounded.chain.steps[goal].binds[subject[0]].step]
                    siblings = [r for r in _rows(producer.output) if set(r) == set(target)]
                    pointer = _descriptor(
                        rng, target, siblings, _known(self.catalog.spec(producer.server, producer.tool))
                    )
            if pointer:
                said.append(f"It's the one with {_say(pointer[0])} {pointer[1]}.")
            details = [
                (n, v)
                for n, v in call.arguments.items()
                if sources.get(n) in {"seed", "free"} and spec.param(n).user_known
            ]
            rng.shuffle(details)
            if details:
                name, value = details[0]
                said.append(f"The {_say(name)} should be {_fmt(value)}.")
            for name, value in details[1:]:
                hidden.append(HiddenFact(key=name, value=value, description=f"the {_say(name)} is {_fmt(value)}"))
            for index in range(len(grounded.calls)):
                if grounded.chain.steps[index].turn != turn:
                    continue
                for name, how in grounded.sources[index].items():
                    if how == "persona":
                        value = grounded.calls[index].arguments[name]
                        if value != persona.name and all(h.value != value for h in hidden):
                            hidden.append(
                                HiddenFact(key=name, value=value, description=f"my {_say(name)} is {_fmt(value)}")
                            )
                follow = grounded.chain.steps[index]
                if follow.role == "follow":
                    follow_spec = self.catalog.spec(follow.server, follow.tool)
                    if follow_spec.read_only:
                        asked = self._asked(rng, _first_row(grounded.calls[index].output), _known(follow_spec))
                        if asked:
                            said.append("Afterwards, tell me " + " and ".join(f"the {_say(n)}" for n, _ in asked) + ".")
                            claims += [
                                Claim(text=f"states the {_say(n)}: {_fmt(v)}", values=[_fmt(v)]) for n, v in asked
                            ]
                    else:
                        verb = words(follow.tool)[0]
                        said.append(
                            f"And please {verb} it as well once that's done."
                            if style != "terse"
                            else f"Also {verb} it."
                        )
            across = [
                bind
                for i, step in enumerate(grounded.chain.steps)
                if step.turn == turn
                for name, bind in step.binds.items()
                if grounded.calls[bind.step].turn < turn and grounded.sources[i].get(name) == "output"
            ]
            if any(not b.own for b in across):
                said.append("Use what you found for me a moment ago.")
            elif across:
                said.append("You have my details from before.")
            opener = (
                rng.choice(GREETINGS[style]).format(name=persona.name, first=first) + " "
                if turn == 0
                else rng.choice(MORE)
            )
            body = request if turn == 0 or re.match(r"I\b", request) else request[:1].lower() + request[1:]
            messages.append(" ".join([opener.strip(), body, *said]).strip())
        return Request(turns=messages, hidden_facts=hidden, claims=claims, uncalibrated=uncalibrated(grounded))

    def on_behalf(self, rng: random.Random, grounded: Grounded, requester: str, style: str) -> Request:
        """Someone else asks for the persona's change (a request the policy forbids: the customer must
        identify themselves). No hidden facts and no claims: the right answer is a refusal."""
        goal = next(c for c, s in zip(grounded.calls, grounded.chain.steps, strict=True) if s.role == "goal")
        phrase = _phrase(self.catalog.spec(goal.server, goal.tool), mine=False)
        first = requester.split()[0]
        greeting = rng.choice(GREETINGS[style]).format(name=requester, first=first)
        relation = rng.choice(RELATIONS)
        ask = rng.choice(ON_BEHALF[style]).format(phrase=phrase, owner=grounded.persona.name, relation=relation)
        message = f"{greeting} {ask}"
        return Request(turns=[message], uncalibrated=message)

    def _asked(self, rng: random.Random, row: Row | None, known: set[str]) -> list[tuple[str, Any]]:
        options = [
            (k, v) for k, v in (row or {}).items() if k in known and v not in (None, "") and not isinstance(v, bool)
        ]
        rng.shuffle(options)
        return sorted(options[:2])

    def _write_claims(self, output: Any, spec: ToolSpec) -> list[Claim]:
        row = _first_row(output)
        known = _known(spec)
        values = [
            (k, v) for k, v in (row or {}).items() if k in known and v not in (None, "") and not isinstance(v, bool)
        ]
        return [Claim(text=f"confirms the {_say(k)}: {_fmt(v)}", values=[_fmt(v)]) for k, v in values[:2]]


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

    async def write(
        self, rng: random.Random, grounded: Grounded, style: str, vocab: Vocabulary
    ) -> tuple[Request, bool]:
        """The LLM's request (turn 0), or the offline one and True when the answer broke the rules."""
        offline = self.fallback.write(rng, grounded, style)
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
    ), False


def _json_block(text: str) -> str:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the answer")
    return text[start : end + 1]
