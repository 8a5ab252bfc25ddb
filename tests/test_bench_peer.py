"""`envfarm bench --peer`: the peer is a command line with its own interpreter, cold starts alternate who goes
first, and the peer's stderr goes to a log file, not into the bench's output."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from conftest import REPO
from test_foreign import mcp1_python  # noqa: F401 - the fixture: a venv with mcp 1.x, built once and cached

from envfarm.bench.peer import cold_start_order, compare_with_peer, peer_command

TODO = REPO / "tests" / "foreign" / "todo_server.py"
MCP1_TODO = REPO / "tests" / "foreign" / "mcp1" / "todo.py"


def test_a_python_file_runs_on_this_python_and_an_executable_alone() -> None:
    assert peer_command(str(TODO)) == [sys.executable, str(TODO.absolute())]
    assert peer_command(sys.executable) == [str(Path(sys.executable).absolute())]


def test_a_command_line_keeps_its_interpreter_and_makes_its_files_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    (tmp_path / "my server.py").write_text("")
    monkeypatch.chdir(tmp_path)
    argv = peer_command("venv/bin/python 'my server.py' --port 3 -v")
    assert argv == [str(python), str(tmp_path / "my server.py"), "--port", "3", "-v"]
    assert peer_command("python3 -m some_server") == ["python3", "-m", "some_server"]  # a program on PATH


@pytest.mark.parametrize(
    ("peer", "problem"),
    [("", "empty"), ("   ", "empty"), ("no-such-program-xyz --flag", "neither a file"), ("python 'unclosed", "not a")],
)
def test_a_bad_peer_is_refused_naming_what_is_wrong(peer: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        peer_command(peer)


@pytest.mark.parametrize("rounds", [1, 2, 5, 8])
def test_cold_start_rounds_alternate_who_goes_first(rounds: int) -> None:
    order = cold_start_order(rounds)
    assert len(order) == rounds and all(sorted(pair) == ["ours", "peer"] for pair in order)
    firsts = [pair[0] for pair in order]
    assert firsts[::2] == ["ours"] * len(firsts[::2]) and firsts[1::2] == ["peer"] * len(firsts[1::2])


@pytest.mark.slow
def test_an_mcp1_server_on_its_own_interpreter_is_measured_and_its_logs_kept_aside(
    mcp1_python: Path,  # noqa: F811
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The mcp 1.x todo server does not import on our interpreter (mcp 2.x); as a command it runs on its own
    venv. FastMCP 1.x logs every request to stderr: that goes to the log, not to the bench's output."""
    log = tmp_path / "bench.peer.log"
    command = shlex.join([str(mcp1_python), str(MCP1_TODO)])
    result = compare_with_peer(REPO, command, rounds=2, calls=5, episodes=2, log=log)
    assert result.peer == [str(mcp1_python), str(MCP1_TODO)] and result.log == str(log)
    assert result.read_tool == {"ours": "search_doctors", "peer": "get_lists"}
    figures = [result.cold_start_s_p50, result.read_call_ms_p50, result.isolated_reset_ms_p50]
    assert all(f["ours"] > 0 and f["peer"] > 0 for f in [*figures, result.isolated_episodes_per_s])
    logged = log.read_text()
    assert "Processing request of type" in logged
    out, err = capfd.readouterr()
    assert "Processing request of type" not in out + err
