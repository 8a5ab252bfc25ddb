"""stdio for our servers without a thread hop per message.

The SDK's stdio transport wraps stdin and stdout in `anyio.wrap_file`, so every request costs three
hops to a worker thread (read a line, write, flush): about 40% of a server's CPU per call. Here the
same two pipes are read and written as non-blocking streams on the event loop. The SDK still does
all protocol handling: this module only feeds `mcp.server.stdio.stdio_server` other byte pumps.

As the SDK does, the wire is moved to private descriptors while serving, fd 0 is pointed at the
null device and fd 1 at stderr, so stray prints of a handler or a library never corrupt the stream.
When the descriptors are not pipes (a regular file, a terminal), the SDK's own transport is used.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

# A tool call's arguments can be large; a line longer than this is refused by the reader.
MAX_LINE_BYTES = 64 * 1024 * 1024


class _Lines:
    """Text lines from a non-blocking pipe, as `stdio_server` iterates stdin."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


class _Writer:
    """`write` and `flush` on a non-blocking pipe, as `stdio_server` uses stdout."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _is_pipe_or_socket(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _take_wire(fd: int, diversion: int) -> int:
    """A private duplicate of `fd` for the wire; `fd` itself now points at `diversion`."""
    private = os.dup(fd)
    os.dup2(diversion, fd)
    return private


@asynccontextmanager
async def _pipe_streams() -> AsyncIterator[tuple[_Lines, _Writer]]:
    loop = asyncio.get_running_loop()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        wire_in = _take_wire(0, null)
        wire_out = _take_wire(1, 2)
    finally:
        os.close(null)
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    try:
        yield _Lines(reader), _Writer(writer)
    finally:
        read_transport.close()
        write_transport.close()


async def serve_stdio(server: MCPServer) -> None:
    """Serve `server` over this process's stdin and stdout until stdin closes."""
    lowlevel = server._lowlevel_server  # the SDK's own run loop, exactly as MCPServer.run_stdio_async uses it
    if not (_is_pipe_or_socket(0) and _is_pipe_or_socket(1)) or sys.platform == "win32":
        await server.run_stdio_async()
        return
    async with _pipe_streams() as (lines, writer), stdio_server(lines, writer) as (read_stream, write_stream):  # type: ignore[arg-type]
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def run_stdio(server: MCPServer) -> None:
    """Serve `server` over stdio until stdin closes, on uvloop when it is installed (the `fast` extra):
    a faster event loop under the same asyncio streams."""
    options = {"use_uvloop": True} if importlib.util.find_spec("uvloop") is not None else {}
    anyio.run(serve_stdio, server, backend_options=options)
