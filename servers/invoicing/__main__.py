"""Run the invoicing MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.invoicing.server import build

if __name__ == "__main__":
    main("invoicing", build)
