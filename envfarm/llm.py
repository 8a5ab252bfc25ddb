"""The one way envfarm talks to a model: an OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, ...).

Both the driver (writing requests, simulating users, judging, acting as the policy) and the factory
(proposing specs, writing handlers, revising after failed verification) go through `ChatModel`. Each
such step also has an offline default, so nothing here is needed to run with no model and no network.

A model is named `openai:MODEL`; the base URL comes from `--base-url` or `OPENAI_BASE_URL`, the key
from `OPENAI_API_KEY` (a placeholder is sent when unset, as local vLLM/SGLang servers accept).

What every call gets: retries with exponential backoff on transient failures (timeouts, connection
errors, 429 and 5xx), token and time accounting (`ChatModel.usage`), and, when a `Transcript` is
given, every request and answer written to a folder for provenance. `structured` asks for JSON,
validates it with a pydantic model and feeds the validation errors back for a bounded number of repairs.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, Field, ValidationError

PREFIX = "openai:"
T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
TRANSIENT = (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)


class LLMError(Exception):
    """The model endpoint failed or answered something unusable; the message says which and where."""


class ModelConfig(BaseModel):
    model: str
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; default $OPENAI_BASE_URL")
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = Field(default=1, description="retries of a transient failure (timeout, connection, 429, 5xx)")
    backoff_s: float = Field(default=0.5, description="wait before the first retry; doubled for each next one")
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


class Usage(BaseModel):
    """What the calls of one `ChatModel` cost: requests, tokens, wall time, retries and repairs."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    retries: int = 0
    repairs: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Transcript:
    """Every request and answer of a run, one JSON file each (`0001-<step>.json`), in call order."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    def record(
        self, step: str, request: dict[str, Any], answer: str | None, error: str | None, usage: dict[str, Any]
    ) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.count += 1
        slug = re.sub(r"[^a-z0-9]+", "-", step.lower()).strip("-") or "call"
        path = self.folder / f"{self.count:04d}-{slug}.json"
        entry = {"step": step, "request": request, "answer": answer, "error": error, "usage": usage}
        path.write_text(json.dumps(entry, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        return path


def json_in(text: str) -> Any:
    """The JSON value an answer carries: the whole text, or a ```json fenced block, or the outermost
    {...}, or the first whole object followed by prose; raises ValueError naming what was wrong."""
    if not text.strip():
        raise ValueError("not JSON: the answer is empty")
    candidates = [text.strip()]
    candidates += re.findall(r"```(?:json)?\s*\n(.*?)```", text, flags=re.DOTALL)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    error: json.JSONDecodeError | None = None
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            error = error or exc
    if start >= 0:
        try:
            return json.JSONDecoder().raw_decode(text, start)[0]  # `{...} Hope this helps {:)}`
        except json.JSONDecodeError:
            pass
    else:
        raise ValueError(f"not JSON: the answer has no JSON object (it begins {text.strip()[:80]!r})")
    raise ValueError(f"not JSON: {error}")


def answer_text(completion: ChatCompletion) -> tuple[str, bool]:
    """(the answer's text, whether the token budget cut it off). A model asked for JSON sometimes
    calls a tool instead: the first call's arguments are then the answer."""
    choice = completion.choices[0]
    text = (choice.message.content or "").strip()
    if not text and choice.message.tool_calls:
        call = choice.message.tool_calls[0]
        text = getattr(getattr(call, "function", None), "arguments", "") or ""
    return text, choice.finish_reason == "length"


class ChatModel:
    """Chat completions, with tools when given, on one configured endpoint."""

    def __init__(self, config: ModelConfig, transcript: Transcript | None = None) -> None:
        self.config = config
        self.transcript = transcript
        self.usage = Usage()
        self._client = AsyncOpenAI(
            api_key=os.environ.get(config.api_key_env) or "not-needed",
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=0,  # retried here, with backoff and accounting
        )

    def __reduce__(self) -> tuple[type[ChatModel], tuple[ModelConfig]]:
        """Pickled as its config (an open HTTP client does not travel): a Ray worker makes its own."""
        return ChatModel, (self.config,)

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.config.model}"

    def _where(self) -> str:
        return f"{self.name} at {self._client.base_url}"

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        step: str = "complete",
        **options: Any,
    ) -> ChatCompletion:
        """One completion; an endpoint failure (after the retries) or an answer with no choice raises `LLMError`."""
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
        started = time.perf_counter()
        try:
            completion = await self._with_retries(request)
        except LLMError as exc:
            self.usage.seconds += time.perf_counter() - started
            self._record(step, request, None, str(exc), time.perf_counter() - started)
            raise
        seconds = time.perf_counter() - started
        self.usage.seconds += seconds
        usage = getattr(completion, "usage", None)
        if usage is not None:
            self.usage.prompt_tokens += usage.prompt_tokens or 0
            self.usage.completion_tokens += usage.completion_tokens or 0
        if not getattr(completion, "choices", None):
            self._record(step, request, None, "no choices", seconds)
            raise LLMError(f"{self._where()}: the answer has no choices")
        self._record(step, request, completion.choices[0].message.model_dump_json(exclude_none=True), None, seconds)
        return completion

    async def _with_retries(self, request: dict[str, Any]) -> ChatCompletion:
        attempt = 0
        while True:
            self.usage.requests += 1
            try:
                return await self._client.chat.completions.create(**request)
            except TRANSIENT as exc:
                if attempt >= self.config.max_retries:
                    if isinstance(exc, openai.APITimeoutError):
                        raise LLMError(f"{self._where()}: timed out after {self.config.timeout_s:g} s") from exc
                    raise LLMError(f"{self._where()}: {type(exc).__name__}: {exc}") from exc
            except openai.APIError as exc:
                raise LLMError(f"{self._where()}: {type(exc).__name__}: {exc}") from exc
            except ValueError as exc:  # a body that is not JSON, or JSON of the wrong shape
                raise LLMError(f"{self._where()}: unreadable answer: {exc}") from exc
            await anyio.sleep(self.config.backoff_s * 2**attempt)
            attempt += 1
            self.usage.retries += 1

    def _record(
        self, step: str, request: dict[str, Any], answer: str | None, error: str | None, seconds: float
    ) -> None:
        if self.transcript is not None:
            usage = {**self.usage.model_dump(), "call_seconds": round(seconds, 4)}
            self.transcript.record(step, request, answer, error, usage)

    async def text(self, messages: list[dict[str, Any]], *, step: str = "text", **options: Any) -> str:
        """The text of one completion (empty text is an error: every caller needs words)."""
        completion = await self.complete(messages, step=step, **options)
        content = completion.choices[0].message.content
        if not content or not content.strip():
            raise LLMError(f"{self.name}: the answer has no text")
        return content.strip()

    async def structured(
        self,
        messages: list[dict[str, Any]],
        schema: type[T],
        *,
        repairs: int = 2,
        step: str = "structured",
        max_tokens: int | None = None,
    ) -> T:
        """An answer validated as `schema`. An answer that is not JSON or does not validate goes back to
        the model with the errors, at most `repairs` times; then `LLMError` names the last errors. A
        model that answers with a tool call instead of text has the call's arguments read as its
        answer; one cut off by the token budget is told so; one that answers nothing at all is asked
        again. `max_tokens` overrides the configured budget (a whole document needs more than a reply)."""
        shape = json.dumps(schema.model_json_schema(), separators=(",", ":"))
        conversation = [
            *messages,
            {"role": "user", "content": f"Answer with one JSON object only, valid against this JSON Schema:\n{shape}"},
        ]
        options: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens is not None else {}
        problems = ""
        for attempt in range(repairs + 1):
            completion = await self.complete(
                conversation, step=step if attempt == 0 else f"{step}-repair-{attempt}", **options
            )
            answer, cut_off = answer_text(completion)
            try:
                if cut_off:
                    raise ValueError(
                        "the answer was cut off at the token limit (finish_reason length): send a shorter, complete "
                        "JSON object"
                    )
                return schema.model_validate(json_in(answer))
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()[:20]
                )
            except ValueError as exc:
                problems = str(exc)
            if attempt < repairs:
                self.usage.repairs += 1
                conversation += [
                    {"role": "assistant", "content": answer or "(no answer)"},
                    {
                        "role": "user",
                        "content": f"That answer is invalid: {problems}\nSend the corrected JSON object only.",
                    },
                ]
        raise LLMError(f"{self.name}: no valid {schema.__name__} after {repairs} repairs: {problems}")

    async def aclose(self) -> None:
        await self._client.close()


async def close_after(model: ChatModel, call: Callable[[], Awaitable[R]]) -> R:
    """Run one model-driven step, then close the model's HTTP client whatever happened."""
    try:
        return await call()
    finally:
        await model.aclose()
