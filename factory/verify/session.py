"""A verifier's connection to a server under test: one subprocess over stdio, driven by the `mcp` client.

Calls go out raw (`send_request`, not `Client.call_tool`) so that a result breaking its own output
schema comes back as evidence instead of a client-side exception. Every call has a timeout; the
server's stderr goes to a file, so output a handler writes during a call is attributed to that call,
and anything that is not an MCP message on stdout reaches us as a stream exception.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic import BaseModel

from envfarm.factory.sandbox.guard import sandboxed_args
from envfarm.servers.runtime.control import ControlError, EpisodeClient, ErrorKind, StateResult, error_kind

SessionBroken = ControlError
"""The server hung past the timeout or broke the connection: nothing more can be asked of it."""


class CallResult(BaseModel):
    """A tool call's result as the verifier judges it."""

    is_error: bool
    text: str
    structured: Any = None
    kind: ErrorKind | None = None
    streams: str = ""

    @property
    def output(self) -> list[Any]:
        """What isolation and determinism compare: the structured result, else the text."""
        return [self.is_error, self.structured if self.structured is not None else self.text]


def serve_args(name: str, import_root: Path) -> list[str]:
    """`--farm <import_root> <name>`, the runtime entry point's arguments (`python -m envfarm.servers.runtime`): the
    server in `import_root/servers/<name>/`, imported from that folder (see `envfarm.servers.runtime.farm`), as
    `envfarm --farm <import_root> serve <name>` (a client config for that farm) launches it."""
    return ["--farm", str(import_root), name]


def server_parameters(name: str, import_root: Path) -> StdioServerParameters:
    """`python -m envfarm.factory.sandbox.guard --farm <import_root> <name>`: the runtime inside the sandbox (resource
    limits and an audit hook: handlers are untrusted)."""
    return StdioServerParameters(command=sys.executable, args=sandboxed_args(serve_args(name, import_root)))


def connect(
    name: str,
    import_root: Path,
    errlog: TextIO,
    launch_timeout: float,
    stream_errors: list[str],
    parameters: StdioServerParameters | None = None,
) -> Client:
    """An unopened client for the server (launched by `parameters`, default `server_parameters`); enter it
    to launch. Stream exceptions land in `stream_errors`."""

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            stream_errors.append(f"not an MCP message on stdout: {message}\n")

    transport = stdio_client(parameters or server_parameters(name, import_root), errlog=errlog)
    return Client(transport, message_handler=on_message, read_timeout_seconds=launch_timeout)


class ServerSession:
    """Timed tool calls and control-plane requests on one open client."""

    def __init__(self, client: Client, errlog: TextIO, timeout: float, stream_errors: list[str]) -> None:
        self.client = client
        self.errlog = errlog
        self.timeout = timeout
        self.stream_errors = stream_errors
        self._offset = os.fstat(errlog.fileno()).st_size

    def _new_output(self) -> str:
        """What the server wrote to stderr (or stdout, as garbage) since the last call."""
        size = os.fstat(self.errlog.fileno()).st_size
        text = (
            os.pread(self.errlog.fileno(), size - self._offset, self._offset).decode("utf-8", "replace")
            if size > self._offset
            else ""
        )
        self._offset = size
        text += "".join(self.stream_errors)
        self.stream_errors.clear()
        return text

    def _episode(self, episode: str) -> EpisodeClient:
        return EpisodeClient(self.client, episode, timeout=self.timeout)

    async def call(self, tool: str, arguments: dict[str, Any], episode: str) -> CallResult:
        result = await self._episode(episode).call_tool(tool, arguments)
        return CallResult(
            is_error=bool(result.is_error),
            text="\n".join(c.text for c in result.content if isinstance(c, types.TextContent)),
            structured=result.structured_content,
            kind=error_kind(result),
            streams=self._new_output(),
        )

    async def state(self, episode: str) -> StateResult:
        """The episode's state hash and its diff against the seed (rows left out: they are not needed)."""
        return await self._episode(episode).state(rows=False)

    async def reset(
        self, episode: str, principal: str | None = None, state: dict[str, list[dict[str, Any]]] | None = None
    ) -> None:
        """Back to the seed, or to the seed with `state`'s tables replaced, acting for `principal`."""
        await self._episode(episode).reset(state=state, principal=principal)
