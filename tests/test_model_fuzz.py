"""Any model output is a recorded outcome: generated replies (every field missing, null or of the wrong type;
bodies that are not JSON; HTTP errors) through the policy, user, writer, judge and factory paths, in-process
and end to end over HTTP on loopback, find no traceback."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest
from conftest import REPO
from scripted_openai import scripted_openai

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import ChatPolicy
from envfarm.clients.rollout import Limits, RolloutOptions, rollout_tasks
from envfarm.clients.scoring import Scorer
from envfarm.clients.synthesize import SynthesisOptions, synthesize
from envfarm.clients.users import LLMUser
from envfarm.llm import ChatModel, LLMError, ModelConfig, read_reply
from envfarm.model_fuzz import RUNNERS, SERVER, World, fuzz_replies, garbage_reply, make_world, well_formed

NAMES = ["find_patient", "list_appointments", "pay_invoice"]


def shape(body: bytes) -> set[str]:
    """The hostile shapes one body has (what the generator must cover)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return {"not_json"}
    if not isinstance(data, dict):
        return {"not_an_object"}
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return {"no_choices"}
    found = set()
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        return {"no_message"}
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        found.add("content_" + ("list" if isinstance(content, list) else "other"))
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        found.add("tool_calls_not_list")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            found.add("call_without_function")
            continue
        if not isinstance(call.get("id"), str):
            found.add("call_without_id")
        if not isinstance(function.get("name"), str):
            found.add("call_without_name")
        arguments = function.get("arguments")
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
            found.add("arguments_not_object" if not isinstance(parsed, dict) else "arguments_object")
        except (ValueError, RecursionError):
            found.add("arguments_not_json")
    if choice.get("finish_reason") not in ("stop", "length", "tool_calls"):
        found.add("odd_finish_reason")
    usage = data.get("usage")
    if not (isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int)):
        found.add("usage_garbage")
    return found or {"well_formed"}


def test_the_generator_covers_every_hostile_shape() -> None:
    seen: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    rng = random.Random(0)
    for _ in range(3000):
        status, body = garbage_reply(rng, NAMES)
        statuses[status] += 1
        if status == 200:
            seen.update(shape(body))
    wanted = {
        "not_json",
        "not_an_object",
        "no_choices",
        "no_message",
        "content_list",
        "content_other",
        "tool_calls_not_list",
        "call_without_function",
        "call_without_id",
        "call_without_name",
        "arguments_not_json",
        "arguments_not_object",
        "arguments_object",
        "odd_finish_reason",
        "usage_garbage",
        "well_formed",
    }
    assert {k for k, v in seen.items() if v >= 5} >= wanted, seen
    assert statuses[200] > 2500 and len(statuses) >= 5


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"<html>", "not JSON"),
        (b"[1]", "a JSON list, not an object"),
        (b'{"choices": []}', "no choices"),
        (b'{"error": {"message": "overloaded"}}', "no choices: overloaded"),
        (b'{"choices": [{"message": null}]}', "message is null"),
        (b'{"choices": [{"message": {"content": 5}}]}', "content is a int"),
        (b'{"choices": [{"message": {"tool_calls": {"id": "x"}}}]}', "tool_calls is a dict"),
        (b"[" * 5000 + b"]" * 5000, "not JSON"),
    ],
)
def test_a_reply_that_is_no_completion_is_named(body: bytes, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        read_reply(body)


def test_what_is_missing_inside_a_reply_is_made_do_with_and_listed() -> None:
    body = {
        "choices": [
            {
                "message": {
                    "content": [{"type": "text", "text": "lo\ud800pez"}, {"type": "image"}],
                    "tool_calls": [
                        {"function": None},
                        {"id": "a", "function": {"name": 5, "arguments": {"q": 1}}},
                        {"id": "a", "function": {"name": "find", "arguments": "{oops"}},
                    ],
                },
                "finish_reason": ["stop"],
            }
        ],
        "usage": {"prompt_tokens": -4, "completion_tokens": True},
    }
    reply = read_reply(json.dumps(body))
    assert reply.content == "lo\ufffdpez" and reply.finish_reason is None
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_0", "", ""),
        ("a", "", '{"q": 1}'),
        ("call_2", "find", "{oops"),
    ]
    assert reply.prompt_tokens == 0 and reply.completion_tokens == 0
    assert len(reply.problems) == 6 and "tool_calls[0]: function is null" in reply.problems


async def test_a_thousand_replies_in_process_find_no_traceback() -> None:
    report = await fuzz_replies(REPO, 1000, seed=1)
    assert report.violations == 0, report.evidence[:3]
    assert report.replies >= 1000 and set(report.runs) == set(RUNNERS)
    # Every path met both its good and its broken outcomes: the generator reaches past the envelope.
    assert {"tool_calls", "text", "policy_error"} <= set(report.outcomes["policy"])
    assert {"reply", "user_error"} <= set(report.outcomes["user"])
    assert {"written", "fallback", "writer_error"} <= set(report.outcomes["writer"])
    assert {"graded", "judge_error"} <= set(report.outcomes["judge"])
    assert {"valid", "model_error"} <= set(report.outcomes["structured"])
    assert "policy_error" in report.outcomes["rollout"] and len(report.outcomes["rollout"]) >= 3


async def test_a_path_that_breaks_is_reported_with_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzz can fail: a consumer that walks the reply blindly is caught, with the body that broke it."""

    async def blind(model: Any, world: World, rng: random.Random) -> str:
        reply = await model.complete([{"role": "user", "content": "hi"}])
        return reply.tool_calls[0].name.upper()  # IndexError on a reply without tool calls

    monkeypatch.setitem(RUNNERS, "policy", blind)
    report = await fuzz_replies(REPO, 60, seed=2, paths=["policy"])
    assert report.violations > 0 and "IndexError" in report.evidence[0].error
    assert "reply.tool_calls[0]" in report.evidence[0].traceback


async def end_to_end(replies: int, seed: int) -> tuple[int, Counter[str]]:
    """Rollouts (the model as policy and as user), a judge, and the task writer, over real HTTP on loopback,
    every answer generated; returns the answers served and the outcomes."""
    rng = random.Random(f"{seed}:http")
    outcomes: Counter[str] = Counter()

    def answer(request: dict[str, Any]) -> Any:
        status, body = garbage_reply(rng, [t["function"]["name"] for t in request.get("tools") or []] or ["x"])
        return {"status": status} if status != 200 else {"raw": body}

    async with Connections(farm_targets(REPO, [SERVER]), timeout=10) as connections:
        world = await make_world(connections)
        with scripted_openai(answer) as server:
            config = ModelConfig(model="fuzz", base_url=server.base_url, timeout_s=10, max_retries=0)
            limits = Limits(max_turns=3, max_tool_calls=6, wall_time_s=30, call_timeout_s=10)
            options = RolloutOptions(k=2, concurrency=4, limits=limits)
            policy, user = ChatPolicy(config), LLMUser(config)
            judge_model = ChatModel(config)
            judge = Scorer(judge=judge_model)
            attempt = 0
            while len(server.requests) < replies:
                trajectories = await rollout_tasks(world.tasks, policy, user, connections, options, scorer=judge)
                for t in trajectories:
                    well_formed(t)
                    outcomes[f"rollout:{t.stop_reason}"] += 1
                    outcomes.update(f"call:{c.error or 'ok'}" for c in t.calls)
                # One task a round: a round ends at the first reply that is no completion (the run stops on it).
                writer = SynthesisOptions(n=1, servers=[SERVER], seed=seed * 100 + attempt, writer=config)
                try:
                    synthesis = await synthesize(writer, connections)
                    outcomes["writer:fallbacks"] += synthesis.summary.writer_fallbacks
                    outcomes["writer:tasks"] += len(synthesis.tasks)
                except LLMError as exc:
                    assert str(exc).startswith("task writer: openai:fuzz at ")
                    outcomes["writer:error"] += 1
                attempt += 1
            await policy.aclose()
            await user.aclose()
            await judge_model.aclose()
        return len(server.requests), outcomes


async def test_replies_over_http_end_to_end_find_no_traceback() -> None:
    served, outcomes = await end_to_end(300, seed=0)
    assert served >= 300
    assert outcomes["rollout:policy_error"] > 0 and outcomes["writer:tasks"] > 0
    assert len([k for k in outcomes if k.startswith("rollout:")]) >= 3, outcomes
    # Generated tool calls reached the servers' side of the rollout: unknown names and bad arguments recorded.
    assert outcomes["call:unknown_tool"] > 0 and outcomes["call:malformed"] > 0, outcomes


@pytest.mark.slow
async def test_ten_thousand_replies_find_no_traceback() -> None:
    """The acceptance figure: 10,000 replies in-process and 1,000 over HTTP, on seeds the fast tests do not use."""
    report = await fuzz_replies(REPO, 10_000, seed=7)
    assert report.violations == 0, report.evidence[:3]
    served, _ = await end_to_end(1000, seed=7)
    assert report.replies + served >= 11_000
