"""The README's test command is the one CI runs, so a newcomer runs what CI runs."""

from __future__ import annotations

from conftest import REPO


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in ci.splitlines() if "pytest" in line)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    assert command.strip() in first_block.splitlines()
