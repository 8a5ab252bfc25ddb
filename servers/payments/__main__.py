"""Run the payments MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.payments.server import build
from envfarm.servers.runtime.cli import main

if __name__ == "__main__":
    main("payments", build)
