"""The OpenAI-compatible client over real HTTP against the scripted server: good answers, garbage,
HTTP errors and timeouts each end in a clear `LLMError`, never a hang or a raw traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel
from scripted_openai import scripted_openai

from envfarm.llm import ChatModel, LLMError, ModelConfig, Transcript, parse_model


def model(base_url: str, timeout_s: float = 10.0) -> ChatModel:
    return ChatModel(ModelConfig(model="scripted", base_url=base_url, timeout_s=timeout_s, max_retries=0))


async def test_text_and_tool_calls_come_back_over_http() -> None:
    with scripted_openai(["hello there", {"tool_calls": [{"name": "find", "arguments": {"q": "x"}}]}]) as server:
        chat = model(server.base_url)
        assert await chat.text([{"role": "user", "content": "hi"}]) == "hello there"
        reply = await chat.complete([{"role": "user", "content": "find x"}], tools=[{"type": "function"}])
        await chat.aclose()
    [call] = reply.tool_calls
    assert call.name == "find" and call.arguments == '{"q": "x"}' and call.id == "call_0" and not reply.problems
    assert server.requests[1]["tools"] == [{"type": "function"}]


@pytest.mark.parametrize(
    ("reply", "message"),
    [({"raw": "<html>not json"}, "unreadable answer"), ({"status": 500}, "InternalServerError"), ("   ", "no text")],
)
async def test_a_broken_answer_is_an_llm_error(reply: object, message: str) -> None:
    with scripted_openai([reply]) as server:
        chat = model(server.base_url)
        with pytest.raises(LLMError, match=message):
            await chat.text([{"role": "user", "content": "hi"}])
        await chat.aclose()


async def test_a_slow_model_times_out() -> None:
    with scripted_openai([{"sleep": 3, "content": "late"}]) as server:
        chat = model(server.base_url, timeout_s=0.5)
        with pytest.raises(LLMError, match="timed out"):
            await chat.text([{"role": "user", "content": "hi"}])
        await chat.aclose()


def test_model_names() -> None:
    assert parse_model("heuristic") is None
    config = parse_model("openai:Qwen/Qwen3-8B", "http://127.0.0.1:9/v1")
    assert config is not None and config.model == "Qwen/Qwen3-8B" and config.base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(ValueError, match="name the model"):
        parse_model("openai:")


class Pair(BaseModel):
    left: str
    right: int


async def test_a_transient_failure_is_retried_with_backoff(tmp_path: Path) -> None:
    with scripted_openai([{"status": 503}, {"status": 500}, "fine"]) as server:
        config = ModelConfig(model="scripted", base_url=server.base_url, max_retries=2, backoff_s=0.01)
        chat = ChatModel(config, Transcript(tmp_path))
        assert await chat.text([{"role": "user", "content": "hi"}], step="greet") == "fine"
        await chat.aclose()
    assert len(server.requests) == 3 and chat.usage.retries == 2 and chat.usage.requests == 3
    [entry] = [json.loads(p.read_text()) for p in sorted(tmp_path.iterdir())]
    assert entry["step"] == "greet" and "fine" in entry["answer"]


async def test_structured_output_is_repaired_from_the_validation_errors(tmp_path: Path) -> None:
    script = ["this is not json", '{"left": "a", "right": "many"}', 'Sure:\n```json\n{"left": "a", "right": 2}\n```']
    with scripted_openai(script) as server:
        chat = ChatModel(ModelConfig(model="scripted", base_url=server.base_url, max_retries=0), Transcript(tmp_path))
        pair = await chat.structured([{"role": "user", "content": "a pair"}], Pair, repairs=2, step="pair")
        await chat.aclose()
    assert pair == Pair(left="a", right=2) and chat.usage.repairs == 2
    # Each repair request carries the previous answer and what was wrong with it.
    assert "not JSON" in server.requests[1]["messages"][-1]["content"]
    assert "right: Input should be a valid integer" in server.requests[2]["messages"][-1]["content"]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["0001-pair.json", "0002-pair-repair-1.json", "0003-pair-repair-2.json"]
    assert chat.usage.prompt_tokens == 30 and chat.usage.completion_tokens == 15  # the scripted usage, summed


async def test_structured_output_gives_up_after_the_bound() -> None:
    with scripted_openai(["nope"]) as server:
        chat = model(server.base_url)
        with pytest.raises(LLMError, match="no valid Pair after 1 repairs: not JSON"):
            await chat.structured([{"role": "user", "content": "a pair"}], Pair, repairs=1)
        await chat.aclose()
    assert len(server.requests) == 2
