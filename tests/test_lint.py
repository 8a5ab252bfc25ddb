"""The code passes its own linters: the hand-written packages and every generated server, with no
exclusion for generated code. Regeneration is byte-identical (test_codegen), so what is checked here
is what codegen writes."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from conftest import REPO


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *command], check=False, cwd=REPO, capture_output=True, text=True, timeout=600
    )


def test_ruff_finds_nothing() -> None:
    result = run("ruff", "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_enforces_the_sdk_rule_selection() -> None:
    """What `ruff check` above enforces is pyproject's selection, the MCP python-sdk's families (pycodestyle
    at our line length, pyflakes, isort, comprehensions, Perflint, pyupgrade), with nothing let off but
    PERF203 as there: no rule ignored per file and no folder excluded, generated servers included."""
    ruff = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]
    lint = ruff["lint"]
    assert {"C4", "E", "F", "I", "PERF", "UP"} <= set(lint["select"])
    assert set(lint.get("ignore", [])) <= {"PERF203"}
    assert not lint.get("per-file-ignores") and not ruff.get("exclude") and not ruff.get("extend-exclude")


def test_the_whole_tree_is_as_ruff_formats_it() -> None:
    """Hand-written code and the generated servers alike: codegen writes what `ruff format` would, so a
    regenerated farm needs no formatting pass."""
    result = run("ruff", "format", "--check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_finds_nothing() -> None:
    """Files and settings come from pyproject.toml; tools/typecheck.py gives mypy each file under its
    installed name (`clients/tasks.py` is `envfarm.clients.tasks`). The cache lives outside the checkout,
    one per checkout (mypy keys entries by module name, so checkouts with different venvs must not share
    one), and a second run on this machine takes seconds."""
    checkout = hashlib.sha256(str(REPO.resolve()).encode()).hexdigest()[:12]
    cache = str(Path(tempfile.gettempdir()) / f"envfarm-mypy-cache-{checkout}")
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "typecheck.py"), "--cache-dir", cache],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # The generated servers were checked, not skipped: mypy counted at least every module under servers/.
    generated = [p for p in (REPO / "servers").rglob("*.py") if "__pycache__" not in p.parts]
    found = re.search(r"no issues found in (\d+) source files", result.stdout)
    assert found and int(found[1]) >= len(generated), result.stdout
