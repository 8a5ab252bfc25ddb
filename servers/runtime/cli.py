"""Command line of one generated server: `python -m servers.<name> [--http] [--port P] [--db FILE]`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from mcp.server.mcpserver import MCPServer

from servers.runtime.http import serve_http
from servers.runtime.stdio import run_stdio


class ServerBuilder(Protocol):
    """The `build` every generated `server.py` defines."""

    def __call__(self, *, db_file: Path | None = None, max_episodes: int = ...) -> MCPServer: ...


def main(name: str, build: ServerBuilder, argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m servers.{name}", description=f"Run the {name} MCP server.")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default: 8000)")
    parser.add_argument("--db", type=Path, help="keep state in this SQLite file (WAL) instead of per-session memory")
    args = parser.parse_args(argv)
    server = build(db_file=args.db)
    if args.http:
        print(f"{name}: serving streamable HTTP at http://{args.host}:{args.port}/{name}/mcp", file=sys.stderr)
        serve_http({name: server}, host=args.host, port=args.port)
    else:
        run_stdio(server)
