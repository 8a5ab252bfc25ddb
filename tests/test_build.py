"""`envfarm build` and `envfarm verify`: publish only what verifies, atomically, and detect drift."""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from corpus import BROKEN, GOOD, apply_edits, farm_bytes

from envfarm.cli import main
from envfarm.factory.build import BuildResult, VerifyResult, build_all, drift, verify_published
from envfarm.factory.importers.documents import imported_environment
from envfarm.factory.publish import code_hash, spec_hash
from envfarm.factory.source import load_environment
from envfarm.factory.spec import SpecError
from envfarm.factory.verify.report import load_report
from envfarm.render import HEADER, render
from envfarm.servers.runtime.registry import load_registry


def build(paths: list[Path], farm_root: Path, **options: Any) -> BuildResult:
    return anyio.run(partial(build_all, paths, farm_root, **options))


def verify(farm_root: Path, names: list[str] | None = None) -> VerifyResult:
    return anyio.run(verify_published, farm_root, names)


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A farm with the good example built, verified and published (shared; copy it to change it)."""
    root = tmp_path_factory.mktemp("farm")
    built = build([GOOD], root)
    assert built.ok, render(built)
    return root


def _copy(farm: Path, tmp_path: Path) -> Path:
    target = tmp_path / "farm"
    shutil.copytree(farm, target)
    return target


def test_build_publishes_a_verified_server(farm: Path) -> None:
    entry = load_registry(farm).get("shed")
    server = farm / "servers" / "shed"
    report = load_report(server)
    assert entry is not None and entry.verification == "passed" and entry.verified_at
    assert report is not None and report.passed and report.verified_at == entry.verified_at
    assert entry.code_hash == report.code_hash == code_hash(server)
    assert entry.spec_hash == report.spec_hash == spec_hash(server)
    assert not list((farm / "servers").glob(".staging-*")) and not list((farm / "servers").glob(".old-*"))


def test_verify_all_holds_on_a_clean_farm(farm: Path) -> None:
    verified = verify(farm)
    assert verified.ok and verified.succeeded == 1, render(verified)
    assert [(r.name, r.status, r.problems) for r in verified.servers] == [("shed", "passed", [])]
    assert render(verified).endswith(f"1 of 1 verified with no drift in {verified.seconds:.1f} s")


def test_a_failed_build_leaves_the_farm_byte_identical(farm: Path, tmp_path: Path) -> None:
    root = _copy(farm, tmp_path)
    before = farm_bytes(root)
    rejected = build([BROKEN / "rule_never_rejects"], root)  # same name: would replace shed
    assert farm_bytes(root) == before
    [result] = rejected.servers
    assert not rejected.ok and result.status == "rejected"
    assert ("rule", "return_item") in {(f.check, f.tool) for f in result.problems}
    text = render(rejected)
    assert "[rule] return_item" in text and "0 of 1 published" in text
    invalid = tmp_path / "invalid"
    invalid.mkdir()
    (invalid / "spec.yaml").write_text("name: shed\ntools: [\n", encoding="utf-8")
    assert [r.status for r in build([invalid], root).servers] == ["invalid"]
    assert farm_bytes(root) == before


def test_one_failure_does_not_stop_the_other_builds(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(BROKEN / "handler_crashes", specs / "crashes")
    shutil.copytree(GOOD, specs / "good")
    crashes = specs / "crashes" / "spec.yaml"
    crashes.write_text(
        crashes.read_text(encoding="utf-8").replace("name: shed", "name: shed_crashes"), encoding="utf-8"
    )
    built = build([specs], tmp_path / "farm", jobs=2)
    outcome = sorted((r.name, r.status) for r in built.servers)
    assert outcome == [("shed", "published"), ("shed_crashes", "rejected")], [r.message[-800:] for r in built.servers]
    assert [s.name for s in load_registry(tmp_path / "farm").servers] == ["shed"]
    assert "[crash] extend_loan" in render(built)


def test_a_hand_edited_file_is_drift(tmp_path: Path) -> None:
    case = BROKEN / "hand_edited_file"
    root = tmp_path / "farm"
    assert build([case], root).ok  # the spec itself is fine
    server = root / "servers" / "shed"
    apply_edits(case, server)
    entry = load_registry(root).get("shed")
    assert entry is not None
    found = drift(entry, server, load_report(server))
    assert {json.dumps(f.call) for f in found} == {'{"file": "tools.py"}', '{"registry": "code_hash"}'}
    verified = verify(root, ["shed"])
    assert [(r.name, r.status) for r in verified.servers] == [("shed", "failed")] and not verified.ok
    assert "[drift] * call={'file': 'tools.py'}" in render(verified)
    with pytest.raises(LookupError, match="nosuch"):
        verify(root, ["shed", "nosuch"])


def test_a_changed_runtime_is_drift(farm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = farm / "servers" / "shed"
    entry = load_registry(farm).get("shed")
    assert entry is not None
    assert drift(entry, server, load_report(server)) == []
    monkeypatch.setattr("envfarm.factory.build.runtime_hash", lambda: "0" * 64)
    found = drift(entry, server, load_report(server))
    assert [f.call for f in found] == [{"runtime": "servers/runtime"}]
    assert found[0].actual == "sha256 " + "0" * 64


def test_cli_build_and_verify(farm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unverified = tmp_path / "unverified"
    assert main(["build", str(GOOD), "--out", str(unverified), "--no-verify"]) == 0
    assert load_registry(unverified).servers[0].verification == "unverified"
    table = capsys.readouterr().out.splitlines()
    assert table[0] == HEADER and table[1].startswith("shed ") and table[1].endswith("published (unverified)  [1/1]")
    assert table[-1].startswith(f"1 of 1 published into {unverified} in ") and table[-1].endswith(
        "(without verification)"
    )
    assert main(["--farm", str(unverified), "verify", "shed"]) == 1  # published without evidence
    assert "no verification.json" in capsys.readouterr().out
    assert main(["--farm", str(farm), "verify", "--all", "--jobs", "1"]) == 0
    assert "1 of 1 verified with no drift" in capsys.readouterr().out
    assert main(["--farm", str(farm), "verify", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err
    assert main(["--farm", str(farm), "verify"]) == 2
    assert "--all" in capsys.readouterr().err


def test_two_specs_naming_one_server_build_neither(tmp_path: Path) -> None:
    built = build([GOOD, BROKEN / "rule_never_rejects"], tmp_path)
    assert load_registry(tmp_path).servers == []
    assert [(r.name, r.status) for r in built.servers] == [("shed", "invalid"), ("shed", "invalid")]
    assert all("declares the same server name" in r.message for r in built.servers)


def test_an_api_document_is_loaded_only_through_the_importers_the_build_passes_in() -> None:
    """`source.load_environment` sits below the importers: given an OpenAPI document or tool metadata it
    refuses, naming the file, unless the caller passes the importer in (as `build_all` does)."""
    data = Path(__file__).parent / "data"
    for document, name in (
        (data / "openapi" / "petstore.yaml", "petstore"),
        (data / "metadata" / "hotel_booking.json", None),
    ):
        with pytest.raises(SpecError, match="an API document, not a spec") as refused:
            load_environment(document)
        assert str(document) in str(refused.value)
        source = load_environment(document, imported_environment)
        assert source.spec.tools and source.handlers is None and source.spec_path == document
        assert name is None or source.spec.name == name
