"""Run the tutoring MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.runtime.cli import main
from envfarm.servers.tutoring.server import build

if __name__ == "__main__":
    main("tutoring", build)
