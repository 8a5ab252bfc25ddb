"""A small MCP server that is not ours: plain SDK, no envfarm control plane, state in a dict.

The driver must work against servers like this one given only as an `mcpServers` entry: its
isolation is one fresh process per episode, and its state is seen only through its read tools.
Run: `python tests/foreign/todo_server.py` (stdio). `--hang` makes every tool call hang.
"""

from __future__ import annotations

import sys
import time

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

HANG = "--hang" in sys.argv


class Project(BaseModel):
    project_id: str
    name: str
    owner_email: str


class TodoItem(BaseModel):
    task_id: str
    project_id: str
    title: str
    done: bool


class ProjectList(BaseModel):
    projects: list[Project]


class TodoList(BaseModel):
    tasks: list[TodoItem]


PROJECTS = [
    Project(project_id="prj_7f3a", name="Garden shed", owner_email="ana.silva@example.com"),
    Project(project_id="prj_91c2", name="Tax return", owner_email="li.wei@example.com"),
    Project(project_id="prj_c044", name="Kitchen paint", owner_email="ana.silva@example.com"),
]


def build() -> MCPServer:
    server = MCPServer("todo", instructions="A to-do list: projects and their tasks.", log_level="WARNING")
    tasks: dict[str, TodoItem] = {
        "tsk_0001": TodoItem(task_id="tsk_0001", project_id="prj_7f3a", title="Buy timber", done=False),
        "tsk_0002": TodoItem(task_id="tsk_0002", project_id="prj_91c2", title="Find receipts", done=True),
    }

    def pause() -> None:
        if HANG:
            time.sleep(3600)

    @server.tool()
    def search_projects(name: str | None = None, owner_email: str | None = None) -> ProjectList:
        """Find projects by part of their name or by the owner's email address."""
        pause()
        found = [
            p
            for p in PROJECTS
            if (name is None or name.lower() in p.name.lower())
            and (owner_email is None or p.owner_email == owner_email)
        ]
        return ProjectList(projects=found)

    @server.tool()
    def list_project_tasks(project_id: str) -> TodoList:
        """List the tasks of a project (the project id comes from search_projects)."""
        pause()
        return TodoList(tasks=[t for t in tasks.values() if t.project_id == project_id])

    @server.tool()
    def add_task(project_id: str, title: str) -> TodoItem:
        """Add a task to a project."""
        pause()
        if project_id not in {p.project_id for p in PROJECTS}:
            raise ValueError(f"unknown project {project_id!r}")
        task = TodoItem(task_id=f"tsk_{len(tasks) + 1:04d}", project_id=project_id, title=title, done=False)
        tasks[task.task_id] = task
        return task

    @server.tool()
    def complete_task(task_id: str) -> TodoItem:
        """Mark a task as done (the task id comes from list_project_tasks)."""
        pause()
        if task_id not in tasks:
            raise ValueError(f"unknown task {task_id!r}")
        tasks[task_id] = tasks[task_id].model_copy(update={"done": True})
        return tasks[task_id]

    return server


if __name__ == "__main__":
    build().run("stdio")
