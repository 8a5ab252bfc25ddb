"""The OpenAI-compatible client over real HTTP against the scripted server: good answers, garbage,
HTTP errors and timeouts each end in a clear `LLMError`, never a hang or a raw traceback."""

from __future__ import annotations

import pytest
from scripted_openai import scripted_openai

from clients.llm import ChatModel, LLMError, ModelConfig, parse_model


def model(base_url: str, timeout_s: float = 10.0) -> ChatModel:
    return ChatModel(ModelConfig(model="scripted", base_url=base_url, timeout_s=timeout_s, max_retries=0))


async def test_text_and_tool_calls_come_back_over_http() -> None:
    with scripted_openai(["hello there", {"tool_calls": [{"name": "find", "arguments": {"q": "x"}}]}]) as server:
        chat = model(server.base_url)
        assert await chat.text([{"role": "user", "content": "hi"}]) == "hello there"
        completion = await chat.complete([{"role": "user", "content": "find x"}], tools=[{"type": "function"}])
        await chat.aclose()
    call = completion.choices[0].message.tool_calls[0]
    assert call.function.name == "find" and call.function.arguments == '{"q": "x"}'
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
