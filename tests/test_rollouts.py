"""Rollouts on live clinic episodes with hand-grounded tasks: the oracle, the heuristic baseline, an
OpenAI-compatible policy over real HTTP (well-behaved, malformed, endless, slow), the user simulators,
k isolated attempts, and scoring that is path-independent and keeps server errors apart."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from handmade import booking_task, ground, handmade_tasks, pay_invoice_task, read_task
from scripted_openai import scripted_openai

from envfarm.clients.connect import Connections, farm_targets, load_server_configs
from envfarm.clients.policies import ChatPolicy, HeuristicPolicy, OraclePolicy
from envfarm.clients.rollout import Limits, RolloutOptions, rollout_tasks
from envfarm.clients.scoring import Scorer, fill_difficulty, oracle_failures, summarize
from envfarm.clients.tasks import Claim, GoldCall, Persona, Provenance, Task, ToolRef
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import LLMUser, ScriptedUser
from envfarm.llm import ChatModel, ModelConfig

TODO_SERVER = Path(__file__).parent / "foreign" / "todo_server.py"


def config(base_url: str, timeout_s: float = 10.0) -> ModelConfig:
    return ModelConfig(model="scripted", base_url=base_url, timeout_s=timeout_s, max_retries=0)


def farm() -> Connections:
    return Connections(farm_targets(REPO, ["clinic"]), timeout=10)


def well_formed(trajectory: Trajectory) -> None:
    """Every tool call of an assistant message is answered by a tool message with its id."""
    asked = [c["id"] for m in trajectory.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in trajectory.messages if m["role"] == "tool"]
    assert asked == answered


async def test_oracle_solves_every_grounded_task_and_the_heuristic_does_worse() -> None:
    async with farm() as connections:
        tasks = await handmade_tasks(connections)
        results: dict[tuple[str, bool], list[Trajectory]] = {}
        for policy in (OraclePolicy(), HeuristicPolicy()):
            for calibrated in (True, False):
                options = RolloutOptions(calibrated=calibrated)
                results[policy.name, calibrated] = await rollout_tasks(
                    tasks, policy, ScriptedUser(), connections, options, scorer=Scorer()
                )
    oracle = results["oracle", True] + results["oracle", False]
    assert oracle_failures(oracle) == []
    assert all(t.score and t.score.reward == 1.0 and t.stop_reason == "done" for t in oracle)
    rate = {key: sum(bool(t.score and t.score.success) for t in group) for key, group in results.items()}
    assert rate["heuristic", True] < rate["heuristic", False] <= rate["oracle", True] == len(tasks)
    assert rate["heuristic", True] >= 1, "the baseline should solve some calibrated tasks"
    for group in results.values():
        for trajectory in group:
            well_formed(trajectory)
    failed = [t for t in results["heuristic", True] if t.score and not t.score.success]
    assert all(
        t.score and t.score.error in ("gave_up", "wrong_answer", "rule_violation", "bad_arguments", "wrong_tool")
        for t in failed
    )
    fill_difficulty(tasks, results["oracle", True] + results["heuristic", True])
    assert all(
        t.difficulty and t.difficulty.solve_rate["oracle"] == 1.0 and "heuristic" in t.difficulty.solve_rate
        for t in tasks
    )


async def test_scripted_user_reveals_hidden_facts_only_when_asked_and_moves_through_turns() -> None:
    async with farm() as connections:
        task = await booking_task(connections)
    session = ScriptedUser().session(task)
    assert session.opening() == task.turns[0].message
    reply = await session.reply([{"role": "assistant", "content": "Could you tell me your email?"}], [])
    assert reply == "My email is priya.lopez@example.com."
    assert (
        await session.reply([{"role": "assistant", "content": "All done!"}], [])
        == "That doesn't look done yet. Could you please finish what I asked?"
    )
    assert await session.reply([{"role": "assistant", "content": "All done!"}], []) is None  # gives up after one nudge


async def test_k_attempts_run_in_isolated_episodes() -> None:
    """Four concurrent attempts each pay the same invoice: had they shared an episode, three would be refused."""
    async with farm() as connections:
        task = await pay_invoice_task(connections)
        trajectories = await rollout_tasks(
            [task], OraclePolicy(), ScriptedUser(), connections, RolloutOptions(k=4, concurrency=4), scorer=Scorer()
        )
    assert [t.attempt for t in trajectories] == [0, 1, 2, 3]
    assert len({t.episodes["clinic"] for t in trajectories}) == 4
    assert all(t.score and t.score.success for t in trajectories)
    summary = summarize(trajectories)[0]
    assert summary.pass_at_k == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0} and summary.pass_hat_k["4"] == 1.0


def solve_pay(request: dict[str, Any]) -> Any:
    """A model that solves the pay task by reading the chat it is sent (so it works under concurrency)."""
    tools = [m for m in request["messages"] if m["role"] == "tool"]
    steps = [
        {"tool_calls": [{"name": "find_patient", "arguments": {"full_name": "Lucas Yilmaz"}}]},
        {"tool_calls": [{"name": "list_appointments", "arguments": {"patient_id": "pat_dc63z3"}}]},
        {"tool_calls": [{"name": "get_invoice", "arguments": {"appointment_id": "apt_ah2f96"}}]},
        {"tool_calls": [{"name": "pay_invoice", "arguments": {"invoice_id": "inv_qd5x84", "amount": 95}}]},
    ]
    return steps[len(tools)] if len(tools) < len(steps) else "Your invoice inv_qd5x84 of $95.00 is now paid."


async def test_openai_policy_solves_a_task_over_http() -> None:
    with scripted_openai(solve_pay) as model:
        policy = ChatPolicy(config(model.base_url))
        async with farm() as connections:
            task = await pay_invoice_task(connections)
            [trajectory] = await rollout_tasks([task], policy, ScriptedUser(), connections, scorer=Scorer())
        await policy.aclose()
    assert trajectory.score and trajectory.score.success, trajectory.score
    assert trajectory.policy == "openai:scripted" and trajectory.usage.total == 15 * 5
    first = model.requests[0]
    assert {t["function"]["name"] for t in first["tools"]} >= {"pay_invoice", "find_patient"}
    assert first["tools"][0]["type"] == "function" and first["tools"][0]["function"]["parameters"]["type"] == "object"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    well_formed(trajectory)


async def test_malformed_tool_calls_go_back_to_the_policy_as_errors() -> None:
    script = [
        {"tool_calls": [{"name": "find_patient", "arguments": '{"full_name": "Lucas'}]},  # broken JSON
        {"tool_calls": [{"name": "delete_everything", "arguments": {}}]},  # no such tool
        {"tool_calls": [{"name": "list_appointments", "arguments": {"patient_id": 7}}]},  # wrong type
        {"tool_calls": [{"name": "find_patient", "arguments": "[1, 2]"}]},  # JSON, not an object
        "Sorry, I could not do it.",
    ]
    with scripted_openai(script) as model:
        policy = ChatPolicy(config(model.base_url))
        async with farm() as connections:
            task = await pay_invoice_task(connections)
            [trajectory] = await rollout_tasks([task], policy, ScriptedUser(), connections, scorer=Scorer())
        await policy.aclose()
    assert [c.error for c in trajectory.calls] == ["malformed", "unknown_tool", "invalid_arguments", "malformed"]
    tool_messages = [m["content"] for m in trajectory.messages if m["role"] == "tool"]
    assert "not valid JSON" in tool_messages[0] and "no tool named 'delete_everything'" in tool_messages[1]
    assert "invalid arguments" in tool_messages[2] and "must be a JSON object" in tool_messages[3]
    # The model saw each error before its next move.
    assert model.requests[1]["messages"][-1]["content"] == tool_messages[0]
    assert trajectory.stop_reason == "done" and trajectory.score and not trajectory.score.success
    assert trajectory.score.error == "wrong_tool" and not trajectory.score.server_error
    well_formed(trajectory)


async def test_a_model_that_never_stops_calling_tools_hits_the_limit() -> None:
    endless = {
        "tool_calls": [
            {"name": "search_doctors", "arguments": {}},
            {"name": "search_doctors", "arguments": {"specialty": "general"}},
        ]
    }
    with scripted_openai([endless]) as model:
        policy = ChatPolicy(config(model.base_url))
        async with farm() as connections:
            task = await read_task(connections)
            options = RolloutOptions(limits=Limits(max_tool_calls=5))
            [trajectory] = await rollout_tasks([task], policy, ScriptedUser(), connections, options, scorer=Scorer())
        await policy.aclose()
    assert trajectory.stop_reason == "max_tool_calls" and len(trajectory.calls) == 5
    assert trajectory.score and trajectory.score.error == "out_of_turns"
    assert trajectory.messages[-1]["content"].startswith("Error: not executed")
    well_formed(trajectory)


@pytest.mark.parametrize(
    ("script", "limits", "stop"),
    [
        (["What is your email?"], Limits(max_turns=2), "max_turns"),
        ([{"tool_calls": [{"name": "search_doctors", "arguments": {}}]}], Limits(max_tokens=20), "max_tokens"),
        ([{"sleep": 1.5, "content": "still thinking"}], Limits(wall_time_s=0.5), "wall_time"),
    ],
)
async def test_every_limit_ends_the_rollout_with_its_reason(script: list[Any], limits: Limits, stop: str) -> None:
    with scripted_openai(script) as model:
        policy = ChatPolicy(config(model.base_url))
        async with farm() as connections:
            task = await read_task(connections)
            options = RolloutOptions(limits=limits)
            [trajectory] = await rollout_tasks([task], policy, ScriptedUser(), connections, options, scorer=Scorer())
        await policy.aclose()
    assert trajectory.stop_reason == stop and trajectory.score and trajectory.score.error == "out_of_turns"
    assert trajectory.user_turns <= limits.max_turns
    well_formed(trajectory)


async def test_a_model_that_times_out_ends_the_rollout_as_a_policy_error() -> None:
    with scripted_openai([{"sleep": 3, "content": "late"}]) as model:
        policy = ChatPolicy(config(model.base_url, timeout_s=0.5))
        async with farm() as connections:
            task = await read_task(connections)
            [trajectory] = await rollout_tasks([task], policy, ScriptedUser(), connections, scorer=Scorer())
        await policy.aclose()
    assert trajectory.stop_reason == "policy_error" and "timed out" in trajectory.stop_detail
    assert trajectory.score and not trajectory.score.success and not trajectory.score.server_error


async def test_llm_user_plays_the_persona_and_stops() -> None:
    def user_model(request: dict[str, Any]) -> str:
        said = [m for m in request["messages"] if m["role"] == "user"]  # the agent's words, seen by the user
        return "It's priya.lopez@example.com." if len(said) == 1 else "Thanks! ###STOP###"

    with scripted_openai(user_model) as model:
        user = LLMUser(config(model.base_url))
        async with farm() as connections:
            task = await booking_task(connections)
            policy = HeuristicPolicy()
            [trajectory] = await rollout_tasks([task], policy, user, connections, scorer=Scorer())
        await user.aclose()
    system = model.requests[0]["messages"][0]["content"]
    assert "Priya Lopez" in system and "priya.lopez@example.com" in system and "###STOP###" in system
    assert trajectory.user == "openai:scripted" and trajectory.stop_reason == "done"
    assert any(m["role"] == "user" and "priya.lopez@example.com" in m["content"] for m in trajectory.messages)


async def test_judge_grades_claims_and_garbage_is_a_recorded_judge_error() -> None:
    async with farm() as connections:
        task = await pay_invoice_task(connections)
        [trajectory] = await rollout_tasks([task], OraclePolicy(), ScriptedUser(), connections)
    with scripted_openai(["0.5"]) as model:
        judge = ChatModel(config(model.base_url))
        graded = await Scorer(judge=judge)(trajectory.model_copy(deep=True))
        await judge.aclose()
    assert graded.score and graded.score.claims[0].score == 0.5 and graded.score.claims[0].judge == "openai:scripted"
    assert "Invoice inv_qd5x84" in model.requests[0]["messages"][1]["content"]
    with scripted_openai(["The claim looks right to me!", {"raw": "<html>"}]) as model:
        judge = ChatModel(config(model.base_url))
        garbage = await Scorer(judge=judge)(trajectory.model_copy(deep=True))
        broken = await Scorer(judge=judge)(trajectory.model_copy(deep=True))
        await judge.aclose()
    for scored in (garbage, broken):
        grade = scored.score.claims[0] if scored.score else None
        assert grade is not None and grade.judge_error and grade.judge == "deterministic" and grade.score == 1.0
    assert "not a grade" in str(garbage.score and garbage.score.claims[0].judge_error)
    assert "unreadable answer" in str(broken.score and broken.score.claims[0].judge_error)


def todo_task() -> Task:
    """A task on a foreign server (no control plane): graded on its claims alone."""
    gold = [
        GoldCall(server="todo", tool="search_projects", arguments={"name": "Garden"}),
        GoldCall(
            server="todo", tool="add_task", arguments={"project_id": "prj_7f3a", "title": "Paint it"}, is_write=True
        ),
    ]
    return Task(
        id="todo-add",
        servers=["todo"],
        tools=[
            ToolRef(server="todo", tool=name)
            for name in ("search_projects", "list_project_tasks", "add_task", "complete_task")
        ],
        persona=Persona(name="Ana Silva"),
        opening_message="Please add 'Paint it' to my Garden shed project.",
        gold_calls=gold,
        claims=[Claim(text="Task tsk_0003 'Paint it' was added to Garden shed.", values=["tsk_0003", "Paint it"])],
        provenance=Provenance(sampler="hand", seed=0),
    )


def todo_config(tmp_path: Path, *flags: str) -> dict[str, Any]:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps({"mcpServers": {"todo": {"command": sys.executable, "args": [str(TODO_SERVER), *flags]}}})
    )
    return load_server_configs(path)


async def test_a_foreign_server_is_rolled_out_and_graded_on_claims(tmp_path: Path) -> None:
    async with Connections(todo_config(tmp_path), timeout=20) as connections:
        [oracle] = await rollout_tasks([todo_task()], OraclePolicy(), ScriptedUser(), connections, scorer=Scorer())
    assert oracle.final_state == {} and oracle.score and oracle.score.state_match is None and oracle.score.success
    assert [c.ok for c in oracle.calls] == [True, True] and list(oracle.episodes) == ["todo"]


async def test_a_hanging_server_is_a_server_error_not_the_agents(tmp_path: Path) -> None:
    """A call that outlives its timeout ends the rollout; the score says server error and gives no reward."""
    call = {"tool_calls": [{"name": "search_projects", "arguments": {"name": "Garden"}}]}
    with scripted_openai([call]) as model:
        policy = ChatPolicy(config(model.base_url))
        async with Connections(todo_config(tmp_path, "--hang"), timeout=20) as connections:
            options = RolloutOptions(limits=Limits(call_timeout_s=0.5))
            [trajectory] = await rollout_tasks(
                [todo_task()], policy, ScriptedUser(), connections, options, scorer=Scorer()
            )
        await policy.aclose()
    assert trajectory.stop_reason == "server_error" and trajectory.calls[0].error == "timeout"
    assert trajectory.score and trajectory.score.server_error and trajectory.score.error == "server_error"
    assert trajectory.score.reward == 0.0
    assert summarize([trajectory])[0].scored_episodes == 0
    well_formed(trajectory)


def test_tools_json_is_the_openai_function_schema() -> None:
    async def collect() -> list[dict[str, Any]]:
        async with farm() as connections:
            task = await read_task(connections)
            [trajectory] = await rollout_tasks([task], OraclePolicy(), ScriptedUser(), connections)
        return trajectory.tools

    import anyio

    tools = anyio.run(collect)
    assert len(tools) == 10
    for tool in tools:
        function = tool["function"]
        assert tool["type"] == "function" and function["parameters"]["type"] == "object"
        json.dumps(tool)


async def test_grounding_helper_rejects_a_failing_chain() -> None:
    async with farm() as connections:
        with pytest.raises(AssertionError, match="pay_invoice failed"):
            await ground(connections, "bad", [("pay_invoice", {"invoice_id": "inv_qd5x84", "amount": 1.0})])
