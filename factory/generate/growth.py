"""LLM-driven growth of the farm: propose scenarios for a theme, write each as a spec folder, verify,
revise from the verifier's failures, and publish only what converges.

The model proposes; the deterministic verifier decides. Every draft is validated (spec schema,
cross-field checks, static checks of its handlers) before it is built, and a draft that fails is sent
back with the problems for a bounded number of repairs (`ChatModel.structured`). Each round is
written to `<build folder>/<name>/round-<k>/` (spec, handlers, what verification found) and verified
from scratch in a throwaway farm; when a round passes, the real farm gets it through `build_all`, the
same atomic publish and verifier as `envfarm build`. A server that never converges is reported and
nothing is published. Every prompt and answer is kept in `<build folder>/llm/`, and `summary.json`
holds the rounds, tokens and time.

With no model (the default) the steps are deterministic: scenarios and specs come from a small
template instantiated with the theme's words, so `envfarm propose` works offline too.
"""

from __future__ import annotations

import copy
import json
import shutil
import time
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, field_validator, model_validator

from envfarm.factory import fakedata
from envfarm.factory.build import build_all, warm_options
from envfarm.factory.importers.metadata import EnvironmentMetadata, import_metadata_offline
from envfarm.factory.importers.openapi import OpenAPIError, safe_name, singular
from envfarm.factory.source import POLICY_NAME, check_seed_size, handler_functions
from envfarm.factory.spec import NAME_PATTERN, SpecError, parse_spec, with_default_words
from envfarm.factory.verify.mutation import Mutant, MutantResult, mutate_server, sample, server_mutants
from envfarm.factory.verify.report import Failure, VerifyOptions
from envfarm.factory.verify.static_checks import check_handlers
from envfarm.llm import ChatModel, LLMError, Usage

SPEC_FORMAT = Path(__file__).parents[1] / "specs" / "README.md"
MAX_FAILURES_SHOWN = 20
DRAFT_TOKENS = 16384  # a whole spec with seed rows is long: the client's default budget would cut it off
Status = Literal["published", "not_converged", "invalid", "model_error"]


class Scenario(BaseModel):
    """One environment to build: identity and what it is about."""

    name: str = Field(pattern=NAME_PATTERN, max_length=40)
    domain: str = Field(pattern=NAME_PATTERN)
    title: str
    description: str


class ScenarioList(BaseModel):
    scenarios: list[Scenario] = Field(min_length=1)

    @field_validator("scenarios")
    @classmethod
    def _distinct(cls, scenarios: list[Scenario]) -> list[Scenario]:
        names = [s.name for s in scenarios]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"scenario names must be distinct; repeated: {repeated}")
        return scenarios


class SpecDraft(BaseModel):
    """A spec document, its handlers.py and its policy.md, checked the way `envfarm build` will check
    them (plus what a grown environment must have: a principal, a policy, expectations and scenarios),
    so a model gets every problem back before anything is built."""

    spec: dict[str, Any]
    handlers: str = ""
    policy: str = Field(
        default="", description="policy.md: what the agent may and may not do, as the instructions carry it"
    )

    @model_validator(mode="before")
    @classmethod
    def _policy_beside_the_spec(cls, data: Any) -> Any:
        """A model that puts the policy inside the spec meant policy.md."""
        if isinstance(data, dict) and isinstance(data.get("spec"), dict) and "policy" in data["spec"]:
            spec = dict(data["spec"])
            inside = spec.pop("policy")
            data = {**data, "spec": spec, "policy": data.get("policy") or (inside if isinstance(inside, str) else "")}
        return data

    @model_validator(mode="before")
    @classmethod
    def _coded_values_worded(cls, data: Any) -> Any:
        """A code a phrasing says (an enum, a yes/no) that the model gave no words for: its values humanized."""
        if isinstance(data, dict) and isinstance(data.get("spec"), dict):
            data = {**data, "spec": with_default_words(copy.deepcopy(data["spec"]))}
        return data

    @model_validator(mode="after")
    def _buildable(self) -> SpecDraft:
        try:  # a draft of any size is refused for its size first, before any slower check reads it
            check_seed_size(self.spec.get("seed"), "spec")
        except SpecError as exc:
            raise ValueError("; ".join(f"spec {where}: {what}" for where, what in exc.problems)) from exc
        problems: list[str] = completeness_problems(self.spec, self.policy)
        names: set[str] = set()
        if self.handlers.strip():
            try:
                names = handler_functions(self.handlers, "handlers.py")
            except SpecError as exc:
                problems += [f"handlers.py {where}: {what}" for where, what in exc.problems]
            findings = check_handlers(self.handlers)
            problems += [f"handlers.py line {f.line}: {f.code} ({f.reason})" for f in findings]
        try:
            parse_spec({**self.spec, "policy": self.policy}, "spec", names)
        except SpecError as exc:
            problems += [f"spec {where}: {what}" for where, what in exc.problems]
        if problems:
            raise ValueError("; ".join(problems[:30]))
        return self


def completeness_problems(spec: dict[str, Any], policy: str) -> list[str]:
    """What a grown environment must have beyond a valid spec: whom the agent acts for, the policy it
    follows, examples that say what a call must do, and scenarios that chain calls."""
    problems = []
    if not isinstance(spec.get("principal"), dict):
        problems.append("spec.principal: missing: say whom the agent acts for (kind user or staff, see the format)")
    if not policy.strip():
        problems.append("policy: missing: write policy.md (identity, what to confirm before writing, the rules)")
    tools = [t for t in spec.get("tools") or [] if isinstance(t, dict)]
    if tools and not any(isinstance(e, dict) and "expect" in e for t in tools for e in t.get("examples") or []):
        problems.append("spec.tools: no example has an `expect`: say what the write tools' calls must do")
    if not spec.get("scenarios"):
        problems.append("spec.scenarios: missing: at least one scenario of calls on one episode, with expectations")
    return problems


class MutationRound(BaseModel):
    """The mutation sample run on a round that verified: how many seeded bugs the verifier caught."""

    mutants: int
    killed: int
    kill_rate: float
    survivors: list[MutantResult] = Field(default_factory=list, description="unexplained survivors")
    seconds: float = 0.0


class RoundRecord(BaseModel):
    round: int
    folder: Path
    passed: bool
    failures: list[Failure] = Field(default_factory=list)
    problems: str = ""
    seconds: float = 0.0
    mutation: MutationRound | None = None


class GrowthResult(BaseModel):
    """What happened to one scenario: every round, and whether it was published."""

    name: str
    status: Status
    message: str = ""
    rounds: list[RoundRecord] = Field(default_factory=list)
    published_round: int | None = Field(default=None, description="the round whose draft was verified and published")
    kill_rate: float | None = Field(default=None, description="the published round's mutation kill rate, if sampled")


class GrowthSummary(BaseModel):
    """A whole `envfarm propose` / `import metadata` run, written to `<build folder>/summary.json`."""

    source: str
    model: str
    build_dir: Path
    farm_root: Path
    results: list[GrowthResult] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    total_tokens: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.results) and all(r.status == "published" for r in self.results)


# ---- prompts ---------------------------------------------------------------------------------------


def _system() -> dict[str, str]:
    return {
        "role": "system",
        "content": "You design stateful MCP tool environments for training tool-use agents. An environment is "
        "a spec folder: spec.yaml (data: principal, entities, inline seed rows, tools, rules, scenarios), "
        "policy.md (what the agent may and may not do) and handlers.py (Python for `custom` tools only, using "
        "only the `db: Database` argument: no imports beyond datetime/math/json/re, no files, network, processes, "
        "wall clock or randomness). A deterministic verifier runs the server and checks every tool, so every "
        "rule needs an example call that breaks it, seed rows must fit their tables, and expectations (`expect` "
        "on examples and scenario steps) say what each write must do; seeded bugs an expectation does not "
        "catch are sent back to you. The spec format:\n\n" + SPEC_FORMAT.read_text(encoding="utf-8"),
    }


def _scenario_prompt(theme: str, n: int, taken: set[str]) -> list[dict[str, Any]]:
    return [
        _system(),
        {
            "role": "user",
            "content": f"Propose {n} distinct environments for the theme {theme!r}: different businesses or services, "
            "each with its own entities and tools. Names are lower_snake_case and must not be any of: "
            f"{sorted(taken) or 'none'}.",
        },
    ]


def spec_prompt(scenario: Scenario, context: str = "") -> list[dict[str, Any]]:
    ask = (
        f"Write the complete environment {scenario.name!r} ({scenario.title}, domain {scenario.domain}): "
        f"{scenario.description}\nGive 3-6 entities with inline seed rows (5-15 per table), 8-16 tools covering "
        "search, get, create, update and delete, business rules with example calls that break them, and custom "
        "handlers only where CRUD is not enough. Declare the `principal` (a signed-in `user` the tools act as, "
        "with `scope` for their private tables, or `staff` serving customers, with how a customer is "
        "identified), write the policy (policy.md: identity, what to confirm before a write, the rules), give "
        "every write tool an `intent` (who asks, two or more ways the service's users ask for it, what they want "
        "to hear back) and every table a `refer` (how a person names one of its rows), in the users' own words, give "
        "the write tools examples with `expect` (result, rows, state or error, worked out from the rules, not "
        "copied from a run) and at least one scenario of dependent calls. The spec's `name` must be "
        f'{scenario.name!r}. Answer with {{"spec": <the spec as JSON>, "handlers": <handlers.py source or "">, '
        '"policy": <policy.md text>}.'
    )
    return [_system(), {"role": "user", "content": (context + "\n\n" if context else "") + ask}]


def _revise_prompt(draft: SpecDraft, record: RoundRecord) -> list[dict[str, Any]]:
    current = (
        f"spec:\n{json.dumps(draft.spec, indent=1, default=str)}\n\nhandlers.py:\n{draft.handlers or '(none)'}"
        f"\n\npolicy.md:\n{draft.policy or '(none)'}"
    )
    answer = 'Answer with the whole corrected environment as {"spec": ..., "handlers": ..., "policy": ...}.'
    if record.passed and record.mutation is not None:
        survivors = "\n".join(
            f"- {m.file}:{m.line} in `{m.function}` ({m.kind}): {m.change}"
            for m in record.mutation.survivors[:MAX_FAILURES_SHOWN]
        )
        return [
            _system(),
            {
                "role": "user",
                "content": f"This environment passed verification (round {record.round}), but these seeded bugs "
                f"survived: each is one change to the server's code (the generated tools.py or your handlers.py) "
                f"that no expectation noticed ({record.mutation.killed} of {record.mutation.mutants} were caught)."
                f"\n\n{current}\n\nSurviving mutants (file:line, function, kind, change):\n{survivors}\n\n"
                "Add expectations that the correct code meets and each mutant breaks: an example's or a scenario "
                "step's `expect` (result, rows, state, error) on a call whose answer the change would alter. Only "
                "if no call can ever tell a mutant apart, list it under `equivalent_mutants` with the reason. "
                + answer,
            },
        ]
    failures = [f.model_dump(exclude_none=True) for f in record.failures[:MAX_FAILURES_SHOWN]]
    found = json.dumps(failures, indent=1, default=str) if failures else record.problems
    return [
        _system(),
        {
            "role": "user",
            "content": f"This environment failed verification (round {record.round}).\n\n{current}\n\n"
            f"Failures (tool, check, call, expected, actual):\n{found}\n\nFix the causes. " + answer,
        },
    ]


# ---- the offline, deterministic proposer -----------------------------------------------------------

VARIANTS: list[tuple[str, str, dict[str, Any]]] = [
    ("orders", "Orders", {"quantity": {"type": "integer", "description": "How many", "user_known": True}}),
    ("bookings", "Bookings", {"scheduled_on": {"type": "date", "description": "The booked day", "user_known": True}}),
    (
        "requests",
        "Requests",
        {
            "priority": {
                "type": "string",
                "enum": ["low", "normal", "high"],
                "description": "Urgency",
                "user_known": True,
            }
        },
    ),
]
# How a customer says the variant's own column, asking for a record and naming one (intents and `refer`).
OFFLINE_SAY = {
    "quantity": "{quantity} of {item_id}",
    "scheduled_on": "{item_id} on {scheduled_on:day}",
    "priority": "{item_id}, {priority} priority",
}
OFFLINE_REFER = {
    "quantity": "{quantity} of them",
    "scheduled_on": "on {scheduled_on:date}",
    "priority": "{priority} priority",
}
QUALIFIERS = ["Basic", "Standard", "Premium", "Express", "Family", "Weekend", "Deluxe", "Starter"]


def offline_scenarios(theme: str, n: int) -> ScenarioList:
    """`n` scenarios for the theme from fixed variants (orders, bookings, requests, then numbered)."""
    base = safe_name(theme)[:24].strip("_") or "theme"
    scenarios = []
    for i in range(n):
        record, label, _ = VARIANTS[i % len(VARIANTS)]
        suffix = record if i < len(VARIANTS) else f"{record}_{i // len(VARIANTS) + 1}"
        scenarios.append(
            Scenario(
                name=f"{base}_{suffix}",
                domain="proposed",
                title=f"{theme.strip().title()} {label}",
                description=f"Customers of a {theme.strip()} business and their {record}: find customers and "
                f"offerings, create {record}, change and cancel them.",
            )
        )
    return ScenarioList(scenarios=scenarios)


def offline_draft(scenario: Scenario, theme: str, variant: int) -> SpecDraft:
    """A small, complete environment for the scenario: customers, the theme's offerings and one kind
    of record with two rules. Deterministic for the same inputs."""
    record, label, extra = VARIANTS[variant % len(VARIANTS)]
    one = singular(record)
    words = theme.strip() or "service"
    people = fakedata.community_names(8)
    customers = [
        {"customer_id": f"cst_{i + 1:04d}", "full_name": p["full_name"], "email": p["email"]}
        for i, p in enumerate(people)
    ]
    items = [
        {"item_id": f"itm_{i + 1:03d}", "name": f"{q} {words}", "price": 20.0 + 15 * i, "active": i != 3}
        for i, q in enumerate(QUALIFIERS[:6])
    ]
    extra_name, extra_column = next(iter(extra.items()))
    extra_values = {"quantity": lambda i: 1 + i % 3, "scheduled_on": lambda i: f"2026-04-{14 + i:02d}"}
    statuses = ["open", "done", "cancelled", "open", "open", "done"]
    records = [
        {
            f"{one}_id": f"{one[:3]}_{i + 1:04d}",
            "customer_id": customers[i % 4]["customer_id"],
            "item_id": items[i % 3]["item_id"],
            "status": statuses[i],
            extra_name: extra_values.get(extra_name, lambda i: ["low", "normal", "high"][i % 3])(i),
            "note": None,
        }
        for i in range(6)
    ]
    key = f"{one}_id"
    extra_param = {k: v for k, v in extra_column.items() if k != "user_known"}
    spec = {
        "name": scenario.name,
        "domain": scenario.domain,
        "title": scenario.title,
        "description": scenario.description,
        "now": "2026-04-13T09:00:00Z",
        "principal": {
            "kind": "staff",
            "description": f"a member of staff at the {words} business's front desk",
            "values": [f"Front desk: {people[0]['full_name']}", f"Manager: {people[1]['full_name']}"],
            "default": f"Front desk: {people[0]['full_name']}",
            "customers": "a customer gives their full name and email; find them with find_customers and match "
            "both before reading or changing their records",
        },
        "unenforced_rules": [
            {
                "id": "confirm_before_write",
                "rule": "Read the change back to the customer and get an explicit yes before making it.",
                "tools": [f"create_{one}", f"update_{one}_note", f"cancel_{one}"],
            }
        ],
        "entities": {
            "customers": {
                "description": "A customer",
                "primary_key": "customer_id",
                "id_format": "cst_{:04d}",
                "refer": ["my account under {email}", "the account of {full_name}"],
                "columns": {
                    "customer_id": {"type": "string", "description": "Internal customer id"},
                    "full_name": {"type": "string", "description": "First and last name", "user_known": True},
                    "email": {"type": "string", "unique": True, "description": "Contact email", "user_known": True},
                },
            },
            "items": {
                "description": f"Something the {words} business offers",
                "primary_key": "item_id",
                "id_format": "itm_{:03d}",
                "refer": ["the {name}", "your {name}"],
                "columns": {
                    "item_id": {"type": "string", "description": "Internal item id"},
                    "name": {"type": "string", "description": "What it is", "user_known": True},
                    "price": {"type": "number", "description": "Price in USD", "user_known": True},
                    "active": {"type": "boolean", "description": "Whether it can be ordered now"},
                },
            },
            record: {
                "description": f"A customer's {one}",
                "primary_key": key,
                "id_format": f"{one[:3]}_{{:04d}}",
                "refer": [
                    f"my {one} for the {{item_id.name}}",
                    f"my {{item_id.name}} {one} ({OFFLINE_REFER[extra_name]})",
                ],
                # a coded column a phrasing says ('high priority'): how a person words each of its values
                **({"words": {extra_name: {v: v for v in extra_column["enum"]}}} if extra_column.get("enum") else {}),
                "columns": {
                    key: {"type": "string", "description": f"Internal {one} id"},
                    "customer_id": {"type": "string", "ref": "customers.customer_id", "description": "The customer"},
                    "item_id": {"type": "string", "ref": "items.item_id", "description": "What it is for"},
                    "status": {
                        "type": "string",
                        "enum": ["open", "done", "cancelled"],
                        "default": "open",
                        "description": "Where it stands",
                    },
                    extra_name: extra_column,
                    "note": {"type": "string", "nullable": True, "description": "Free text", "user_known": True},
                },
            },
        },
        "seed": {"customers": customers, "items": items, record: records},
        "tools": [
            {
                "name": "find_customers",
                "description": "Find customers by part of the name or exact email.",
                "effect": "search",
                "entity": "customers",
                "params": {
                    "full_name": {"type": "string", "match": "contains", "description": "Part of the name"},
                    "email": {"type": "string", "description": "Exact email"},
                },
            },
            {
                "name": "find_items",
                "description": f"Find what the {words} business offers, by part of the name.",
                "effect": "search",
                "entity": "items",
                "params": {
                    "name": {"type": "string", "match": "contains", "description": "Part of the name"},
                    "active": {"type": "boolean", "description": "Only items that can (or cannot) be ordered now"},
                },
            },
            {
                "name": "get_item",
                "description": "Get one offering by its id.",
                "effect": "get",
                "entity": "items",
                "key": "item_id",
                "params": {"item_id": {"type": "string", "required": True, "description": "Item id from find_items"}},
            },
            {
                "name": f"list_{record}",
                "description": f"List a customer's {record}, optionally by status.",
                "effect": "search",
                "entity": record,
                "params": {
                    "customer_id": {"type": "string", "ref": "customers.customer_id", "description": "Customer id"},
                    "status": {
                        "type": "string",
                        "enum": ["open", "done", "cancelled"],
                        "description": "Only this status",
                    },
                },
            },
            {
                "name": f"create_{one}",
                "description": f"Create a {one} for a customer.",
                "intent": {
                    "asks": "customer",
                    "say": [
                        f"Could I get {OFFLINE_SAY[extra_name]}?",
                        f"I'd like a new {one}: {OFFLINE_SAY[extra_name]}.",
                    ],
                },
                "effect": "create",
                "entity": record,
                "params": {
                    "customer_id": {
                        "type": "string",
                        "required": True,
                        "description": "Customer id from find_customers",
                    },
                    "item_id": {"type": "string", "required": True, "description": "Item id from find_items"},
                    extra_name: {**extra_param, "required": True},
                    "note": {"type": "string", "description": "Free text"},
                },
                "examples": [
                    {
                        "args": {"customer_id": "cst_0005", "item_id": "itm_002", extra_name: records[1][extra_name]},
                        "expect": {
                            "result": {"customer_id": "cst_0005", "item_id": "itm_002", "status": "open"},
                            "rows": {record: {"added": 1}},
                        },
                    }
                ],
                "rules": [
                    {
                        "reject_if": "SELECT 1 FROM items WHERE item_id = :item_id AND active = 0",
                        "message": "Item {item_id} cannot be ordered right now.",
                        "example": {
                            "customer_id": "cst_0001",
                            "item_id": "itm_004",
                            extra_name: records[0][extra_name],
                        },
                    }
                ],
            },
            {
                "name": f"update_{one}_note",
                "description": f"Change the note on a {one}.",
                "intent": {
                    "asks": "customer",
                    "say": [
                        f'Please put this note on {{{key}}}: "{{note}}".',
                        f'Can you change the note on {{{key}}} to "{{note}}"?',
                    ],
                },
                "effect": "update",
                "entity": record,
                "key": key,
                "params": {
                    key: {"type": "string", "required": True, "description": f"{label} id from list_{record}"},
                    "note": {"type": "string", "required": True, "description": "The new note"},
                },
                "examples": [
                    {
                        "args": {key: records[1][key], "note": "Call before arriving"},
                        "expect": {
                            "state": {f"{record}[{records[1][key]}].note": "Call before arriving"},
                            "rows": {record: {"updated": 1}},
                        },
                    }
                ],
            },
            {
                "name": f"cancel_{one}",
                "description": f"Cancel a {one} that is not cancelled yet.",
                "intent": {"asks": "customer", "say": [f"Please cancel {{{key}}}.", f"I need to cancel {{{key}}}."]},
                "effect": "update",
                "entity": record,
                "key": key,
                "params": {key: {"type": "string", "required": True, "description": f"{label} id from list_{record}"}},
                "set": {"status": "cancelled"},
                "examples": [
                    {
                        "args": {key: records[0][key]},
                        "expect": {
                            "result": {key: records[0][key], "status": "cancelled"},
                            "rows": {record: {"updated": 1}},
                        },
                    }
                ],
                "rules": [
                    {
                        "reject_if": f"SELECT 1 FROM {record} WHERE {key} = :{key} AND status = 'cancelled'",
                        "message": f"{label[:-1]} {{{key}}} is already cancelled.",
                        "example": {key: records[2][key]},
                    }
                ],
            },
        ],
        "scenarios": [
            {
                "name": f"create_then_cancel_{one}",
                "description": f"A new {one} can be cancelled once; cancelling it again is refused.",
                "steps": [
                    {
                        "tool": f"create_{one}",
                        "name": "made",
                        "args": {"customer_id": "cst_0002", "item_id": "itm_001", extra_name: records[0][extra_name]},
                    },
                    {
                        "tool": f"cancel_{one}",
                        "args": {key: f"${{made.{key}}}"},
                        "expect": {"state": {f"{record}[${{made.{key}}}].status": "cancelled"}},
                    },
                    {
                        "tool": f"cancel_{one}",
                        "args": {key: f"${{made.{key}}}"},
                        "expect": {"error": "is already cancelled"},
                    },
                ],
            }
        ],
    }
    policy = (
        f"You work at the front desk of a {words} business and serve its customers.\n\n"
        "Identity and privacy:\n"
        "- Identify the customer by full name and email before you read out or change any of their "
        f"{record}.\n"
        f"- Never act on one customer's {record} for another person.\n\n"
        "Before you change anything:\n"
        f"- Read the {one} (item, {extra_name.replace('_', ' ')}) back to the customer and get an explicit yes "
        "first (not enforced by the tools: it is your job).\n\n"
        "Rules (the tools refuse breaches with a reason):\n"
        f"- Only active items can be ordered; a cancelled {one} cannot be cancelled again.\n\n"
        "- Lists come a page at a time: when has_more is true, pass the cursor before you conclude that "
        "something does not exist.\n"
    )
    return SpecDraft(spec=spec, policy=policy)


# ---- the loop ----------------------------------------------------------------------------------------


def write_draft(draft: SpecDraft, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spec.yaml").write_text(
        yaml.safe_dump(draft.spec, sort_keys=False, allow_unicode=True, width=120), "utf-8"
    )
    if draft.handlers.strip():
        (folder / "handlers.py").write_text(draft.handlers, encoding="utf-8")
    if draft.policy.strip():
        (folder / POLICY_NAME).write_text(draft.policy.strip() + "\n", encoding="utf-8")


async def verify_round(
    draft: SpecDraft, folder: Path, number: int, farm_root: Path, options: VerifyOptions
) -> RoundRecord:
    """Write the draft to `folder/spec` and build it into the farm from scratch: `build_all` verifies
    it and publishes it only if every check passes (a failed build leaves the farm as it was)."""
    started = time.perf_counter()
    spec_dir = folder / "spec"
    write_draft(draft, spec_dir)
    result = await build_all([spec_dir], farm_root, options=options, jobs=1)
    [outcome] = result.servers
    record = RoundRecord(
        round=number,
        folder=folder,
        passed=outcome.status == "published",
        failures=list(outcome.problems),
        problems=outcome.message,
        seconds=round(time.perf_counter() - started, 3),
    )
    (folder / "round.json").write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return record


def growth_sample(server_dir: Path, limit: int, seed: int) -> list[Mutant]:
    """At most `limit` mutants of a grown server, the model's own handlers.py first (its code is what
    the expectations must pin down), then the generated tools.py; each part spread over the kinds."""
    mutants = server_mutants(server_dir)
    own = [m for m in mutants if m.file == "handlers.py"]
    chosen = sample(own, limit, seed)
    rest = [m for m in mutants if m.file != "handlers.py"]
    return chosen + sample(rest, limit - len(chosen), seed) if len(chosen) < limit else chosen


async def mutation_round(server_dir: Path, limit: int, seed: int, options: VerifyOptions) -> MutationRound:
    """Seed `limit` bugs into the server a round just published and verify each like a fresh build."""
    started = time.perf_counter()
    chosen = growth_sample(server_dir, limit, seed)
    with warm_options(options.model_copy(update={"fail_fast": True}), len(chosen)) as warm:
        report = await mutate_server(server_dir, mutants=chosen, jobs=2, options=warm)
    return MutationRound(
        mutants=report.mutants,
        killed=report.killed,
        kill_rate=report.kill_rate,
        survivors=[r for r in report.survivors if r.equivalent is None],
        seconds=round(time.perf_counter() - started, 3),
    )


async def converge(
    name: str,
    draft: SpecDraft,
    model: ChatModel | None,
    build_dir: Path,
    farm_root: Path,
    max_rounds: int,
    options: VerifyOptions,
    repairs: int,
    mutants: int = 0,
) -> GrowthResult:
    """Verify, revise from the failures, re-verify from scratch, up to `max_rounds`. Only a round that
    passes every check is published (by the same `build_all` that verified it). A round that passes
    gets a sample of `mutants` seeded bugs; survivors go back to the model as failures to address with
    new expectations, and the next round is verified (and sampled) from scratch again. A later round
    that fails leaves the last verified one published."""
    result = GrowthResult(name=name, status="not_converged")
    for number in range(1, max_rounds + 1):
        record = await verify_round(draft, build_dir / name / f"round-{number}", number, farm_root, options)
        if record.passed and mutants > 0:
            record.mutation = await mutation_round(farm_root / "servers" / name, mutants, 0, options)
            (record.folder / "round.json").write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
        result.rounds.append(record)
        if record.passed:
            result.status, result.published_round = "published", number
            result.kill_rate = record.mutation.kill_rate if record.mutation else None
            if record.mutation is None or not record.mutation.survivors:
                result.message = f"verified in round {number}" + _kill_rate(record)
                return result
        if model is None or number == max_rounds:
            break
        try:
            draft = await model.structured(
                _revise_prompt(draft, record),
                SpecDraft,
                repairs=repairs,
                step=f"{name}-revise-{number}",
                max_tokens=DRAFT_TOKENS,
            )
        except LLMError as exc:
            if result.status == "published":
                result.message = f"verified in round {result.published_round}; the revision failed: {exc}"
                return result
            result.status, result.message = "model_error", str(exc)
            return result
    last = result.rounds[-1]
    if result.published_round is not None:
        kept = result.rounds[result.published_round - 1]
        assert kept.mutation is not None  # only a sampled round with survivors gets here
        shown = "; ".join(f"{m.file}:{m.line} {m.change[:80]}" for m in kept.mutation.survivors[:3])
        result.message = (
            f"verified in round {result.published_round}{_kill_rate(kept)}; {len(kept.mutation.survivors)} "
            f"mutant(s) still survive after {len(result.rounds)} round(s): {shown}"
        )
        return result
    shown = "; ".join(f"[{f.check}] {f.tool}: {f.actual[:120]}" for f in last.failures[:3]) or last.problems[:300]
    result.message = f"not verified after {len(result.rounds)} round(s); nothing published. Last failures: {shown}"
    return result


def _kill_rate(record: RoundRecord) -> str:
    mutation = record.mutation
    return f" (mutants killed {mutation.killed} of {mutation.mutants})" if mutation else ""


async def propose(
    theme: str,
    n: int,
    farm_root: Path,
    build_dir: Path,
    model: ChatModel | None = None,
    *,
    max_rounds: int = 3,
    repairs: int = 2,
    options: VerifyOptions | None = None,
    mutants: int = 0,
) -> GrowthSummary:
    """`envfarm propose THEME --n N`: N distinct scenarios, a spec for each, verified, revised, published."""
    started = time.perf_counter()
    options = options or VerifyOptions()
    summary = GrowthSummary(
        source=f"propose {theme!r}", model=model.name if model else "offline", build_dir=build_dir, farm_root=farm_root
    )
    build_dir.mkdir(parents=True, exist_ok=True)
    taken = (
        {p.name for p in (farm_root / "servers").iterdir() if p.is_dir()} if (farm_root / "servers").is_dir() else set()
    )
    try:
        if model is None:
            scenarios = offline_scenarios(theme, n).scenarios
        else:
            proposed = await model.structured(
                _scenario_prompt(theme, n, taken), ScenarioList, repairs=repairs, step="scenarios"
            )
            scenarios = proposed.scenarios[:n]
    except LLMError as exc:
        summary.results.append(GrowthResult(name="*", status="model_error", message=str(exc)))
        return _finish(summary, model, started)
    for i, scenario in enumerate(scenarios):
        if scenario.name in taken:
            summary.results.append(
                GrowthResult(name=scenario.name, status="invalid", message="the farm already has a server of that name")
            )
            continue
        try:
            if model is None:
                draft = offline_draft(scenario, theme, i)
            else:
                draft = await model.structured(
                    spec_prompt(scenario),
                    SpecDraft,
                    repairs=repairs,
                    step=f"{scenario.name}-spec",
                    max_tokens=DRAFT_TOKENS,
                )
        except LLMError as exc:
            summary.results.append(GrowthResult(name=scenario.name, status="model_error", message=str(exc)))
            continue
        if draft.spec.get("name") != scenario.name:
            draft = draft.model_copy(update={"spec": {**draft.spec, "name": scenario.name}})
        summary.results.append(
            await converge(scenario.name, draft, model, build_dir, farm_root, max_rounds, options, repairs, mutants)
        )
    return _finish(summary, model, started)


def _finish(summary: GrowthSummary, model: ChatModel | None, started: float) -> GrowthSummary:
    if model is not None:
        summary.usage = model.usage.model_copy()
        summary.total_tokens = model.usage.total_tokens
    summary.seconds = round(time.perf_counter() - started, 3)
    summary.build_dir.mkdir(parents=True, exist_ok=True)
    (summary.build_dir / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return summary


def render_summary(summary: GrowthSummary) -> str:
    lines = []
    for result in summary.results:
        rounds = f"{len(result.rounds)} round(s)" if result.rounds else "no rounds"
        lines.append(f"{result.name:<28} {result.status:<14} {rounds}  {result.message}")
    usage = summary.usage
    lines.append(
        f"\n{sum(r.status == 'published' for r in summary.results)} of {len(summary.results)} published into "
        f"{summary.farm_root} in {summary.seconds:.1f} s; model {summary.model}: {usage.requests} requests, "
        f"{usage.total_tokens} tokens, {usage.repairs} repairs, {usage.retries} retries; "
        f"build folder {summary.build_dir}"
    )
    return "\n".join(lines)


async def write_with_model(
    scenario: Scenario,
    context: str,
    model: ChatModel,
    build_dir: Path,
    max_rounds: int,
    repairs: int,
    options: VerifyOptions,
    mutants: int = 0,
) -> tuple[GrowthResult, SpecDraft | None]:
    """The model writes the scenario's spec from `context` (an import's draft and source); the rounds are
    verified in a throwaway farm inside `build_dir`, so nothing is published. Returns the outcome and,
    if a round passed, that round's draft (for the caller to write as a spec folder)."""
    try:
        draft = await model.structured(
            spec_prompt(scenario, context),
            SpecDraft,
            repairs=repairs,
            step=f"{scenario.name}-spec",
            max_tokens=DRAFT_TOKENS,
        )
    except LLMError as exc:
        return GrowthResult(name=scenario.name, status="model_error", message=str(exc)), None
    if draft.spec.get("name") != scenario.name:
        draft = draft.model_copy(update={"spec": {**draft.spec, "name": scenario.name}})
    scratch = build_dir / "scratch-farm"
    started = time.perf_counter()
    try:
        result = await converge(scenario.name, draft, model, build_dir, scratch, max_rounds, options, repairs, mutants)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = GrowthSummary(source=f"import {scenario.name}", model=model.name, build_dir=build_dir, farm_root=scratch)
    summary.results.append(result)
    _finish(summary, model, started)
    if result.status != "published" or result.published_round is None:
        return result, None
    folder = result.rounds[result.published_round - 1].folder / "spec"
    spec = yaml.safe_load((folder / "spec.yaml").read_text(encoding="utf-8"))
    handlers = (folder / "handlers.py").read_text(encoding="utf-8") if (folder / "handlers.py").is_file() else ""
    policy = (folder / POLICY_NAME).read_text(encoding="utf-8") if (folder / POLICY_NAME).is_file() else ""
    return result, SpecDraft(spec=spec, handlers=handlers, policy=policy)


async def import_metadata_with_model(
    meta: EnvironmentMetadata,
    path: Path,
    model: ChatModel,
    build_dir: Path,
    *,
    name: str | None = None,
    max_rounds: int = 3,
    repairs: int = 2,
    options: VerifyOptions | None = None,
    mutants: int = 0,
) -> tuple[GrowthResult, SpecDraft | None]:
    """The model writes the spec and handlers for every tool, from the metadata and the offline draft;
    rounds are verified in a throwaway farm in `build_dir`. Returns the outcome and the converged draft."""
    server = name or safe_name(meta.class_name)
    try:
        inferred = import_metadata_offline(meta, path, server)
        offline, policy = inferred.spec, inferred.policy
    except (OpenAPIError, SpecError):
        offline, policy = {}, ""
    scenario = Scenario(
        name=server, domain="imported", title=meta.class_name, description=meta.description or meta.class_name
    )
    context = (
        "Build the environment behind these tools (EnvFactory metadata). Keep every tool's name, and its inputs "
        f"as params:\n{json.dumps(meta.model_dump(), indent=1)}\n\nA draft inferred from the names alone "
        f"(its CRUD tools; the others are missing):\n{json.dumps(offline, indent=1, default=str)[:20000]}"
        + (f"\n\nIts policy.md:\n{policy}" if policy else "")
    )
    return await write_with_model(
        scenario, context, model, build_dir, max_rounds, repairs, options or VerifyOptions(), mutants
    )
