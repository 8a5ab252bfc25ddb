"""A scripted OpenAI-compatible chat server on loopback, for tests of every LLM path.

Real HTTP, real `openai` client: the test gives a script of replies and the server answers
`POST /v1/chat/completions` with them in order (the last one repeats). A reply is one of:
- a string: the assistant says it;
- `{"tool_calls": [{"name": ..., "arguments": ...}]}`: the assistant calls tools (arguments may
  be a dict, or a string to send malformed JSON as is);
- `{"content": "...", "finish_reason": "length"}`: text the token budget cut off;
- `{"raw": "..." or b"..."}`: the HTTP body as given (garbage, not JSON), status 200;
- `{"body": <any JSON value>}`: that value as the body, status 200 (a completion of any shape);
- `{"status": 500}`: an HTTP error;
- `{"sleep": seconds, ...}`: wait first (to make the client time out), then answer the rest.
A callable `reply(request_json) -> reply` decides per request instead. Every request is recorded.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Reply = str | dict[str, Any]


@dataclass
class ScriptedModel:
    script: Sequence[Reply] | Callable[[dict[str, Any]], Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""

    def next_reply(self, body: dict[str, Any]) -> Reply:
        if callable(self.script):
            return self.script(body)
        index = min(len(self.requests) - 1, len(self.script) - 1)
        return self.script[index]


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if isinstance(reply, str):
        message["content"] = reply
    else:
        calls = []
        for n, call in enumerate(reply.get("tool_calls", [])):
            arguments = call.get("arguments", {})
            calls.append(
                {
                    "id": call.get("id", f"call_{n}"),
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
            )
        message["tool_calls"] = calls or None
        message["content"] = reply.get("content")
        finish = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@contextmanager
def scripted_openai(script: Sequence[Reply] | Callable[[dict[str, Any]], Reply]) -> Iterator[ScriptedModel]:
    """Serve the script on a free loopback port; yields the model with `base_url` set (ends in /v1)."""
    scripted = ScriptedModel(script)

    async def completions(request: Request) -> Response:
        body = await request.json()
        scripted.requests.append(body)
        reply = scripted.next_reply(body)
        if isinstance(reply, dict) and "sleep" in reply:
            time.sleep(reply["sleep"])  # noqa: ASYNC251 - blocks this test server on purpose
            reply = {k: v for k, v in reply.items() if k != "sleep"} or ""
        if isinstance(reply, dict) and "raw" in reply:
            return Response(reply["raw"], media_type="application/json")
        if isinstance(reply, dict) and "body" in reply:
            return Response(json.dumps(reply["body"]), media_type="application/json")
        if isinstance(reply, dict) and "status" in reply:
            return JSONResponse({"error": {"message": "scripted failure"}}, status_code=reply["status"])
        return JSONResponse(_completion(reply, body.get("model", "scripted")))

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    scripted.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield scripted
    finally:
        server.should_exit = True
        thread.join(timeout=10)
