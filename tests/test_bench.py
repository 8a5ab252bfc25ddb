"""`envfarm bench --quick` runs end to end and writes the JSON report and its markdown table.

Numbers are not judged here (timed tests are flaky); only that every measurement ran and was recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envfarm.bench import BenchReport

pytestmark = pytest.mark.slow

KEYS = {
    "reset_ms_p50",
    "call_ms_p50",
    "farm_start_s",
    "farm_rss_mb",
    "concurrent_sessions",
    "isolated_eras",
    "build_all_s",
    "machine",
    "episodes_per_s",
    "overhead_ms_p50",
}


def test_quick_bench_writes_every_key(farm_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports" / "bench.json"
    command = [sys.executable, "-m", "envfarm.cli", "--farm", str(farm_root), "bench", "--quick", "--out", str(out)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    data = json.loads(out.read_text())
    assert KEYS <= set(data)
    report = BenchReport.model_validate(data)
    assert set(report.call_ms_p50) >= {"inprocess", "stdio", "http", "http_legacy"}
    assert report.reset_stdio_ms_p50 > 0
    assert set(report.isolated_episodes_per_s) == {"memory", "stdio", "http", "floor_memory"}
    assert all(rate > 0 for rate in report.isolated_episodes_per_s.values())
    assert report.episodes_per_s > 0 and report.episodes_detail.episodes >= 50
    assert report.servers == ["clinic", "clinic_annex"]
    assert report.build_all_s is not None, report.build_all_detail
    assert [r.leaks for r in report.concurrent_sessions_detail] == [0, 0]
    assert report.concurrent_sessions == min(r.sessions for r in report.concurrent_sessions_detail)
    isolated = report.isolated_eras
    assert isolated is not None and isolated.rounds == 2 and isolated.episodes_per_block == 10
    assert set(isolated.failed.values()) == {0}, isolated.error_samples
    assert all(ms > 0 for ms in isolated.server_cpu_ms_per_episode.values())
    assert len(isolated.server_cpu_ms_per_episode) == 2
    assert set(report.overhead_ms_p50) == set(report.call_ms_p50)
    assert all(
        report.overhead_ms_p50[k] == round(report.call_ms_p50[k] - report.sdk_floor_ms_p50[k], 4)
        for k in report.call_ms_p50
    )

    table = out.with_suffix(".md").read_text()
    assert "| metric | target | measured | verdict | how |" in table
    assert all(f"| {row.metric} |" in table for row in report.targets)


def test_the_peer_comparison_runs_a_foreign_server_beside_ours() -> None:
    """`--peer`: the foreign todo server through the same client; every figure measured on both sides."""
    from conftest import REPO

    from envfarm.bench.peer import compare_with_peer

    result = compare_with_peer(REPO, str(REPO / "tests" / "foreign" / "todo_server.py"), rounds=1, calls=10, episodes=2)
    assert result.read_tool == {"ours": "search_doctors", "peer": "search_projects"}
    figures = [result.cold_start_s_p50, result.read_call_ms_p50, result.isolated_reset_ms_p50]
    assert all(f["ours"] > 0 and f["peer"] > 0 for f in [*figures, result.isolated_episodes_per_s])
    assert set(result.ratios) == {"cold_start", "read_call", "isolated_reset", "isolated_episodes_per_s"}
    assert result.ratios["read_call"] == round(result.read_call_ms_p50["ours"] / result.read_call_ms_p50["peer"], 3)
