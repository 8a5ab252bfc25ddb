"""Code generation is deterministic: the same spec gives the same bytes, every time and every way."""

from __future__ import annotations

import ast
import inspect
import json
import random
from pathlib import Path

import pytest
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


def _value_of(lines: list[str]) -> str:
    """The string the generated lines evaluate to (adjacent literals, a trailing comma left off)."""
    value = ast.literal_eval("(" + "\n".join(lines).rstrip(",") + ")")
    assert isinstance(value, str)
    return value


@pytest.mark.parametrize("seed", range(40))
def test_a_long_string_argument_is_split_between_words_into_the_same_value(seed: int) -> None:
    """Messages, descriptions and SQL too long for a line become adjacent literals within the line length,
    each a real piece of the value: the strings a server lists and runs are the ones the spec holds."""
    from envfarm.factory.generate.codegen import MAX_LINE, _arg_lines, _folded, py

    rng = random.Random(seed)
    words = ["room", "{room_id}", "isn't", 'say "hi"', "a-very-long-hyphenated-word", "(list_rooms)", "x" * 30]
    text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 60)))
    lines = _arg_lines(py(text), "            ")
    assert all(len(line) <= MAX_LINE for line in lines), lines
    assert _value_of(lines) == text
    keyword = _arg_lines(f"description={py(text)}", "    ")
    assert keyword[0] == "    description=(" and keyword[-1] == "    ),"
    assert _value_of(keyword[1:-1]) == text

    clauses = ["(SELECT a FROM t WHERE b = :principal)", "'in progress', 'to do'", "x = COALESCE(:x, x),", "OR", "AND"]
    sql = " AND (" + " ".join(rng.choice(clauses) for _ in range(rng.randint(10, 30))) + ")"
    folded = _folded([sql], "        ")
    assert "".join(folded) == sql
    assert all(len("        " + py(line) + ",") <= MAX_LINE for line in folded), folded
    assert all(line.count("'") % 2 == 0 for line in folded), "a quoted value was cut"


def test_a_long_row_docstring_keeps_its_one_line_description() -> None:
    """The row model's docstring is its description in the tools' output schemas: wrapped to the line
    length, it must still read back as the one line it was."""
    from envfarm.factory.generate.codegen import MAX_LINE, _class_docstring

    text = "A cardholder's dispute of a captured charge: the amount and a fee are withdrawn " * 3 + "A row of `t`."
    lines = _class_docstring(text)
    assert len(lines) > 1 and all(len(line) <= MAX_LINE for line in lines)
    namespace: dict[str, object] = {}
    exec("class Row:\n" + "\n".join(lines) + "\n", namespace)
    assert inspect.cleandoc(namespace["Row"].__doc__ or "") == text  # type: ignore[attr-defined]


def test_a_server_folder_holds_one_tool_contract() -> None:
    """server.py names no tools: the runtime takes them, with their effects, titles and annotation overrides,
    from spec.json beside the code, in its order (tools.py holds the functions, tools.json their schemas)."""
    from envfarm.servers.runtime.definition import declared_tool
    from envfarm.servers.runtime.farm import import_server

    files = rendered_clinic()
    assert "ToolDefinition" not in files["server.py"] and "tools=" not in files["server.py"]
    definition = import_server(REPO, "clinic").DEFINITION
    assert definition.tools is None
    declared = json.loads(files["spec.json"])["tools"]
    assert [(t.name, t.effect) for t in definition.tool_definitions()] == [(t["name"], t["effect"]) for t in declared]
    reschedule = next(t for t in definition.tool_definitions() if t.name == "reschedule_appointment")
    assert reschedule.effect == "custom" and reschedule.read_only is None  # it writes appointments and slots
    assert declared_tool({"name": "quote", "effect": "custom", "writes": []}).read_only is True
    overrides = {"title": "Void", "annotations": {"destructive": False, "idempotent": True}}
    void = declared_tool({"name": "void", "effect": "delete", **overrides})
    assert (void.title, void.destructive, void.idempotent, void.read_only) == ("Void", False, True, None)
