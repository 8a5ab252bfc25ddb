"""Our stdio transport (servers/runtime/stdio.py): non-blocking pipes on the event loop instead of a
thread hop per message, with the wire kept on private descriptors so stray output cannot corrupt it."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

SERVER = '''
import os
import anyio
from mcp.server.mcpserver import MCPServer
from envfarm.servers.runtime.stdio import serve_stdio

server = MCPServer("noisy", log_level="WARNING")


@server.tool()
def shout(text: str) -> str:
    """Write to fd 1 behind Python's back, then answer."""
    os.write(1, b"not a JSON-RPC message\\n")
    print("printed to sys.stdout")
    return text.upper()


@server.tool()
def big(size: int) -> str:
    return "x" * size


anyio.run(serve_stdio, server)
'''


async def test_stray_output_does_not_reach_the_wire(tmp_path: Path) -> None:
    errlog = (tmp_path / "stderr.txt").open("w+")
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVER], cwd=Path(__file__).parents[1])
    async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30) as client:
        for word in ("one", "two", "three"):
            result = await client.call_tool("shout", {"text": word})
            assert not result.is_error and result.content[0].text == word.upper()
        large = await client.call_tool("big", {"size": 2_000_000})  # far over asyncio's default 64 KiB line
        assert not large.is_error and len(large.content[0].text) == 2_000_000
    errlog.seek(0)
    assert "not a JSON-RPC message" in errlog.read()  # it went to stderr instead
