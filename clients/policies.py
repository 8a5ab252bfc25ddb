"""Policies: what acts in a rollout. One small interface, three kinds.

A `Policy` makes one `Agent` per rollout; the agent is shown the chat so far (OpenAI messages) and
answers an `Action`: words, tool calls, or both. Tool calls come back as the raw strings a model
would write, so the rollout loop handles a malformed call from any policy the same way.

- `ChatPolicy`: any OpenAI-compatible endpoint (OpenAI, vLLM, SGLang) with standard tools/tool_calls.
- `HeuristicPolicy`: no model. Picks the tool whose name, description and schema best match the
  request, fills arguments from the conversation and earlier outputs, calls producers first for
  inputs it lacks, asks the user for what nothing produces. It solves some tasks, not most.
- `SampledHeuristicPolicy` (`heuristic-sampled`): the heuristic at a temperature. Where the heuristic takes
  the best-scoring goal tool, producer or output row, it samples one with probability proportional to
  exp(score / temperature); it tries up to three lookups before asking the user, and tosses a coin per write
  to read it back first. Seeded by (task, attempt): k attempts of a task differ, a task's solve rate over
  them lies anywhere in [0, 1], and the same attempt makes the same choices on any worker.
- `OraclePolicy`: replays the task's gold calls and states its claims. A kept task where the oracle
  does not score 1.0 is a pipeline bug.
"""

from __future__ import annotations

import functools
import json
import math
import random
import re
from collections.abc import Iterator
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
WRITE_TIE = 0.01  # of a goal's score: a write wins a tie with a read, and adds next to nothing when sampled
WORD = re.compile(r"[a-z0-9]+")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})?")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
IDENT = re.compile(r"\b[a-z]{2,}_[a-z0-9_]*\d[a-z0-9_]*\b")
NAME = re.compile(r"\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)+\b")
NUMBER = re.compile(r"(?<![\w.])\$?(\d+(?:\.\d+)?)\b")
STATED = re.compile(
    r"\b(?:my|the) ([a-z][a-z ]{1,40}?) (?:is|should be|was|will be) ([^?!\n]+?)(?:\.(?:\s|$)|[?!\n]|$)", re.IGNORECASE
)
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
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@functools.lru_cache(maxsize=4096)
def words(text: str) -> frozenset[str]:
    """Content words, stemmed and with synonyms folded (cached: tool texts repeat in every rollout)."""
    return frozenset(_stem(w) for w in WORD.findall(text.lower()) if w not in STOP)


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

    @classmethod
    def of(cls, tool: AgentTool) -> ToolIndex:
        return cls(
            name=words(tool.tool.replace("_", " ")),
            # The summary (first paragraph): later ones are how a list matches and pages, shared by every list.
            description=words(tool.description.split("\n\n")[0]),
            inputs=frozenset(_properties(tool.input_schema)),
            outputs=frozenset(_properties(tool.output_schema or {})),
        )


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

    def _pick(self, items: list[Any], scores: list[float]) -> Any:
        """The first item with the best score: the greedy choice at every decision (goal, producer, row)."""
        return items[max(range(len(items)), key=lambda i: (scores[i], -i))]

    def _reads_back(self, tool: AgentTool) -> bool:
        """Whether to read a write back and ask to go ahead before making it: the greedy agent never does."""
        return False

    def _score(self, tool: AgentTool, text: str) -> float:
        request, known = words(text), self.index[tool.name]
        score = 3.0 * len(request & known.name) + len(request & known.description) + 0.2 * len(request & known.inputs)
        if re.search(rf"\b{re.escape(tool.tool)}\b", text):
            score += 10.0
        return score

    # ------------------------------------------------ filling arguments

    def _from_text(self, prop: str, schema: dict[str, Any], text: str) -> Any:
        kinds = _types(schema)
        pattern = str(schema.get("pattern") or "") + " " + str(schema.get("format") or "")
        hint = f"{prop} {schema.get('description', '')}".lower()
        choices = _enum(schema)
        if choices:
            lowered = text.lower()
            hits = [c for c in choices if isinstance(c, str) and re.search(rf"\b{re.escape(c.lower())}\b", lowered)]
            return hits[-1] if hits else None
        if "email" in hint:
            found = EMAIL.findall(text)
            return found[-1] if found else None
        if "T\\d" in pattern or "date-time" in pattern or "datetime" in hint or prop.endswith("_at"):
            found = DATETIME.findall(text)
            return found[-1] if found else None
        if "\\d{4}-\\d{2}-\\d{2}" in pattern or "date" in hint:
            found = DATE.findall(text)
            return found[-1] if found else None
        if prop.endswith("_id") or prop == "id":
            stem = prop.removesuffix("_id")
            found = [i for i in IDENT.findall(text) if _abbreviates(i.split("_")[0], stem)]
            return found[-1] if found else None
        if kinds & {"number", "integer"}:
            return None  # amounts and counts come from outputs, not from loose numbers in chat
        if "name" in prop or "name" in hint:
            found = NAME.findall(text)
            return found[-1] if found else None
        quoted = [a or b for a, b in QUOTED.findall(text)]
        return quoted[-1] if quoted else None

    def _from_outputs(self, prop: str, outputs: list[Any], text: str) -> Any:
        """The value of `prop` in the newest output that has it, from the row the user's words fit best."""
        request = words(text)
        aliases = (prop, prop.removesuffix("_usd"), "amount" if "amount" in prop else prop)
        for output in outputs:
            rows = [d for d in speech.rows(output) if any(a in d for a in aliases)]
            if rows:
                best = self._pick(rows, [len(request & words(" ".join(map(str, row.values())))) for row in rows])
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
        for prop, sub in (schema.get("properties") or {}).items():
            if prop not in required and _is_paging(prop, sub):
                continue  # the first page is what a person asks for; numbers in the request are not page sizes
            value = stated.get(" ".join(sorted(words(prop.replace("_", " ")))))
            if value is None:
                value = self._from_text(prop, sub, text)
            if value is None and prop in required:
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
        return arguments, missing

    def _candidates(self, prop: str, exclude: set[str]) -> list[AgentTool]:
        """The read tools whose output holds `prop`."""
        return [t for t in self.tools if t.read_only and t.name not in exclude and prop in self.index[t.name].outputs]

    def _producers(self, prop: str, exclude: set[str], text: str) -> list[AgentTool]:
        """The read tools to try for `prop`, in order: the greedy agent tries the one that fits the request best."""
        candidates = self._candidates(prop, exclude)
        return [self._pick(candidates, [self._score(t, text) for t in candidates])] if candidates else []

    def _plan(
        self, tool: AgentTool, text: str, outputs: list[Any], depth: int = 0
    ) -> tuple[AgentTool, dict[str, Any]] | str:
        """The next call towards `tool`, or the name of a detail to ask the user for."""
        arguments, missing = self._arguments(tool, text, outputs)
        filters = [p for p, sub in (tool.input_schema.get("properties") or {}).items() if not _is_paging(p, sub)]
        if depth > 0 and not arguments and not missing and filters:
            # A lookup with no filter at all would list everyone: ask the user for something to search by.
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
                elif f"{step[0].name}:{json.dumps(step[1], sort_keys=True)}" not in self.tried:
                    return step
                else:
                    question = question or prop  # the producer ran and did not yield it: ask the user
            return question or prop
        return missing[0]

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        text = self._user_text(messages)
        requests = sum(m["role"] == "user" for m in messages)
        last = messages[-1]
        if last["role"] == "user" and requests != self.request_count and not self._answers_question(messages):
            latest = str(last.get("content") or "")
            # The best match, a write before a read of the same score; no goal when nothing matches at all.
            scored = [(t, self._score(t, latest)) for t in self.tools]
            matching = [(t, score + WRITE_TIE * (not t.read_only)) for t, score in scored if score > 0]
            self.goal = self._pick(*map(list, zip(*matching, strict=True))) if matching else None
            self.failures = 0
        self.request_count = requests
        outputs = self._outputs(messages)
        if last["role"] == "tool" and last.get("content", "").startswith("Error"):
            self.failures += 1
        if self.goal is None:
            return Action(content="Sorry, I can't find a way to help with that.")
        if last["role"] == "tool" and self._goal_done(messages):
            return Action(content=self._summary(outputs[0] if outputs else None))
        if self.failures >= 2:
            return Action(content=f"Sorry, I could not complete this: {last.get('content', '')}")
        step = self._plan(self.goal, text, outputs)
        if isinstance(step, str):
            if step in self.asked:
                return Action(content="Sorry, I don't have enough details to complete this.")
            self.asked.add(step)
            return Action(content=f"Could you tell me your {step.replace('_', ' ')}?")
        tool, arguments = step
        signature = f"{tool.name}:{json.dumps(arguments, sort_keys=True)}"
        if signature in self.tried:
            return Action(content=self._summary(outputs[0] if outputs else None))
        asked, self.read_back = self.read_back, None
        if asked == signature and last["role"] == "user" and declines(str(last.get("content") or "")):
            return Action(content="All right, I won't make that change.")
        if asked != signature and not tool.read_only and self._reads_back(tool):
            self.read_back = signature
            details = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in arguments.items())
            return Action(
                content=f"Just to confirm: I'll {tool.tool.replace('_', ' ')} with {details}. Shall I go ahead?"
            )
        self.tried.add(signature)
        call = ToolCallRequest(id=f"call_{len(self.tried)}", name=tool.name, arguments=json.dumps(arguments))
        return Action(tool_calls=[call])

    def _goal_done(self, messages: list[dict[str, Any]]) -> bool:
        """The goal tool was just called without error."""
        for message in reversed(messages):
            if message["role"] == "assistant" and message.get("tool_calls"):
                called = message["tool_calls"][-1]["function"]["name"]
                return bool(self.goal and called == self.goal.name and not messages[-1]["content"].startswith("Error"))
        return False

    @staticmethod
    def _answers_question(messages: list[dict[str, Any]]) -> bool:
        previous = messages[-2] if len(messages) > 1 else {}
        return previous.get("role") == "assistant" and str(previous.get("content") or "").rstrip().endswith("?")

    @staticmethod
    def _summary(output: Any) -> str:
        if output is None:
            return "Done."
        pairs = [
            f"{k}: {v}"
            for row in list(speech.rows(output))[:6]
            for k, v in row.items()
            if not isinstance(v, dict | list)
        ]
        return "Done. " + "; ".join(pairs[:30])


def _label(item: Any) -> str:
    """What tells a candidate apart in a choice: a tool's name, a row's fields."""
    return item.name if isinstance(item, AgentTool) else json.dumps(item, sort_keys=True, default=str)


@dataclass
class SampledHeuristicAgent(HeuristicAgent):
    """The heuristic at a temperature: each choice is drawn with probability proportional to exp(score / T)
    from the episode's own generator (greedy as T -> 0). A tool named in the request (+10) or two more words of
    a row in common (+2 at T = 1: 7x as likely) still wins most draws; near ties are where attempts differ."""

    rng: random.Random = field(default_factory=lambda: random.Random(0))
    temperature: float = 1.0
    decided: dict[str, int] = field(default_factory=dict)  # a choice already drawn -> the index it drew

    def _pick(self, items: list[Any], scores: list[float]) -> Any:
        """A draw per choice, kept: the plan is made again at every step, and the same candidates with the same
        scores (nothing new learnt) get the same answer, so a row read back is the row then written."""
        key = json.dumps([[_label(item), score] for item, score in zip(items, scores, strict=True)])
        if key not in self.decided:
            top = max(scores)
            weights = [math.exp((score - top) / self.temperature) for score in scores]
            self.decided[key] = self.rng.choices(range(len(items)), weights=weights, k=1)[0]
        return items[self.decided[key]]

    def _producers(self, prop: str, exclude: set[str], text: str) -> list[AgentTool]:
        """Up to `PRODUCER_TRIES` read tools for `prop`, each drawn (without replacement) as `_pick` draws: a
        lookup it cannot make from what the user said gives way to the next one drawn before it asks them."""
        left = self._candidates(prop, exclude)
        order: list[AgentTool] = []
        while left and len(order) < PRODUCER_TRIES:
            order.append(self._pick(left, [self._score(t, text) for t in left]))
            left.remove(order[-1])
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
        return SampledHeuristicAgent(tools, self._indexed(tools), rng=rng, temperature=self.temperature)


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
