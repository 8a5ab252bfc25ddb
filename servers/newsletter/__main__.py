"""Run the newsletter MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.newsletter.server import build
from servers.runtime.cli import main

if __name__ == "__main__":
    main("newsletter", build)
