"""`envfarm fuzz`: schema-driven property testing of the farm's tools, in-memory over the real SDK.

Hypothesis draws a tool and its arguments from the tool's own input schema, mixing plausible values
(ids and values seen in the episode's state) with hostile ones (non-finite and huge numbers,
impossible dates, SQL wildcards and quotes, lone surrogates, 60 KB strings, wrong types, unknown
arguments). Every call must hold four invariants:

1. the call returns a result (no exception on the client side): a valid result, or `isError` with a
   known `envfarm/error` kind;
2. a failed call changes nothing (the episode's state hash is the same before and after);
3. a successful call's structured output validates against the tool's output schema;
4. an error message stays under the runtime's size bound.

Counts are reported by outcome; a violation keeps the tool, arguments and what broke as evidence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import mcp_types as types
from mcp import Client
from pydantic import BaseModel, Field

from envfarm.servers.runtime.arguments import MAX_MESSAGE_CHARS
from envfarm.servers.runtime.control import ControlError, EpisodeClient, error_kind
from envfarm.servers.runtime.farm import load_server

_OMIT = object()  # an optional argument left out
# Calls between resets: long enough for writes to build on each other, short enough to start over often.
RESET_EVERY = 150
# Calls hypothesis draws per example: more is cheaper per call, but each example starts from the
# simplest values, so small samples get small batches (more, varied examples).
MAX_BATCH = 25
INVARIANTS = ("client_exception", "unknown_error_kind", "state_changed", "output_schema", "oversized_message")
EVIDENCE_KEPT = 20
HOSTILE_STRINGS = [
    "",
    " ",
    "%",
    "_",
    "!",
    "%%",
    "' OR 1=1 --",
    '"; DROP TABLE x; --',
    "\\",
    "NULL",
    "null",
    "Infinity",
    "-Infinity",
    "NaN",
    "1e309",
    "-0",
    "2026-02-30",
    "9999-99-99",
    "0000-00-00",
    "2026-04-13",
    "2026-04-13T09:00:00Z",
    "2026-13-01T25:61:00Z",
    "lo\ud800pez",
    "\udfff",
    "\x00",
    "é" * 5,
    "🙂",
    "x" * 60_000,
    "%" * 30_000,
]
HOSTILE_NUMBERS: list[Any] = [
    0,
    -1,
    0.001,
    1e-300,
    -1e308,
    1e308,
    10**20,
    -(10**20),
    2**63,
    float("inf"),
    float("-inf"),
    float("nan"),
    "Infinity",
    "1e309",
    "NaN",
    "12",
    True,
]


class Violation(BaseModel):
    server: str
    tool: str
    invariant: str = Field(
        description="client_exception, unknown_error_kind, state_changed, output_schema, oversized_message"
    )
    detail: str
    arguments: str = Field(description="the arguments, repr cut to 300 characters")


class ServerFuzz(BaseModel):
    server: str
    calls: int = 0
    outcomes: dict[str, int] = Field(default_factory=dict, description="ok, rejected, invalid_arguments, ...")
    violations: dict[str, int] = Field(default_factory=dict)


class FuzzReport(BaseModel):
    seed: int
    calls: int
    outcomes: dict[str, int]
    violations: dict[str, int] = Field(description="per invariant; all zero when the farm holds")
    servers: list[ServerFuzz]
    evidence: list[Violation] = Field(default_factory=list, description=f"the first {EVIDENCE_KEPT} violations")

    @property
    def ok(self) -> bool:
        return not any(self.violations.values())


def _harvest(state: Mapping[str, list[dict[str, Any]]]) -> dict[str, list[Any]]:
    """Values per column name across the episode's tables: plausible ids, names and dates."""
    pool: dict[str, set[Any]] = {}
    for rows in state.values():
        for row in rows[:60]:
            for column, value in row.items():
                if value is not None and not (isinstance(value, str) and len(value) > 200):
                    pool.setdefault(column, set()).add(value)
    return {column: sorted(values, key=repr) for column, values in pool.items()}


def _argument_strategy(schema: Mapping[str, Any], pool: Mapping[str, list[Any]]) -> Any:
    """Hypothesis strategy for a tool's arguments: mostly plausible, often hostile, sometimes ill-formed."""
    from hypothesis import strategies as st

    def value_for(name: str, node: Mapping[str, Any]) -> Any:
        branches = [b for b in node.get("anyOf", [node]) if b.get("type") != "null"] or [node]
        branch = branches[0]
        kind = branch.get("type")
        known = pool.get(name, [])
        options: list[Any] = [st.sampled_from(HOSTILE_STRINGS), st.sampled_from(HOSTILE_NUMBERS), st.none()]
        if known:
            options += [st.sampled_from(known)] * 6
        if "enum" in branch:
            options += [st.sampled_from(branch["enum"])] * 6
        if kind == "string":
            options += [st.text(max_size=30)] * 2
        elif kind in ("number", "integer"):
            low, high = branch.get("minimum", -1e6), branch.get("maximum", 1e6)
            options += [st.integers(int(max(low, -1e6)), int(min(high, 1e6)))] * 3
            options += [st.floats(allow_nan=True, allow_infinity=True)]
            options += [st.sampled_from([low, high, low - 0.01, high + 1])]
        elif kind == "boolean":
            options += [st.booleans()] * 4
        return st.one_of(*options)

    properties: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    fields = {
        name: value_for(name, node) if name in required else st.one_of(st.just(_OMIT), value_for(name, node))
        for name, node in properties.items()
    }
    extra = st.dictionaries(
        st.sampled_from(["unexpected", "x" * 5000, "full_nam", "\ud800"]), st.integers(), max_size=1
    )

    def assemble(values: dict[str, Any], unknown: dict[str, Any], add_unknown: bool) -> dict[str, Any]:
        arguments = {k: v for k, v in values.items() if v is not _OMIT}
        return {**arguments, **unknown} if add_unknown else arguments

    one_in_twenty = st.sampled_from([False] * 19 + [True])
    return st.builds(assemble, st.fixed_dictionaries(fields), extra, one_in_twenty)


class _ServerRun:
    """One server's episode and what its calls showed."""

    def __init__(self, name: str, client: Client, seed: int) -> None:
        self.name = name
        self.client = client
        self.episode = EpisodeClient(client, f"fuzz-{name}-{seed}", timeout=60)
        self.tools: dict[str, types.Tool] = {}
        self.validators: dict[str, jsonschema.protocols.Validator] = {}
        self.read_only: set[str] = set()
        self.result = ServerFuzz(server=name)
        self.evidence: list[Violation] = []
        self.hash = ""
        self.pool: dict[str, list[Any]] = {}

    async def start(self) -> None:
        tools = (await self.client.list_tools()).tools
        self.tools = {t.name: t for t in tools}
        for t in tools:
            if t.output_schema is not None:
                cls = jsonschema.validators.validator_for(t.output_schema)
                self.validators[t.name] = cls(t.output_schema)
        self.read_only = {t.name for t in tools if t.annotations and t.annotations.read_only_hint}
        await self.reset()
        self.pool = _harvest((await self.episode.state(rows=True)).state or {})

    async def reset(self) -> None:
        self.hash = (await self.episode.reset()).hash

    async def _state_hash(self) -> str:
        return (await self.episode.state(rows=False, diff=False)).hash

    def _violate(self, tool: str, invariant: str, detail: str, arguments: Any) -> None:
        self.result.violations[invariant] = self.result.violations.get(invariant, 0) + 1
        if len(self.evidence) < EVIDENCE_KEPT:
            self.evidence.append(
                Violation(
                    server=self.name,
                    tool=tool,
                    invariant=invariant,
                    detail=detail[:500],
                    arguments=repr(arguments)[:300],
                )
            )

    async def run_batch(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        for tool, arguments in calls:
            await self.call(tool, arguments)

    async def call(self, tool: str, arguments: dict[str, Any]) -> None:
        self.result.calls += 1
        if self.result.calls % RESET_EVERY == 0:
            await self.reset()
        try:
            result = await self.episode.call_tool(tool, arguments)
        except ControlError as exc:
            self._count("client_exception")
            self._violate(tool, "client_exception", str(exc), arguments)
            self.hash = await self._state_hash()
            return
        if result.is_error:
            kind = error_kind(result)
            self._count(kind.value if kind else "unknown_error_kind")
            if kind is None:
                self._violate(tool, "unknown_error_kind", str(result.meta), arguments)
            text = "".join(getattr(c, "text", "") for c in result.content)
            if len(text) > MAX_MESSAGE_CHARS:
                self._violate(tool, "oversized_message", f"{len(text)} characters", arguments)
            after = await self._state_hash()
            if after != self.hash:
                self._violate(tool, "state_changed", f"a failed call ({kind}) changed the state", arguments)
                self.hash = after
            return
        self._count("ok")
        validator = self.validators.get(tool)
        if validator is not None:
            error = next(iter(validator.iter_errors(result.structured_content)), None)
            if error is not None:
                self._violate(tool, "output_schema", error.message, arguments)
        if tool not in self.read_only:
            self.hash = await self._state_hash()

    def _count(self, outcome: str) -> None:
        self.result.outcomes[outcome] = self.result.outcomes.get(outcome, 0) + 1


def _draw_calls(run: _ServerRun, calls: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """Hypothesis draws `calls` calls, a batch per example. They are drawn first and run afterwards on
    the event loop: a thread hop per call cost more than the call itself on a loaded machine."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    names = sorted(run.tools)
    one = st.one_of(*(_argument_strategy(run.tools[n].input_schema, run.pool).map(partial(_pair, n)) for n in names))
    drawn: list[tuple[str, dict[str, Any]]] = []
    size = min(MAX_BATCH, max(1, calls // 20))

    @hypothesis_seed(seed)
    @settings(
        max_examples=-(-calls // size),
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(one, min_size=size, max_size=size))
    def batch(examples: list[tuple[str, dict[str, Any]]]) -> None:
        drawn.extend(examples)

    batch()
    return drawn[:calls]


def _pair(tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return tool, arguments


def fuzz_farm(
    farm_root: Path,
    names: Sequence[str],
    calls: int,
    seed: int = 0,
    progress: Callable[[ServerFuzz], None] | None = None,
) -> FuzzReport:
    """Fuzz each named server with `calls` calls in all (split evenly), each in its own in-memory
    episode; `progress` gets each server's counts when it finishes."""
    per_server = [calls // len(names) + (1 if n < calls % len(names) else 0) for n in range(len(names))]
    results: list[ServerFuzz] = []
    evidence: list[Violation] = []

    async def run_all() -> None:
        for name, share in zip(names, per_server, strict=True):
            if share == 0:
                continue
            async with Client(load_server(farm_root, name)) as client:
                run = _ServerRun(name, client, seed)
                await run.start()
                drawn = await anyio.to_thread.run_sync(_draw_calls, run, share, seed)
                await run.run_batch(drawn)
            results.append(run.result)
            evidence.extend(run.evidence)
            if progress:
                progress(run.result)

    anyio.run(run_all)
    outcomes: Counter[str] = Counter()
    violations: Counter[str] = Counter(dict.fromkeys(INVARIANTS, 0))
    for r in results:
        outcomes.update(r.outcomes)
        violations.update(r.violations)
    return FuzzReport(
        seed=seed,
        calls=sum(r.calls for r in results),
        outcomes=dict(outcomes),
        violations=dict(violations),
        servers=results,
        evidence=evidence[:EVIDENCE_KEPT],
    )
