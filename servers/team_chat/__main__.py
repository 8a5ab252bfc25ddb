"""Run the team_chat MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.runtime.cli import main

if __name__ == "__main__":
    main("team_chat")  # imports the server (and the SDK) itself, see `cli.start_up`
