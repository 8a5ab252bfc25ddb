"""Streamable HTTP for one server or the whole farm, from one process on one port.

Each server answers at `/<name>/mcp`. A per-episode URL, `/<name>/episodes/<id>/mcp`, reaches
the same server with the episode handle set, for clients that cannot send `_meta`.

Access: with bearer tokens (`Access.tokens`) every request must carry one. The SDK's own bearer
middleware checks it with `Access` as its token verifier: the token becomes the request's
`scope["user"]` (the SDK's `AuthenticatedUser`; `client_id`: the token's owner digest, `subject`: the
principal it is bound to) and the SDK's access-token context, which the runtime reads (`caller.identify`).
So an episode belongs to the token that opened it and the SDK serves a 2025-era session only to the token
that opened it (another token, DELETE included, gets 404). A non-loopback bind needs a token and keeps the
Host/Origin checks against an explicit allow-list. A 2025-era session's episode is closed when its session
ends (DELETE).
"""

from __future__ import annotations

import gc
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import TokenVerifier
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT
from starlette.applications import Starlette
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from envfarm.servers.runtime.access import Access
from envfarm.servers.runtime.caller import EPISODE_URL, SESSION_HEADER
from envfarm.servers.runtime.episodes import MAX_EPISODE_ID, EpisodeBudget

SESSION_HEADER_BYTES = SESSION_HEADER.encode()


async def _refuse(send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = f'{{"error": "{message}"}}'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


EPISODE_PATH = re.compile(
    rf"^/(?P<server>[a-z][a-z0-9_]*)/episodes/(?P<episode>[A-Za-z0-9._:-]{{1,{MAX_EPISODE_ID}}})/mcp/?$"
)


class EpisodePaths:
    """ASGI middleware: `/<server>/episodes/<id>/mcp` -> `/<server>/mcp` with the episode in `caller.EPISODE_URL`
    (a context variable the SDK carries to the handler with the request, as it carries the access token); a
    session's episode closed with the session.

    A GET on an MCP endpoint (a 2025-era client opening its standalone SSE stream) gets no stream (`_no_stream`):
    a farm server never sends anything outside a response (no notifications, no requests to the client; every
    answer is one JSON body), so the stream carried nothing, yet holding it open cost the SDK a task group
    and a stream per session: 0.85 of a 2025-era episode's ~6.5 ms of server CPU (`envfarm bench`)."""

    def __init__(self, app: ASGIApp, on_session_end: Callable[[str], None]) -> None:
        self.app = app
        self.on_session_end = on_session_end

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        episode: str | None = None
        if match := EPISODE_PATH.match(path):
            path, episode = f"/{match['server']}/mcp", match["episode"]
            scope = {**scope, "path": path, "raw_path": path.encode()}
        if scope["method"] == "GET" and path.rstrip("/").endswith("/mcp"):
            await _no_stream(scope, send)
            return
        if episode is None:
            await self._serve(scope, receive, send)
            return
        reset = EPISODE_URL.set(episode)
        try:
            await self._serve(scope, receive, send)
        finally:
            EPISODE_URL.reset(reset)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = None
        if scope["method"] == "DELETE":
            session = next((v.decode("latin-1") for k, v in scope["headers"] if k == SESSION_HEADER_BYTES), None)
        if session is None:
            await self.app(scope, receive, send)
            return
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, watch)
        if status < 400:
            self.on_session_end(f"session:{session}")


# How long a 2025-era client is told to wait before opening its GET stream again: the SDK's idle timeout of a
# session (30 minutes), after which the session is gone anyway.
NO_STREAM_RETRY_MS = int(DEFAULT_SESSION_IDLE_TIMEOUT * 1000)
NO_STREAM = f"retry: {NO_STREAM_RETRY_MS}\n\n".encode()


async def _no_stream(scope: Scope, send: Send) -> None:
    """Answer a GET on an MCP endpoint: a farm server sends nothing outside a response, so there is no stream.

    Within a session (the GET carries its Mcp-Session-Id) the answer is an SSE stream that ends at once, with
    only a `retry` hint: the SDK's client reads it to the end, keeps its connection and waits that long before
    asking again. Refused with 405 ("the server does not offer an SSE stream at this endpoint"), its client
    dropped the connection (an unread error body cannot be reused) and asked again a second later; that cost a
    2025-era episode a connection (accept, close) and, in sessions over a second, a second GET. Without a
    session, as for a 2026-era client, 405 stands."""
    if not any(name == SESSION_HEADER_BYTES for name, _ in scope["headers"]):
        await _refuse(
            send, 405, "this server sends nothing outside a response: no GET stream", [(b"allow", b"POST, DELETE")]
        )
        return
    headers = [
        (b"content-type", b"text/event-stream"),
        (b"cache-control", b"no-cache"),
        (b"content-length", str(len(NO_STREAM)).encode()),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": NO_STREAM})


def bearer_required(app: ASGIApp, verifier: TokenVerifier) -> ASGIApp:
    """`app` behind the SDK's bearer-token middleware: every HTTP request needs a token `verifier` accepts
    (else 401 with `WWW-Authenticate: Bearer`); the checked token becomes `scope["user"]` and the SDK's
    access-token context. The SDK mounts the same three around one server's endpoint when `MCPServer` is
    given a token verifier; here they guard the whole host, index included, whose tokens are chosen when it is
    served rather than when its servers are built. The lifespan passes straight through."""
    checked = AuthenticationMiddleware(
        RequireAuthMiddleware(AuthContextMiddleware(app), required_scopes=[]), backend=BearerAuthBackend(verifier)
    )

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        await (checked if scope["type"] == "http" else app)(scope, receive, send)

    return guarded


def farm_app(
    servers: Mapping[str, MCPServer],
    host: str = "127.0.0.1",
    *,
    budget: EpisodeBudget | None = None,
    access: Access | None = None,
) -> ASGIApp:
    """One ASGI app serving every server at `/<name>/mcp`, plus `/` listing them.

    Each POST is answered with one JSON body rather than an SSE stream: tools here never stream
    progress or ask the client anything mid-call, and the stream per request cost about twice the
    server CPU per tool call in the 2025 era (measured by `envfarm bench`).
    """
    access = access or Access()
    security = access.security(host)
    apps = {
        name: server.streamable_http_app(host=host, json_response=True, transport_security=security)
        for name, server in servers.items()
    }

    async def index(_: Request) -> JSONResponse:
        return JSONResponse({"servers": {name: f"/{name}/mcp" for name in apps}})

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for server in servers.values():
                await stack.enter_async_context(server.session_manager.run())
            yield

    routes: list[Any] = [Route("/", index)] + [Mount(f"/{name}", app=app) for name, app in apps.items()]
    host_app = EpisodePaths(
        Starlette(routes=routes, lifespan=lifespan), budget.close_key if budget is not None else lambda _: None
    )
    return bearer_required(host_app, access) if access.tokens else host_app


# Agents pause between tool calls (a model turn takes seconds). uvicorn's default 5 s keep-alive
# equals httpx's idle expiry, so a client reusing a connection the server is just closing loses the
# request ("Server disconnected"); a longer server keep-alive leaves closing idle connections to the client.
KEEP_ALIVE_S = 75


# Allocations between two young collections of the cyclic garbage collector while serving (CPython's default: 700).
GC_YOUNG_THRESHOLD = 10_000


def tune_gc() -> None:
    """Settle the collector for serving: what start-up built (the servers, their tools, their pydantic models:
    ~115,000 objects for the farm) is frozen out of every later collection, and young collections run after
    10,000 allocations, not 700. A 2025-era session allocates hundreds of short-lived container objects (its
    tasks, streams and cancel scopes), so collections ran constantly and each old-generation one walked the whole
    farm again: 3.1 ms of a legacy episode's 8.9 ms of server CPU went to the collector (0.45 ms after this),
    measured with `gc.callbacks` on `serve --all` under 200 concurrent sessions. Garbage without cycles is freed
    at once either way; only cycles wait longer."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def serve_http(
    servers: Mapping[str, MCPServer],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    budget: EpisodeBudget | None = None,
    access: Access | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve until interrupted; `on_ready` runs once the socket accepts connections."""
    app = farm_app(servers, host, budget=budget, access=access)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", timeout_keep_alive=KEEP_ALIVE_S
    )
    server = uvicorn.Server(config)
    if on_ready is not None:
        started = server.startup

        async def startup(sockets: Any = None) -> None:
            await started(sockets)
            if server.started:
                on_ready()

        server.startup = startup  # type: ignore[method-assign]
    tune_gc()
    server.run()
