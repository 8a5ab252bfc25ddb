"""The command line as a package (`envfarm.cli`): every subcommand's typed options agree with its parser, the
library function each command calls prints nothing (the command line prints what comes back), the package
runs as `python -m envfarm.cli`, and the vocabulary the factory and the driver share decides reads alike."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from conftest import REPO

from envfarm.cli import checks, driver, factory, farm, imports, parser
from envfarm.cli.options import CommandOptions
from envfarm.clients.commands import (
    AuditOptions,
    GraphOptions,
    RolloutPlan,
    TasksOptions,
    audit_file,
    rescore,
    roll_out,
    synthesize_tasks,
    targets,
    tool_graph,
)
from envfarm.clients.graph import tool_spec
from envfarm.clients.policies import HeuristicPolicy, _reads
from envfarm.clients.rollout import ProgressBar, RolloutOptions
from envfarm.clients.users import ScriptedUser
from envfarm.servers.runtime.vocabulary import READ_VERBS

# subcommand (as typed) -> the options model its command builds, and the fewest arguments it parses with
COMMANDS: dict[tuple[str, ...], tuple[type[CommandOptions], list[str]]] = {
    ("list",): (farm.ListOptions, []),
    ("serve",): (farm.ServeOptions, ["clinic"]),
    ("config",): (farm.ConfigOptions, []),
    ("build",): (factory.BuildOptions, ["specs"]),
    ("verify",): (factory.VerifyCommandOptions, []),
    ("propose",): (factory.ProposeOptions, ["a theme"]),
    ("import", "openapi"): (imports.OpenAPIImportOptions, ["api.yaml"]),
    ("import", "metadata"): (imports.MetadataImportOptions, ["meta.json"]),
    ("import", "mcp"): (imports.MCPImportOptions, ["servers.json", "clinic"]),
    ("bench",): (checks.BenchOptions, []),
    ("fuzz",): (checks.FuzzOptions, []),
    ("soak",): (checks.SoakOptions, []),
    ("rollout",): (driver.RolloutCommandOptions, ["tasks.jsonl"]),
    ("eval",): (driver.EvalOptions, ["t.jsonl"]),
    ("export",): (driver.ExportOptions, ["t.jsonl", "--format", "openai"]),
    ("run",): (driver.RunCommandOptions, []),
}


def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_subcommand_has_typed_options_that_agree_with_its_parser() -> None:
    """Each field of a command's options model is one of its parser's destinations, with the parser's default
    (a field the parser does not fill, or a default that drifted, would silently differ from the help text)."""
    top = parser()
    listed = set(subparsers(top)) - {"import", "tasks", "graph"} | {
        ("import", name) for name in subparsers(subparsers(top)["import"])
    }
    assert {c if len(c) > 1 else c[0] for c in COMMANDS} == listed
    for command, (model, argv) in COMMANDS.items():
        args = top.parse_args([*command, *argv])
        options = model.parse(args)
        for field in model.model_fields:
            assert hasattr(args, field), f"{command}: {model.__name__}.{field} is no destination of the parser"
            assert getattr(options, field) == getattr(args, field), (command, field)
    for command, model in (("tasks", TasksOptions), ("graph", GraphOptions)):
        args = top.parse_args([command])
        options = model.model_validate({**vars(args), "farm": REPO})
        assert {f for f in model.model_fields if f != "farm"} <= set(vars(args)), command
        assert options.timeout == 30.0 and options.servers is None


def test_python_dash_m_runs_the_same_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "envfarm.cli", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == parser().format_help().replace(parser().prog, "envfarm")
    for name in ("list", "serve", "tasks", "rollout", "soak"):
        assert f"    {name}" in done.stdout


async def test_the_driver_library_functions_print_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """`tasks`, `tasks --audit`, `graph`, `rollout` and `eval` call these; what reaches stdout is the command
    line's to print. (Progress goes to stderr, and only through the bar the caller passes.)"""
    out = tmp_path / "tasks.jsonl"
    made = await synthesize_tasks(
        TasksOptions(farm=REPO, servers=["clinic"], n=6, seed=3, out=out, difficulty="0:1", k=1),
        ProgressBar(unit="tasks", stream=sys.stderr, terminal_only=False),
    )
    assert made.tasks and out.exists() and made.summary_path.exists()
    assert made.difficulty is not None and made.difficulty.graded >= made.difficulty.kept == len(made.tasks)
    audited = await audit_file(AuditOptions(farm=REPO, audit=out))
    assert audited.report.tasks == len(made.tasks)
    graph = await tool_graph(GraphOptions(farm=REPO, servers=["clinic"], out=tmp_path / "graph"))
    assert graph.facts and (tmp_path / "graph" / "graph.svg").exists()
    plan = RolloutPlan(farm=REPO, targets=targets(REPO, None, ["clinic"]))
    rolled = await roll_out(made.tasks, HeuristicPolicy(), ScriptedUser(), RolloutOptions(), plan)
    assert len(rolled.trajectories) == len(made.tasks) and rolled.workers is None and rolled.ray is None
    rescored = await rescore(rolled.trajectories)
    assert [t.score for t in rescored] == [t.score for t in rolled.trajectories]
    captured = capfd.readouterr()
    assert captured.out == "", captured.out
    assert "tasks" in captured.err  # the bar the caller passed


def test_the_farm_and_import_library_functions_print_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from envfarm.factory.importers.openapi import import_openapi, write_spec_folder
    from envfarm.factory.prompts import enrich_import_context

    config = farm.client_config(CommandOptions(farm=REPO).registry(), REPO, "vscode", ["clinic"])
    assert list(config["servers"]) == ["clinic"] and config["servers"]["clinic"]["type"] == "stdio"
    result = import_openapi(REPO / "tests" / "data" / "openapi" / "petstore.yaml")
    write_spec_folder(result, tmp_path / "spec")
    assert (tmp_path / "spec" / "spec.yaml").exists()
    prompt = enrich_import_context(result.report.markdown(), result.spec, result.policy)
    assert "Keep every tool's name and params." in prompt and result.spec["name"] in prompt
    assert capfd.readouterr().out == ""


def test_the_commands_still_print_what_they_printed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The command line prints the library's results: a line per server, the graph facts, the tasks summary."""
    assert driver_main(["config", "clinic", "--client", "cursor"]) == 0
    assert '"mcpServers"' in capsys.readouterr().out
    assert driver_main(["graph", "--servers", "clinic", "--out", str(tmp_path / "g")]) == 0
    assert f"wrote graph.json, graph.svg and summary.json to {tmp_path / 'g'}" in capsys.readouterr().out
    out = tmp_path / "t.jsonl"
    assert driver_main(["tasks", "--servers", "clinic", "--n", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert f"tasks to {out} and the summary to" in printed.out and "/3 tasks (topology sampler" in printed.out
    assert driver_main(["tasks", "--servers", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: not in ")


def driver_main(argv: list[str]) -> int:
    from envfarm.cli import main

    return main(["--farm", str(REPO), *argv])


@pytest.mark.parametrize("verb", sorted(READ_VERBS))
def test_one_read_vocabulary_for_the_driver_and_the_factory(verb: str) -> None:
    """A tool without a readOnlyHint is a read by its first word, the same word list for the tool graph, the
    agents' tool lists and the factory's metadata import; an annotation wins over the word."""
    from envfarm.factory.importers.metadata import EnvironmentMetadata, ToolMetadata, import_metadata_offline

    tool = types.Tool(name=f"{verb}_orders", input_schema={"type": "object", "properties": {}})
    assert tool_spec("shop", tool).read_only and _reads(tool)
    hinted = tool.model_copy(update={"annotations": types.ToolAnnotations(read_only_hint=False)})
    assert not tool_spec("shop", hinted).read_only and not _reads(hinted)
    meta = EnvironmentMetadata(class_name="Shop", tools=[ToolMetadata(name=f"{verb}_orders")])
    result = import_metadata_offline(meta, Path("shop.json"), "shop")
    assert [t.method for t in result.report.tools] == ["get"], result.report
    writer = types.Tool(name="cancel_orders", input_schema={"type": "object", "properties": {}})
    assert not tool_spec("shop", writer).read_only and not _reads(writer)


async def test_the_main_job_prints_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """`envfarm run`'s library function returns what the command prints (it used to print it itself)."""
    from envfarm.clients.run import RunOptions, run

    result = await run(RunOptions(farm=REPO, servers=["clinic"], tasks=3, out=tmp_path / "runs"))
    assert result.tasks == 3 and not result.oracle_failures and (result.directory / "report.html").exists()
    assert {s.policy for s in result.summaries} >= {"oracle", "heuristic"}
    assert capfd.readouterr().out == ""


def test_fuzzing_prints_nothing_but_its_progress(capfd: pytest.CaptureFixture[str]) -> None:
    from envfarm.fuzz import fuzz_farm

    heard: list[str] = []
    report = fuzz_farm(REPO, ["clinic"], 40, seed=1, progress=lambda r: heard.append(r.server))
    assert report.calls >= 40 and heard == ["clinic"]
    assert capfd.readouterr().out == ""
