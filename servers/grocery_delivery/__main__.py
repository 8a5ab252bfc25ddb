"""Run the grocery_delivery MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.grocery_delivery.server import build
from envfarm.servers.runtime.cli import main

if __name__ == "__main__":
    main("grocery_delivery", build)
