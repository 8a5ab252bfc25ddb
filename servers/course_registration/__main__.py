"""Run the course_registration MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.course_registration.server import build
from servers.runtime.cli import main

if __name__ == "__main__":
    main("course_registration", build)
