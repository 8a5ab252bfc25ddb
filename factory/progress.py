"""Run one job per server, a few at a time, and show a table that fills in as they finish.

Shared by `envfarm build` and `envfarm verify`: a row per server (tools, checks run, checks failed,
seconds, result), then every failure in full (tool, check, call, expected, actual).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, TextIO

import anyio
from pydantic import BaseModel, Field

from factory.verify import Failure, VerificationReport

Status = Literal["published", "rejected", "invalid", "error", "passed", "failed"]
ROW = "{name:<24} {tools:>5} {checks:>6} {failed:>6} {seconds:>7}  {result}"


class ServerResult(BaseModel):
    """What happened to one server in a build or a re-verification."""

    name: str
    status: Status
    tools: int = 0
    seconds: float = 0.0
    report: VerificationReport | None = None
    problems: list[Failure] = Field(default_factory=list)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("published", "passed")

    def row(self) -> str:
        return ROW.format(
            name=self.name,
            tools=self.tools or "-",
            checks=self.report.check_count if self.report else "-",
            failed=len(self.problems) if self.report or self.problems else "-",
            seconds=f"{self.seconds:.1f}",
            result=self.status + (f" ({self.message.splitlines()[0]})" if self.message else ""),
        )


def default_jobs() -> int:
    """One job per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def print_failures(results: Sequence[ServerResult], out: TextIO) -> None:
    for result in results:
        if result.ok:
            continue
        print(f"\n{result.name}: {result.status}" + (f": {result.message}" if result.message else ""), file=out)
        for f in result.problems:
            call = f" call={f.call}" if f.call else ""
            print(f"  [{f.check}] {f.tool}{call}\n      expected: {f.expected}\n      actual:   {f.actual}", file=out)


Job = tuple[str, Callable[[], Awaitable[ServerResult]]]


async def run_jobs(jobs: Sequence[Job], concurrency: int, out: TextIO) -> list[ServerResult]:
    """Run `(name, job)` pairs, `concurrency` at a time, printing each row as it finishes. A job that
    raises (a bug in the factory, not in a server) becomes an `error` row; the others carry on."""
    print(
        ROW.format(name="server", tools="tools", checks="checks", failed="failed", seconds="seconds", result="result"),
        file=out,
    )
    results: list[ServerResult] = []
    limiter = anyio.CapacityLimiter(concurrency)

    async def guarded(name: str, job: Callable[[], Awaitable[ServerResult]]) -> None:
        async with limiter:
            try:
                result = await job()
            except Exception as exc:  # noqa: BLE001 - report the factory bug, keep going
                result = ServerResult(
                    name=name, status="error", message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
                )
        results.append(result)
        print(f"{result.row()}  [{len(results)}/{len(jobs)}]", file=out, flush=True)

    async with anyio.create_task_group() as group:
        for name, job in jobs:
            group.start_soon(guarded, name, job)
    return results
