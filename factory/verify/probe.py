"""One run of the verifier against a launched server: what it has learned so far, and the calls it makes.

Every check (the contract checks of `tool_checks`, the expectations of `behaviour`, the episode checks of
`isolation`, the lists of `paging`) drives the server through a `Probe`: a tool call on an episode, judged
for crashes and output on the streams on the way; an episode's state hash and diff; a reset, to the seed
or to a moved state. The `Recorder` collects what each check found, for the report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import jsonschema
import mcp_types as types

from envfarm.factory.spec import EnvironmentSpec, ToolKind
from envfarm.factory.verify.call_plan import SeedView, ToolPlan
from envfarm.factory.verify.coverage_gate import CHECKS
from envfarm.factory.verify.report import Failure, Outcome, ToolCoverage, VerifyOptions
from envfarm.factory.verify.session import CallResult, ServerSession, SessionBroken
from envfarm.servers.runtime.control import ErrorKind, Method, StateResult

PRINCIPAL_KEY = "principal"  # in an example: act as this principal instead of the server's default
AS = "~as~"  # joins an episode name and the principal it acts for
SERVER = "*"
_T = TypeVar("_T")


def show(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


def as_principal(arguments: dict[str, Any], episode: str) -> tuple[dict[str, Any], str, str | None]:
    """An example may act as another principal (`principal` beside its arguments): it then runs on
    an episode of its own, named after that principal. Returns (arguments, episode, principal)."""
    principal = arguments.get(PRINCIPAL_KEY)
    if principal is None:
        return arguments, episode, None
    rest = {k: v for k, v in arguments.items() if k != PRINCIPAL_KEY}
    return rest, f"{episode}{AS}{principal}", str(principal)


def focused(items: list[_T], first: Callable[[_T], bool]) -> list[_T]:
    """`items` with those `first` picks moved to the front, each part in its own order."""
    return [i for i in items if first(i)] + [i for i in items if not first(i)]


class Stop(Exception):
    """The server can no longer be driven: finish the report with what was found."""


class Recorder:
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
            raise Stop

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


class Probe:
    """The verifier's side of one connection: the spec, the planned calls and the seed, what the checks so far
    established (the listing, the seed's hash, the calls that succeeded per tool), and the calls themselves."""

    def __init__(
        self,
        spec: EnvironmentSpec,
        session: ServerSession,
        recorder: Recorder,
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
        self.listed: dict[str, types.Tool] = {}  # by the listing check
        self.seed_hash = ""  # by the listing check
        self.valid: dict[str, list[dict[str, Any]]] = {}  # by the valid-call check: the calls that succeeded
        self.opened: set[str] = set()  # episodes already reset to act for an example's principal
        self.context = CHECKS
        self.switch: Callable[[str], None] | None = None

    def use_context(self, context: str) -> None:
        """Tell the coverage gate whether the next calls run under an expectation."""
        if self.switch is not None and context != self.context:
            self.switch(context)
            self.context = context

    async def state(self, episode: str) -> StateResult:
        try:
            return await self.session.state(episode)
        except SessionBroken as exc:
            self.recorder.fail(SERVER, exc.reason, {"method": Method.STATE, "episode": episode}, "a result", exc.detail)
            raise Stop from exc

    async def reset(
        self, episode: str, state: dict[str, list[dict[str, Any]]] | None = None, principal: str | None = None
    ) -> None:
        principal = principal or (episode.split(AS, 1)[1] if AS in episode else None)
        try:
            await self.session.reset(episode, principal, state)
        except SessionBroken as exc:
            self.recorder.fail(SERVER, exc.reason, {"method": Method.RESET, "episode": episode}, "a result", exc.detail)
            raise Stop from exc

    async def call(self, tool: str, arguments: dict[str, Any], episode: str, *, moved: str = "") -> CallResult:
        """One tool call; a crash or output on the streams fails the tool, a hang stops the run. On a `moved`
        state (a seed value moved to a rule's edge, which no tool may be able to write) a crash is only
        advised: the handler may rightly assume what every tool keeps true."""
        call = {"tool": tool, "arguments": arguments, "episode": episode}
        if tool in self.recorder.tools:
            self.recorder.tools[tool].calls += 1
        arguments, episode, principal = as_principal(arguments, episode)
        if principal is not None and episode not in self.opened:
            await self.reset(episode)
            self.opened.add(episode)
        try:
            result = await self.session.call(tool, arguments, episode)
        except SessionBroken as exc:
            self.recorder.fail(tool, exc.reason, call, f"a result within {self.options.call_timeout:g} s", exc.detail)
            raise Stop from exc
        quiet = not result.streams
        self.recorder.judge(
            tool, "output_stream", quiet, call, "nothing written to stdout or stderr", show(result.streams), once=True
        )
        crashed = result.kind == ErrorKind.SERVER_ERROR
        if moved:
            self.recorder.advise(
                tool, "crash_on_moved_state", not crashed, {**call, "state": moved}, "no exception", show(result.text)
            )
        else:
            self.recorder.judge(tool, "crash", not crashed, call, "no exception inside the server", show(result.text))
        return result

    def check_output(self, tool: ToolKind, result: CallResult, call: dict[str, Any]) -> None:
        """A successful result validates against the output schema the server listed for the tool."""
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

    async def run_all(self, calls: list[tuple[str, dict[str, Any]]], episode: str) -> list[Any]:
        return [(await self.call(tool, arguments, episode)).output for tool, arguments in calls]
