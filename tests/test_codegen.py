"""Code generation is deterministic: the same spec gives the same bytes, every time and every way."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import CLINIC_SPEC, REPO

from envfarm.cli import main
from envfarm.factory.generate.codegen import render_server
from envfarm.factory.publish import package_version
from envfarm.factory.source import load_environment
from envfarm.factory.spec import parse_spec


def rendered_clinic() -> dict[str, str]:
    source = load_environment(CLINIC_SPEC)
    return render_server(source.spec, source.handlers, package_version())


def test_rendering_twice_gives_identical_files() -> None:
    assert rendered_clinic() == rendered_clinic()


def test_the_published_spec_json_regenerates_the_same_server() -> None:
    """spec.json plus seed.json is the whole spec: a server can be rebuilt from what it ships with."""
    files = rendered_clinic()
    data = {**json.loads(files["spec.json"]), "seed": json.loads(files["seed.json"])}
    spec = parse_spec(data, "spec.json")
    assert render_server(spec, files["handlers.py"], package_version()) == files


def test_the_committed_clinic_server_is_what_its_spec_generates() -> None:
    """Guards against hand edits and against codegen changes published without regenerating."""
    committed = REPO / "servers" / "clinic"
    stale = [name for name, text in rendered_clinic().items() if (committed / name).read_text() != text]
    assert not stale, f"servers/clinic is out of date ({stale}): rebuild it with `envfarm build factory/specs/clinic`"


def test_building_twice_writes_byte_identical_farms(tmp_path: Path) -> None:
    farms = [tmp_path / "one", tmp_path / "two"]
    for farm in farms:
        assert main(["build", str(CLINIC_SPEC), "--out", str(farm), "--no-verify"]) == 0

    def tree(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    one, two = tree(farms[0]), tree(farms[1])
    assert one == two
    assert {"registry.json", "servers/clinic/server.py", "servers/clinic/tools.py", "servers/clinic/schema.sql"} <= set(
        one
    )


def test_a_long_word_in_a_wrapped_docstring_stays_whole() -> None:
    """A URL longer than the wrap width must not be broken: the tool description is read back from the
    docstring, and a break would put a space inside the word."""
    from envfarm.factory.generate.codegen import _docstring

    url = "https://example.com/" + "segment/" * 20
    text = (
        "See the reference at " + url + " for the paging rules of this list, which this paragraph describes at length."
    )
    assert url in "\n".join(_docstring(text))
