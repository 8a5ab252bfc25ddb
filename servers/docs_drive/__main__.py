"""Run the docs_drive MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.docs_drive.server import build

if __name__ == "__main__":
    main("docs_drive", build)
