"""Run the tour_booking MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.runtime.cli import main
from envfarm.servers.tour_booking.server import build

if __name__ == "__main__":
    main("tour_booking", build)
