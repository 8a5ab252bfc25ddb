"""Run the warehouse MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.runtime.cli import main
from envfarm.servers.warehouse.server import build

if __name__ == "__main__":
    main("warehouse", build)
