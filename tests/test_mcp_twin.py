"""`envfarm import mcp`: a stateful twin of a live MCP server (here the clinic, over stdio), from its
listing and what its argument-free reads return; the twin verifies."""

from __future__ import annotations

import json
import re
import sys
from functools import partial
from pathlib import Path

import anyio
import pytest
import yaml

from envfarm.cli import main
from envfarm.factory.build import build_all
from envfarm.render import render


def config(tmp_path: Path, farm_root: Path) -> Path:
    path = tmp_path / "mcp.json"
    command = {"command": sys.executable, "args": ["-m", "envfarm.cli", "--farm", str(farm_root), "serve", "clinic"]}
    path.write_text(json.dumps({"mcpServers": {"clinic": command}}), encoding="utf-8")
    return path


def test_a_live_server_becomes_a_verified_twin(
    tmp_path: Path, farm_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "twin"
    assert (
        main(["import", "mcp", str(config(tmp_path, farm_root)), "clinic", "--as", "clinic_twin", "--out", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    assert "not inferred: reschedule_appointment" in printed  # its effect is not in its name
    spec = yaml.safe_load((out / "spec.yaml").read_text(encoding="utf-8"))
    live = json.loads((farm_root / "servers" / "clinic" / "seed.json").read_text(encoding="utf-8"))
    # The reads' records are the seed: the twin's patients are the live server's (as far as it lists them).
    twin_ids = [row["patient_id"] for row in spec["seed"]["patients"]]
    assert twin_ids == [row["patient_id"] for row in live["patients"]][: len(twin_ids)] and len(twin_ids) >= 20
    # The live ids are opaque, so the twin's are too (new ones keep the live prefix): none is guessable.
    assert spec["entities"]["patients"]["id_format"] == "pat_{:04d}" and spec["ids"] == "opaque"
    assert not re.findall(r"\b[a-z]+_\d{3,4}\b", (out / "spec.yaml").read_text(encoding="utf-8"))
    effects = {t["name"]: t["effect"] for t in spec["tools"]}
    assert (
        effects["get_slot"] == "get" and effects["book_appointment"] == "create" and effects["find_patient"] == "search"
    )
    assert spec["principal"]["kind"] == "staff" and (out / "policy.md").is_file()
    built = anyio.run(partial(build_all, [out], tmp_path / "farm"))
    assert built.ok, render(built)


def test_an_unknown_server_is_a_clear_error(
    tmp_path: Path, farm_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "mcp", str(config(tmp_path, farm_root)), "nope"]) == 2
    assert "no server 'nope'; it has clinic" in capsys.readouterr().err
