"""Run the grocery_delivery MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.grocery_delivery.server import build

if __name__ == "__main__":
    main("grocery_delivery", build)
