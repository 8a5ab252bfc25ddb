"""Run the parcel_shipping MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.parcel_shipping.server import build

if __name__ == "__main__":
    main("parcel_shipping", build)
