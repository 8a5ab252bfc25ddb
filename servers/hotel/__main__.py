"""Run the hotel MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.hotel.server import build

if __name__ == "__main__":
    main("hotel", build)
