"""Run the fitness_club MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.fitness_club.server import build
from envfarm.servers.runtime.cli import main

if __name__ == "__main__":
    main("fitness_club", build)
