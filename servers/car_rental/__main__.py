"""Run the car_rental MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.car_rental.server import build
from envfarm.servers.runtime.cli import main

if __name__ == "__main__":
    main("car_rental", build)
