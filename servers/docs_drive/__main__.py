"""Run the docs_drive MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.docs_drive.server import build
from envfarm.servers.runtime.cli import main

if __name__ == "__main__":
    main("docs_drive", build)
