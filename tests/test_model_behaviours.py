"""Model behaviours the factory was not written against: each is repaired within the bounded repairs or
ends in a clear failure, and nothing reaches the farm unless it verified.

The structured step is exercised directly (fast: no build) for every behaviour; two end-to-end runs of
`envfarm propose` show the farm is untouched by a model that never answers usably, and that an answer
given as a tool call is built and verified like any other.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from corpus import farm_bytes
from scripted_openai import scripted_openai
from test_generate import GOOD_HANDLERS, NAME, SCENARIOS, draft

from envfarm.factory.generate.growth import SpecDraft, propose
from envfarm.llm import ChatModel, LLMError, ModelConfig
from envfarm.servers.runtime.registry import load_registry

GOOD = draft(GOOD_HANDLERS)
FENCED = f"Here is the environment:\n\n```json\n{GOOD}\n```\n"
TRAILING = f"{GOOD}\n\nNotes: the seed has 5 items; tell me if you want more {{or fewer}} tools."
TRUNCATED = GOOD[: len(GOOD) // 2]
REFUSAL = "I'm sorry, but I can't help with designing that environment."
WRONG_SCHEMA = json.dumps({"environment": json.loads(GOOD)["spec"], "code": GOOD_HANDLERS})
TOOL_CALL = {"tool_calls": [{"name": "write_environment", "arguments": json.loads(GOOD)}]}
CUT_OFF = {"content": GOOD[: len(GOOD) - 40], "finish_reason": "length"}


def model(base_url: str) -> ChatModel:
    return ChatModel(ModelConfig(model="scripted", base_url=base_url, max_retries=0, timeout_s=30))


async def structured(script: list[Any], repairs: int = 2) -> tuple[SpecDraft, ChatModel, list[dict[str, Any]]]:
    with scripted_openai(script) as server:
        chat = model(server.base_url)
        try:
            result = await chat.structured([{"role": "user", "content": "write it"}], SpecDraft, repairs=repairs)
        finally:
            await chat.aclose()
    return result, chat, server.requests


@pytest.mark.parametrize(
    ("answer", "repairs"),
    [(FENCED, 0), (TRAILING, 0), (TOOL_CALL, 0)],
    ids=["markdown_fences", "trailing_prose", "tool_call_instead_of_content"],
)
async def test_an_answer_wrapped_in_something_is_read_as_is(answer: Any, repairs: int) -> None:
    result, chat, _ = await structured([answer])
    assert result.spec["name"] == NAME and chat.usage.repairs == repairs


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (TRUNCATED, "not JSON"),
        (REFUSAL, "the answer has no JSON object (it begins \"I'm sorry"),
        (WRONG_SCHEMA, "spec: Field required"),
        (CUT_OFF, "cut off at the token limit"),
        ("", "the answer is empty"),
    ],
    ids=["truncated_json", "refusal", "wrong_schema", "cut_off_by_the_token_limit", "empty"],
)
async def test_an_unusable_answer_is_repaired_with_the_reason(answer: Any, told: str) -> None:
    result, chat, requests = await structured([answer, GOOD])
    assert result.spec["name"] == NAME and chat.usage.repairs == 1
    repair = requests[1]["messages"][-1]["content"]
    assert repair.startswith("That answer is invalid") and told in repair, repair


async def test_a_model_that_keeps_refusing_is_a_clear_failure_after_the_bound() -> None:
    with pytest.raises(LLMError, match=r"no valid SpecDraft after 2 repairs: not JSON: the answer has no JSON object"):
        await structured([REFUSAL])


async def test_nothing_reaches_the_farm_from_a_model_that_never_answers_usably(tmp_path: Path, farm_root: Path) -> None:
    farm = tmp_path / "farm"
    shutil.copytree(farm_root, farm)
    before = farm_bytes(farm)
    with scripted_openai([SCENARIOS, TRUNCATED, REFUSAL, WRONG_SCHEMA]) as server:
        chat = model(server.base_url)
        summary = await propose("tool sharing", 1, farm, tmp_path / "builds", chat, max_rounds=3, repairs=2)
        await chat.aclose()
    [result] = summary.results
    assert result.status == "model_error" and not result.rounds and not summary.ok
    assert "no valid SpecDraft after 2 repairs" in result.message and "spec: Field required" in result.message
    assert farm_bytes(farm) == before and load_registry(farm).get(NAME) is None
    assert len(server.requests) == 4  # the scenarios, then the draft and its two repairs: bounded


async def test_a_draft_given_as_a_tool_call_is_verified_and_published(tmp_path: Path) -> None:
    farm = tmp_path / "farm"
    with scripted_openai([SCENARIOS, TOOL_CALL]) as server:
        chat = model(server.base_url)
        summary = await propose("tool sharing", 1, farm, tmp_path / "builds", chat, max_rounds=1)
        await chat.aclose()
    [result] = summary.results
    assert result.status == "published" and result.rounds[0].passed, result.message
    entry = load_registry(farm).get(NAME)
    assert entry is not None and entry.verification == "passed"
    assert server.requests[1]["max_tokens"] > 1024  # a whole draft gets more than a reply's budget
