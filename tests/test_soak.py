"""`envfarm soak`: crashes and hangs are caught with their Python stack, a short soak over every server
holds, serving processes print their stack when they die natively, and the farm host survives varied
tool calls (issue 25)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from envfarm.bench.http_soak import SHAPES, draw_arguments, http_soak, render_http_markdown
from envfarm.cli import main
from envfarm.clients.connect import farm_process
from envfarm.servers.runtime.registry import load_registry
from envfarm.soak import STEPS, parse_seeds, render_markdown, run_seed, soak


def test_parse_seeds() -> None:
    assert parse_seeds("0:4") == [0, 1, 2, 3]
    assert parse_seeds("7") == [7]
    assert parse_seeds("3, 1,3,10:12") == [3, 1, 10, 11]
    for bad in ("a:b", "5:5", "1,,2", "x"):
        with pytest.raises(ValueError, match="--seeds"):
            parse_seeds(bad)


def test_the_command_refuses_bad_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["soak", "--seeds", "9:2"]) == 2
    assert "--seeds '9:2'" in capsys.readouterr().err
    assert main(["soak", "--seeds", "1", "--n", "0"]) == 2
    assert "--n" in capsys.readouterr().err
    assert main(["soak", "--seeds", "1", "--steps", "oracle"]) == 2
    assert "add tasks" in capsys.readouterr().err
    assert main(["soak", "--http", "0"]) == 2
    assert "--http" in capsys.readouterr().err


def test_a_native_crash_is_reported_with_its_python_stack(tmp_path: Path) -> None:
    code = "import ctypes\ndef dereference():\n    ctypes.string_at(0)\ndereference()\n"
    result = run_seed(5, [sys.executable, "-X", "faulthandler", "-c", code], tmp_path, timeout=60, steps=["tasks"])
    assert (result.seed, result.outcome, result.signal, result.failed_step) == (5, "crash", "SIGSEGV", "tasks")
    assert result.stack is not None and result.stack.startswith("Fatal Python error: Segmentation fault")
    assert "line 3 in dereference" in result.stack


def test_a_hang_is_reported_with_the_stack_it_is_stuck_in(tmp_path: Path) -> None:
    code = "import time\ndef stuck():\n    time.sleep(120)\nstuck()\n"
    started = time.perf_counter()
    result = run_seed(1, [sys.executable, "-X", "faulthandler", "-c", code], tmp_path, timeout=2, steps=STEPS)
    assert time.perf_counter() - started < 30
    assert (result.outcome, result.failed_step) == ("hang", "tasks")
    assert result.stack is not None and "line 3 in stuck" in result.stack


def test_a_clean_non_zero_exit_is_an_error_with_its_message(tmp_path: Path) -> None:
    code = "import sys\nprint('error: nothing to do', file=sys.stderr)\nsys.exit(2)\n"
    result = run_seed(2, [sys.executable, "-c", code], tmp_path, timeout=60, steps=["tasks"])
    assert (result.outcome, result.signal, result.stack) == ("error", None, None)
    assert result.detail is not None and "error: nothing to do" in result.detail


def test_a_short_soak_over_every_server() -> None:
    """Three seeds x every server of the installed farm: tasks, then the oracle's and the heuristic's
    rollouts on them, each seed in a faulthandler child. No crash, no hang, every step ran."""
    servers = len(load_registry(REPO).servers)
    report = soak([0, 1, 2], n=20, timeout=240, jobs=2)
    page = render_markdown(report)
    assert report.ok, page  # no crash, no hang, no traceback
    for seed in report.seeds:
        assert [s.step for s in seed.steps] == ["tasks", "oracle", "heuristic"], page
        assert all(step.exit_code == 0 and step.traceback is None for step in seed.steps), page
    assert servers >= 20 and "3 seeds x steps tasks, oracle, heuristic" in page


@pytest.mark.slow
def test_tasks_ends_for_every_seed_from_0_to_49() -> None:
    """Issue 27: `envfarm tasks` completes for seeds 0..49 (no crash, no hang, no traceback, and no clean
    failure either: every seed writes its tasks), each seed in a faulthandler child. Small n keeps it bounded
    (minutes); the acceptance run is `envfarm soak --seeds 0:50 --n 200 --steps tasks --jobs 1`."""
    report = soak(range(50), n=5, steps=["tasks"], timeout=300, jobs=2)
    page = render_markdown(report)
    assert report.ok, page
    assert report.outcomes == {"ok": 50}, page
    assert all([s.step for s in seed.steps] == ["tasks"] for seed in report.seeds), page


def test_a_stdio_server_prints_its_stack_when_it_dies_natively() -> None:
    """`python -m envfarm.servers.<name>` has faulthandler on: a SIGSEGV leaves the Python stack on stderr."""
    server = subprocess.Popen(
        [sys.executable, "-m", "envfarm.servers.clinic"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write((json.dumps(initialize) + "\n").encode())
    server.stdin.flush()
    assert b'"id":1' in server.stdout.readline()  # serving
    os.kill(server.pid, signal.SIGSEGV)
    _, stderr = server.communicate(timeout=30)
    assert server.returncode == -signal.SIGSEGV
    text = stderr.decode()
    assert "Fatal Python error: Segmentation fault" in text and "in run_stdio" in text, text


def test_the_farm_host_prints_its_stack_when_it_dies_natively(farm_root: Path, tmp_path: Path) -> None:
    """`envfarm serve --all` has faulthandler on too."""
    with open(tmp_path / "host.log", "w+b") as log, farm_process(farm_root, log=log) as farm:
        os.kill(farm.process.pid, signal.SIGSEGV)
        farm.process.wait(timeout=30)
        log.seek(0)
        text = log.read().decode()
    assert farm.process.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in text and "in cmd_serve" in text, text


def test_drawn_arguments_take_every_shape_and_always_travel_as_json() -> None:
    """Over every tool of the farm and many seeds: every shape is drawn, and every argument set is JSON
    an HTTP client can send (no lone surrogate, no NaN), however hostile its values."""
    schemas = []
    for server in load_registry(REPO).servers:
        tools = json.loads((REPO / "servers" / server.name / "tools.json").read_text())
        schemas += [t["input_schema"] for t in tools["tools"].values()]
    pool = {"department": ["engineering", "legal"], "doc_id": ["doc_1"]}
    seen: set[str] = set()
    for seed in range(2000):
        rng = random.Random(seed)
        shape, arguments = draw_arguments(rng, rng.choice(schemas), pool)
        seen.add(shape)
        json.dumps(arguments, ensure_ascii=False, allow_nan=False).encode("utf-8")
        if shape == "empty":
            assert arguments == {}
    assert seen == set(SHAPES)


@pytest.mark.slow
def test_the_farm_host_survives_varied_tool_calls() -> None:
    """400 varied calls over every server and three tokens, with issue 25's docs_drive reproduction
    (which killed the host at its second round): the host is alive after and every server answers.
    `envfarm soak --http 10000` is the full run."""
    report = http_soak(REPO, 400, tokens=3, seed=4)
    page = render_http_markdown(report)
    assert report.ok, page
    assert report.calls == 400 and report.repro_calls >= 5, page
    assert report.servers_answering == report.servers == len(load_registry(REPO).servers), page
    assert report.tools_listed == sum(s.tool_count for s in load_registry(REPO).servers), page
    assert set(report.shapes) == {*SHAPES, "repro"}, page
    assert report.outcomes.get("ok", 0) > 0 and report.outcomes.get("invalid_arguments", 0) > 0, page
