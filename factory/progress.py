"""Run one job per server, a few at a time, and report each outcome as it finishes.

Shared by `envfarm build` and `envfarm verify`. Nothing here prints: outcomes are `ServerResult`
models, and a caller that wants a live table passes `on_result` (the CLI's is `envfarm.render.ProgressTable`).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

import anyio
from pydantic import BaseModel, Field

from envfarm.factory.verify.report import Failure, VerificationReport

Status = Literal["published", "rejected", "invalid", "error", "passed", "failed"]


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


Job = tuple[str, Callable[[], Awaitable[ServerResult]]]
OnResult = Callable[[ServerResult, int, int], None]
"""Called with each result as it finishes, how many have finished, and how many there are."""


def default_jobs() -> int:
    """One job per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


async def run_jobs(jobs: Sequence[Job], concurrency: int, on_result: OnResult | None = None) -> list[ServerResult]:
    """Run `(name, job)` pairs, `concurrency` at a time; results come back in the order they finished.
    A job that raises (a bug in the factory, not in a server) becomes an `error` result; the others carry on."""
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
        if on_result is not None:
            on_result(result, len(results), len(jobs))

    async with anyio.create_task_group() as group:
        for name, job in jobs:
            group.start_soon(guarded, name, job)
    return results
