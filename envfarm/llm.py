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

Every answer is read once, here, into a validated `Reply` (`read_reply`): whatever an endpoint sends
(not JSON, no choices, a null message, tool calls with no id or name, garbage usage) is either a
usable `Reply` or an `LLMError` saying what was wrong, so no caller ever walks a half-formed object.
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
from httpx2 import AsyncClient
from openai import AsyncOpenAI
from pydantic import BaseModel, Field, ValidationError

PREFIX = "openai:"
T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
TRANSIENT = (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)


class LLMError(Exception):
    """The model endpoint failed or answered something unusable; the message says which and where."""


class UnusableAnswer(LLMError):
    """The endpoint answered a well-formed completion, but not what the step needs (no text): a caller with an
    offline fallback uses it instead; an unreachable or broken endpoint stays a plain `LLMError`."""


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
        except RecursionError:
            raise ValueError("not JSON: nested too deeply") from None
        except json.JSONDecodeError as exc:
            error = error or exc
    if start >= 0:
        try:
            return json.JSONDecoder().raw_decode(text, start)[0]  # `{...} Hope this helps {:)}`
        except (json.JSONDecodeError, RecursionError):
            pass
    else:
        raise ValueError(f"not JSON: the answer has no JSON object (it begins {text.strip()[:80]!r})")
    raise ValueError(f"not JSON: {error}")


MAX_TOKENS_REPORTED = 10**9  # a usage count above this is garbage, not a count
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")  # json.loads joins valid pairs: what is left cannot be encoded


class NotACompletion(ValueError):
    """A body that is no chat completion at all (`read_reply` names what is wrong)."""


class ToolCall(BaseModel):
    """One tool call as the model wrote it; the arguments stay the raw text (the rollout judges them)."""

    id: str
    name: str = Field(description="empty when the model named no function: the rollout records an unknown tool")
    arguments: str = ""


class Reply(BaseModel):
    """One chat completion, read and validated once (`read_reply`): the only shape callers see."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    problems: list[str] = Field(default_factory=list, description="what was missing or malformed and made do")

    @property
    def cut_off(self) -> bool:
        """The token budget ended the answer."""
        return self.finish_reason == "length"


def _text(value: str) -> str:
    return LONE_SURROGATE.sub("\ufffd", value)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _content(value: Any, problems: list[str]) -> str | None:
    """Text, or None; a list of content parts is joined from its text parts (a form some servers send)."""
    if value is None or isinstance(value, str):
        return None if value is None else _text(value)
    if isinstance(value, list):
        parts = [p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if len(parts) < len(value):
            problems.append(f"content: {len(value) - len(parts)} part(s) without text dropped")
        return _text("".join(parts)) if parts else None
    raise NotACompletion(f"choices[0].message.content is a {_kind(value)}, not text")


def _arguments(value: Any) -> str:
    """The raw arguments text; a JSON value sent as is (some servers do) is written back as JSON text."""
    if isinstance(value, str):
        return _text(value)
    return "" if value is None else _text(json.dumps(value))


def _tool_calls(value: Any, problems: list[str]) -> list[ToolCall]:
    """Every call the message holds. A call with no usable id gets one; a call with no function or name keeps
    an empty name: it is the model's mistake, recorded by the rollout as an unknown tool, not dropped."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise NotACompletion(f"choices[0].message.tool_calls is a {_kind(value)}, not a list")
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for n, raw in enumerate(value):
        call = raw if isinstance(raw, dict) else {}
        function = call.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(raw, dict):
            problems.append(f"tool_calls[{n}] is {_kind(raw)}")
        elif not isinstance(function, dict):
            problems.append(f"tool_calls[{n}]: function is {_kind(function)}")
        elif not isinstance(name, str):
            problems.append(f"tool_calls[{n}]: name is {_kind(name)}")
        id_ = call.get("id")
        if not isinstance(id_, str) or not id_ or id_ in seen:
            if isinstance(raw, dict):
                why = (
                    f"id {id_[:40]!r} repeats"
                    if isinstance(id_, str) and id_
                    else f"id is {'empty' if id_ == '' else _kind(id_)}"
                )
                problems.append(f"tool_calls[{n}]: {why}")
            id_ = f"call_{n}"
            while id_ in seen:
                id_ += "_"
        seen.add(id_)
        arguments = function.get("arguments") if isinstance(function, dict) else None
        calls.append(
            ToolCall(id=_text(id_), name=_text(name if isinstance(name, str) else ""), arguments=_arguments(arguments))
        )
    return calls


def _count(usage: Any, key: str) -> int:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if type(value) is int and 0 <= value <= MAX_TOKENS_REPORTED else 0


def read_reply(body: bytes | str) -> Reply:
    """The body of a chat completion as a `Reply`; raises `NotACompletion` naming the first thing that makes it no
    completion at all (not JSON, not an object, no choices, no message, content or tool calls of the wrong
    type). What is merely missing inside (a tool call's id or name, finish_reason, usage) is made do with and
    listed in `problems`."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, a 5,000-digit number, deep nesting
        shown = body[:80] if isinstance(body, str) else body[:80].decode("utf-8", "replace")
        raise NotACompletion(f"not JSON ({str(exc)[:120]}): {shown!r}") from None
    if not isinstance(data, dict):
        raise NotACompletion(f"the answer is a JSON {_kind(data)}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        said = error.get("message") if isinstance(error, dict) else error
        raise NotACompletion(f"the answer has no choices{f': {str(said)[:200]}' if said else ''}")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise NotACompletion(f"choices[0] is a {_kind(choice)}, not an object")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise NotACompletion(f"choices[0].message is {_kind(message)}")
    problems: list[str] = []
    content = _content(message.get("content"), problems)
    calls = _tool_calls(message.get("tool_calls"), problems)
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        problems.append(f"finish_reason is {_kind(finish)}")
        finish = None
    usage = data.get("usage")
    return Reply(
        content=content,
        tool_calls=calls,
        finish_reason=_text(finish) if finish else finish,
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
        problems=problems,
    )


def answer_text(reply: Reply) -> str:
    """The answer's text. A model asked for JSON sometimes calls a tool instead: the first call's arguments
    are then the answer."""
    text = (reply.content or "").strip()
    if not text and reply.tool_calls:
        text = reply.tool_calls[0].arguments.strip()
    return text


class ChatModel:
    """Chat completions, with tools when given, on one configured endpoint."""

    def __init__(
        self, config: ModelConfig, transcript: Transcript | None = None, http_client: AsyncClient | None = None
    ) -> None:
        """`http_client` replaces the default HTTP client (a test serves answers in-process through one)."""
        self.config = config
        self.transcript = transcript
        self.usage = Usage()
        self._client = AsyncOpenAI(
            api_key=os.environ.get(config.api_key_env) or "not-needed",
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=0,  # retried here, with backoff and accounting
            http_client=http_client,
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
    ) -> Reply:
        """One completion, validated; an endpoint failure (after the retries) or an answer that is no completion
        (not JSON, no choices, no message, ...: see `read_reply`) raises `LLMError` naming the endpoint."""
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
            reply = await self._with_retries(request)
        except LLMError as exc:
            self.usage.seconds += time.perf_counter() - started
            self._record(step, request, None, str(exc), time.perf_counter() - started)
            raise
        seconds = time.perf_counter() - started
        self.usage.seconds += seconds
        self.usage.prompt_tokens += reply.prompt_tokens
        self.usage.completion_tokens += reply.completion_tokens
        self._record(step, request, reply.model_dump_json(exclude_defaults=True), None, seconds)
        return reply

    async def _with_retries(self, request: dict[str, Any]) -> Reply:
        attempt = 0
        while True:
            self.usage.requests += 1
            try:
                raw = await self._client.chat.completions.with_raw_response.create(**request)
                return read_reply(raw.content)
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
        """The text of one completion (no text is `UnusableAnswer`: every caller needs words)."""
        reply = await self.complete(messages, step=step, **options)
        if not reply.content or not reply.content.strip():
            raise UnusableAnswer(f"{self._where()}: the answer has no text")
        return reply.content.strip()

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
            reply = await self.complete(
                conversation, step=step if attempt == 0 else f"{step}-repair-{attempt}", **options
            )
            answer = answer_text(reply)
            try:
                if reply.cut_off:
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
        raise UnusableAnswer(f"{self.name}: no valid {schema.__name__} after {repairs} repairs: {problems}")

    async def aclose(self) -> None:
        await self._client.close()


async def close_after(model: ChatModel, call: Callable[[], Awaitable[R]]) -> R:
    """Run one model-driven step, then close the model's HTTP client whatever happened."""
    try:
        return await call()
    finally:
        await model.aclose()
