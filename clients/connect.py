"""Connections to MCP servers: the farm's own (in-process, stdio, HTTP, the whole farm host) and
anyone else's (an `mcpServers` JSON config), with timeouts and clean shutdown.

The driver, the bench and the tests all open servers through this module. It reaches servers only
over MCP; for the farm's own servers it also speaks the episode control plane
(`servers.runtime.control`), which foreign servers lack: there, one fresh stdio process per
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

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, Field, ValidationError, model_validator

from servers.runtime.access import TOKEN_ENV, parse_tokens
from servers.runtime.control import EXTENSION, ControlError, EpisodeClient, ResetResult, StateResult
from servers.runtime.farm import stdio_args

Era = Literal["auto", "legacy"]
Transport = Literal["memory", "stdio", "http"]
DEFAULT_TIMEOUT_S = 30.0


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
class _Shared:
    """An entered client shared by every episode of one server (the control plane tells them apart)."""

    client: Client
    tools: list[types.Tool]
    controlled: bool


@dataclass
class Connections:
    """Open episodes on named servers. Use as `async with Connections(targets) as farm:`.

    A server with the envfarm control plane is connected once; its episodes are told apart by
    `_meta["envfarm/episode"]` and closed at the end of each episode block. A server without it
    gets one fresh connection (one fresh process, for stdio) per episode. Every request has
    `timeout` seconds; a dead or hanging server raises `ControlError`, it is never waited on forever.
    HTTP requests carry `token` (default: $ENVFARM_TOKEN) as a bearer token when there is one.
    """

    targets: Mapping[str, Any]
    timeout: float = DEFAULT_TIMEOUT_S
    mode: Era = "auto"
    token: str | None = None
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    _shared: dict[str, _Shared] = field(default_factory=dict)
    _http: httpx2.AsyncClient | None = None

    async def __aenter__(self) -> Self:
        await self._stack.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
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

    async def _enter(self, stack: AsyncExitStack, server: str) -> tuple[Client, list[types.Tool], bool]:
        if server not in self.targets:
            raise LookupError(f"no server named {server!r}; known: {', '.join(sorted(self.targets)) or 'none'}")
        # No cancel scope around entering: the client's task group outlives this call. The client's
        # read timeout bounds the handshake and the listing instead.
        try:
            client = await stack.enter_async_context(self._client(self.targets[server]))
            tools = (await client.list_tools()).tools
        except Exception as exc:
            raise ControlError("unavailable", f"{server}: could not connect: {type(exc).__name__}: {exc}") from exc
        controlled = EXTENSION in (client.server_capabilities.extensions or {})
        return client, tools, controlled

    async def _shared_for(self, server: str) -> _Shared | None:
        """The shared connection of a server with the control plane; None for one without (that
        connection is kept only for listing: it cannot isolate episodes)."""
        if server not in self._shared:
            client, tools, controlled = await self._enter(self._stack, server)
            self._shared[server] = _Shared(client, tools, controlled)
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
        async with AsyncExitStack() as stack:
            client, tools, _ = await self._enter(stack, server)
            yield Episode(server, EpisodeClient(client, None, timeout=self.timeout), tools, client.instructions, False)


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
            from servers.runtime.farm import load_server

            targets[name] = load_server(farm_root, name)
        elif transport == "stdio":
            targets[name] = stdio_params(farm_root, name)
        else:
            if base_url is None:
                raise ValueError("transport 'http' needs the farm host's base URL")
            targets[name] = f"{base_url.rstrip('/')}/{name}/mcp"
    return targets
