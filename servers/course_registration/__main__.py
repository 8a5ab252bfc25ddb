"""Run the course_registration MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from servers.runtime.cli import main
from servers.course_registration.server import build

if __name__ == "__main__":
    main("course_registration", build)
