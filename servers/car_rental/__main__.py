"""Run the car_rental MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.car_rental.server import build

if __name__ == "__main__":
    main("car_rental", build)
