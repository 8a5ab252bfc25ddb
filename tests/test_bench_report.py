"""The bench's verdict on the 2025-era session cost: judged from the isolated episodes of both eras (issue 31's
acceptance), the concurrent-sessions runs' ratio reported beside it."""

from __future__ import annotations

import pytest

from envfarm.bench.report import (
    ERA_COST_TARGET,
    BenchReport,
    IsolatedEras,
    Machine,
    SessionRun,
    era_cost,
    render_markdown,
)
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


def isolated(legacy_ms: float, modern_ms: float, failed: int = 0) -> IsolatedEras:
    return IsolatedEras(
        episodes_per_block=100,
        rounds=4,
        server_cpu_ms_per_episode={ERA_NAMES["auto"]: modern_ms, ERA_NAMES["legacy"]: legacy_ms},
        failed={ERA_NAMES["auto"]: 0, ERA_NAMES["legacy"]: failed},
        seconds=12.0,
    )


@pytest.mark.parametrize(("legacy_ms", "verdict"), [(5.0, "pass"), (5.0 * ERA_COST_TARGET, "pass"), (6.6, "fail")])
def test_the_2025_era_may_cost_at_most_the_target_times_the_2026_era(legacy_ms: float, verdict: str) -> None:
    judged, _ = era_cost(isolated(legacy_ms, 5.0), [run("auto", 5.0), run("legacy", 5.0)])
    assert judged.verdict == verdict
    assert judged.measured == f"{legacy_ms / 5.0:.2f}x ({legacy_ms:.2f} vs 5.00 ms)"
    assert "4 blocks of 100 episodes per era, one at a time" in judged.how


@pytest.mark.parametrize(
    ("concurrent_legacy_ms", "isolated_legacy_ms", "verdict"), [(9.0, 5.5, "pass"), (5.0, 7.0, "fail")]
)
def test_the_verdict_follows_the_isolated_episodes_and_the_concurrent_ratio_is_reported_beside_it(
    concurrent_legacy_ms: float, isolated_legacy_ms: float, verdict: str
) -> None:
    """A concurrent ratio over the target does not fail the row, nor does one under it pass it: only the isolated
    figure is judged; the concurrent one stays in the table, labelled as not judged."""
    judged, concurrent = era_cost(
        isolated(isolated_legacy_ms, 5.0), [run("auto", 6.0), run("legacy", concurrent_legacy_ms)]
    )
    assert judged.verdict == verdict
    assert "isolated" in judged.metric
    assert concurrent.verdict == "n/a" and "not judged" in concurrent.target and "concurrent" in concurrent.metric
    assert concurrent.measured == f"{concurrent_legacy_ms / 6.0:.2f}x ({concurrent_legacy_ms:.2f} vs 6.00 ms)"


def test_a_failed_isolated_episode_fails_the_verdict_whatever_the_ratio() -> None:
    judged, _ = era_cost(isolated(5.0, 5.0, failed=2), [])
    assert judged.verdict == "fail"
    assert judged.measured.endswith("; 2 failed")


def test_without_both_eras_there_is_no_verdict() -> None:
    assert [v.verdict for v in era_cost(None, [])] == ["n/a", "n/a"]
    assert era_cost(isolated(5.0, 0.0), [])[0].verdict == "n/a"
    assert era_cost(None, [run("auto", 5.0)])[1].measured == "not measured"
    assert era_cost(None, [run("legacy", 5.0)])[1].measured == "not measured"
    assert era_cost(None, [run("auto", 0.0), run("legacy", 5.0)])[1].measured == "not measured"


def test_the_markdown_shows_both_eras_isolated_figures() -> None:
    """The report's own section lists each era's isolated CPU per episode next to the concurrent table."""
    report = BenchReport.model_construct(
        command="envfarm bench",
        quick=False,
        farm="farm",
        servers=["clinic"],
        machine=Machine(platform="linux", python="3.11", cpu_count=2, cpu_model="cpu", memory_mb=1024, mcp="2.3.0"),
        targets=era_cost(isolated(6.0, 5.0), [run("auto", 5.0), run("legacy", 7.0)]),
        concurrent_sessions_detail=[run("auto", 5.0), run("legacy", 7.0)],
        isolated_eras=isolated(6.0, 5.0),
        peer=None,
        workers=None,
    )
    table = render_markdown(report)
    assert f"| {ERA_NAMES['legacy']} | 6.0 ms | 0 |" in table
    assert f"| {ERA_NAMES['auto']} | 5.0 ms | 0 |" in table
    assert "| 2025-era session: server CPU per episode, concurrent | reported, not judged" in table


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
