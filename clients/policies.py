"""Policies: what acts in a rollout. One small interface, three kinds.

A `Policy` makes one `Agent` per rollout; the agent is shown the chat so far (OpenAI messages) and
answers an `Action`: words, tool calls, or both. Tool calls come back as the raw strings a model
would write, so the rollout loop handles a malformed call from any policy the same way.

- `ChatPolicy`: any OpenAI-compatible endpoint (OpenAI, vLLM, SGLang) with standard tools/tool_calls.
- `HeuristicPolicy`: no model. Picks the tool whose name, description and output fields best match the
  request, fills arguments from the conversation (days said in words, codes by their shape, the speaker's own
  name, amounts said as money) and earlier outputs (the person's own rows first), calls producers first for
  inputs it lacks, asks the user for what nothing produces. It reads three rules from each service's
  instructions (read a write back where it asks for a yes, identify the customer first, make the read a rule
  puts before a write) and refuses a record the lookups show is someone else's. It solves some tasks, not most.
- `SampledHeuristicPolicy` (`heuristic-sampled`): the heuristic at a temperature. Where the heuristic takes
  the best-scoring goal tool, producer, output row or name, it samples one with probability proportional to
  exp(score / temperature); it tries up to three lookups before asking the user and up to three goals for a
  request the user says is not done, and tosses a coin per write to read it back where the service does not
  ask for it. Seeded by (task, attempt): k attempts of a task differ, a task's solve rate over them lies
  anywhere in [0, 1], and the same attempt makes the same choices on any worker.
- `OraclePolicy`: replays the task's gold calls and states its claims. A kept task where the oracle
  does not score 1.0 is a pipeline bug.
"""

from __future__ import annotations

import calendar
import datetime
import functools
import json
import math
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import mcp_types as types
from pydantic import BaseModel, Field

from envfarm.clients import speech
from envfarm.clients.policy_checks import declines, identifies
from envfarm.clients.scoring.claims import value_found
from envfarm.clients.tasks import HiddenFact, Task
from envfarm.clients.trajectory import Usage
from envfarm.llm import ChatModel, ModelConfig
from envfarm.servers.runtime.vocabulary import READ_VERBS

FUNCTION_NAME = re.compile(r"[^a-zA-Z0-9_-]")


class AgentTool(BaseModel):
    """An enabled MCP tool as the policy sees it: one OpenAI function."""

    name: str = Field(description="the function name the policy calls (unique within the rollout)")
    server: str
    tool: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    read_only: bool = Field(default=False, description="by annotation, or guessed from the name when there is none")
    declared_read_only: bool = Field(default=False, description="the server annotates it readOnlyHint=true")

    def openai(self) -> dict[str, Any]:
        parameters = dict(self.input_schema) or {"type": "object", "properties": {}}
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
        }


def agent_tools(listed: dict[str, list[types.Tool]], enabled: list[tuple[str, str]]) -> list[AgentTool]:
    """The enabled (server, tool) pairs as functions; a name two servers share gets a `server__` prefix."""
    by_server = {server: {tool.name: tool for tool in tools} for server, tools in listed.items()}
    counts: dict[str, int] = {}
    for _, name in enabled:
        counts[name] = counts.get(name, 0) + 1
    result: list[AgentTool] = []
    for server, name in enabled:
        tool = by_server.get(server, {}).get(name)
        if tool is None:
            raise LookupError(f"the task enables {server}.{name}, which the server does not list")
        function = name if counts[name] == 1 else f"{server}__{name}"
        result.append(
            AgentTool(
                name=FUNCTION_NAME.sub("_", function)[:64],
                server=server,
                tool=name,
                description=tool.description or "",
                input_schema=tool.input_schema,
                output_schema=tool.output_schema,
                read_only=_reads(tool),
                declared_read_only=bool(tool.annotations and tool.annotations.read_only_hint),
            )
        )
    return result


def _reads(tool: types.Tool) -> bool:
    """Read-only by its annotation, or (a server that does not annotate) by its leading verb."""
    hint = tool.annotations.read_only_hint if tool.annotations else None
    return hint if hint is not None else tool.name.split("_")[0].lower() in READ_VERBS


class ToolCallRequest(BaseModel):
    id: str
    name: str
    arguments: str = Field(description="JSON text, as a model writes it (may be malformed)")


class Action(BaseModel):
    content: str | None = None
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)

    def message(self) -> dict[str, Any]:
        """The assistant message in OpenAI chat form."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


class Agent(Protocol):
    async def act(self, messages: list[dict[str, Any]]) -> Action: ...


class Policy(Protocol):
    """Makes the agent of one rollout: `attempt` is which of the task's k rollouts it is, so a stochastic policy
    seeds from (task, attempt) and an attempt draws the same choices wherever, and in whatever order, it runs."""

    name: str

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> Agent: ...

    async def aclose(self) -> None: ...


def system_prompt(instructions: dict[str, str | None]) -> str:
    """What every policy is told: act for the user with the tools, and each server's own policy."""
    parts = [
        (
            "You are an assistant that helps the user by calling the available tools. Ask the user for details "
            "you need and cannot look up. Follow each service's policy. When the request is done, tell the user "
            "the outcome with the concrete details (names, dates, amounts, ids)."
        )
    ]
    for server, text in instructions.items():
        if text:
            parts.append(f"## {server}\n{text}")
    return "\n\n".join(parts)


# ---------------------------------------------------------------- an OpenAI-compatible model


@dataclass
class ChatAgent:
    model: ChatModel
    tools: list[dict[str, Any]]

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        """The model's validated reply as an action: a tool call with no name stays a call (the rollout records
        it as an unknown tool and tells the model); a reply that is no completion raises `LLMError`."""
        reply = await self.model.complete(messages, tools=self.tools or None)
        return Action(
            content=reply.content,
            tool_calls=[ToolCallRequest(id=c.id, name=c.name, arguments=c.arguments) for c in reply.tool_calls],
            usage=Usage(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens),
        )


class ChatPolicy:
    def __init__(self, config: ModelConfig) -> None:
        self.model = ChatModel(config)
        self.name = self.model.name

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> Agent:
        return ChatAgent(self.model, [tool.openai() for tool in tools])

    async def aclose(self) -> None:
        await self.model.aclose()


# ---------------------------------------------------------------- the oracle


def _turn_calls(task: Task) -> list[list[int]]:
    """Gold call indices per user turn (all in one turn when the task has no turn list)."""
    if not task.turns:
        return [list(range(len(task.gold_calls)))]
    return [list(turn.gold_calls) for turn in task.turns]


@dataclass
class OracleAgent:
    """Replays the gold calls turn by turn, following the task's policy checks: it reads a governed write
    back and waits for the user's yes, and declines a request the policy forbids."""

    task: Task
    names: dict[tuple[str, str], str]
    issued: set[int] = field(default_factory=set)
    pending: int | None = None  # the gold call whose read-back the user is answering
    replies: int = 0  # user messages that answered a read-back (not new turns)
    made: set[int] = field(default_factory=set)  # gold calls actually made (not declined)
    asked: set[str] = field(default_factory=set)  # hidden facts (keys) the agent has asked the user for
    asking: bool = False  # the last message asked for hidden facts; the user's next message answers it

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        per_turn = _turn_calls(self.task)
        confirm = {(c.server, c.tool) for c in self.task.policy_checks if c.kind == "must_confirm"}
        if self.asking:
            self.asking = False
            self.replies += 1
        if self.pending is not None:
            index, self.pending = self.pending, None
            self.replies += 1
            if declines(str(messages[-1].get("content") or "")):
                self.issued.add(index)
                return Action(content=speech.declined())
            return self._call(index)
        users = sum(m["role"] == "user" for m in messages) - self.replies
        turn = min(users, len(per_turn)) - 1
        for index in per_turn[max(turn, 0)]:
            if index in self.issued:
                continue
            gold = self.task.gold_calls[index]
            if unsaid := self._unsaid_facts(index, messages):
                self.asked.update(fact.key for fact in unsaid)
                self.asking = True
                return Action(content=speech.ask_for(unsaid))
            if (gold.server, gold.tool) in confirm:
                self.pending = index
                return Action(content=speech.readback(self.task, index))
            return self._call(index)
        if turn < len(per_turn) - 1:
            return Action(content=speech.progress(self.task, per_turn[max(turn, 0)], self.made))
        refusals = [c.rule for c in self.task.policy_checks if c.kind == "must_refuse"]
        if refusals:
            # the reason the lookups showed: the row the user named by its own value (a booking reference) is
            # someone else's; never the asker's own name or email
            persona = self.task.persona
            named = [
                v
                for c in self.task.gold_calls
                if not c.is_write
                for v in c.arguments.values()
                if isinstance(v, str) and v not in (persona.name, persona.email)
            ]
            return Action(content=speech.refusal(refusals[0], named[-1] if named else None))
        return Action(content=speech.final_answer(self.task, self.made, per_turn[max(turn, 0)]))

    def _unsaid_facts(self, index: int, messages: list[dict[str, Any]]) -> list[HiddenFact]:
        """The details gold call `index` uses that the user has not said yet (and the agent has not asked for):
        an agent knows only what it is told, so the oracle asks before it uses them, as a person would (an SFT
        row that calls with an email nobody gave teaches an agent to invent one). A held-back fact must come
        from the user; one of the persona's own details ("Jonas here", then a lookup by "Jonas Dubois") may also
        have come back from an earlier call."""
        heard = " ".join(str(m.get("content") or "") for m in messages if m["role"] == "user")
        seen = " ".join(str(m.get("content") or "") for m in messages if m["role"] == "tool")
        arguments = self.task.gold_calls[index].arguments
        hidden = {fact.key for fact in self.task.hidden_facts}
        persona = self.task.persona
        own = {"full_name": persona.name, "email": persona.email, **persona.known_facts}
        details = [
            *((fact, heard) for fact in self.task.hidden_facts),
            *(
                (HiddenFact(key=key, value=value, description=""), f"{heard} {seen}")
                for key, value in own.items()
                if key not in hidden and isinstance(value, str) and value
            ),
        ]
        # before a call the policy's identification governs, every value of the way the task holds back (the date
        # of birth beside the name it looks the driver up by), each heard from the user, not read off a result
        gold = self.task.gold_calls[index]
        named = [
            v
            for c in self.task.policy_checks
            if c.kind == "must_identify" and c.tool == gold.tool and c.server in (None, gold.server) and c.alternatives
            for v in c.alternatives[0]
        ]
        unsaid: dict[str, HiddenFact] = {}  # one question per value ("your email", never "email and email")
        for fact, known in details:
            if fact.key in self.asked:
                continue
            if str(fact.value) in named and not value_found(fact.value, heard):
                unsaid.setdefault(str(fact.value).strip().lower(), fact)
            elif identifies(arguments, [str(fact.value)]) and not value_found(fact.value, known):
                unsaid.setdefault(str(fact.value).strip().lower(), fact)
        return list(unsaid.values())

    def _call(self, index: int) -> Action:
        self.issued.add(index)
        self.made.add(index)
        gold = self.task.gold_calls[index]
        name = self.names.get((gold.server, gold.tool), gold.tool)
        return Action(tool_calls=[ToolCallRequest(id=f"call_{index}", name=name, arguments=json.dumps(gold.arguments))])


class OraclePolicy:
    name = "oracle"

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> Agent:
        return OracleAgent(task, {(t.server, t.tool): t.name for t in tools})

    async def aclose(self) -> None:
        return None


# ---------------------------------------------------------------- the heuristic baseline

SAMPLED = "heuristic-sampled"
TEMPERATURE = 1.0  # of the sampled heuristic: a score lead of 1 (one description word) makes a choice e times likelier
READ_BACK = 0.5  # of the sampled heuristic: the chance it reads a write back and asks to go ahead before making it
PRODUCER_TRIES = 3  # of the sampled heuristic: lookups tried for a missing input before it asks the user
GOAL_TRIES = 3  # tools tried, one after another, for one request the user says is not done
GIVES = 2.0  # of a goal's score, per word of what a message asks to be told that names a field of the tool's output
ASKS_TO_BE_TOLD = re.compile(
    r"\b(?:tell me|let me know|like to know|need to know|want to know|what(?:'s| is| are| was)|how (?:much|many|long)|"
    r"when (?:is|does|do|will)|whether|which)\b",
    re.IGNORECASE,
)
WRITE_TIE = 0.01  # of a goal's score: a write wins a tie with a read, and adds next to nothing when sampled
OWN_RECORDS = 3.0  # of a lookup's score for an id: it lists the records the id is the key of (as a name word does)
NAMING = re.compile(r"(?:^|_)(?:name|title)$")  # a record's own name: a proper name the user says is first its name
OWN_ROW = 5.0  # of a row's fit: it is the person's own (their key in its owner column), or -5 someone else's
NEW_REQUEST = 3.0  # of a later message's best score: below it, the message presses on with the request made
WORD = re.compile(r"[a-z0-9]+")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})?")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
IDENT = re.compile(r"\b[a-z]{2,}_[a-z0-9_]*\d[a-z0-9_]*\b")
NAME = re.compile(r"\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)+\b")
# a capitalised phrase, with the small words a proper name holds ('Letters from the Front', 'Grand Vienna')
PROPER = re.compile(r"(?<![\w-])[A-Z][\w&-]*(?: (?:(?:of|from|the|and|de|la|du|von|in|on) )*[A-Z][\w&-]*)*")
SPEAKER = re.compile(
    r"\b(?i:it'?s|this is|i'?m|i am|my name is),? ([A-Z][a-z]+(?:[ -][A-Z][a-z]+)*)\b(?! [a-z])|"
    r"\b([A-Z][a-z]+(?:[ -][A-Z][a-z]+)*) here\b"
)
PERSON = re.compile(
    r"\b(?:full name|person|people)\b|\b(?:guest|member|traveller|patient|student|customer|driver|employee)(?:'s)? "
    r"name\b",
    re.IGNORECASE,
)
# a lookup of people: the customer's own record, where a service identifies them
PEOPLE = re.compile(
    r"member|guest|customer|client|patient|student|traveller|driver|subscriber|people|person|employee|user"
)
NOT_A_NAME = frozenset(  # capitalised words that open a sentence or name a day, never a thing's name
    [
        *calendar.day_name,
        *calendar.month_name[1:],
        "Hello",
        "Hi",
        "Hey",
        "Good",
        "Could",
        "Can",
        "Please",
        "I",
        "I'd",
        "I'll",
        "I'm",
        "It's",
        "My",
        "Thanks",
        "Thank",
        "Also",
        "And",
        "Oh",
        "Tell",
        "What",
        "Would",
        "Will",
        "One",
    ]
)
NUMBER = re.compile(r"(?<![\w.])\$?(\d+(?:\.\d+)?)\b")
STATED = re.compile(
    r"\b(?:my|the) ([a-z][a-z ]{1,40}?) (?:is|should be|was|will be) ([^?!\n]+?)(?:\.(?:\s|$)|[?!\n]|$)", re.IGNORECASE
)
MONTHS = "|".join(calendar.month_name[1:] + calendar.month_abbr[1:])
SPOKEN_DAY = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)? ({MONTHS})|({MONTHS}) (\d{{1,2}})(?:st|nd|rd|th)?)\b(?:,? (\d{{4}}))?",
    re.IGNORECASE,
)
CLOCK_TIME = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?![\d:])")
CLOCK_YEAR = re.compile(r"^Now: (?:\w+ )?\d{1,2} \w+ (\d{4})", re.MULTILINE)
EXAMPLE = re.compile(r"\be\.g\. ([^\s,;]+[^\s,;.)])")
CODE = (
    re.compile(  # a code a person reads out: capitals and digits, maybe dashed, with a digit ('DE-805-FB', 'RA85596')
        r"(?<![\w.,:/-])(?!\d{4}-\d{2}-\d{2})(?=[A-Z0-9-]*\d)(?:[A-Z0-9]+-)*[A-Z0-9]*(?:[A-Z]\d|\d[A-Z]|\d{5,}|-\d)"
        r"[A-Z0-9-]*(?![\w-]|[.,]\d)"
    )
)
CODED = re.compile(r"\b(?:plate|number|code|barcode|reference|ref|sku|serial|tracking)\b")
COUNTED = re.compile(r"(?<![\w.$])(\d+(?:\.\d+)?) ([a-z]+)\b", re.IGNORECASE)  # '11 days', '87.8 litres'
MONEY = re.compile(r"[$€£]\s?(\d[\d,]*(?:\.\d+)?)|\b(\d[\d,]*(?:\.\d+)?) (?:euros?|dollars?|pounds?|usd|eur)\b", re.I)
MONEY_WORDS = re.compile(r"\b(?:amount|price|cost|fee|total|charge|credit|refund|payment|sum|rate)\b")
BECAUSE = re.compile(r"\bbecause(?: of)?(?: (?:a|an|the|my|our))? ([^.,;!?\n]{3,80})", re.IGNORECASE)
QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]|(?<!\w)'([^'\n]{2,80})'(?!\w)")  # not the apostrophe of "what's"
STOP = frozenset(
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
        "by",
        "with",
        "from",
        "is",
        "are",
        "be",
        "it",
        "this",
        "that",
        "my",
        "me",
        "i",
        "you",
        "your",
        "please",
        "can",
        "could",
        "would",
        "will",
        "do",
        "does",
        "id",
        "ids",
        "get",
        "list",
        "find",
    ]
)
SYNONYMS = {
    "litres": "liters",
    "litre": "liter",
    "settle": "pay",
    "schedule": "book",
    "reserve": "book",
    "move": "reschedule",
    "change": "update",
    "remove": "delete",
    "drop": "cancel",
    "send": "send",
    "show": "list",
    "bill": "invoice",
    "visit": "appointment",
}


def _is_paging(prop: str, schema: Any) -> bool:
    """A list's paging argument (`limit`, `cursor`, or one a server marks), not a filter."""
    marked = isinstance(schema, dict) and schema.get("x-envfarm-paging") is True
    return marked or prop in ("cursor", "limit", "page_token", "page_size")


def _stem(word: str) -> str:
    word = SYNONYMS.get(word, word)
    for suffix in ("ing", "ed", "es", "s", "al"):  # 'rental' is a renting
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            # 'cancelling' is cancel, 'shipping' ship; 'billing' stays bill
            return word[:-1] if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "aeiousz" else word
    return word


@functools.lru_cache(maxsize=4096)
def words(text: str) -> frozenset[str]:
    """Content words, stemmed and with synonyms folded (cached: tool texts repeat in every rollout)."""
    return frozenset(_stem(w) for w in WORD.findall(text.lower()) if w not in STOP)


def spoken_days(text: str, year: int | None) -> list[str]:
    """The days (and moments) `text` names, in order, as ISO: '2026-05-14', '14 May', 'May 14, 2026'; a time said
    after a day is a moment of that day ('Monday 27 April, from 11:00 to 11:45': '2026-04-27T11:00:00Z' and
    '2026-04-27T11:45:00Z'). A day without a year is in `year`, the services' now."""
    found: list[tuple[int, str]] = [(m.start(), m.group(0)) for m in DATETIME.finditer(text)]
    found += [(m.start(), m.group(0)) for m in DATE.finditer(text) if not DATETIME.match(text, m.start())]
    months = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
    months |= {name.lower(): n for n, name in enumerate(calendar.month_abbr) if name}
    days: list[tuple[int, int, str]] = []  # (start, end, ISO day) of each day said in words
    for m in SPOKEN_DAY.finditer(text):
        day, month = (m[1], m[2]) if m[1] else (m[4], m[3])
        when = m[5] or year
        if when is None:
            continue
        try:
            iso = f"{int(when):04d}-{months[month.lower()]:02d}-{int(day):02d}"
            datetime.date.fromisoformat(iso)
        except ValueError:
            continue
        days.append((m.start(), m.end(), iso))
    for n, (start, end, iso) in enumerate(days):
        until = days[n + 1][0] if n + 1 < len(days) else len(text)
        times = [t for t in CLOCK_TIME.finditer(text, end, until) if int(t[1]) < 24]
        found += [(t.start(), f"{iso}T{int(t[1]):02d}:{t[2]}:00Z") for t in times] or [(start, iso)]
    return [value for _, value in sorted(found)]


def speakers(text: str) -> list[str]:
    """The names people give as their own ('Carlos Patel here', "it's Diego Rossi")."""
    return [a or b for a, b in SPEAKER.findall(text)]


def proper_names(text: str) -> list[tuple[str, int]]:
    """The proper names of things `text` says, each with where it ends: capitalised phrases less a sentence's
    opening word, days and months, and the speaker's own name."""
    own = set(speakers(text))
    found = []
    for match in PROPER.finditer(text):
        parts = match[0].split()
        if len(parts) == 1 and text[: match.start()].rstrip()[-1:] in ("", ".", "!", "?", "\n"):
            parts.pop(0)  # a sentence's first word is capitalised whatever it is
        while parts and parts[0] in NOT_A_NAME:
            parts.pop(0)
        name = " ".join(parts)
        possessive = text[match.end() : match.end() + 1] in ("'", "’")  # "Emma Dubois' offer": a person's
        if name and name not in own and parts[-1] not in NOT_A_NAME and not re.search(r"\d", name) and not possessive:
            found.append((name, match.end()))
    return found


def example_shape(description: str) -> re.Pattern[str] | None:
    """What a value looks like, from the example a parameter's description gives ('e.g. INV-1012' -> letters,
    a dash, four digits): a code the user says is found by its shape, not its name."""
    match = EXAMPLE.search(description)
    return shape_of(match[1]) if match else None


def shape_of(code: str) -> re.Pattern[str] | None:
    """Codes shaped like `code` (its runs of capitals, small letters and digits, at their lengths); None unless it
    mixes letters and digits."""
    if not re.search(r"\d", code) or not re.search(r"[A-Za-z]", code):
        return None
    shape = re.sub(
        r"[A-Z]+|[a-z]+|\d+",
        lambda m: f"[{'A-Z' if m[0].isupper() else 'a-z' if m[0].isalpha() else '0-9'}]{{{len(m[0])}}}",
        re.escape(code),
    )
    return re.compile(rf"(?<![\w-]){shape}(?![\w-])")


def _abbreviates(prefix: str, word: str) -> bool:
    """`apt` abbreviates `appointment`: its letters appear in order, starting with the same one."""
    letters = iter(word)
    return bool(prefix) and prefix[0] == word[:1] and all(ch in letters for ch in prefix)


def _properties(schema: Any) -> Iterator[str]:
    """Every property name in a JSON schema, nested and in `$defs`."""
    if isinstance(schema, dict):
        for name, sub in (schema.get("properties") or {}).items():
            yield name
            yield from _properties(sub)
        for key in ("items", "$defs", "anyOf", "oneOf", "allOf"):
            sub = schema.get(key)
            for part in (
                sub.values() if isinstance(sub, dict) and key == "$defs" else sub if isinstance(sub, list) else [sub]
            ):
                yield from _properties(part)


def _date_kind(prop: str, schema: dict[str, Any]) -> str | None:
    """'moment' for a date-time parameter, 'date' for a date one, else None (by its pattern, format or words)."""
    pattern = " ".join(
        str(part.get(k) or "") for part in [schema, *schema.get("anyOf", [])] for k in ("pattern", "format")
    )
    hint = f"{prop} {schema.get('description', '')}".lower()
    if "T\\d" in pattern or "date-time" in pattern or "datetime" in hint or prop.endswith("_at"):
        return "moment"
    if "\\d{4}-\\d{2}-\\d{2}" in pattern or "date" in pattern or "date" in hint:
        return "date"
    return None


def _own_value(prop: str, schema: dict[str, Any], mine: dict[str, Any]) -> Any:
    """The person's own key for a parameter that takes it: by its name ('member_id') or the column it refers to
    ('seller_id' -> members.member_id); None otherwise."""
    refers = str(schema.get("x-envfarm-ref") or "").rpartition(".")[2]
    return mine.get(prop, mine.get(refers)) if refers else mine.get(prop)


def _types(schema: dict[str, Any]) -> set[str]:
    found = {schema["type"]} if isinstance(schema.get("type"), str) else set()
    for part in schema.get("anyOf") or []:
        found |= _types(part)
    return found - {"null"}


def _enum(schema: dict[str, Any]) -> list[Any]:
    return list(schema.get("enum") or [v for part in schema.get("anyOf") or [] for v in part.get("enum") or []])


@dataclass(frozen=True)
class ToolIndex:
    """What the heuristic matches a tool by, computed once per tool rather than per step."""

    name: frozenset[str]
    description: frozenset[str]
    inputs: frozenset[str]
    outputs: frozenset[str]
    gives: frozenset[str]  # the words of its output's fields: what a person asking to be told it hears

    @classmethod
    def of(cls, tool: AgentTool) -> ToolIndex:
        return cls(
            name=words(tool.tool.replace("_", " ")),
            # The summary (first paragraph): later ones are how a list matches and pages, shared by every list.
            description=words(tool.description.split("\n\n")[0]),
            inputs=frozenset(_properties(tool.input_schema)),
            outputs=frozenset(_properties(tool.output_schema or {})),
            gives=words(" ".join(_properties(tool.output_schema or {})).replace("_", " ")),
        )


IDENTITY_FACTS = {  # a fact a service identifies a customer by -> how a message shows it was given
    "email": EMAIL,
    "date of birth": re.compile(r"\b(?:born|birth)\b|\b(?:19\d{2}|200\d)\b", re.IGNORECASE),
    "card number": re.compile(r"\b[A-Z]{2,}-?\d{4,}\b"),
    "last four digits": re.compile(r"\b(?:ending|last four|last 4)\b|(?<![\d.,-])\d{4}(?![\d.,-])", re.IGNORECASE),
    "phone": re.compile(r"\+?\d[\d -]{8,}\d"),
    "delivery address": re.compile(r"\b\d+ [A-Z][a-z]+"),
}


@dataclass(frozen=True)
class ServiceRules:
    """What one service's instructions ask of an agent before a write, read from its section of the system
    message: a weak agent that reads its instructions still reads these three."""

    confirm_writes: bool  # 'Get an explicit yes first': read every write back and wait for a yes
    # the ways it identifies a customer ('card number, or full name and email'), each the facts it takes
    # (IDENTITY_FACTS) in the order named; a way by no fact we know ('the confirmation details') is left out
    identity: tuple[tuple[str, ...], ...]
    before: tuple[tuple[str, frozenset[str]], ...]  # a read the rules name, and the words of the writes it precedes

    @classmethod
    def of(cls, section: str, reads: set[str]) -> ServiceRules:
        identify = next((line for line in section.splitlines() if re.match(r"^(?:- )?Identify\b", line)), "")
        ways = [
            tuple(fact for _, fact in sorted((way.find(fact), fact) for fact in IDENTITY_FACTS if fact in way))
            for way in re.split(r",? or ", identify.split(";")[0])  # '...; match them before x or y' is no way
        ]
        before: list[tuple[str, frozenset[str]]] = []
        for line in section.splitlines():
            tools = [name for name in re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", line) if name in reads]
            afters = re.findall(r"\bbefore ((?:\w+ ?){1,4})", line)  # 'before you ship or redirect (...)'
            before.extend((read, words(after) - {"you", "any"}) for read in tools for after in afters)
        return cls(
            confirm_writes="explicit yes" in section.lower(),
            identity=tuple(way for way in ways if way),
            before=tuple(before),
        )


def service_rules(system: str, tools: list[AgentTool]) -> dict[str, ServiceRules]:
    """Each service's rules from the system message's '## <server>' sections."""
    sections = re.split(r"^## (\S+)\n", system, flags=re.MULTILINE)
    found = dict(zip(sections[1::2], sections[2::2], strict=True))
    return {
        server: ServiceRules.of(section, {t.tool for t in tools if t.server == server and t.read_only})
        for server, section in found.items()
    }


@dataclass
class HeuristicAgent:
    """Greedy and literal on purpose: a baseline that reads like a weak agent, with no model."""

    tools: list[AgentTool]
    index: dict[str, ToolIndex]
    goal: AgentTool | None = None
    request_count: int = 0
    asked: set[str] = field(default_factory=set)
    tried: set[str] = field(default_factory=set)
    failures: int = 0
    read_back: str | None = None  # the write (signature) the last message read back, awaiting the user's answer
    year: int | None = None  # the services' year ('Now: ...' in the system message): a day said without one is in it
    rules: dict[str, ServiceRules] = field(default_factory=dict)  # per server, from the system message
    called: set[str] = field(default_factory=set)  # the tools called so far
    goals: list[AgentTool] = field(default_factory=list)  # the request's other goals, in the order to try them
    producer_tries: int = 1  # lookups tried for a missing input before asking the user

    # ------------------------------------------------ what the conversation holds

    @staticmethod
    def _user_text(messages: list[dict[str, Any]]) -> str:
        return "\n".join(str(m.get("content") or "") for m in messages if m["role"] == "user")

    @staticmethod
    def _outputs(messages: list[dict[str, Any]]) -> list[Any]:
        """Successful tool outputs, newest first."""
        outputs = []
        for message in messages:
            if message["role"] == "tool":
                try:
                    value = json.loads(message.get("content") or "")
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict | list) and not (isinstance(value, dict) and value.get("error")):
                    outputs.append(value)
        return outputs[::-1]

    def _pick(self, items: list[Any], scores: Sequence[float]) -> Any:
        """The first item with the best score: the greedy choice at every decision (goal, producer, row)."""
        return items[max(range(len(items)), key=lambda i: (scores[i], -i))]

    def _order(self, items: list[Any], scores: list[float], n: int) -> list[Any]:
        """Up to `n` items, in the order the agent tries them: the greedy agent, best score first."""
        ranked = sorted(range(len(items)), key=lambda i: (-scores[i], i))
        return [items[i] for i in ranked[:n]]

    def _reads_back(self, tool: AgentTool) -> bool:
        """Whether to read a write back and ask to go ahead before making it: the greedy agent never does."""
        return False

    def _score(self, tool: AgentTool, text: str) -> float:
        request, known = words(text), self.index[tool.name]
        score = 3.0 * len(request & known.name) + len(request & known.description) + 0.2 * len(request & known.inputs)
        if re.search(rf"\b{re.escape(tool.tool)}\b", text):
            score += 10.0
        return score

    def _goal_scores(self, message: str) -> list[tuple[AgentTool, float]]:
        """The tools a message may ask for, each with its score: by its words (never what it quotes), and by the
        fields of a tool's output that what it asks to be told names ('tell me the confirmation code': the tool
        that returns one); a write before a read of the same score. None when nothing matches at all."""
        sentences = re.split(r"(?<=[.?!])\s+", QUOTED.sub(" ", message))
        asks = " ".join(part for part in sentences if ASKS_TO_BE_TOLD.search(part))
        does = " ".join(part for part in sentences if not ASKS_TO_BE_TOLD.search(part))
        told = words(asks)
        scored = [
            (t, self._score(t, does) + self._score(t, asks) + GIVES * len(told & self.index[t.name].gives))
            for t in self.tools
        ]
        return [(t, score + WRITE_TIE * (not t.read_only)) for t, score in scored if score > 0]

    # ------------------------------------------------ filling arguments

    def _days(self, text: str, about: str = "") -> list[str]:
        """The days the latest message that names any (and says `about`) names, in order: a later message moves
        the request."""
        for message in reversed(text.split("\n")):
            if about in message.lower() and (days := spoken_days(message, self.year)):
                return days
        return []

    def _from_text(self, prop: str, schema: dict[str, Any], text: str, nth: int = 0) -> Any:
        kinds = _types(schema)
        hint = f"{prop} {schema.get('description', '')}".lower()
        choices = _enum(schema)
        if choices:
            lowered = text.lower()
            hits = [c for c in choices if isinstance(c, str) and re.search(rf"\b{re.escape(c.lower())}\b", lowered)]
            return hits[-1] if hits else None
        if "email" in hint:
            found = EMAIL.findall(text)
            return found[-1] if found else None
        dated = _date_kind(prop, schema)
        if dated is not None:
            # the nth day asked for fills the nth date parameter: 'from 14 May to 18 May' is arrival, departure;
            # a birth date is only one said as one
            days = self._days(text, "birth" if "birth" in hint else "")
            found = [d for d in days if "T" in d] if dated == "moment" else [d[:10] for d in days]
            return found[min(nth, len(found) - 1)] if found else None
        shape = example_shape(str(schema.get("description") or ""))
        if shape is not None:
            found = shape.findall(text)
            return found[-1] if found else None  # a code of another shape is some other code
        if CODED.search(hint) and not kinds & {"number", "integer"}:
            # a code the user reads off something ('plate DE-805-FB', 'barcode 31200004485'), said after a word
            # of the parameter's; of several, the one whose preceding words fit it best
            wanted = words(hint)
            codes = [(m[0], len(wanted & words(text[max(0, m.start() - 25) : m.start()]))) for m in CODE.finditer(text)]
            codes = [(code, fit) for code, fit in codes if fit]
            if codes:
                return self._pick([code for code, _ in codes][::-1], [fit for _, fit in codes][::-1])
        if prop.endswith("_id") or prop == "id":
            stem = prop.removesuffix("_id")
            found = [i for i in IDENT.findall(text) if _abbreviates(i.split("_")[0], stem)]
            return found[-1] if found else None
        if kinds & {"number", "integer"}:
            # a count said with its unit ('for 11 days', '87.8 litres'), money said as money ('$470.40') where the
            # parameter is an amount; other numbers come from outputs, not from loose numbers in chat
            unit = prop.split("_")[-1]
            for number, said in reversed(COUNTED.findall(text)):
                if _stem(said.lower()) == _stem(unit) or said.lower() in words(prop.replace("_", " ")):
                    return number
            money = [a or b for a, b in MONEY.findall(text)]
            return money[-1].replace(",", "") if money and MONEY_WORDS.search(hint) else None
        if "reason" in prop or "reason" in hint:
            found = BECAUSE.findall(text)
            return found[-1].strip() if found else None
        if PERSON.search(hint) or prop == "full_name":
            found = speakers(text) or NAME.findall(text)  # 'Carlos Patel here': whose records they are
            return found[-1] if found else None
        quoted = [a or b for a, b in QUOTED.findall(text)]
        if quoted:
            return quoted[-1]
        if re.search(r"\b(?:name|title|city|town)\b", hint):
            # a thing's proper name ('the Delta room', 'the Wieliczka Salt Mine Trip'), not the speaker's own:
            # the one whose next words fit the parameter best
            found = proper_names(text)
            if found:
                wanted = words(hint) | {_stem(w) for w in prop.split("_")}
                fit = [len(wanted & words(text[end : end + 30])) + 0.1 * len(name.split()) for name, end in found]
                return self._pick([name for name, _ in found][::-1], fit[::-1])
        return None

    def _from_outputs(self, prop: str, outputs: list[Any], text: str, keyed: bool = False) -> Any:
        """The value of `prop` in the newest output that has it, from the row the user's words fit best; with
        `keyed`, only from a row whose own id it is (a departure's id from a departure, not from a booking of one)."""
        request = words(text)
        aliases = (prop, prop.removesuffix("_usd"), "amount" if "amount" in prop else prop)
        mine = self._own_keys(outputs, text)
        for output in outputs:
            rows = [d for d in speech.rows(output) if any(a in d for a in aliases)]
            if keyed:
                rows = [row for row in rows if next((k for k in row if k.endswith("_id")), None) == prop]
            if rows:
                # the row the request's words fit best, of the person's own before anyone else's
                owned = [
                    sum(OWN_ROW * (1 if row.get(k) == v else -1) for k, v in mine.items() if k in row) for row in rows
                ]
                fit = [len(request & words(" ".join(map(str, row.values())))) for row in rows]
                best = self._pick(rows, [a + b for a, b in zip(fit, owned, strict=True)])
                key = next(a for a in aliases if a in best)
                return best[key]
        return None

    def _arguments(self, tool: AgentTool, text: str, outputs: list[Any]) -> tuple[dict[str, Any], list[str]]:
        """Arguments for `tool` from what is known, and the required ones still missing."""
        schema = tool.input_schema
        required = set(schema.get("required") or [])
        arguments: dict[str, Any] = {}
        missing: list[str] = []
        stated = {" ".join(sorted(words(key))): value.strip() for key, value in STATED.findall(text)}
        # the days said fill the date parameters in order; a change takes the last ones said ('my reservation
        # arriving 25 April: arriving 2 May, leaving 9 May'), a lookup the first (the day it is known by)
        dates = [
            p for p, sub in (schema.get("properties") or {}).items() if _date_kind(p, sub) and not _is_paging(p, sub)
        ]
        dated = 0 if tool.read_only else max(0, len(self._days(text)) - len(dates))
        said: set[str] = set()  # words of the request used as a filter already: one name is not also the city
        mine = self._own_keys(outputs, text)
        properties = schema.get("properties") or {}
        for prop, sub in sorted(properties.items(), key=lambda item: not NAMING.search(item[0])):
            if prop not in required and _is_paging(prop, sub):
                continue  # the first page is what a person asks for; numbers in the request are not page sizes
            value = stated.get(" ".join(sorted(words(prop.replace("_", " ")))))
            if value is not None and (dated_as := _date_kind(prop, sub)) is not None:
                days = spoken_days(value, self.year)  # 'my date of birth is 8 April 1987' -> 1987-04-08
                value = (days[0] if dated_as == "moment" else days[0][:10]) if days else None
            if value is None:
                value = self._from_text(prop, sub, text, dated)
                if isinstance(value, str) and re.match(r"\d{4}-\d{2}-\d{2}", value):
                    dated += 1
                elif isinstance(value, str) and value in said and prop not in required:
                    continue
                said.add(str(value))
            if value is None and prop in required:
                # the person's own key where the call takes it ('guest_id': theirs), else a row's
                # the person's own key where it takes it, else the record the id is of, else (where no lookup of
                # those records is left to make) a row that refers to one
                value = _own_value(prop, sub, mine)
                if value is None:
                    value = self._from_outputs(prop, outputs, text, keyed=True)
                if value is None and not self._lookups_of(prop):
                    value = self._from_outputs(prop, outputs, text)
            if value is None and prop in required and _types(sub) == {"string"} and not prop.endswith("_id"):
                quoted = [a or b for a, b in QUOTED.findall(text)]
                value = quoted[-1] if quoted else None
            if value is None:
                if prop in required:
                    missing.append(prop)
                continue
            kinds = _types(sub)
            if kinds & {"number", "integer"} and isinstance(value, str):
                try:
                    value = float(value) if "number" in kinds else int(value)
                except ValueError:
                    missing.append(prop)
                    continue
            arguments[prop] = value
        window = [p for p in arguments if p in dates and isinstance(arguments[p], str)]
        if tool.read_only and len(window) == 2 and arguments[window[0]] == arguments[window[1]]:
            # one moment said for a lookup's 'after' and 'before': the day it falls on, whole
            day = arguments[window[0]][:10]
            moment = "T" in arguments[window[0]]
            arguments[window[0]] = f"{day}T00:00:00Z" if moment else day
            arguments[window[1]] = f"{day}T23:59:59Z" if moment else day
        return arguments, missing

    def _candidates(self, prop: str, exclude: set[str]) -> list[AgentTool]:
        """The read tools whose output holds `prop`."""
        return [t for t in self.tools if t.read_only and t.name not in exclude and prop in self.index[t.name].outputs]

    def _producers(self, prop: str, exclude: set[str], text: str) -> list[AgentTool]:
        """The read tools to try for `prop`, in the order `_order` tries them."""
        candidates = self._candidates(prop, exclude)
        return self._order(candidates, [self._producer_score(t, prop, text) for t in candidates], self.producer_tries)

    def _lookups_of(self, prop: str) -> list[AgentTool]:
        """The lookups of the records `prop` is the id of ('list_departures' for 'departure_id') not yet made."""
        stem = _stem(prop.removesuffix("_id"))
        return [
            t for t in self._candidates(prop, set()) if stem in self.index[t.name].name and t.name not in self.called
        ]

    def _producer_score(self, tool: AgentTool, prop: str, text: str) -> float:
        """How well a lookup fits the request, and whether it is the lookup of `prop`'s own records: `hotel_id`
        comes from a hotel search, not from someone's reservation that names a hotel."""
        owner = _stem(prop.removesuffix("_id")) in self.index[tool.name].name
        return self._score(tool, text) + OWN_RECORDS * owner

    @staticmethod
    def _signature(tool: AgentTool, arguments: dict[str, Any]) -> str:
        """A call as the agent remembers it: the same lookup with the same arguments is not made twice."""
        return f"{tool.name}:{json.dumps(arguments, sort_keys=True)}"

    def _plan(
        self, tool: AgentTool, text: str, outputs: list[Any], depth: int = 0
    ) -> tuple[AgentTool, dict[str, Any]] | str:
        """The next call towards `tool`, or the name of a detail to ask the user for."""
        arguments, missing = self._arguments(tool, text, outputs)
        filters = [p for p, sub in (tool.input_schema.get("properties") or {}).items() if not _is_paging(p, sub)]
        if tool.read_only and not missing and (not arguments or self._signature(tool, arguments) in self.tried):
            # a lookup with nothing to go on lists everyone's, and one made already found nothing new: the
            # person's own, where it filters by them ('seller_id': their member id)
            properties, mine = tool.input_schema.get("properties") or {}, self._own_keys(outputs, text)
            for prop in filters:
                if (own := _own_value(prop, properties[prop], mine)) is not None:
                    return tool, {prop: own}
        if depth > 0 and not arguments and not missing and filters:
            # A lookup with no filter at all would list everyone: filter it by a record it refers to (one an
            # earlier output holds, or one more lookup finds), else ask the user for something to search by.
            properties = tool.input_schema.get("properties") or {}
            refs = [p for p in filters if p.endswith("_id") or "x-envfarm-ref" in properties[p]]
            for prop in refs:
                if (value := self._from_outputs(prop, outputs, text)) is not None:
                    return tool, {prop: value}
            for prop in refs if depth < 3 else []:
                for producer in self._producers(prop, {tool.name}, text):
                    step = self._plan(producer, text, outputs, depth + 1)
                    if not isinstance(step, str) and self._signature(*step) not in self.tried:
                        return step
            return " or ".join(f.replace("_", " ") for f in filters[:3])
        if not missing:
            return tool, arguments
        for prop in missing:
            producers = self._producers(prop, {tool.name}, text) if depth < 3 else []
            if not producers:
                return prop
            question: str | None = None  # what the first producer tried would have the user asked
            for producer in producers:
                step = self._plan(producer, text, outputs, depth + 1)
                if isinstance(step, str):
                    question = question or step
                elif self._signature(*step) not in self.tried:
                    return step
                else:
                    question = question or prop  # the producer ran and did not yield it: ask the user
            return question or prop
        return missing[0]

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        if self.year is None and messages and messages[0]["role"] == "system":
            system = str(messages[0].get("content") or "")
            clock = CLOCK_YEAR.search(system)
            self.year = int(clock[1]) if clock else None
            self.rules = service_rules(system, self.tools)
        text = self._user_text(messages)
        requests = sum(m["role"] == "user" for m in messages)
        last = messages[-1]
        if last["role"] == "user" and requests != self.request_count and not self._answers_question(messages):
            matching = self._goal_scores(str(last.get("content") or ""))
            if self.goal is None or max((score for _, score in matching), default=0.0) >= NEW_REQUEST:
                tools, scores = [t for t, _ in matching], [score for _, score in matching]
                self.goals = self._order(tools, scores, GOAL_TRIES)
                self.goal = self.goals.pop(0) if self.goals else None
                self.failures = 0
            elif self.goals:
                # a nudge ('that doesn't look done yet') on the request made: the tool it took was not the one
                self.goal, self.failures = self.goals.pop(0), 0
        self.request_count = requests
        outputs = self._outputs(messages)
        if last["role"] == "tool" and last.get("content", "").startswith("Error"):
            self.failures += 1
            if self.goal is not None and self._last_call(messages) == self.goal.name and self.goals:
                self.goal, self.failures = self.goals.pop(0), 0  # the service refused the goal: try the next one
        if self.goal is None:
            return Action(content="Sorry, I can't find a way to help with that.")
        if last["role"] == "tool" and self._goal_done(messages):
            return Action(content=self._summary(outputs[0] if outputs else None))
        if self.failures >= 2:
            return Action(content=f"Sorry, I could not complete this: {last.get('content', '')}")
        step = self._plan(self.goal, text, outputs)
        if isinstance(step, str):
            return self._ask(step)
        tool, arguments = step
        rules = self.rules.get(tool.server, ServiceRules(False, (), ()))
        # 'Identify the customer first': ask for what identifies them, then look them up, before anything else
        if (fact := self._unproven(rules, text)) is not None:
            return self._ask(fact)
        if rules.identity and (lookup := self._identify(tool.server, text)) is not None:
            tool, arguments = lookup
        elif (theirs := self._someone_elses(arguments, outputs, text)) is not None:
            return Action(
                content=f"I'm sorry, I can't do that: {theirs} belongs to someone else, and the policy lets me act "
                "only on the account holder's own records."
            )
        elif not tool.read_only and (before := self._before(tool, rules, text, outputs)) is not None:
            if isinstance(before, str):
                return self._ask(before)
            tool, arguments = before
        signature = self._signature(tool, arguments)
        if signature in self.tried:
            if last["role"] == "tool" and str(last.get("content") or "").startswith("Error"):
                return Action(content=f"Sorry, I could not complete this: {last.get('content', '')}")
            return Action(content=self._summary(outputs[0] if outputs else None))
        asked, self.read_back = self.read_back, None
        if asked == signature and last["role"] == "user" and declines(str(last.get("content") or "")):
            return Action(content="All right, I won't make that change.")
        if asked != signature and not tool.read_only and (rules.confirm_writes or self._reads_back(tool)):
            self.read_back = signature
            details = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in arguments.items())
            return Action(
                content=f"Just to confirm: I'll {tool.tool.replace('_', ' ')} with {details}. Shall I go ahead?"
            )
        self.tried.add(signature)
        self.called.add(tool.name)
        call = ToolCallRequest(id=f"call_{len(self.tried)}", name=tool.name, arguments=json.dumps(arguments))
        return Action(tool_calls=[call])

    def _ask(self, detail: str) -> Action:
        """Ask the user for a detail once; asked again, it has no way on."""
        if detail in self.asked:
            return Action(content="Sorry, I don't have enough details to complete this.")
        self.asked.add(detail)
        return Action(content=f"Could you tell me your {detail.replace('_', ' ')}?")

    def _before(
        self, write: AgentTool, rules: ServiceRules, text: str, outputs: list[Any]
    ) -> tuple[AgentTool, dict[str, Any]] | str | None:
        """The read the service's rules put before `write` ('Quote before booking (quote_stay)') while it is not
        yet made: its next step, or what to ask for it. None when no such read is due."""
        known = self.index[write.name]
        for read, wanted in rules.before:
            tool = next((t for t in self.tools if t.server == write.server and t.tool == read), None)
            if tool is not None and tool.name not in self.called and wanted & known.name:
                return self._plan(tool, text, outputs)
        return None

    def _identify(self, server: str, text: str) -> tuple[AgentTool, dict[str, Any]] | None:
        """The lookup of the customer by one thing that identifies them, their email else their name (two at once
        find no one when one is wrong), before anything else on a service that identifies customers; None once a
        lookup there took one, or where none takes what they said."""
        facts = [*EMAIL.findall(text), *speakers(text)]  # an email first: two people may share a name
        reads = [t for t in self.tools if t.server == server and t.read_only]
        if not facts or any(
            sig.startswith(f"{t.name}:") and any(json.dumps(fact) in sig for fact in facts)
            for sig in self.tried
            for t in reads
        ):
            return None
        for fact in facts:
            fits = []
            for tool in reads:
                schema = tool.input_schema
                for prop, sub in (schema.get("properties") or {}).items():
                    if not set(schema.get("required") or []) - {prop} and self._from_text(prop, sub, text) == fact:
                        fits.append((tool, prop))
            if fits:
                people = [PEOPLE.search(tool.tool) is not None for tool, _ in fits]
                tool, prop = self._pick(fits, [3.0 * p + 0.1 * self._score(t, text) for (t, _), p in zip(fits, people)])
                return tool, {prop: fact}
        return None

    @staticmethod
    def _own_rows(outputs: list[Any], text: str) -> list[dict[str, Any]]:
        """The person's own rows: those the lookups found by the name they gave as their own or an email they said."""
        facts = {*speakers(text), *EMAIL.findall(text)}
        return [
            row
            for output in outputs
            for row in speech.rows(output)
            if any(v in facts for v in row.values() if isinstance(v, str))
        ]

    def _own_keys(self, outputs: list[Any], text: str) -> dict[str, Any]:
        """The keys of the person's own rows ('member_id': theirs)."""
        mine: dict[str, Any] = {}
        for row in self._own_rows(outputs, text):
            key = next((k for k in row if k.endswith("_id")), None)
            if key is not None:
                mine.setdefault(key, row[key])
        return mine

    def _someone_elses(self, arguments: dict[str, Any], outputs: list[Any], text: str) -> str | None:
        """What the lookups show is another person's, as the user named it, of the records a call acts on or the
        user named by a code, else None: a row with one of its ids, or a code they said ('your invoice INV-1038',
        'my card LC-200525'), whose owner is not the person whose own row the lookups found by their name or
        email. The policy forbids reading out or changing it for them."""
        mine = self._own_keys(outputs, text)
        if not mine:
            return None
        for row in self._own_rows(outputs, text):  # a card they say that is not the one on their own record
            for own in (v for k, v in row.items() if isinstance(v, str) and not k.endswith("_id")):
                shape = shape_of(own) if CODE.fullmatch(own) else None
                if shape is not None and (said := [c for c in shape.findall(text) if c != own]):
                    return said[0]
        ids = {v for k, v in arguments.items() if isinstance(v, str) and k.endswith("_id")}
        codes = {m[0] for m in CODE.finditer(text)}
        for output in outputs:
            for row in speech.rows(output):
                key = next((k for k in row if k.endswith("_id")), None)  # the row's own id: a row naming a list
                named = key is not None and row[key] in ids  # or a channel is not that list's or channel's record
                if named or codes & {v for k, v in row.items() if isinstance(v, str) and not k.endswith("_id")}:
                    for key, own in mine.items():
                        if row.get(key) not in (None, own):
                            said = [v for v in row.values() if isinstance(v, str) and v in text]
                            return said[0] if said else str(row[key])
        return None

    def _unproven(self, rules: ServiceRules, text: str) -> str | None:
        """The fact to ask for first where the service identifies customers by facts the user has not given all of
        for any way it allows ('email and the last four digits of a card': the email), else None. Asked once:
        the user has then said what they can."""
        ways = rules.identity
        if not ways or any(all(IDENTITY_FACTS[f].search(text) for f in way) for way in ways):
            return None
        missing = [f for f in ways[0] if not IDENTITY_FACTS[f].search(text) and f not in self.asked]
        return missing[0] if missing else None

    @staticmethod
    def _last_call(messages: list[dict[str, Any]]) -> str | None:
        """The tool the agent called last."""
        for message in reversed(messages):
            if message["role"] == "assistant" and message.get("tool_calls"):
                return str(message["tool_calls"][-1]["function"]["name"])
        return None

    def _goal_done(self, messages: list[dict[str, Any]]) -> bool:
        """The goal tool was just called without error."""
        called = self._last_call(messages)
        return bool(self.goal and called == self.goal.name and not messages[-1]["content"].startswith("Error"))

    @staticmethod
    def _answers_question(messages: list[dict[str, Any]]) -> bool:
        previous = messages[-2] if len(messages) > 1 else {}
        return previous.get("role") == "assistant" and str(previous.get("content") or "").rstrip().endswith("?")

    def _summary(self, output: Any) -> str:
        """The last output, as the answer: 'Done.' only once the goal was a change and it was made."""
        lead = "Done." if self.goal is not None and not self.goal.read_only and self.goal.name in self.called else ""
        if output is None:
            return lead or "I found nothing more to report."
        pairs = [
            f"{k}: {v}"
            for row in list(speech.rows(output))[:6]
            for k, v in row.items()
            if not isinstance(v, dict | list)
        ]
        return f"{lead or 'Here is what I found:'} {'; '.join(pairs[:30])}"


def _label(item: Any) -> str:
    """What tells a candidate apart in a choice: a tool's name, a row's fields."""
    if isinstance(item, tuple):
        return "/".join(map(_label, item))
    return item.name if isinstance(item, AgentTool) else json.dumps(item, sort_keys=True, default=str)


@dataclass
class SampledHeuristicAgent(HeuristicAgent):
    """The heuristic at a temperature: each choice is drawn with probability proportional to exp(score / T)
    from the episode's own generator (greedy as T -> 0). A tool named in the request (+10) or two more words of
    a row in common (+2 at T = 1: 7x as likely) still wins most draws; near ties are where attempts differ."""

    rng: random.Random = field(default_factory=lambda: random.Random(0))
    temperature: float = 1.0
    decided: dict[str, int] = field(default_factory=dict)  # a choice already drawn -> the index it drew

    def _pick(self, items: list[Any], scores: Sequence[float]) -> Any:
        """A draw per choice, kept: the plan is made again at every step, and the same candidates with the same
        scores (nothing new learnt) get the same answer, so a row read back is the row then written."""
        key = json.dumps([[_label(item), score] for item, score in zip(items, scores, strict=True)])
        if key not in self.decided:
            top = max(scores)
            weights = [math.exp((score - top) / self.temperature) for score in scores]
            self.decided[key] = self.rng.choices(range(len(items)), weights=weights, k=1)[0]
        return items[self.decided[key]]

    def _order(self, items: list[Any], scores: list[float], n: int) -> list[Any]:
        """Up to `n` items, each drawn (without replacement) as `_pick` draws: a lookup it cannot make from what
        the user said gives way to the next one drawn before it asks them; a goal the user says is not done, or a
        service refuses, to the next one."""
        left = list(zip(items, scores, strict=True))
        order: list[Any] = []
        while left and len(order) < n:
            order.append(self._pick([item for item, _ in left], [score for _, score in left]))
            left = [(item, score) for item, score in left if item is not order[-1]]
        return order

    def _reads_back(self, tool: AgentTool) -> bool:
        """A coin per write: read it back and wait for a yes, or make it (nothing in the scores favours either)."""
        return self.rng.random() < READ_BACK


class HeuristicPolicy:
    name = "heuristic"

    def __init__(self) -> None:
        self._index: dict[tuple[str, str, str], ToolIndex] = {}

    def _indexed(self, tools: list[AgentTool]) -> dict[str, ToolIndex]:
        for tool in tools:
            if (tool.server, tool.tool, tool.name) not in self._index:
                self._index[tool.server, tool.tool, tool.name] = ToolIndex.of(tool)
        return {t.name: self._index[t.server, t.tool, t.name] for t in tools}

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> Agent:
        return HeuristicAgent(tools, self._indexed(tools))

    async def aclose(self) -> None:
        return None


class SampledHeuristicPolicy(HeuristicPolicy):
    """`heuristic-sampled`: the stochastic reference policy whose solve rate over k attempts grades a task."""

    name = SAMPLED

    def __init__(self, seed: int = 0, temperature: float = TEMPERATURE) -> None:
        super().__init__()
        self.seed, self.temperature = seed, temperature

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> SampledHeuristicAgent:
        rng = random.Random(f"{self.seed}:{task.id}:{attempt}")  # str seeds hash the same in every process
        return SampledHeuristicAgent(
            tools, self._indexed(tools), producer_tries=PRODUCER_TRIES, rng=rng, temperature=self.temperature
        )


def make_policy(spec: str, base_url: str | None = None) -> Policy:
    """`heuristic`, `heuristic-sampled`, `oracle` or `openai:MODEL` -> a policy; anything else is an error naming
    the choices."""
    from envfarm.llm import parse_model

    config = parse_model(spec, base_url)
    if config is not None:
        return ChatPolicy(config)
    if spec == "heuristic":
        return HeuristicPolicy()
    if spec == SAMPLED:
        return SampledHeuristicPolicy()
    if spec == "oracle":
        return OraclePolicy()
    raise ValueError(f"unknown policy {spec!r}: use heuristic, {SAMPLED}, oracle or openai:MODEL")
