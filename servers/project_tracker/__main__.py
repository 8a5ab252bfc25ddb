"""Run the project_tracker MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.project_tracker.server import build

if __name__ == "__main__":
    main("project_tracker", build)
