"""Streamable HTTP for one server or the whole farm, from one process on one port.

Each server answers at `/<name>/mcp`. A per-episode URL, `/<name>/episodes/<id>/mcp`, reaches
the same server with the episode handle set, for clients that cannot send `_meta`.

Access: with bearer tokens (`Access.tokens`) every request must carry one. The checked token becomes
the request's `scope["user"]`, the SDK's `AuthenticatedUser` (`client_id`: the token's owner digest,
`subject`: the principal it is bound to), so an episode belongs to the token that opened it and the
SDK serves a 2025-era session only to the token that opened it (another token, DELETE included, gets
404). A non-loopback bind needs a token and keeps the Host/Origin checks against an explicit
allow-list. A 2025-era session's episode is closed when its session ends (DELETE).
"""

from __future__ import annotations

import gc
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from envfarm.servers.runtime.access import Access
from envfarm.servers.runtime.control import EPISODE_HEADER
from envfarm.servers.runtime.episodes import MAX_EPISODE_ID, SESSION_HEADER, EpisodeBudget


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
    """ASGI middleware: `/<server>/episodes/<id>/mcp` -> `/<server>/mcp` with the episode header; the
    bearer token checked and turned into `scope["user"]`; a session's episode closed with the session.

    A GET on an MCP endpoint (a 2025-era client opening its standalone SSE stream) is answered 405, as the
    streamable HTTP transport allows ("the server does not offer an SSE stream at this endpoint"): a farm
    server never sends anything outside a response (no notifications, no requests to the client; every
    answer is one JSON body), so the stream carried nothing, yet holding it open cost the SDK a task group
    and a stream per session: 0.85 of a 2025-era episode's ~6.5 ms of server CPU (`envfarm bench`)."""

    def __init__(self, app: ASGIApp, access: Access, on_session_end: Callable[[str], None]) -> None:
        self.app = app
        self.access = access
        self.on_session_end = on_session_end

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = [h for h in scope["headers"] if h[0] != EPISODE_HEADER.encode()]  # only this host sets it
        user: AuthenticatedUser | None = None
        if self.access.tokens:
            authorization = next((v.decode("latin-1") for k, v in headers if k == b"authorization"), None)
            caller = self.access.caller(authorization)
            if caller is None:
                await _refuse(send, 401, "a valid bearer token is required", [(b"www-authenticate", b"Bearer")])
                return
            owner, principal = caller
            user = AuthenticatedUser(AccessToken(token=owner, client_id=owner, scopes=[], subject=principal))
        path = scope["path"]
        if match := EPISODE_PATH.match(path):
            path = f"/{match['server']}/mcp"
            headers.append((EPISODE_HEADER.encode(), match["episode"].encode()))
        scope = {**scope, "path": path, "raw_path": path.encode(), "headers": headers}
        if user is not None:
            scope["user"] = user
        if scope["method"] == "GET" and path.rstrip("/").endswith("/mcp"):
            await _refuse(
                send, 405, "this server sends nothing outside a response: no GET stream", [(b"allow", b"POST, DELETE")]
            )
            return
        session = next((v.decode("latin-1") for k, v in headers if k == SESSION_HEADER.encode()), None)
        if scope["method"] != "DELETE" or session is None:
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
    return EpisodePaths(
        Starlette(routes=routes, lifespan=lifespan), access, budget.close_key if budget is not None else lambda _: None
    )


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
