"""Run the docs_drive MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.docs_drive.server import build
from servers.runtime.cli import main

if __name__ == "__main__":
    main("docs_drive", build)
