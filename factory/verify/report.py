"""What a verification takes and gives: its options, and the report stored beside a published server.

The models here are the verifier's contract with the rest of the factory (the build reads the report's
failures, the publisher and drift checks its hashes); the checks themselves are in `verifier` and the
modules it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from envfarm.factory.publish import REPORT_FILE
from envfarm.factory.verify.coverage_gate import FunctionCoverage

VERIFIER_VERSION = "1.0"
Outcome = Literal["passed", "failed", "advisory"]  # advisory: a finding reported, not (yet) blocking


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
