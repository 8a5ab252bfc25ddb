"""Run the course_registration MCP server: stdio by default, `--http` for streamable HTTP, `--db FILE` to persist."""

from envfarm.servers.course_registration.server import build
from envfarm.servers.runtime.cli import main

if __name__ == "__main__":
    main("course_registration", build)
