"""Run the fleet MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.fleet.server import build

if __name__ == "__main__":
    main("fleet", build)
