"""Run the project_tracker MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.project_tracker.server import build
from envfarm.servers.runtime.cli import main

if __name__ == "__main__":
    main("project_tracker", build)
