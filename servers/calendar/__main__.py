"""Run the calendar MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.calendar.server import build
from servers.runtime.cli import main

if __name__ == "__main__":
    main("calendar", build)
