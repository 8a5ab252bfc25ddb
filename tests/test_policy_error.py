"""A policy whose endpoint fails is not a model that fails: a dead, a 500ing and a garbage endpoint each end
every episode in `policy_error`, never in a success (refusal tasks included) nor a model failure; such
episodes stay out of the rates, and `envfarm rollout` exits non-zero naming the endpoint."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import REPO
from scripted_openai import scripted_openai

from envfarm.cli import main
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.export import load_trajectories
from envfarm.clients.rollout import failed_endpoint
from envfarm.clients.scoring import summarize
from envfarm.clients.synthesize import SynthesisOptions, synthesize
from envfarm.clients.tasks import write_jsonl

N_TASKS = 6


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six car_rental tasks, half of them refusals (a refusal is what a silent endpoint used to "solve")."""

    async def make() -> Any:
        async with Connections(farm_targets(REPO, ["car_rental"]), timeout=10) as connections:
            options = SynthesisOptions(n=N_TASKS, servers=["car_rental"], seed=3, refusal_share=0.5)
            return await synthesize(options, connections)

    synthesis = anyio.run(make)
    assert any(t.policy_checks and t.policy_checks[0].kind == "must_refuse" for t in synthesis.tasks)
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    write_jsonl(path, synthesis.tasks)
    return path


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rollout(tasks: Path, base_url: str, out: Path) -> int:
    argv = ["--farm", str(REPO), "rollout", str(tasks), "--policy", "openai:broken", "--base-url", base_url]
    return main([*argv, "--out", str(out), "--timeout", "10"])


def check_all_policy_errors(out: Path, base_url: str, code: int, err: str, cause: str) -> None:
    assert code == 1, "a run whose policy never answered must not exit 0"
    assert f"{N_TASKS} of {N_TASKS} episodes ended in policy_error" in err and base_url in err and cause in err
    trajectories = load_trajectories(out)
    assert len(trajectories) == N_TASKS
    for t in trajectories:
        assert t.stop_reason == "policy_error" and base_url in t.stop_detail and cause in t.stop_detail
        assert t.score is not None and t.score.policy_error and t.score.excluded and not t.score.server_error
        assert not t.score.success and t.score.reward == 0.0 and t.score.error == "policy_error"
    [summary] = summarize(trajectories)
    assert summary.scored_episodes == 0 and summary.success_rate == 0.0 and summary.mean_reward == 0.0
    assert summary.errors == {"policy_error": N_TASKS}


def test_a_dead_endpoint_is_a_policy_error(
    tasks_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    code = rollout(tasks_file, base_url, tmp_path / "t.jsonl")
    check_all_policy_errors(tmp_path / "t.jsonl", base_url, code, capsys.readouterr().err, "APIConnectionError")


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        ({"status": 500}, "InternalServerError"),
        ({"raw": "<html>gateway says hello</html>"}, "not JSON"),
        ({"body": {"object": "chat.completion", "choices": []}}, "no choices"),
        ({"body": {"choices": [{"message": None, "finish_reason": "stop"}]}}, "message is null"),
    ],
    ids=["http-500", "not-json", "no-choices", "null-message"],
)
def test_an_erroring_or_garbage_endpoint_is_a_policy_error(
    tasks_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], reply: dict[str, Any], cause: str
) -> None:
    with scripted_openai([reply]) as model:
        code = rollout(tasks_file, model.base_url, tmp_path / "t.jsonl")
    check_all_policy_errors(tmp_path / "t.jsonl", model.base_url, code, capsys.readouterr().err, cause)


def test_a_few_policy_errors_leave_the_rates_to_the_rest(tasks_file: Path, tmp_path: Path) -> None:
    """Only a run where most episodes failed is refused; the others keep their rates, over the scored episodes."""
    out = tmp_path / "t.jsonl"
    assert main(["--farm", str(REPO), "rollout", str(tasks_file), "--policy", "oracle", "--out", str(out)]) == 0
    solved = load_trajectories(out)
    assert failed_endpoint(solved) is None and all(t.score and t.score.success for t in solved)
    broken = [t.model_copy(deep=True) for t in solved[:2]]
    for t in broken:
        assert t.score is not None
        t.stop_reason, t.stop_detail = "policy_error", "openai:m at http://127.0.0.1:9/v1: APIConnectionError"
        t.score.policy_error, t.score.success, t.score.error = True, False, "policy_error"
    mixed = broken + solved[2:]
    assert failed_endpoint(mixed) is None
    [summary] = summarize(mixed)
    assert summary.scored_episodes == N_TASKS - 2 and summary.success_rate == 1.0
    assert failed_endpoint(broken + solved[5:]) == (
        "2 of 3 episodes ended in policy_error: openai:m at http://127.0.0.1:9/v1: APIConnectionError"
    )
