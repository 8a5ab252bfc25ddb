"""Run the parcel_shipping MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.parcel_shipping.server import build
from envfarm.servers.runtime.cli import main

if __name__ == "__main__":
    main("parcel_shipping", build)
