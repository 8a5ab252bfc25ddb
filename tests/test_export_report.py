"""Exports parse in the layouts trainers read, report.html is self-contained and escapes everything, and
`envfarm rollout | eval | export` work end to end on a tasks file."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import anyio
import pytest
from conftest import REPO
from handmade import handmade_tasks

from envfarm.cli import main
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.export import export, load_trajectories, sft_speech_problems
from envfarm.clients.policies import HeuristicPolicy, OraclePolicy
from envfarm.clients.report import render_report
from envfarm.clients.rollout import RolloutOptions, rollout_tasks
from envfarm.clients.run import evaluate, write_outputs
from envfarm.clients.scoring import Scorer, oracle_failures
from envfarm.clients.tasks import Task, load_tasks, write_jsonl
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import ScriptedUser

INJECTED = "<script>alert('x')</script> & <b>bold</b>"


async def scored_trajectories() -> tuple[list[Task], list[Trajectory]]:
    async with Connections(farm_targets(REPO, ["clinic"])) as connections:
        tasks = await handmade_tasks(connections)
        tasks[2].opening_message = INJECTED + " " + tasks[2].opening_message
        trajectories = await evaluate(tasks, connections, show_progress=False)
    return tasks, trajectories


@pytest.fixture(scope="module")
def run_data() -> tuple[list[Task], list[Trajectory]]:
    return anyio.run(scored_trajectories)


def test_sft_exports_parse(run_data: tuple[list[Task], list[Trajectory]], tmp_path: Path) -> None:
    _, trajectories = run_data
    solved = [t for t in trajectories if t.score and t.score.success and not sft_speech_problems(t)]
    assert any(t.policy == "oracle" for t in solved)
    path, rows, _, _ = export(trajectories, "openai", tmp_path / "sft")
    assert path.suffix == ".jsonl" and rows == len(solved)
    for line in path.read_text().splitlines():
        row = json.loads(line)
        assert row["messages"][0]["role"] == "system" and row["messages"][-1]["role"] == "assistant"
        assert all(tool["type"] == "function" for tool in row["tools"])
        assert row["task_id"] and row["split"] in ("train", "eval") and row["servers"] == ["clinic"]
        assert "x-envfarm" not in json.dumps(row["tools"])
    path, rows, files, _ = export(trajectories, "sharegpt", tmp_path / "sharegpt")
    info = json.loads(files[0].read_text())
    assert files[0].name == "dataset_info.json" and info["sharegpt"]["file_name"] == "sharegpt.jsonl"
    assert rows == len(solved)
    for line in path.read_text().splitlines():
        row = json.loads(line)
        roles = [turn["from"] for turn in row["conversations"]]
        assert all(r in ("human", "observation") for r in roles[0::2]) and all(
            r in ("gpt", "function_call") for r in roles[1::2]
        )
        assert roles[-1] == "gpt" and row["system"]
        for turn in row["conversations"]:
            if turn["from"] == "function_call":
                call = json.loads(turn["value"])
                assert set(call) == {"name", "arguments"} and isinstance(call["arguments"], dict)
        assert {tool["name"] for tool in json.loads(row["tools"])} >= {"pay_invoice"}
    everything = export(trajectories, "openai", tmp_path / "all", include_failed=True).rows
    assert everything == len([t for t in trajectories if not sft_speech_problems(t)])


def test_verl_rows_as_jsonl_and_parquet(run_data: tuple[list[Task], list[Trajectory]], tmp_path: Path) -> None:
    tasks, trajectories = run_data
    path, rows, files, notes = export(trajectories, "verl", tmp_path / "rl", parquet=False)
    assert path.suffix == ".jsonl" and rows == len(tasks)
    assert [f.name for f in files] == [
        "rl.tools.yaml",
        "rl.interaction.yaml",
        "rl.agent.yaml",
    ] and "prompt tokens" in notes[0]
    row = json.loads(path.read_text().splitlines()[0])
    assert set(row) == {"data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"}
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    truth = json.loads(row["reward_model"]["ground_truth"])
    assert truth["expected_state"]["clinic"]["diff"] and truth["claims"]
    recreated = Task.model_validate_json(row["extra_info"]["interaction_kwargs"]["task"])
    assert recreated.id == row["extra_info"]["task_id"] and recreated.gold_calls
    with pytest.raises(ValueError, match="exists"):
        export(trajectories, "verl", tmp_path / "rl", parquet=False)
    parquet = pytest.importorskip("pyarrow.parquet")
    path, rows, _, _ = export(trajectories, "verl", tmp_path / "rl2", parquet=True)
    table = parquet.read_table(path)
    assert path.suffix == ".parquet" and table.num_rows == len(tasks)
    assert table.column_names == ["data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"]


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [v or "" for k, v in attrs if k in ("src", "href")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_report_is_self_contained_and_escaped(run_data: tuple[list[Task], list[Trajectory]]) -> None:
    _, trajectories = run_data
    html = render_report(
        trajectories, domains={"clinic": "health"}, facts={"tasks": 3}, oracle_failures=oracle_failures(trajectories)
    )
    page = Page()
    page.feed(html)
    assert "script" not in page.tags and page.links == [], "no script, no external resource"
    assert page.tags.count("svg") == 5 and "table" in page.tags and "details" in page.tags
    assert "Policy checks passed, by kind" in "".join(page.text)
    text = "".join(page.text)
    assert INJECTED in text, "model and user text is shown as text"
    assert "health · heuristic" in text and "oracle · calibrated" in text and "heuristic · uncalibrated" in text
    assert "every task" in text  # the oracle self-check passed


def test_cli_rollout_eval_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def make() -> list[Task]:
        async with Connections(farm_targets(REPO, ["clinic"])) as connections:
            return await handmade_tasks(connections)

    tasks_file = tmp_path / "tasks.jsonl"
    write_jsonl(tasks_file, anyio.run(make))
    out = tmp_path / "oracle.jsonl"
    assert (
        main(["--farm", str(REPO), "rollout", str(tasks_file), "--policy", "oracle", "--k", "2", "--out", str(out)])
        == 0
    )
    trajectories = load_trajectories(out)
    assert len(trajectories) == 6 and all(t.score and t.score.success for t in trajectories)
    printed = capsys.readouterr().out
    assert "oracle" in printed and "100.0%" in printed
    rescored = tmp_path / "rescored.jsonl"
    assert main(["eval", str(out), "--out", str(rescored)]) == 0
    scores = json.loads(rescored.with_suffix(".scores.json").read_text())
    assert scores["policies"]["oracle"]["success_rate"] == 1.0 and scores["oracle_failures"]["count"] == 0
    assert main(["export", str(out), "--format", "sharegpt", "--out", str(tmp_path / "sft")]) == 0
    assert len((tmp_path / "sft.jsonl").read_text().splitlines()) == 6
    assert main(["export", str(out), "--format", "openai", "--out", str(out)]) == 2
    assert "is the export's input" in capsys.readouterr().err
    assert main(["export", str(out), "--format", "openai"]) == 0  # beside the input, as oracle_openai.jsonl
    assert main(["export", str(out), "--format", "openai"]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert main(["export", str(out), "--format", "openai", "--force"]) == 0
    assert len(load_trajectories(out)) == 6, "the input is untouched"
    assert main(["rollout", str(tasks_file), "--policy", "gpt-4"]) == 2
    assert "unknown policy 'gpt-4'" in capsys.readouterr().err
    (tmp_path / "broken.jsonl").write_text('{"id": 1}\n')
    assert main(["eval", str(tmp_path / "broken.jsonl")]) == 2
    assert "broken.jsonl:1: not a valid Trajectory" in capsys.readouterr().err


def test_write_outputs_lays_out_a_run(run_data: tuple[list[Task], list[Trajectory]], tmp_path: Path) -> None:
    tasks, trajectories = run_data
    summaries, failures, files = write_outputs(
        tmp_path, tasks, trajectories, domains={"clinic": "health"}, facts={"seconds": 1}
    )
    assert failures == [] and {s.policy for s in summaries} == {"oracle", "heuristic"}
    scores = json.loads((tmp_path / "scores.json").read_text())
    for label in ("oracle", "heuristic", "heuristic (uncalibrated)"):
        entry = scores["policies"][label]
        assert {"episodes", "success_rate", "state_match_rate", "claims_pass_rate", "errors"} <= set(entry)
    assert (
        scores["policies"]["heuristic"]["success_rate"] < scores["policies"]["heuristic (uncalibrated)"]["success_rate"]
    )
    written = load_tasks(tmp_path / "tasks.jsonl")
    assert all(t.difficulty and t.difficulty.solve_rate["oracle"] == 1.0 for t in written)
    assert all((tmp_path / f).exists() for f in files.values())


async def test_uncalibrated_rollouts_open_with_the_uncalibrated_message() -> None:
    async with Connections(farm_targets(REPO, ["clinic"])) as connections:
        tasks = await handmade_tasks(connections)
        options = RolloutOptions(calibrated=False)
        trajectories = await rollout_tasks(tasks[:1], HeuristicPolicy(), ScriptedUser(), connections, options)
        oracle = await rollout_tasks(tasks[:1], OraclePolicy(), ScriptedUser(), connections, scorer=Scorer())
    assert trajectories[0].messages[1]["content"] == tasks[0].uncalibrated_message and not trajectories[0].calibrated
    assert oracle[0].messages[1]["content"] == tasks[0].opening_message


BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def test_report_renders_in_a_headless_browser(run_data: tuple[list[Task], list[Trajectory]], tmp_path: Path) -> None:
    """With a browser from the OS packages (e.g. Debian's chromium-headless-shell), the page renders
    offline: the DOM after rendering still holds the summary, the charts and the escaped text."""
    browser = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if browser is None:
        pytest.skip("no headless Chromium installed (apt-get install chromium-headless-shell)")
    _, trajectories = run_data
    page = tmp_path / "report.html"
    page.write_text(render_report(trajectories, domains={"clinic": "health"}), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "<svg" in dom and "Summary" in dom and "&lt;script&gt;alert" in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, *flags, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_envfarm_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The main job on two servers: synthesized tasks (some with policy checks), oracle at 1.0, every output
    written, the table printed."""
    command = ["--farm", str(REPO), "run", "--servers", "clinic", "pharmacy", "--tasks", "8", "--out", str(tmp_path)]
    assert main(command) == 0
    [directory] = list(tmp_path.iterdir())
    scores = json.loads((directory / "scores.json").read_text())
    assert scores["oracle_failures"]["count"] == 0 and scores["policies"]["oracle"]["success_rate"] == 1.0
    heuristic = scores["policies"]["heuristic"]
    assert heuristic["episodes"] == scores["tasks"] and heuristic["success_rate"] < 1.0
    assert {"heuristic (uncalibrated)", "oracle", "heuristic"} == set(scores["policies"])
    oracle = scores["policies"]["oracle"]
    assert oracle["policy_pass_rate"] == 1.0 and oracle["policy_checks"]["all"]["checks"] > 0
    assert oracle["policy_checks"]["all"]["checks"] == oracle["policy_checks"]["all"]["passed"]
    graded = scores["policy_checks_per_task"]
    assert graded and all(
        set(by_policy) == {"oracle", "heuristic", "heuristic (uncalibrated)"} for by_policy in graded.values()
    )
    tasks = load_tasks(directory / "tasks.jsonl")
    assert {t.id for t in tasks if t.policy_checks} == set(graded)
    assert tasks and all(t.difficulty and set(t.difficulty.solve_rate) == {"oracle", "heuristic"} for t in tasks)
    assert {p.name for p in (directory / "exports").iterdir()} >= {"sft_openai.jsonl", "sft_sharegpt.jsonl"}
    assert (directory / "report.html").read_text().startswith("<!DOCTYPE html>")
    printed = capsys.readouterr().out
    assert "heuristic (uncalibrated)" in printed and "oracle self-check: 0 of" in printed
