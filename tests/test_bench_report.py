"""The bench's verdict on the 2025-era session cost, judged from the concurrent-sessions runs of both eras."""

from __future__ import annotations

import pytest

from envfarm.bench.report import ERA_COST_TARGET, SessionRun, era_cost
from envfarm.bench.sessions import ERA_NAMES


def run(era: str, cpu_ms: float) -> SessionRun:
    return SessionRun(
        era=ERA_NAMES[era],
        sessions=10,
        completed=10,
        leaks=0,
        errors=0,
        error_samples=[],
        seconds=1.0,
        server_cpu_ms_per_episode=cpu_ms,
        server_rss_mb_after=100.0,
    )


@pytest.mark.parametrize(("legacy_ms", "verdict"), [(5.0, "pass"), (5.0 * ERA_COST_TARGET, "pass"), (6.6, "fail")])
def test_the_2025_era_may_cost_at_most_the_target_times_the_2026_era(legacy_ms: float, verdict: str) -> None:
    row = era_cost([run("auto", 5.0), run("legacy", legacy_ms)])
    assert row.verdict == verdict
    assert row.measured == f"{legacy_ms / 5.0:.2f}x ({legacy_ms:.2f} vs 5.00 ms)"


def test_without_both_eras_there_is_no_verdict() -> None:
    assert era_cost([run("auto", 5.0)]).verdict == "n/a"
    assert era_cost([run("legacy", 5.0)]).verdict == "n/a"
    assert era_cost([run("auto", 0.0), run("legacy", 5.0)]).verdict == "n/a"


def test_a_failed_bench_names_its_cause_in_one_line() -> None:
    """A task group's failure arrives as an ExceptionGroup; its line names every innermost exception."""
    from envfarm.bench import failure_cause

    inner = ExceptionGroup("sessions", [RuntimeError("farm host exited with 1"), TimeoutError("no answer in 30 s")])
    assert failure_cause(ExceptionGroup("bench", [inner, KeyError("legacy")])) == (
        "RuntimeError: farm host exited with 1; TimeoutError: no answer in 30 s; KeyError: 'legacy'"
    )
    assert failure_cause(ValueError("bad")) == "ValueError: bad"


def test_leaks_are_named_by_era() -> None:
    from envfarm.bench import leaked

    class Report:
        concurrent_sessions_detail = [run("auto", 5.0), run("legacy", 6.0).model_copy(update={"leaks": 3})]

    assert leaked(Report()) == f"{ERA_NAMES['legacy']}: 3 of 10 sessions"  # type: ignore[arg-type]
    Report.concurrent_sessions_detail = [run("auto", 5.0)]
    assert leaked(Report()) == ""  # type: ignore[arg-type]
