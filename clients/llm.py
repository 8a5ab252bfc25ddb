"""The one way the driver talks to a model: an OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, ...).

Every LLM step (writing and calibrating requests, simulating users, judging claims, acting as the
policy) goes through `ChatModel`. Each such step also has an offline default, so nothing here is
needed to run the driver with no model and no network.

A model is named `openai:MODEL`; the base URL comes from `--base-url` or `OPENAI_BASE_URL`, the key
from `OPENAI_API_KEY` (a placeholder is sent when unset, as local vLLM/SGLang servers accept).
"""

from __future__ import annotations

import os
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, Field

PREFIX = "openai:"


class LLMError(Exception):
    """The model endpoint failed or answered something unusable; the message says which and where."""


class ModelConfig(BaseModel):
    model: str
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; default $OPENAI_BASE_URL")
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 1
    temperature: float = 0.0
    max_tokens: int | None = 1024


def parse_model(spec: str, base_url: str | None = None) -> ModelConfig | None:
    """`openai:MODEL` -> a config; an offline name (no prefix) -> None. Anything else is an error."""
    if not spec.startswith(PREFIX):
        return None
    model = spec[len(PREFIX) :]
    if not model:
        raise ValueError(f"{spec!r}: name the model after 'openai:', e.g. openai:Qwen/Qwen3-8B")
    return ModelConfig(model=model, base_url=base_url or os.environ.get("OPENAI_BASE_URL"))


class ChatModel:
    """Chat completions, with tools when given, on one configured endpoint."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self._client = AsyncOpenAI(
            api_key=os.environ.get(config.api_key_env) or "not-needed",
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=config.max_retries,
        )

    def __reduce__(self) -> tuple[type[ChatModel], tuple[ModelConfig]]:
        """Pickled as its config (an open HTTP client does not travel): a Ray worker makes its own."""
        return ChatModel, (self.config,)

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.config.model}"

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **options: Any
    ) -> ChatCompletion:
        """One completion; an endpoint failure or an answer with no choice raises `LLMError`."""
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            **options,
        }
        if self.config.max_tokens is not None:
            request.setdefault("max_tokens", self.config.max_tokens)
        if tools:
            request["tools"] = tools
        try:
            completion = await self._client.chat.completions.create(**request)
        except openai.APITimeoutError as exc:
            raise LLMError(
                f"{self.name} at {self._client.base_url}: timed out after {self.config.timeout_s:g} s"
            ) from exc
        except openai.APIError as exc:
            raise LLMError(f"{self.name} at {self._client.base_url}: {type(exc).__name__}: {exc}") from exc
        except ValueError as exc:  # a body that is not JSON, or JSON of the wrong shape
            raise LLMError(f"{self.name} at {self._client.base_url}: unreadable answer: {exc}") from exc
        if not getattr(completion, "choices", None):
            raise LLMError(f"{self.name} at {self._client.base_url}: the answer has no choices")
        return completion

    async def text(self, messages: list[dict[str, Any]], **options: Any) -> str:
        """The text of one completion (empty text is an error: every caller needs words)."""
        completion = await self.complete(messages, **options)
        content = completion.choices[0].message.content
        if not content or not content.strip():
            raise LLMError(f"{self.name}: the answer has no text")
        return content.strip()

    async def aclose(self) -> None:
        await self._client.close()
