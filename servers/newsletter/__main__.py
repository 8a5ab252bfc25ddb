"""Run the newsletter MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.newsletter.server import build

if __name__ == "__main__":
    main("newsletter", build)
