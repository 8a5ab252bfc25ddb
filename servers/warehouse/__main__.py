"""Run the warehouse MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.warehouse.server import build

if __name__ == "__main__":
    main("warehouse", build)
