"""The task contract: what `envfarm tasks` writes (one JSON object per line) and `envfarm rollout` reads.

A task is grounded: every gold call was executed on a fresh episode of a live server, and its
outputs and the final state are recorded. It is calibrated: the opening message reads like a
person (no tool names, no internal ids, no step lists), some details are held back as hidden
facts the simulated user reveals only when asked, and a correct final answer must contain its
claims (MCP-Atlas style).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from envfarm.servers.runtime.control import TableDiff

M = TypeVar("M", bound=BaseModel)


class ToolRef(BaseModel):
    server: str
    tool: str


class Persona(BaseModel):
    """Who the simulated user is: a person from the seed data, and how they talk."""

    name: str
    email: str | None = None
    style: str = Field("polite", description="how they write: polite, terse, chatty, ...")
    known_facts: dict[str, Any] = Field(
        default_factory=dict, description="what this person knows and may say (their email, dates, names)"
    )


class HiddenFact(BaseModel):
    """A detail the user holds back until the agent asks for it."""

    key: str = Field(description="what it is, e.g. 'email' or 'date_of_birth'")
    value: Any
    description: str = Field("", description="how the user would phrase it when asked")


class GoldCall(BaseModel):
    """One call of the grounded chain, as it ran."""

    server: str
    tool: str
    arguments: dict[str, Any]
    output: Any = Field(None, description="structured result (or text) the call returned")
    turn: int = Field(0, description="the user turn this call belongs to")
    is_write: bool = False
    uses: list[int] = Field(
        default_factory=list, description="indices of earlier gold calls whose output fed an argument"
    )
    asked: str | None = Field(
        default=None,
        description="the user's request for this call as they said it (an intent's phrasing, filled); the oracle "
        "reads a change back and reports it in these words instead of the tool's and columns' names",
    )


class Turn(BaseModel):
    """One user turn: what the user says, and which gold calls satisfy it."""

    message: str
    gold_calls: list[int] = Field(default_factory=list, description="indices into Task.gold_calls")


class ExpectedState(BaseModel):
    """The gold final state of one server (envfarm control plane only; absent for foreign servers)."""

    hash: str | None = None
    diff: dict[str, TableDiff] = Field(default_factory=dict)
    tables: list[str] = Field(default_factory=list, description="tables the task may change (others must not change)")


#: A field an intent's `hear` computes from two numbers a row holds: 'capacity - seats_booked' (the seats left).
DERIVED = re.compile(r"^(\w+) - (\w+)$")


class Claim(BaseModel):
    """A fact a correct final answer states (MCP-Atlas style); `values` are what deterministic matching looks for."""

    text: str
    values: list[str] = Field(default_factory=list)
    field: str | None = Field(default=None, description="the output field the claim reports (None: unknown)")
    kind: Literal["value", "yes_no"] = Field(
        default="value",
        description="value: the answer states each of `values`; yes_no: the answer to a yes/no question ('do I "
        "need a prescription?'), `values` holding 'true' or 'false', stated in words ('yes', 'no, it doesn't')",
    )

    @property
    def derived(self) -> bool:
        """Whether the claim's value is computed from two fields ('capacity - seats_booked'), so no tool output
        holds it as such."""
        return self.field is not None and DERIVED.match(self.field) is not None


PolicyCheckKind = Literal["must_call", "must_not_call", "must_confirm", "must_identify", "must_refuse"]


class PolicyCheck(BaseModel):
    """A policy rule the task exercises and how a rollout is graded on it (`envfarm.clients.policy_checks`):
    deterministically from the trajectory; a refusal's wording may also go to an LLM judge."""

    rule: str = Field(description="the rule as the server's policy states it")
    kind: PolicyCheckKind = "must_call"
    tool: str | None = Field(
        default=None, description="the governed tool (must_call, must_not_call, must_confirm, must_identify)"
    )
    server: str | None = Field(
        default=None, description="the server whose policy it is (None: any server's tool of that name)"
    )
    rule_id: str = ""
    tools: list[str] = Field(
        default_factory=list,
        description="must_refuse: none of these may succeed; must_call: the tool comes before the first of these",
    )
    values: list[str] = Field(
        default_factory=list,
        description="must_identify: values that identify the customer; must_confirm: numbers the read-back states",
    )
    alternatives: list[list[str]] = Field(
        default_factory=list,
        description="must_identify: each way the policy identifies the customer, as the values it names (full name "
        "and date of birth); the user must have given all of one before the governed call (empty: any value will do)",
    )


class OverSpecification(BaseModel):
    """How much of the solution a message gives away (lower is more natural)."""

    tool_names: int = 0
    internal_ids: int = 0
    literal_arguments: int = 0
    step_words: int = 0

    @property
    def total(self) -> int:
        return self.tool_names + self.internal_ids + self.literal_arguments + self.step_words


class Provenance(BaseModel):
    sampler: str
    seed: int
    chain: list[str] = Field(default_factory=list, description="server.tool of each sampled step")
    versions: dict[str, str] = Field(default_factory=dict, description="envfarm and each server's version/hash")
    writer: str = "offline"


class Difficulty(BaseModel):
    """Measured, not guessed: the solve rate of reference policies, filled in by rollouts."""

    solve_rate: dict[str, float] = Field(default_factory=dict, description="policy name -> share of rollouts solved")
    rollouts: dict[str, int] = Field(default_factory=dict)


class Task(BaseModel):
    id: str
    servers: list[str]
    tools: list[ToolRef] = Field(description="tools enabled for the agent, distractors included")
    principal: str | None = Field(None, description="whom the agent acts for (None: the server's default)")
    persona: Persona
    opening_message: str = Field(description="calibrated: what the user says first")
    uncalibrated_message: str = Field("", description="the same request before calibration, for comparison")
    hidden_facts: list[HiddenFact] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list, description="the first turn's message is the opening message")
    gold_calls: list[GoldCall]
    expected_state: dict[str, ExpectedState] = Field(default_factory=dict, description="per server")
    claims: list[Claim] = Field(default_factory=list)
    policy_checks: list[PolicyCheck] = Field(default_factory=list)
    over_specification: dict[str, OverSpecification] = Field(
        default_factory=dict, description="'uncalibrated' and 'calibrated' message measures"
    )
    provenance: Provenance
    difficulty: Difficulty | None = None


def jsonl_line(item: BaseModel) -> str:
    """A model's line in a JSONL file (without the newline): what `write_jsonl` writes, and what rollout
    workers write for it (`envfarm.clients.workers`)."""
    return item.model_dump_json(exclude_none=False)


def write_jsonl(path: Path, items: Iterable[BaseModel]) -> int:
    """Write models one per line (atomically: a temp file, then rename); return how many."""
    return write_lines(path, (jsonl_line(item) for item in items))


def write_lines(path: Path, lines: Iterable[str]) -> int:
    """Write JSONL lines already made (`jsonl_line`) atomically: a temp file, then rename; return how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    count = 0
    with tmp.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")
            count += 1
    tmp.replace(path)
    return count


def read_jsonl(path: Path, model: type[M]) -> Iterator[M]:
    """Models from a JSONL file; a bad line raises ValueError naming the file and line."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield model.model_validate(json.loads(line))
            except (json.JSONDecodeError, ValidationError) as exc:
                raise ValueError(f"{path}:{number}: not a valid {model.__name__}: {exc}") from exc


def load_tasks(path: Path) -> list[Task]:
    return list(read_jsonl(path, Task))
