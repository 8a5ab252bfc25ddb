"""A CI-sized sample of `envfarm fuzz`: every built-in server's tools under hostile, schema-driven
arguments, in-memory over the real SDK. The invariants must hold on every call (issue 12)."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO

from envfarm.fuzz import INVARIANTS, fuzz_farm
from envfarm.servers.runtime.registry import load_registry

CALLS_PER_SERVER = 10


def test_every_server_holds_the_invariants_on_a_fuzzed_sample() -> None:
    names = [s.name for s in load_registry(REPO).servers]
    report = fuzz_farm(REPO, names, CALLS_PER_SERVER * len(names), seed=12)
    assert report.calls == CALLS_PER_SERVER * len(names)
    assert [s.server for s in report.servers] == names
    assert report.violations == dict.fromkeys(INVARIANTS, 0), report.evidence
    # The sample reached both sides: calls that worked and calls the farm refused.
    assert report.outcomes.get("ok", 0) > 0 and report.outcomes.get("invalid_arguments", 0) > 0
    assert set(report.outcomes) <= {"ok", "rejected", "invalid_arguments", "server_error", "episode_expired"}


def test_the_fuzz_command_reports_counts_by_outcome(tmp_path: Path) -> None:
    from envfarm.cli import main

    out = tmp_path / "fuzz.json"
    assert main(["fuzz", "clinic", "--calls", "30", "--seed", "3", "--out", str(out)]) == 0
    assert '"calls": 30' in out.read_text()
