"""Run the invoicing MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.invoicing.server import build
from servers.runtime.cli import main

if __name__ == "__main__":
    main("invoicing", build)
