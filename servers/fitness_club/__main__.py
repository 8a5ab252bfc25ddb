"""Run the fitness_club MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.fitness_club.server import build

if __name__ == "__main__":
    main("fitness_club", build)
