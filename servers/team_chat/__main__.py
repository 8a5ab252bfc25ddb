"""Run the team_chat MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.runtime.cli import main
from envfarm.servers.team_chat.server import build

if __name__ == "__main__":
    main("team_chat", build)
