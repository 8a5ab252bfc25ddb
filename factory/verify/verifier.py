"""Verify a generated server by execution: launch it over stdio, drive it with the MCP client, judge.

"Verified" is deterministic and executable, never an opinion. The server runs as a real subprocess
(`envfarm --farm <staging root> serve <name>`) and a real `mcp` client checks, per tool, that:
- the listing matches the spec (names, description, input and output schemas, annotations);
- valid calls, built from the seed, succeed and their outputs validate against the listed schema;
- reads leave the state hash unchanged; creates add one row; updates, deletes and custom writes
  change only the tables their effect declares;
- invalid calls (missing or wrong-typed argument, unknown id, each rule's example) give `isError`
  with a message and leave the state unchanged;
- every search lists exactly the rows its filters and the principal's scope select, in its declared
  order (the keys worked out from the spec on the seed: `factory/verify/search_check.py`);
- calls at the edges of each business rule (now, today, the rule's own numbers), and calls on a seed where a
  row they read has a date or number moved to such an edge, are refused exactly when the spec's rule SQL
  refuses them (`factory/verify/rule_check.py`);
- a session's reads do not change while another session writes (isolation), and replaying the
  same calls on a fresh episode gives the same outputs and state hash (determinism);
- no call crashes the handler, hangs past the timeout, or writes to the output streams.
Every check runs on its own episode (`_meta["envfarm/episode"]`) and reads the state hash and diff
from the control plane. The report is stored as `servers/<name>/verification.json`.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TextIO, TypeVar

import anyio
import jsonschema
import mcp_types as types
from mcp import StdioServerParameters
from pydantic import BaseModel, Field

from envfarm.factory.publish import REPORT_FILE, code_hash, file_hashes, runtime_hash, spec_hash
from envfarm.factory.sandbox.warm import stub_args
from envfarm.factory.spec import (
    CreateTool,
    CustomTool,
    DeleteTool,
    EnvironmentSpec,
    Expect,
    GetTool,
    Scenario,
    SearchTool,
    Step,
    ToolKind,
    UpdateTool,
    WriteTool,
)
from envfarm.factory.verify.call_plan import InvalidCall, SeedView, ToolPlan, invalid_calls, plan_calls, rule_message
from envfarm.factory.verify.coverage_gate import CHECKS, EXPECT, FunctionCoverage, gate, gate_args, switch
from envfarm.factory.verify.expect import Rows, UnresolvedReference, apply_diff, judge, resolve, seed_rows
from envfarm.factory.verify.rule_check import rule_probes, state_probes
from envfarm.factory.verify.schemas import canonical, differences, expected_input, expected_output
from envfarm.factory.verify.search_check import SearchOracle
from envfarm.factory.verify.session import CallResult, ServerSession, SessionBroken, connect, serve_args
from envfarm.factory.verify.static_checks import check_handlers
from envfarm.servers.runtime.control import ErrorKind, Method, StateResult

VERIFIER_VERSION = "1.0"
PRINCIPAL_KEY = "principal"  # in an example: act as this principal instead of the server's default
AS = "~as~"  # joins an episode name and the principal it acts for
MAX_PAGES = 50  # pages walked per list call in the paging check
WALKED_AT_LEAST = 3  # argument sets (keys) a list (get) is called with before the rest may wait
SERVER = "*"

# The MCP annotations each effect implies (readOnly, destructive, idempotent), written out here rather
# than taken from the runtime's `effect_hints`: the verifier must not share the code it checks, or a
# bug there would be expected as well as served. A read-only tool is never destructive.
EFFECT_ANNOTATIONS: dict[str, tuple[bool, bool, bool]] = {
    "search": (True, False, True),
    "get": (True, False, True),
    "create": (False, False, False),  # another call adds another row
    "update": (False, True, True),  # overwrites; replaying it changes nothing more
    "delete": (False, True, True),
    "custom": (False, True, False),
}
_T = TypeVar("_T")
Outcome = Literal["passed", "failed", "advisory"]  # advisory: a finding reported, not (yet) blocking


def expected_annotations(tool: ToolKind) -> dict[str, bool]:
    """The four hints the spec implies for `tool`: its effect's row of EFFECT_ANNOTATIONS, a custom tool
    that writes nothing read-only, then the spec's own `annotations` overrides."""
    read_only, destructive, idempotent = EFFECT_ANNOTATIONS[tool.effect]
    if isinstance(tool, CustomTool) and not tool.writes:
        read_only, destructive, idempotent = EFFECT_ANNOTATIONS["get"]
    if tool.annotations.destructive is not None:
        destructive = tool.annotations.destructive and not read_only
    if tool.annotations.idempotent is not None:
        idempotent = tool.annotations.idempotent
    return {
        "read_only_hint": read_only,
        "destructive_hint": destructive,
        "idempotent_hint": idempotent,
        "open_world_hint": False,
    }


class Failure(BaseModel):
    """One failed check: which tool, which check, the call that showed it, what was expected and seen."""

    tool: str = Field(description="tool name; '*' for server-wide checks, 'handlers.py' for static ones")
    check: str
    call: dict[str, Any] | None = None
    expected: str
    actual: str


class ToolCoverage(BaseModel):
    """What was checked for one tool, the calls that succeeded, and the time it took."""

    tool: str
    effect: str
    checks: dict[str, Outcome] = Field(default_factory=dict)
    valid_calls: list[dict[str, Any]] = Field(default_factory=list)
    calls: int = 0
    coverage: FunctionCoverage | None = Field(
        default=None,
        description="its tools.py function plus its handler: statements and branches, run at all and by expectations",
    )
    seconds: float = 0.0


class Timings(BaseModel):
    static_s: float = 0.0
    launch_s: float = 0.0
    listing_s: float = 0.0
    tools_s: float = 0.0
    sessions_s: float = 0.0
    behaviour_s: float = 0.0
    total_s: float = 0.0


class VerificationReport(BaseModel):
    """The evidence behind a published server, hashed together with the code and spec it covers."""

    server: str
    passed: bool
    verifier_version: str = VERIFIER_VERSION
    verified_at: str
    spec_hash: str
    code_hash: str
    runtime_hash: str | None = Field(None, description="sha256 of servers/runtime/*.py at verification")
    files: dict[str, str] = Field(description="sha256 of every hashed file, to name what drifted")
    checks: dict[str, Outcome] = Field(default_factory=dict, description="server-wide checks")
    tools: list[ToolCoverage] = Field(default_factory=list)
    failures: list[Failure] = Field(default_factory=list)
    uncovered: list[str] = Field(
        default_factory=list, description="rejects, writes and handler branches no expectation ran (file:line)"
    )
    advisories: list[Failure] = Field(
        default_factory=list, description="findings of advisory checks (see VerifyOptions.strict_paging)"
    )
    timings: Timings = Field(default_factory=Timings)

    @property
    def check_count(self) -> int:
        return len(self.checks) + sum(len(t.checks) for t in self.tools)

    def write(self, server_dir: Path) -> None:
        (server_dir / REPORT_FILE).write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")


class VerifyOptions(BaseModel):
    call_timeout: float = Field(default=5.0, description="seconds a tool call may take before it counts as hung")
    launch_timeout: float = Field(default=60.0, description="seconds the server may take to answer its first request")
    static: bool = Field(default=True, description="run the static checks of handlers.py (dynamic checks always run)")
    max_tries: int = Field(default=5, description="seed-built candidates tried per tool before giving up")
    coverage: bool = Field(default=True, description="run the server under coverage and report what expectations run")
    fail_fast: bool = Field(
        default=False, description="stop at the first failure, behaviour checks first (mutation testing needs no more)"
    )
    warm_socket: Path | None = Field(
        default=None,
        description="launch through this warm launcher (envfarm.factory.sandbox.warm) instead of a cold interpreter",
    )
    coverage_gate: bool = Field(
        default=True,
        description="fail when a reject, write or handler branch ran under no expectation (else only reported)",
    )
    strict_paging: bool = Field(
        default=True,
        description="a table with rows no list reaches fails verification; off: only reported (advisories)",
    )
    focus: list[str] = Field(
        default_factory=list,
        description="tools whose checks and expectations run first (a mutant's): with fail_fast a fault in "
        "them is found sooner; every check still runs when none fails",
    )


def load_report(server_dir: Path) -> VerificationReport | None:
    """The stored report, or None if it is missing or unreadable."""
    path = server_dir / REPORT_FILE
    try:
        return VerificationReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def load_server_spec(server_dir: Path) -> EnvironmentSpec:
    """The spec a generated server was built from: its spec.json plus seed.json."""
    data = json.loads((server_dir / "spec.json").read_text(encoding="utf-8"))
    seed = json.loads((server_dir / "seed.json").read_text(encoding="utf-8"))
    return EnvironmentSpec.model_validate({**data, "seed": seed})


def _show(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


class _Stop(Exception):
    """The server can no longer be driven: finish the report with what was found."""


class _Recorder:
    """Collects check outcomes and failures as the run goes."""

    def __init__(self, spec: EnvironmentSpec) -> None:
        self.tools = {t.name: ToolCoverage(tool=t.name, effect=t.effect) for t in spec.tools}
        self.server_checks: dict[str, Outcome] = {}
        self.failures: list[Failure] = []
        self.uncovered: list[str] = []
        self.fail_fast = False
        self.advisories: list[Failure] = []

    def _outcomes(self, tool: str) -> dict[str, Outcome]:
        return self.tools[tool].checks if tool in self.tools else self.server_checks

    def passed(self, tool: str, check: str) -> None:
        self._outcomes(tool).setdefault(check, "passed")

    def fail(self, tool: str, check: str, call: dict[str, Any] | None, expected: str, actual: str) -> None:
        self._outcomes(tool)[check] = "failed"
        self.failures.append(Failure(tool=tool, check=check, call=call, expected=expected, actual=actual))
        if self.fail_fast:
            raise _Stop

    def advise(self, tool: str, check: str, ok: bool, call: dict[str, Any] | None, expected: str, actual: str) -> None:
        """Record an advisory check: a miss is reported beside the failures and does not fail the server."""
        if ok:
            self.passed(tool, check)
            return
        self._outcomes(tool)[check] = "advisory"
        self.advisories.append(Failure(tool=tool, check=check, call=call, expected=expected, actual=actual))

    def judge(
        self,
        tool: str,
        check: str,
        ok: bool,
        call: dict[str, Any] | None,
        expected: str,
        actual: str,
        once: bool = False,
    ) -> bool:
        """Record `check` as passed or failed; with `once`, a check already failed for `tool` is not repeated."""
        if ok:
            self.passed(tool, check)
        elif not (once and self._outcomes(tool).get(check) == "failed"):
            self.fail(tool, check, call, expected, actual)
        return ok


def effect_problems(
    spec: EnvironmentSpec, seed: SeedView, tool: ToolKind, arguments: dict[str, Any], diff: dict[str, Any], output: Any
) -> list[str]:
    """What a successful call changed that its effect does not allow (empty when it is right)."""
    declared = tool.changed_tables
    problems = [f"changed {t} (undeclared): {_show(diff[t], 200)}" for t in sorted(diff) if t not in declared]
    if not isinstance(tool, WriteTool):
        return problems
    pk = spec.entities[tool.entity].primary_key
    change = diff.get(tool.entity, {"added": [], "removed": [], "updated": []})
    # Rows of the entity besides the one the effect names may change only through declared `then` SQL.
    if isinstance(tool, CreateTool):
        added = change["added"]
        if len(added) != 1 or change["removed"]:
            problems.append(
                f"{tool.entity}: expected one row added, got {len(added)} added and {len(change['removed'])} removed"
            )
        elif isinstance(output, dict) and output.get(pk) != added[0].get(pk):
            problems.append(f"returned {pk} {output.get(pk)!r} but the row added is {added[0].get(pk)!r}")
        if change["updated"] and not tool.then:
            problems.append(f"{tool.entity}: a create also updated rows {[u['key'] for u in change['updated']]}")
        return problems
    target = (seed.sql_args(tool, arguments) or {}).get("id")
    if isinstance(tool, UpdateTool):
        if change["added"] or change["removed"]:
            problems.append(f"{tool.entity}: an update added or removed rows")
        others = [u["key"] for u in change["updated"] if u["key"] != target]
        if others and not tool.then:
            problems.append(f"{tool.entity}: updated rows {others} besides {target!r}")
    if isinstance(tool, DeleteTool):
        removed = [r.get(pk) for r in change["removed"]]
        if target not in removed or change["added"] or (len(removed) > 1 and not tool.then):
            problems.append(
                f"{tool.entity}: expected {target!r} removed, got removed {removed} and {len(change['added'])} added"
            )
    return problems


class Verifier:
    """Runs every dynamic check against one launched server, in order, over one connection."""

    def __init__(
        self,
        spec: EnvironmentSpec,
        session: ServerSession,
        recorder: _Recorder,
        plans: dict[str, ToolPlan],
        seed: SeedView,
        options: VerifyOptions,
    ) -> None:
        self.spec = spec
        self.session = session
        self.recorder = recorder
        self.plans = plans
        self.seed = seed
        self.options = options
        self.listed: dict[str, types.Tool] = {}
        self.seed_hash = ""
        self.valid: dict[str, list[dict[str, Any]]] = {}
        self._opened: set[str] = set()  # episodes already reset to act for an example's principal
        self.seed_rows: Rows = {}
        self.context = CHECKS
        self.switch: Callable[[str], None] | None = None

    def use_context(self, context: str) -> None:
        """Tell the coverage gate whether the next calls run under an expectation."""
        if self.switch is not None and context != self.context:
            self.switch(context)
            self.context = context

    async def run(self, timings: Timings) -> None:
        mark = time.perf_counter()
        await self.check_listing()
        timings.listing_s = time.perf_counter() - mark
        if self.options.fail_fast:  # the behaviour checks catch most seeded bugs: run them first
            mark = time.perf_counter()
            await self.check_behaviour()
            timings.behaviour_s = time.perf_counter() - mark
        for tool in self._focused(self.spec.tools, lambda t: t.name in self.options.focus):
            if tool.name in self.listed:
                start = time.perf_counter()
                await self.check_valid(tool)
                await self.check_invalid(tool)
                await self.check_rule_edges(tool)
                await self.check_state_edges(tool)
                self.recorder.tools[tool.name].seconds = round(time.perf_counter() - start, 4)
        timings.tools_s = time.perf_counter() - mark - timings.listing_s
        mark = time.perf_counter()
        await self.check_sessions()
        await self.check_principals()
        await self.check_searches()
        await self.check_paging()
        timings.sessions_s = time.perf_counter() - mark
        if not self.options.fail_fast:
            mark = time.perf_counter()
            await self.check_behaviour()
            timings.behaviour_s = time.perf_counter() - mark

    async def _state(self, episode: str) -> StateResult:
        try:
            return await self.session.state(episode)
        except SessionBroken as exc:
            self.recorder.fail(SERVER, exc.reason, {"method": Method.STATE, "episode": episode}, "a result", exc.detail)
            raise _Stop from exc

    @staticmethod
    def _as(arguments: dict[str, Any], episode: str) -> tuple[dict[str, Any], str, str | None]:
        """An example may act as another principal (`principal` beside its arguments): it then runs on
        an episode of its own, named after that principal. Returns (arguments, episode, principal)."""
        principal = arguments.get(PRINCIPAL_KEY)
        if principal is None:
            return arguments, episode, None
        rest = {k: v for k, v in arguments.items() if k != PRINCIPAL_KEY}
        return rest, f"{episode}{AS}{principal}", str(principal)

    async def _reset(
        self, episode: str, state: dict[str, list[dict[str, Any]]] | None = None, principal: str | None = None
    ) -> None:
        principal = principal or (episode.split(AS, 1)[1] if AS in episode else None)
        try:
            await self.session.reset(episode, principal, state)
        except SessionBroken as exc:
            self.recorder.fail(SERVER, exc.reason, {"method": Method.RESET, "episode": episode}, "a result", exc.detail)
            raise _Stop from exc

    async def _call(self, tool: str, arguments: dict[str, Any], episode: str, *, moved: str = "") -> CallResult:
        """One tool call; a crash or output on the streams fails the tool, a hang stops the run. On a `moved`
        state (a seed value moved to a rule's edge, which no tool may be able to write) a crash is only
        advised: the handler may rightly assume what every tool keeps true."""
        call = {"tool": tool, "arguments": arguments, "episode": episode}
        if tool in self.recorder.tools:
            self.recorder.tools[tool].calls += 1
        arguments, episode, principal = self._as(arguments, episode)
        if principal is not None and episode not in self._opened:
            await self._reset(episode)
            self._opened.add(episode)
        try:
            result = await self.session.call(tool, arguments, episode)
        except SessionBroken as exc:
            self.recorder.fail(tool, exc.reason, call, f"a result within {self.options.call_timeout:g} s", exc.detail)
            raise _Stop from exc
        quiet = not result.streams
        self.recorder.judge(
            tool, "output_stream", quiet, call, "nothing written to stdout or stderr", _show(result.streams), once=True
        )
        crashed = result.kind == ErrorKind.SERVER_ERROR
        if moved:
            self.recorder.advise(
                tool, "crash_on_moved_state", not crashed, {**call, "state": moved}, "no exception", _show(result.text)
            )
        else:
            self.recorder.judge(tool, "crash", not crashed, call, "no exception inside the server", _show(result.text))
        return result

    async def check_listing(self) -> None:
        listing = await self.session.client.list_tools()
        self.listed = {t.name: t for t in listing.tools}
        call = {"method": "tools/list"}
        for name in self.listed:
            if name not in self.recorder.tools:
                self.recorder.fail(SERVER, "listed", call, "only the spec's tools", f"extra tool {name!r}")
        for tool in self.spec.tools:
            listed = self.listed.get(tool.name)
            if not self.recorder.judge(
                tool.name, "listed", listed is not None, call, "listed", "absent from tools/list"
            ):
                continue
            assert listed is not None
            words = " ".join(tool.agent_description(self.spec).split())
            got = " ".join((listed.description or "").split())
            self.recorder.judge(tool.name, "description", got == words, call, _show(words), _show(got))
            found = differences(expected_input(tool), canonical(listed.input_schema))
            self.recorder.judge(tool.name, "input_schema", not found, call, "the spec's params", "; ".join(found))
            found = differences(expected_output(self.spec, tool), canonical(listed.output_schema or {}))
            self.recorder.judge(
                tool.name, "output_schema", not found, call, "the spec's return shape", "; ".join(found)
            )
            want = expected_annotations(tool)
            have = listed.annotations.model_dump(include=set(want)) if listed.annotations else {}
            self.recorder.judge(tool.name, "annotations", have == want, call, _show(want), _show(have))
        self.seed_hash = (await self._state("verify:seed")).hash

    def _check_output(self, tool: ToolKind, result: CallResult, call: dict[str, Any]) -> None:
        schema = self.listed[tool.name].output_schema
        if schema is None:
            self.recorder.fail(tool.name, "output", call, "a listed output schema", "none")
            return
        errors = sorted(
            jsonschema.Draft202012Validator(schema).iter_errors(result.structured), key=lambda e: list(e.path)
        )
        found = "; ".join(f"{'/'.join(map(str, e.path)) or '<root>'}: {e.message}" for e in errors[:3])
        self.recorder.judge(
            tool.name, "output", not errors, call, "structuredContent valid against the listed outputSchema", found
        )

    async def _valid_call(self, tool: ToolKind, arguments: dict[str, Any], episode: str) -> CallResult:
        """Call on a fresh episode; on success check the output and the effect on the state."""
        call = {"tool": tool.name, "arguments": arguments, "episode": episode}
        result = await self._call(tool.name, arguments, episode)
        if result.is_error:
            return result
        self._check_output(tool, result, call)
        state = await self._state(self._as(arguments, episode)[1])
        problems = effect_problems(
            self.spec, self.seed, tool, arguments, {t: d.model_dump() for t, d in state.diff.items()}, result.structured
        )
        expected = f"changes only {tool.changed_tables}" if tool.changed_tables else "state unchanged (a read)"
        self.recorder.judge(tool.name, "effect", not problems, call, expected, "; ".join(problems))
        return result

    async def check_valid(self, tool: ToolKind) -> None:
        """Every `must_pass` call succeeds, or one of the seed-built candidates does."""
        plan = self.plans[tool.name]
        succeeded: list[dict[str, Any]] = []
        for n, arguments in enumerate(plan.must_pass):
            episode = f"valid:{tool.name}:{n}"
            result = await self._valid_call(tool, arguments, episode)
            call = {"tool": tool.name, "arguments": arguments, "episode": episode}
            if self.recorder.judge(tool.name, "valid_call", not result.is_error, call, "success", _show(result.text)):
                succeeded.append(arguments)
        refused: list[tuple[dict[str, Any], CallResult]] = []
        for n, arguments in enumerate(plan.candidates[: self.options.max_tries]):
            result = await self._valid_call(tool, arguments, f"valid:{tool.name}:{n}")
            if not result.is_error:
                succeeded.append(arguments)
                self.recorder.passed(tool.name, "valid_call")
                break
            refused.append((arguments, result))
        if plan.candidates and not succeeded:
            arguments, result = refused[-1]
            tried = f"one of {len(refused)} seed-built calls succeeds"
            self.recorder.fail(
                tool.name, "valid_call", {"tool": tool.name, "arguments": arguments}, tried, _show(result.text)
            )
        self.valid[tool.name] = succeeded
        self.recorder.tools[tool.name].valid_calls = succeeded

    async def _refused(self, tool: ToolKind, bad: InvalidCall, episode: str) -> bool:
        """Make one invalid call and judge it; return whether it was refused."""
        result = await self._call(tool.name, bad.arguments, episode)
        if bad.message is not None:
            ok = result.is_error and result.text == bad.message
        elif bad.check == "unknown_id":
            ok = result.is_error and bool(result.text) and result.kind != ErrorKind.SERVER_ERROR
        else:
            ok = result.is_error and bad.param is not None and bad.param in result.text
        shown = (
            f"isError: {_show(result.text)}"
            if result.is_error
            else f"success: {_show(result.structured or result.text)}"
        )
        call = {"tool": tool.name, "arguments": bad.arguments, "episode": episode}
        self.recorder.judge(tool.name, bad.check, ok, call, bad.expectation, shown)
        return result.is_error

    async def check_invalid(self, tool: ToolKind) -> None:
        """Invalid calls share one episode (reset after any that wrongly succeeds); if its hash moved,
        each refused call is replayed alone to find the one that changed state."""
        plan = self.plans[tool.name]
        base = (self.valid.get(tool.name) or plan.must_pass or plan.candidates or [{}])[0]
        calls = invalid_calls(self.seed, tool, base)
        if not calls:
            return
        episode = f"invalid:{tool.name}"
        refused: list[InvalidCall] = []
        for bad in calls:
            if await self._refused(tool, bad, episode):
                refused.append(bad)
            else:
                await self._reset(self._as(bad.arguments, episode)[1])
        used = {self._as(bad.arguments, episode)[1] for bad in calls}
        hashes = [(await self._state(e)).hash for e in sorted(used)]
        if all(h == self.seed_hash for h in hashes):
            self.recorder.passed(tool.name, "unchanged_on_error")
            return
        for n, bad in enumerate(refused):
            alone = f"invalid:{tool.name}:{n}"
            await self._call(tool.name, bad.arguments, alone)
            state = await self._state(self._as(bad.arguments, alone)[1])
            if state.hash != self.seed_hash:
                call = {"tool": tool.name, "arguments": bad.arguments, "episode": alone}
                self.recorder.fail(
                    tool.name,
                    "unchanged_on_error",
                    call,
                    "a refused call changes nothing",
                    _show(state.model_dump(mode="json")["diff"]),
                )

    async def check_rule_edges(self, tool: ToolKind) -> None:
        """Calls at the edges of the tool's rules are refused exactly when the spec's rule SQL, run on the
        verifier's seed copy, refuses them, with that rule's message (`factory/verify/rule_check.py`)."""
        for n, probe in enumerate(rule_probes(self.seed, tool, self.valid.get(tool.name, []))):
            episode = f"edge:{tool.name}:{n}"
            result = await self._call(tool.name, probe.arguments, episode)
            call = {"tool": tool.name, "arguments": probe.arguments, "episode": episode}
            self._judge_edge(tool, "rule_edge", call, probe.message, probe.messages, result)

    def _judge_edge(
        self,
        tool: ToolKind,
        check: str,
        call: dict[str, Any],
        message: str | None,
        messages: frozenset[str],
        result: CallResult,
        moved: str = "",
    ) -> None:
        """Refused with exactly `message`, or (None) with no rule's message at all."""
        refused = result.text if result.is_error else None
        if message is not None:
            ok, expected = refused == message, f"refused by its rule: {message!r}"
        else:
            ok, expected = refused not in messages, "no rule refuses it (the spec's rules let it through)"
        shown = f"isError: {_show(result.text)}" if result.is_error else "accepted"
        self.recorder.judge(tool.name, check, ok, call, f"with {moved}: {expected}" if moved else expected, shown)

    async def check_state_edges(self, tool: ToolKind) -> None:
        """The tool's valid call and rule examples, made on a seed where a row they read has a date or number
        moved to a rule's edge, are refused exactly when the spec's rule SQL refuses them on that state."""
        for n, probe in enumerate(state_probes(self.seed, tool, self.valid.get(tool.name, []))):
            _, episode, principal = self._as(probe.arguments, f"state:{tool.name}:{n}")
            await self._reset(episode, {probe.table: probe.rows}, principal)
            self._opened.add(episode)
            result = await self._call(tool.name, probe.arguments, f"state:{tool.name}:{n}", moved=probe.change)
            if result.kind == ErrorKind.SERVER_ERROR:
                continue  # advised above; a handler that breaks gives no rule's verdict
            call = {"tool": tool.name, "arguments": probe.arguments, "episode": episode, "state": probe.change}
            self._judge_edge(tool, "state_edge", call, probe.message, probe.messages, result, probe.change)

    @staticmethod
    def _focused(items: list[_T], first: Callable[[_T], bool]) -> list[_T]:
        """`items` with those `first` picks moved to the front, each part in its own order."""
        return [i for i in items if first(i)] + [i for i in items if not first(i)]

    def _touches_focus(self, scenario: Scenario) -> bool:
        return any(step.tool in self.options.focus for step in scenario.steps)

    def behaviour_scenarios(self) -> list[tuple[str, Scenario]]:
        """What the behaviour phase runs, each on a fresh episode: every example with an expectation and
        every rule example (as one-step scenarios, named by where they are in the spec), then the spec's
        scenarios."""
        runs: list[tuple[str, Scenario]] = []
        for i, tool in enumerate(self.spec.tools):
            if tool.name not in self.listed:
                continue
            for j, example in enumerate(tool.examples):
                if example.expect is not None:
                    step = Step(tool=tool.name, args=example.args, expect=example.expect)
                    runs.append((f"tools.{i}({tool.name}).examples.{j}", Scenario(name=tool.name, steps=[step])))
            for j, rule in enumerate(tool.rules):
                message = rule_message(self.seed, tool, rule.example, rule.message)
                step = Step(tool=tool.name, args=rule.example, expect=Expect(error=message))
                runs.append((f"tools.{i}({tool.name}).rules.{j}", Scenario(name=tool.name, steps=[step])))
        runs += [(f"scenarios.{i}({s.name})", s) for i, s in enumerate(self.spec.scenarios)]
        return runs

    async def _rows(self, episode: str) -> Rows:
        state = await self._state(episode)
        return apply_diff(self.seed_rows, {t: d.model_dump() for t, d in state.diff.items()}, self.spec)

    async def check_behaviour(self) -> None:
        """Run every expectation of the spec: results, rows changed and column values after each call."""
        self.seed_rows = seed_rows(self.spec)
        runs = list(enumerate(self.behaviour_scenarios()))
        for n, (where, scenario) in self._focused(runs, lambda run: self._touches_focus(run[1][1])):
            await self._scenario(where, scenario, f"expect:{n}")
        self.use_context(CHECKS)

    async def _scenario(self, where: str, scenario: Scenario, episode: str) -> None:
        results: dict[str, Any] = {}
        before = self.seed_rows
        rule = ".rules." in where
        for k, step in enumerate(scenario.steps):
            label = where if len(scenario.steps) == 1 else f"{where}.steps.{k}"
            try:
                arguments = resolve(step.args, results)
                expect = Expect.model_validate(resolve(step.expect.model_dump(), results)) if step.expect else None
            except UnresolvedReference as exc:
                self.recorder.fail(step.tool, "expect", {"expectation": label}, "a resolvable reference", str(exc))
                return
            call = {"tool": step.tool, "arguments": arguments, "episode": episode, "expectation": label}
            self.use_context(EXPECT if expect is not None else CHECKS)
            result = await self._call(step.tool, arguments, episode)
            tool = self.spec.tool(step.tool)
            # A read cannot change the state (the effect check holds it to that), so a read whose
            # expectation is about its result alone needs no state request.
            reads_result = not tool.changed_tables and expect is not None and expect.error is None
            if reads_result and expect is not None and expect.rows is None and not expect.state:
                after = before
            else:
                after = await self._rows(self._as(arguments, episode)[1])  # an example may act as another principal
            if not result.is_error and step.tool in self.listed:
                self._check_output(tool, result, call)
            if expect is not None:
                found = judge(self.spec, expect, result.is_error, result.text, result.structured, before, after)
                check = "rule" if rule else "expect"
                for mismatch in found:
                    self.recorder.judge(
                        step.tool,
                        check,
                        False,
                        call,
                        mismatch.expected,
                        f"{mismatch.field}: {mismatch.actual}",
                        once=rule,
                    )
                if not found:
                    self.recorder.passed(step.tool, check)
            elif result.is_error:
                self.recorder.fail(step.tool, "expect", call, "success", _show(result.text))
            if step.name and not result.is_error:
                results[step.name] = result.structured
            before = after

    async def _run_all(self, calls: list[tuple[str, dict[str, Any]]], episode: str) -> list[Any]:
        return [(await self._call(tool, arguments, episode)).output for tool, arguments in calls]

    async def check_sessions(self) -> None:
        """Isolation: episode B's reads are unmoved while A runs every call. Determinism: replaying
        A's calls on a fresh episode C gives the same outputs and state hash."""
        sequence = [(t.name, a) for t in self.spec.tools for a in self.valid.get(t.name, [])]
        reads = [(name, a) for name, a in sequence if not self.spec.tool(name).changed_tables]
        before = await self._run_all(reads, "iso:b")
        first = await self._run_all(sequence, "iso:a")
        first_hash = (await self._state("iso:a")).hash
        after = await self._run_all(reads, "iso:b")
        b_hash = (await self._state("iso:b")).hash
        for (name, arguments), old, new in zip(reads, before, after, strict=True):
            call = {"tool": name, "arguments": arguments, "episode": "iso:b"}
            self.recorder.judge(
                SERVER, "isolation", old == new, call, f"unchanged while iso:a runs: {_show(old, 200)}", _show(new, 200)
            )
        self.recorder.judge(
            SERVER, "isolation", b_hash == self.seed_hash, {"episode": "iso:b"}, f"seed hash {self.seed_hash}", b_hash
        )
        replay = await self._run_all(sequence, "det:c")
        replay_hash = (await self._state("det:c")).hash
        for (name, arguments), old, new in zip(sequence, first, replay, strict=True):
            call = {"tool": name, "arguments": arguments, "episode": "det:c"}
            self.recorder.judge(
                SERVER, "determinism", old == new, call, f"as on iso:a: {_show(old, 200)}", _show(new, 200)
            )
        self.recorder.judge(
            SERVER,
            "determinism",
            replay_hash == first_hash,
            {"episode": "det:c"},
            f"hash as on iso:a {first_hash}",
            replay_hash,
        )

    async def check_principals(self) -> None:
        """Cross-principal, per tool: every valid call, made again as another principal, neither returns
        nor changes a row that only the call's own principal may see."""
        principal = self.spec.principal
        if principal is None or not principal.scope:
            return
        for tool in self.spec.tools:
            for n, arguments in enumerate(self.valid.get(tool.name, [])):
                owner = str(arguments.get(PRINCIPAL_KEY) or principal.default)
                other = self.seed.other_principal(owner)
                if other is None:
                    continue
                private = self.seed.private_keys(owner, other)
                call = {**{k: v for k, v in arguments.items() if k != PRINCIPAL_KEY}, PRINCIPAL_KEY: other}
                episode = f"xp:{tool.name}:{n}"
                result = await self._call(tool.name, call, episode)
                leaked = sorted(private & set(_strings(result.structured))) if not result.is_error else []
                diff = (await self._state(self._as(call, episode)[1])).diff
                touched = sorted(
                    str(key)
                    for table, change in diff.items()
                    for key in [u["key"] for u in change.updated] + [next(iter(r.values())) for r in change.removed]
                    if str(key) in private and not tool.reaches_others
                )
                self.recorder.judge(
                    tool.name,
                    "cross_principal",
                    not leaked and not touched,
                    {"tool": tool.name, "arguments": call, "episode": episode},
                    f"as {other}: none of {owner}'s private rows returned or changed",
                    f"returned {leaked[:5]}, changed {touched[:5]}",
                )

    async def check_searches(self) -> None:
        """Each search lists exactly the rows its filters and the principal's scope select, in its declared
        order, over all its pages: the keys the search oracle works out from the spec on the seed."""
        oracle = SearchOracle(self.spec, self.seed)
        for n, principal in enumerate(self.seed.paging_principals()):  # the default first
            acting = {PRINCIPAL_KEY: principal} if n else {}
            for probe in oracle.probes(principal):
                if probe.tool.name not in self.listed:
                    continue
                listed = await self._list_keys(probe.tool, probe.arguments, acting)
                call = {"tool": probe.tool.name, "arguments": {**probe.arguments, **acting}}
                self.recorder.judge(
                    probe.tool.name,
                    "search",
                    listed == probe.expected or (listed is None and probe.may_refuse),
                    call,
                    f"{probe.label}: {len(probe.expected)} rows in order {_show(probe.expected, 200)}",
                    f"{len(listed)} rows {_show(listed, 200)}" if listed is not None else "an error",
                )

    async def _list_keys(self, tool: SearchTool, arguments: dict[str, Any], acting: dict[str, Any]) -> list[str] | None:
        """The keys of every page of one search call, in order (None if a page is refused)."""
        keys: list[str] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            call = {**arguments, **self.seed.page_arguments(tool, cursor), **acting}
            result = await self._call(tool.name, call, "search")
            if result.is_error or not isinstance(result.structured, dict):
                return None
            keys += [str(k) for k in self.seed.row_keys(tool, result.structured)]
            cursor = result.structured.get("cursor")
            if not result.structured.get("has_more") or not cursor:
                break
        return keys

    async def check_paging(self) -> None:
        """Paging reachability, per table: every row the principal may see has its key in some page of some
        list (search tools, and custom tools that page), walking every cursor; and every list's pages add
        up to its total with no row twice. Checked as the default principal and, where rows are private,
        as the one seeing the most rows the default cannot (then on the private tables only)."""
        scoped = set(self.spec.principal.scope) if self.spec.principal else set()
        for n, principal in enumerate(self.seed.paging_principals()):  # the default first
            await self._check_paging_as(principal, {PRINCIPAL_KEY: principal} if n else {}, scoped if n else None)

    async def _check_paging_as(self, principal: str | None, acting: dict[str, Any], tables: set[str] | None) -> None:
        """The paging check as one principal, over `tables` (None: every table).

        Lists with the fewest argument sets go first. Once every row of a list's table has been found and
        the list was walked with WALKED_AT_LEAST argument sets (its totals checked), its other argument sets
        wait; the gets stop early the same way once nothing is hidden. Only if some row is still hidden at
        the end are the waiting lists walked and the gets redone in full, so the verdict is exactly the one
        walking everything gives."""
        visible = {
            t: set(keys) for t, keys in self.seed.visible_keys(principal).items() if tables is None or t in tables
        }
        lists: dict[str, list[tuple[ToolKind, dict[str, Any]]]] = {}
        table_of: dict[str, str] = {}  # list tool -> the table its rows are
        for tool, arguments in self.seed.list_calls(principal):
            listed = self.seed.listed_entity(tool)
            if tool.name in self.listed and listed is not None and (tables is None or listed[1] in tables):
                lists.setdefault(tool.name, []).append((tool, arguments))
                table_of[tool.name] = listed[1]
        listed_found: set[str] = set()
        waiting: list[tuple[ToolKind, dict[str, Any]]] = []
        # Fewest argument sets first: a search finding every row lets a per-parent list wait.
        for name, calls in sorted(lists.items(), key=lambda item: len(item[1])):
            rows = visible[table_of[name]]
            for n, (tool, arguments) in enumerate(calls):
                if n >= WALKED_AT_LEAST and rows <= listed_found:
                    waiting += calls[n:]
                    break
                listed_found |= await self._walk_list(tool, arguments, acting)
        gets = [
            t
            for t in self.spec.tools
            if isinstance(t, GetTool) and t.name in self.listed and (tables is None or t.entity in tables)
        ]
        fetched: dict[tuple[str, Any], set[str]] = {}
        found = await self._get_found(gets, listed_found, principal, acting, fetched, visible)
        if any(not keys <= found for keys in visible.values()):
            for tool, arguments in waiting:
                listed_found |= await self._walk_list(tool, arguments, acting)
            found = await self._get_found(gets, listed_found, principal, acting, fetched, None)
        for table, keys in visible.items():
            hidden = sorted(keys - found)
            strict = self.options.strict_paging and table not in self.spec.unlisted
            record = self.recorder.judge if strict else self.recorder.advise
            record(
                SERVER,
                f"reachable:{table}",
                not hidden,
                {"table": table, **acting},
                f"every {table} row {principal or 'the principal'} may see is in some list's pages (a search on "
                f"{table}, or a custom list that pages with a cursor)",
                f"{len(hidden)} of {len(keys)} {table} rows never listed, e.g. {hidden[:5]}",
            )

    async def _walk_list(self, tool: ToolKind, arguments: dict[str, Any], acting: dict[str, Any]) -> set[str]:
        """Every cursor of one list call: the keys its pages show; a paged list's pages must add up to its
        total with no row twice."""
        found: set[str] = set()
        cursor: str | None = None
        seen: list[str] = []
        for _ in range(MAX_PAGES):
            call = {**arguments, **self.seed.page_arguments(tool, cursor), **acting}
            result = await self._call(tool.name, call, "paging")
            if result.is_error or not isinstance(result.structured, dict):
                break
            page = result.structured
            found |= set(_keys(page))
            seen += [str(k) for k in self.seed.row_keys(tool, page)]
            cursor = page.get("cursor")
            if not page.get("has_more") or not cursor:
                if isinstance(tool, SearchTool) or "cursor" in tool.params:  # a paged list (not any `total`)
                    ok = len(seen) == page.get("total") == len(set(seen))
                    self.recorder.judge(
                        tool.name,
                        "paging",
                        ok,
                        {"tool": tool.name, "arguments": {**arguments, **acting}},
                        f"pages add up to total {page.get('total')}, each row once",
                        f"{len(seen)} rows over the pages, {len(set(seen))} distinct",
                    )
                break
        return found

    async def _get_found(
        self,
        gets: list[GetTool],
        listed_found: set[str],
        principal: str | None,
        acting: dict[str, Any],
        fetched: dict[tuple[str, Any], set[str]],
        visible: dict[str, set[str]] | None,
    ) -> set[str]:
        """`listed_found` plus what gets show by keys some list (or an earlier get) showed: a row a get
        fetches by a listed key is reachable too (an invoice by its listed appointment). With `visible`,
        each get stops after WALKED_AT_LEAST keys once no visible row is hidden; `fetched` keeps what each
        (get, key) showed, so redoing the pass in full calls only what was skipped."""
        found = set(listed_found)
        for tool in gets:
            for n, value in enumerate(self.seed.get_keys(tool, found, principal)[: MAX_PAGES * 6]):
                if visible is not None and n >= WALKED_AT_LEAST and all(k <= found for k in visible.values()):
                    break
                if (tool.name, value) not in fetched:
                    result = await self._call(tool.name, {tool.key: value, **acting}, "paging")
                    fetched[tool.name, value] = set() if result.is_error else set(_keys(result.structured))
                found |= fetched[tool.name, value]
        return found


def _keys(value: Any) -> Iterator[str]:
    """Every string or integer inside a JSON value, as text: where row keys show up (an imported API's
    keys may be integers)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, int) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def _strings(value: Any) -> Iterator[str]:
    """Every string value inside a JSON value (where row keys show up)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


ESCAPE_KINDS = frozenset({"import", "introspection"})  # static findings that are a way out of the sandbox


def _static(server_dir: Path, recorder: _Recorder) -> bool:
    """Record the static findings; whether one is an escape (then the server is never launched)."""
    handlers = server_dir / "handlers.py"
    findings = check_handlers(handlers.read_text(encoding="utf-8")) if handlers.is_file() else []
    for finding in findings:
        call = {"file": "handlers.py", "line": finding.line, "function": finding.function}
        recorder.fail(
            "handlers.py",
            f"static:{finding.kind}",
            call,
            f"no {finding.kind.replace('_', ' ')}",
            f"{finding.code}  ({finding.reason})",
        )
    if not findings:
        recorder.passed(SERVER, "static")
    return any(f.kind in ESCAPE_KINDS for f in findings)


async def _launch_and_check(
    spec: EnvironmentSpec,
    import_root: Path,
    errlog: TextIO,
    recorder: _Recorder,
    options: VerifyOptions,
    timings: Timings,
    workdir: Path,
) -> None:
    """Plan the calls in a thread while the server starts, then run the checks over one connection;
    with `options.coverage` the server runs under the coverage gate and is judged on it after it exits."""
    stream_errors: list[str] = []
    planned: dict[str, Any] = {}
    ready = anyio.Event()
    server_dir = import_root / "servers" / spec.name
    schema_sql = (server_dir / "schema.sql").read_text(encoding="utf-8")
    data_file, pid_file = workdir / "coverage.data", workdir / "server.pid"

    async def plan() -> None:
        planned["plans"], planned["seed"] = await anyio.to_thread.run_sync(plan_calls, spec, schema_sql)
        ready.set()

    if options.fail_fast and recorder.failures:
        return
    mark = time.perf_counter()
    args = serve_args(spec.name, import_root)
    if options.coverage:
        entry, argv = "coverage", gate_args(data_file, pid_file, server_dir, args)
    else:
        entry, argv = "serve", args
    if options.warm_socket is not None:
        parameters: StdioServerParameters | None = StdioServerParameters(
            command=sys.executable, args=stub_args(options.warm_socket, entry, argv)
        )
    elif options.coverage:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "envfarm.factory.verify.coverage_gate", *argv]
        )
    else:
        parameters = None
    client = connect(spec.name, import_root, errlog, options.launch_timeout, stream_errors, parameters)
    async with anyio.create_task_group() as group, AsyncExitStack() as stack:
        group.start_soon(plan)
        try:
            await stack.enter_async_context(client)
        except Exception as exc:  # noqa: BLE001 - whatever stops the server starting is the finding
            while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
                exc = exc.exceptions[0]
            errlog.seek(0)
            call = {"command": f"envfarm --farm {import_root} serve {spec.name}"}
            recorder.fail(
                SERVER,
                "launch",
                call,
                "the server starts and answers",
                f"{type(exc).__name__}: {exc}; stderr: ...{errlog.read()[-600:]}",
            )
            return
        timings.launch_s = time.perf_counter() - mark
        recorder.passed(SERVER, "launch")
        await ready.wait()
        session = ServerSession(client, errlog, options.call_timeout, stream_errors)
        verifier = Verifier(spec, session, recorder, planned["plans"], planned["seed"], options)
        if options.coverage:
            pid = int(pid_file.read_text(encoding="utf-8"))
            verifier.switch = lambda context: switch(pid, context)
        recorder.fail_fast = options.fail_fast
        try:
            await verifier.run(timings)
        except _Stop:
            recorder.fail_fast = False
            if options.fail_fast:
                return
            recorder.fail(
                SERVER, "completed", None, "every check runs", "stopped early: the server hung or broke the connection"
            )
            return
    recorder.fail_fast = False
    if options.coverage:
        _judge_coverage(spec, server_dir, data_file, recorder, options.coverage_gate)


def _judge_coverage(
    spec: EnvironmentSpec, server_dir: Path, data_file: Path, recorder: _Recorder, strict: bool
) -> None:
    """Every reject, write and handler branch ran under an expectation (a failure when `strict`, else
    listed in the report); per-tool coverage goes in the report."""
    if not data_file.is_file():
        recorder.fail(SERVER, "coverage", None, "coverage data from the server", "none written: did it exit cleanly?")
        return
    result = gate(data_file, server_dir)
    handlers = {t.handler: t.name for t in spec.tools if isinstance(t, CustomTool)}
    tools = {t.name for t in spec.tools}
    recorder.uncovered = [f"{s.file}:{s.line} {s.what} in {s.function}: {s.code}" for s in result.uncovered]
    for site in result.uncovered if strict else []:
        owner = site.function if site.file == "tools.py" and site.function in tools else handlers.get(site.function)
        what = {"reject": "a rejection", "write": "a write", "branch": "a branch"}[site.what]
        recorder.fail(
            owner or site.file,
            "coverage",
            {"file": site.file, "line": site.line, "function": site.function},
            f"{what} run by a call with an expectation (an example's expect, a rule example, a scenario step)",
            f"{site.file}:{site.line} never ran under one: {site.code}",
        )
    if strict and not result.uncovered:
        recorder.passed(SERVER, "coverage")
    for tool in spec.tools:
        parts = [result.functions.get(f"tools.py:{tool.name}")]
        if isinstance(tool, CustomTool):
            parts.append(result.functions.get(f"handlers.py:{tool.handler}"))
        found = [p for p in parts if p is not None]
        if found and tool.name in recorder.tools:
            recorder.tools[tool.name].coverage = sum(found[1:], found[0])


async def verify_server(
    server_dir: Path, import_root: Path, options: VerifyOptions | None = None
) -> VerificationReport:
    """Verify the server in `server_dir`, which must be `import_root/servers/<name>`.

    A faulty server never raises here: every fault becomes a failure in the report.
    """
    options = options or VerifyOptions()
    started = time.perf_counter()
    spec = load_server_spec(server_dir)
    if server_dir.resolve() != (import_root / "servers" / spec.name).resolve():
        raise ValueError(f"{server_dir} is not {import_root}/servers/{spec.name}")
    recorder = _Recorder(spec)
    timings = Timings()
    escapes = options.static and _static(server_dir, recorder)
    timings.static_s = time.perf_counter() - started
    if not escapes:  # handlers that try to get out are refused as read, never run
        with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog, tempfile.TemporaryDirectory() as workdir:
            await _launch_and_check(spec, import_root, errlog, recorder, options, timings, Path(workdir))
    timings.total_s = time.perf_counter() - started
    return VerificationReport(
        server=spec.name,
        passed=not recorder.failures,
        verified_at=datetime.now(UTC).isoformat(timespec="seconds"),
        spec_hash=spec_hash(server_dir),
        code_hash=code_hash(server_dir),
        runtime_hash=runtime_hash(),
        files=file_hashes(server_dir),
        checks=recorder.server_checks,
        tools=list(recorder.tools.values()),
        failures=recorder.failures,
        advisories=recorder.advisories,
        uncovered=recorder.uncovered,
        timings=timings,
    )
