"""Load generated servers by name, for hosting many of them in one process."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from mcp.server.mcpserver import MCPServer


def load_server(name: str, **options: Any) -> MCPServer:
    """Build the server `servers.<name>` (its module must be importable)."""
    try:
        module = importlib.import_module(f"servers.{name}.server")
    except ModuleNotFoundError as exc:
        raise LookupError(f"no server named {name!r} on the farm (servers/{name}/server.py not found)") from exc
    return module.build(**options)


def load_servers(names: Iterable[str]) -> dict[str, MCPServer]:
    return {name: load_server(name) for name in names}
