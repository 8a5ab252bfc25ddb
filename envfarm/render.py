"""How `envfarm build` and `envfarm verify` show their results: a table that fills in as servers
finish, then every failure in full (tool, check, call, expected, actual), then one summary line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from envfarm.factory.build import BuildResult, VerifyResult
from envfarm.factory.progress import ServerResult

ROW = "{name:<24} {tools:>5} {checks:>6} {failed:>6} {seconds:>7}  {result}"
HEADER = ROW.format(name="server", tools="tools", checks="checks", failed="failed", seconds="seconds", result="result")


def row(result: ServerResult) -> str:
    return ROW.format(
        name=result.name,
        tools=result.tools or "-",
        checks=result.report.check_count if result.report else "-",
        failed=len(result.problems) if result.report or result.problems else "-",
        seconds=f"{result.seconds:.1f}",
        result=result.status + (f" ({result.message.splitlines()[0]})" if result.message else ""),
    )


class ProgressTable:
    """An `on_result` callback for `build_all` / `verify_published`: a row per server as it finishes
    (the header comes with the first row, so a run refused up front prints no table)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, result: ServerResult, done: int, total: int) -> None:
        if done == 1:
            print(HEADER, file=self.out)
        print(f"{row(result)}  [{done}/{total}]", file=self.out, flush=True)


def failures(results: Sequence[ServerResult]) -> str:
    """Every server that did not succeed, with each of its problems in full."""
    blocks: list[str] = []
    for result in results:
        if result.ok:
            continue
        lines = [f"{result.name}: {result.status}" + (f": {result.message}" if result.message else "")]
        for f in result.problems:
            call = f" call={f.call}" if f.call else ""
            lines.append(f"  [{f.check}] {f.tool}{call}\n      expected: {f.expected}\n      actual:   {f.actual}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def summary(result: BuildResult | VerifyResult) -> str:
    if isinstance(result, BuildResult):
        unverified = "" if result.verified else " (without verification)"
        done = f"published into {result.farm_root}"
    else:
        unverified, done = "", "verified with no drift"
    return f"{result.succeeded} of {len(result.servers)} {done} in {result.seconds:.1f} s{unverified}"


def render(result: BuildResult | VerifyResult) -> str:
    """What follows the progress table: the failures, then the summary."""
    return "\n\n".join(part for part in (failures(result.servers), summary(result)) if part)
