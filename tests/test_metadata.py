"""`envfarm import metadata`: EnvFactory-style metadata becomes a spec. Offline it infers the CRUD tools
from names and schemas (and the result verifies) and names what it could not infer; with a model the
verify-and-revise loop runs in the build folder and the converged spec folder is written."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from unittest.mock import ANY

import anyio
import pytest
import yaml
from scripted_openai import scripted_openai
from test_generate import BUGGY_HANDLERS, GOOD_HANDLERS, draft
from test_openapi import no_mutation_sample

from envfarm.cli import main
from envfarm.factory.build import build_all
from envfarm.factory.importers.metadata import import_metadata_offline, load_metadata
from envfarm.factory.importers.openapi import OpenAPIError, write_spec_folder
from envfarm.render import render

HOTEL = Path(__file__).parent / "data" / "metadata" / "hotel_booking.json"


def test_offline_infers_the_crud_tools_and_names_the_rest(tmp_path: Path) -> None:
    [meta] = load_metadata(HOTEL)
    result = import_metadata_offline(meta, HOTEL)
    assert [(t.tool, t.effect, t.entity) for t in result.report.tools] == [
        ("search_hotels", "search", "hotels"),
        ("get_hotel", "get", "hotels"),
        ("create_booking", "create", "bookings"),
        ("get_booking", "get", "bookings"),
        ("update_booking", "update", "bookings"),
        ("delete_booking", "delete", "bookings"),
    ]
    [skipped] = result.report.skipped
    assert skipped.path == "cancel_booking" and "`cancel` does not say what it changes" in skipped.reason
    spec = result.spec
    assert spec["entities"]["bookings"]["columns"]["hotel_id"]["ref"] == "hotels.hotel_id"
    assert spec["entities"]["bookings"]["columns"]["status"]["enum"] == ["confirmed", "cancelled"]
    # No credentials in metadata: the agent is staff serving customers, with a policy drafted from the tools.
    assert spec["principal"]["kind"] == "staff" and "`create_booking` needs" in result.policy
    assert spec["scenarios"][0]["steps"][0] == {"tool": "create_booking", "name": "made", "args": ANY}
    write_spec_folder(result, tmp_path / "spec")
    assert "cancel_booking" in (tmp_path / "spec" / "IMPORT.md").read_text(encoding="utf-8")
    assert (tmp_path / "spec" / "policy.md").read_text(encoding="utf-8") == result.policy
    # `envfarm build` takes the metadata file itself, imported the same way.
    built = anyio.run(partial(build_all, [HOTEL], tmp_path / "farm"))
    assert built.ok and [r.name for r in built.servers] == ["hotel_booking"], render(built)
    published = json.loads((tmp_path / "farm" / "servers" / "hotel_booking" / "spec.json").read_text())
    assert [t["name"] for t in published["tools"]] == [t["name"] for t in spec["tools"]]


def test_malformed_metadata_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"class_name": "X", "tools": [{"description": "no name"}]}]), encoding="utf-8")
    with pytest.raises(OpenAPIError, match=r"\[0\]\.tools\.0\.name: Field required"):
        load_metadata(bad)
    only_actions = tmp_path / "actions.json"
    only_actions.write_text(json.dumps({"class_name": "Robot", "tools": [{"name": "wave_arm"}]}), encoding="utf-8")
    with pytest.raises(OpenAPIError, match="wave_arm: the verb `wave` does not say what it changes"):
        import_metadata_offline(load_metadata(only_actions)[0], only_actions)


def test_the_offline_command_writes_a_spec_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "metadata", str(HOTEL), "--out", str(tmp_path / "hotel")]) == 0
    printed = capsys.readouterr().out
    assert "6 tools inferred" in printed and "not inferred: cancel_booking" in printed
    assert yaml.safe_load((tmp_path / "hotel" / "spec.yaml").read_text(encoding="utf-8"))["name"] == "hotel_booking"


def test_with_a_model_the_converged_round_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The scripted model's first draft crashes in a handler; its revision verifies; the spec folder
    written is the second round's, and nothing was published anywhere but the build folder's scratch farm."""
    out, builds = tmp_path / "shed", tmp_path / "builds"
    with scripted_openai([draft(BUGGY_HANDLERS), draft(GOOD_HANDLERS)]) as server:
        args = ["import", "metadata", str(HOTEL), "--name", "shed_proposed", "--out", str(out)]
        code = main([*args, "--model", "openai:scripted", "--base-url", server.base_url, *no_mutation_sample(builds)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "published after 2 round(s) (2 requests, 30 tokens)" in printed
    assert "HotelBooking" in server.requests[0]["messages"][1]["content"]  # the metadata is the model's brief
    assert (out / "handlers.py").read_text(encoding="utf-8") == GOOD_HANDLERS
    assert (builds / "shed_proposed" / "round-1" / "round.json").is_file()
    assert min(p.name for p in (builds / "llm").iterdir()) == "0001-shed-proposed-spec.json"
    assert not (builds / "scratch-farm").exists()
    summary = json.loads((builds / "summary.json").read_text(encoding="utf-8"))
    assert summary["usage"]["requests"] == 2 and [len(r["rounds"]) for r in summary["results"]] == [2]
