"""Connections to MCP servers: the farm's own (in-process, stdio, HTTP, the whole farm host) and
anyone else's (an `mcpServers` JSON config), with timeouts and clean shutdown.

The driver, the bench and the tests all open servers through this module. It reaches servers only
over MCP; for the farm's own servers it also speaks the episode control plane
(`envfarm.servers.runtime.control`), which foreign servers lack: there, one fresh stdio process per
episode is the isolation, and state is observed only through the server's own read tools.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, Self

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, Field, ValidationError, model_validator

from envfarm.servers.runtime.access import TOKEN_ENV, parse_tokens
from envfarm.servers.runtime.control import EXTENSION, ControlError, EpisodeClient, ResetResult, StateResult
from envfarm.servers.runtime.farm import stdio_args

Era = Literal["auto", "legacy"]
Transport = Literal["memory", "stdio", "http"]
DEFAULT_TIMEOUT_S = 30.0
CLOSE_GRACE_S = 10.0  # a client that has not exited by then is cancelled


# ---------------------------------------------------------------- farm processes and raw clients


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_all_command(farm_root: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "envfarm.cli", "--farm", str(farm_root), "serve", "--all", "--port", str(port)]


def stdio_params(farm_root: Path, name: str) -> StdioServerParameters:
    """Server `name` of `farm_root` as a stdio process, launched as a desktop client config would."""
    return StdioServerParameters(command=sys.executable, args=stdio_args(farm_root, name))


def proc_rss_kb(pid: int, key: str = "VmRSS") -> int:
    """Resident memory of a process, in kB (`key="VmHWM"`: its high-water mark)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith(f"{key}:")))


@dataclass(frozen=True)
class FarmProcess:
    """A running `envfarm serve --all`: every server at `/<name>/mcp` on one loopback port."""

    process: subprocess.Popen[bytes]
    base_url: str
    answered_after_s: float

    def url(self, server: str, episode: str | None = None) -> str:
        return f"{self.base_url}/{server}/episodes/{episode}/mcp" if episode else f"{self.base_url}/{server}/mcp"

    def rss_mb(self) -> float:
        return proc_rss_kb(self.process.pid) / 1024

    def cpu_s(self) -> float:
        """User + system CPU seconds the farm process has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# Starting 24 servers takes seconds on an idle machine and over a minute on a loaded one.
FARM_START_TIMEOUT_S = 300.0


@contextlib.contextmanager
def farm_process(
    farm_root: Path,
    port: int | None = None,
    timeout: float = FARM_START_TIMEOUT_S,
    token: str | None = None,
    env: Mapping[str, str] | None = None,
    log: IO[bytes] | None = None,
) -> Iterator[FarmProcess]:
    """Run `envfarm serve --all` on loopback until the block ends; ready once its index answers.
    With `token`, the host requires it as a bearer token (ready once it refuses a request without).
    `env` replaces the environment (the bench runs an older checkout's farm host this way). `log`
    (a binary file) receives the host's output, e.g. its stack if it dies (default: a scratch file)."""
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}"
    if token:
        env = {**(env if env is not None else os.environ), TOKEN_ENV: token}
    with tempfile.TemporaryFile() as scratch:
        log = log if log is not None else scratch
        started = time.perf_counter()
        process = subprocess.Popen(serve_all_command(farm_root, port), stdout=log, stderr=log, env=env)
        try:
            while True:
                if process.poll() is not None or time.perf_counter() - started > timeout:
                    log.seek(0)
                    reason = f"exited with {process.returncode}" if process.returncode is not None else "timed out"
                    raise RuntimeError(f"envfarm serve --all {reason}:\n{log.read().decode(errors='replace')}")
                try:
                    with urllib.request.urlopen(f"{base_url}/", timeout=1):
                        break
                except urllib.error.HTTPError as exc:
                    if exc.code == 401 and token:
                        break
                    time.sleep(0.02)
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    time.sleep(0.02)
            yield FarmProcess(process, base_url, time.perf_counter() - started)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def shared_http_client(
    connections: int | None = 200, token: str | None = None, pool_timeout: float | None = 60.0
) -> httpx2.AsyncClient:
    """One pooled HTTP client for many MCP clients: connects cost ~3 ms instead of ~35 ms. With
    `token`, every request carries it as `Authorization: Bearer` (a farm host served with --token).
    `pool_timeout=None` lets a request wait for a free connection as long as it takes (many clients
    on one bounded pool: the caller bounds the whole run instead)."""
    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return httpx2.AsyncClient(timeout=httpx2.Timeout(60.0, pool=pool_timeout), limits=limits, headers=headers)


def http_client(url: str, http: httpx2.AsyncClient, mode: Era = "auto", read_timeout: float | None = None) -> Client:
    return Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=read_timeout)


# ---------------------------------------------------------------- server configs


class ServerConfig(BaseModel):
    """One entry of an `mcpServers` config: a stdio command, or a streamable HTTP URL."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None

    @model_validator(mode="after")
    def _one_way_in(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` (stdio) or `url` (streamable HTTP)")
        return self

    def target(self) -> StdioServerParameters | str:
        if self.url is not None:
            return self.url
        env = {**os.environ, **self.env} if self.env else None
        return StdioServerParameters(command=self.command or "", args=self.args, env=env, cwd=self.cwd)


def load_server_configs(path: Path) -> dict[str, ServerConfig]:
    """The servers of a Claude/Cursor-style `{"mcpServers": {...}}` (or VS Code `{"servers": ...}`) file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read an MCP server config: {exc}") from exc
    entries = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise ValueError(f"{path}: expected an object with a non-empty `mcpServers` (or `servers`) map")
    configs: dict[str, ServerConfig] = {}
    problems: list[str] = []
    for name, entry in entries.items():
        try:
            configs[name] = ServerConfig.model_validate(entry)
        except ValidationError as exc:
            details = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in exc.errors())
            problems.append(f"{path}: mcpServers.{name}: {details}")
    if problems:
        raise ValueError("\n".join(problems))
    return configs


# ---------------------------------------------------------------- episodes on live servers


@dataclass
class Episode:
    """One isolated episode on one server: tool calls, and (when the server has the control
    plane) its state. Obtained from `Connections.episode`; closed when that block ends."""

    server: str
    episode: EpisodeClient
    tools: list[types.Tool]
    instructions: str | None
    controlled: bool
    principal: str | None = None  # whom the episode acts for, as the server confirmed it (None: nobody)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        return await self.episode.call_tool(name, arguments)

    async def state(self, *, rows: bool = False) -> StateResult | None:
        """The episode's state, hash and diff; None for a server without the control plane."""
        return await self.episode.state(rows=rows) if self.controlled else None


@dataclass
class _Held:
    """One entered client, owned by a task of its own (`Connections._own`) from open to close.

    anyio requires a client's task group (the stdio reader and writer, the in-memory server) to be
    entered and exited by the same task, innermost first. Episodes open and close in any order and
    from any task (a pool keeps some across tasks, a rollout's worker ends another's), so no caller
    enters a client itself: it asks the owner task to, and later tells it to exit. A server that
    dies or misbehaves ends its owner task only, never the driver: its episode's requests fail instead.
    """

    server: str
    client: Client
    tools: list[types.Tool]
    controlled: bool
    scope: anyio.CancelScope  # around the owner's `async with client`: cancelled when it will not exit
    exit: anyio.Event = field(default_factory=anyio.Event)
    exited: anyio.Event = field(default_factory=anyio.Event)

    async def close(self, grace: float = CLOSE_GRACE_S) -> None:
        """Tell the owner task to exit the client; cancel it if it has not within `grace` seconds
        (a server that will not stop is killed by the transport's own cleanup)."""
        self.exit.set()
        with anyio.move_on_after(grace):
            await self.exited.wait()
        if not self.exited.is_set():
            self.scope.cancel()
            await self.exited.wait()


@dataclass
class Connections:
    """Open episodes on named servers. Use as `async with Connections(targets) as farm:`.

    A server with the envfarm control plane is connected once; its episodes are told apart by
    `_meta["envfarm/episode"]` and closed at the end of each episode block. A server without it
    gets one fresh connection (one fresh process, for stdio) per episode; one spare connection per such
    server is started as an episode takes the last, so the next episode does not wait for a process to
    start and shake hands (0.4 s for a Python server), and an ended episode's process is stopped in the
    background. A spare has served no request, so it is as fresh as one started on demand. Every request has
    `timeout` seconds; a dead or hanging server raises `ControlError`, it is never waited on forever.
    Every connection lives in a task of its own (see `_Held`), so episodes may end in any order and
    from any task. HTTP requests carry `token` (default: $ENVFARM_TOKEN) as a bearer token when there is one.
    """

    targets: Mapping[str, Any]
    timeout: float = DEFAULT_TIMEOUT_S
    mode: Era = "auto"
    token: str | None = None
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    _shared: dict[str, _Held] = field(default_factory=dict)
    _open: list[_Held] = field(default_factory=list)
    _locks: dict[str, anyio.Lock] = field(default_factory=dict)
    _spares: dict[str, list[_Held]] = field(default_factory=dict)
    _starting: dict[str, tuple[anyio.Event, anyio.CancelScope]] = field(default_factory=dict)  # spares starting
    _group: TaskGroup | None = None
    _http: httpx2.AsyncClient | None = None

    async def __aenter__(self) -> Self:
        await self._stack.__aenter__()
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._group is not None:
                with anyio.CancelScope(shield=True):
                    for _, starting in list(self._starting.values()):
                        starting.cancel()
                    for done, _ in list(self._starting.values()):
                        await done.wait()
                    for held in list(self._open):
                        await held.close()
                await self._group.__aexit__(*exc)  # type: ignore[arg-type]
        finally:
            self._group = None
            await self._stack.__aexit__(*exc)  # type: ignore[arg-type]

    def _client(self, target: Any) -> Client:
        if isinstance(target, ServerConfig):
            target = target.target()
        if isinstance(target, str):
            if self._http is None:
                from_env = parse_tokens(os.environ.get(TOKEN_ENV, "").split(","))[0]  # the first, without =PRINCIPAL
                self._http = shared_http_client(token=self.token or next(iter(from_env), None))
                self._stack.push_async_callback(self._http.aclose)
            return http_client(target, self._http, self.mode, self.timeout)
        if isinstance(target, StdioServerParameters):
            # The server's stderr is its own business; keep it off ours.
            transport = stdio_client(target, errlog=open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the process
            return Client(transport, read_timeout_seconds=self.timeout)
        return Client(target, read_timeout_seconds=self.timeout)

    async def _own(self, server: str, task_status: TaskStatus[_Held]) -> None:
        """The task that enters one client, hands it over, and exits it when told to (see `_Held`).
        No timeout scope around entering: the client's read timeout bounds the handshake and listing."""
        held: _Held | None = None
        scope = anyio.CancelScope()
        try:
            with scope:
                async with self._client(self.targets[server]) as client:
                    tools = (await client.list_tools()).tools
                    controlled = EXTENSION in (client.server_capabilities.extensions or {})
                    held = _Held(server, client, tools, controlled, scope)
                    self._open.append(held)
                    task_status.started(held)
                    await held.exit.wait()
        except Exception as exc:
            if held is None:
                raise ControlError("unavailable", f"{server}: could not connect: {describe(exc)}") from exc
            # The connection broke after the handover (the server died): its episode's requests already
            # fail with `ControlError`; the driver and every other connection go on.
        finally:
            if held is not None:
                held.exited.set()
                if held in self._open:
                    self._open.remove(held)

    async def _enter(self, server: str) -> _Held:
        """A new connection to `server`, owned by its own task in this object's task group."""
        if server not in self.targets:
            raise LookupError(f"no server named {server!r}; known: {', '.join(sorted(self.targets)) or 'none'}")
        if self._group is None:
            raise RuntimeError("Connections must be entered (`async with Connections(...)`) before use")
        held: _Held = await self._group.start(self._own, server)
        return held

    async def _shared_for(self, server: str) -> _Held | None:
        """The shared connection of a server with the control plane; None for one without (that
        connection is kept only for listing: it cannot isolate episodes)."""
        async with self._locks.setdefault(server, anyio.Lock()):
            if server not in self._shared:
                self._shared[server] = await self._enter(server)
        shared = self._shared[server]
        return shared if shared.controlled else None

    async def tools(self, server: str) -> list[types.Tool]:
        """The server's tool list (listed once per run)."""
        await self._shared_for(server)
        return self._shared[server].tools

    async def instructions(self, server: str) -> str | None:
        await self._shared_for(server)
        return self._shared[server].client.instructions

    async def resource_text(self, server: str, name: str) -> str | None:
        """The text of the server's resource called `name`; None when it has no such resource or lists
        none at all (a server without resources is not an error)."""
        await self._shared_for(server)
        client = self._shared[server].client
        if client.server_capabilities.resources is None:
            return None
        try:
            listed = (await client.list_resources()).resources
        except Exception as exc:
            raise ControlError("unavailable", f"{server}: listing resources failed: {exc}") from exc
        found = next((r for r in listed if r.name == name), None)
        if found is None:
            return None
        contents = (await client.read_resource(found.uri)).contents
        return "".join(getattr(c, "text", "") for c in contents)

    def fresh_process(self, server: str) -> bool:
        """Whether each episode of `server` is a process of its own (stdio, no control plane): its writes
        are gone when the episode ends. Known once the server was listed."""
        held = self._shared.get(server)
        target = self.targets.get(server)
        stdio = isinstance(target, StdioServerParameters) or (isinstance(target, ServerConfig) and target.command)
        return held is not None and not held.controlled and bool(stdio)

    @asynccontextmanager
    async def episode(
        self, server: str, episode_id: str, *, state: Any = None, principal: str | None = None
    ) -> AsyncIterator[Episode]:
        """A fresh episode from the seed (or from `state`, rows per table) that ends with the block, acting
        for `principal` where the server knows them (else for its default principal, if it has one)."""
        shared = await self._shared_for(server)
        if shared is not None:
            handle = EpisodeClient(shared.client, episode_id, timeout=self.timeout)
            reset = await reset_as(handle, state, principal)
            instructions = reset.instructions or shared.client.instructions
            try:
                yield Episode(server, handle, shared.tools, instructions, controlled=True, principal=reset.principal)
            finally:
                with contextlib.suppress(ControlError):
                    await handle.close()
            return
        if state is not None:
            raise ValueError(f"{server} has no envfarm control plane: an initial state cannot be loaded")
        held = await self._fresh(server)
        try:
            client = held.client
            yield Episode(
                server, EpisodeClient(client, None, timeout=self.timeout), held.tools, client.instructions, False
            )
        finally:
            if self._group is not None:
                self._group.start_soon(held.close)  # nobody waits for a used process to stop
            else:
                with anyio.CancelScope(shield=True):
                    await held.close()

    async def _fresh(self, server: str) -> _Held:
        """A connection no episode has used: the spare (waited for if it is still starting), else a new
        one. Either way a new spare starts behind it."""
        if server in self._starting:
            await self._starting[server][0].wait()
        spares = self._spares.setdefault(server, [])
        held = spares.pop() if spares else None
        if held is not None and held.exited.is_set():  # its server died while it waited
            held = None
        if held is None:
            held = await self._enter(server)
        if self._group is not None and server not in self._starting:
            self._starting[server] = (anyio.Event(), anyio.CancelScope())
            self._group.start_soon(self._start_spare, server)
        return held

    async def _start_spare(self, server: str) -> None:
        """Start one spare connection for `server`. A server that cannot start now is left to the next
        episode, which starts it on demand and reports why it cannot."""
        done, scope = self._starting[server]
        try:
            with scope, contextlib.suppress(Exception):
                self._spares.setdefault(server, []).append(await self._enter(server))
        finally:
            del self._starting[server]
            done.set()


def describe(exc: BaseException) -> str:
    """An exception as one line, the leaves of a (nested) exception group included."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def reset_as(handle: EpisodeClient, state: Any, principal: str | None) -> ResetResult:
    """Reset acting for `principal`; a server that does not know them (one without principals, or whose
    principals are staff rather than the persona) is reset for its default instead."""
    if principal is not None:
        try:
            return await handle.reset(state, principal=principal)
        except ControlError as exc:
            if "principal" not in exc.detail:
                raise
    return await handle.reset(state)


def farm_targets(
    farm_root: Path, names: Sequence[str], transport: Transport = "memory", base_url: str | None = None
) -> dict[str, Any]:
    """How to reach each named server of a farm: built in-process, as a stdio process, or on a farm host."""
    targets: dict[str, Any] = {}
    for name in names:
        if transport == "memory":
            from envfarm.servers.runtime.farm import load_server

            targets[name] = load_server(farm_root, name)
        elif transport == "stdio":
            targets[name] = stdio_params(farm_root, name)
        else:
            if base_url is None:
                raise ValueError("transport 'http' needs the farm host's base URL")
            targets[name] = f"{base_url.rstrip('/')}/{name}/mcp"
    return targets
