"""Coverage as a verification gate: every rejection, every write and every branch of a custom handler
must run under a call that has an expectation.

The server under test runs as `python -m envfarm.factory.verify.coverage_gate --data F --pid P --include ...
-- <runtime entry-point args>` (`--farm FOLDER NAME`, see `envfarm.servers.runtime.cli.farm_main`):
coverage.py (branch mode, only the server's handlers.py and tools.py) starts before the server is imported,
and once the first tool call has ended it traces only while a call runs (the runtime's TOOL_CALL_EVENT audit
events): the SDK's JSON-RPC frames in between never reach the tracer. Lines are recorded in one of two dynamic
contexts: `checks` (the contract checks, seed-built calls, steps without an expectation) and `expect`
(examples with `expect`, rule examples, scenario steps with `expect`). The verifier switches between them with
SIGUSR1 / SIGUSR2 before a call; its next request cannot be read before the signal handler ran, since both
happen on the server's main thread.

After the server exits, `gate` reads the data and lists every site no expectation ran, naming file and
line, plus per-function coverage for the report.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envfarm.factory.verify.sites import behaviour_sites, functions
from envfarm.servers.runtime.pipeline import TOOL_CALL_EVENT
from envfarm.servers.runtime.python_ast import parse_module, parsing

EXPECT = "expect"
CHECKS = "checks"
SIGNALS = {EXPECT: signal.SIGUSR1, CHECKS: signal.SIGUSR2}
GATED_FILES = ("handlers.py", "tools.py")


class Uncovered(BaseModel):
    """A site that no call with an expectation ran."""

    file: str
    line: int
    function: str
    what: str = Field(description="'reject', 'write' or 'branch'")
    code: str


class FunctionCoverage(BaseModel):
    """Statements and branches of one function: how many exist, ran at all, and ran under an expectation."""

    statements: int = 0
    executed: int = 0
    by_expectations: int = 0
    branches: int = 0
    branches_by_expectations: int = 0

    def __add__(self, other: FunctionCoverage) -> FunctionCoverage:
        return FunctionCoverage(**{k: v + getattr(other, k) for k, v in self.model_dump().items()})


class GateResult(BaseModel):
    uncovered: list[Uncovered] = Field(default_factory=list)
    functions: dict[str, FunctionCoverage] = Field(default_factory=dict, description="'file:function' -> coverage")


def gate_args(data_file: Path, pid_file: Path, server_dir: Path, serve_args: Sequence[str]) -> list[str]:
    """The arguments of `python -m envfarm.factory.verify.coverage_gate` that run the server under coverage."""
    include = [str((server_dir / name).resolve()) for name in GATED_FILES]
    return [
        "--data",
        str(data_file),
        "--pid",
        str(pid_file),
        *[f"--include={path}" for path in include],
        "--",
        *serve_args,
    ]


def switch(pid: int, context: str) -> None:
    """Ask the server to record what runs next under `context`."""
    os.kill(pid, SIGNALS[context])


class CallWindow:
    """An audit hook that pauses coverage's collector between tool calls: tracing runs from the start
    (the server's start-up, a tools module imported then, is recorded as before) until the first call
    ends, then only from a call's "begin" to its "end" (counted, should calls ever overlap)."""

    def __init__(self, collector: Any) -> None:
        self.collector = collector
        self.running = 0
        self.tracing = True

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event != TOOL_CALL_EVENT:
            return
        if args[1] == "begin":
            self.running += 1
            if not self.tracing:
                self.collector.resume()
                self.tracing = True
        elif self.running:
            self.running -= 1
            if not self.running and self.tracing:
                self.collector.pause()
                self.tracing = False


def main(argv: Sequence[str] | None = None) -> int:
    """Run `python -m envfarm.servers.runtime <args>` under branch coverage, saving the data however the
    server stops."""
    import coverage

    parser = argparse.ArgumentParser(prog="python -m envfarm.factory.verify.coverage_gate")
    parser.add_argument("--data", required=True)
    parser.add_argument("--pid", required=True)
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    from envfarm.factory.sandbox.guard import enter
    from envfarm.servers.runtime import server  # noqa: F401 - the runtime untraced: only the server is gated
    from envfarm.servers.runtime.cli import farm_main

    cov = coverage.Coverage(data_file=args.data, branch=True, include=args.include, config_file=False)
    cov.start()
    cov.switch_context(CHECKS)
    for context, signum in SIGNALS.items():
        signal.signal(signum, lambda *_, context=context: cov.switch_context(context))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.addaudithook(CallWindow(cov._collector))  # coverage.py has no public pause; its Collector does
    Path(args.pid).write_text(str(os.getpid()), encoding="utf-8")
    try:
        enter(rest, writable=[Path(args.data).parent])  # the server runs sandboxed; coverage may save its data
        return farm_main(rest)
    finally:
        cov.stop()
        cov.save()


def _arcs(analysis: Any) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """(every branch arc the file has, the ones the data saw)."""
    possible = {(a, b) for a, b in analysis.arc_possibilities if a in analysis._branch_lines()}
    return possible, {arc for arc in analysis.arcs_executed if arc in possible}


def gate(data_file: Path, server_dir: Path) -> GateResult:
    """Sites of handlers.py and tools.py no expectation ran, and coverage per function. Every branch of
    the custom handlers is gated; in generated tools.py only rejections and writes are."""
    import coverage

    result = GateResult()
    cov = coverage.Coverage(data_file=str(data_file), branch=True, config_file=False)
    cov.load()
    data = cov.get_data()
    for name in GATED_FILES:
        path = (server_dir / name).resolve()
        if not path.is_file():
            continue
        source = path.read_text(encoding="utf-8")
        owner = functions(parse_module(source))
        with parsing():  # coverage's analysis parses the file too
            data.set_query_contexts(None)
            everything = cov._analyze(str(path))
            data.set_query_contexts([EXPECT])
            expected = cov._analyze(str(path))
        ran = set(expected.executed)
        for site in behaviour_sites(source):
            if site.line not in ran:
                result.uncovered.append(
                    Uncovered(file=name, line=site.line, function=site.function, what=site.kind, code=site.code)
                )
        possible, taken = _arcs(expected)
        if name == "handlers.py":
            lines = source.splitlines()
            for start, end in sorted(possible - taken):
                target = f"line {end}" if end > 0 else "the function's exit"
                code = f"{lines[start - 1].strip()[:60]}  -> {target}"
                result.uncovered.append(
                    Uncovered(file=name, line=start, function=owner.get(start, "<module>"), what="branch", code=code)
                )
        for function in sorted(set(owner.values())):
            mine = {line for line, f in owner.items() if f == function}
            statements = set(everything.statements) & mine
            arcs = {arc for arc in possible if arc[0] in mine}
            result.functions[f"{name}:{function}"] = FunctionCoverage(
                statements=len(statements),
                executed=len(statements & set(everything.executed)),
                by_expectations=len(statements & ran),
                branches=len(arcs),
                branches_by_expectations=len(arcs & taken),
            )
    return result


if __name__ == "__main__":
    sys.exit(main())
