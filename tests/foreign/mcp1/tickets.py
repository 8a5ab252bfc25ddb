"""A ticket tracker (mcp 1.x FastMCP, SQLite in memory) with TypedDict results: projects, tickets
and comments; one tool's ticket id is another's input."""

from __future__ import annotations

import sqlite3

from common import MISBEHAVIOUR, PEOPLE
from mcp.server.fastmcp import FastMCP
from typing_extensions import TypedDict

mcp = FastMCP("tickets", instructions="Support tickets per project.")
db = sqlite3.connect(":memory:")
db.row_factory = sqlite3.Row
db.executescript(
    """
    CREATE TABLE projects (project_key TEXT PRIMARY KEY, title TEXT, lead_email TEXT);
    CREATE TABLE tickets (ticket_id TEXT PRIMARY KEY, project_key TEXT, summary TEXT, reporter_email TEXT,
                          assignee_email TEXT, status TEXT);
    CREATE TABLE comments (comment_id TEXT PRIMARY KEY, ticket_id TEXT, text TEXT);
    INSERT INTO projects VALUES ('WEB', 'Website', 'ana.silva@example.com'),
                                ('APP', 'Mobile app', 'li.wei@example.com');
    """
)
for n, person in enumerate(PEOPLE):
    db.execute(
        "INSERT INTO tickets VALUES (?, ?, ?, ?, NULL, 'open')",
        (f"TCK-{n + 1}", ("WEB", "APP")[n % 2], f"Login fails for {person['name']}", person["email"]),
    )


class ProjectRow(TypedDict):
    project_key: str
    title: str
    lead_email: str


class TicketRow(TypedDict):
    ticket_id: str
    project_key: str
    summary: str
    reporter_email: str
    assignee_email: str | None
    status: str


class CommentRow(TypedDict):
    comment_id: str
    ticket_id: str
    text: str


def _ticket(ticket_id: str) -> TicketRow:
    row = db.execute("SELECT * FROM tickets WHERE ticket_id = ?", (ticket_id,)).fetchone()
    if row is None:
        raise ValueError(f"no ticket {ticket_id}")
    return TicketRow(**dict(row))  # type: ignore[typeddict-item]


@mcp.tool()
def list_projects() -> list[ProjectRow]:
    """Every project and its lead."""
    MISBEHAVIOUR.tick()
    return [ProjectRow(**dict(r)) for r in db.execute("SELECT * FROM projects")]  # type: ignore[typeddict-item]


@mcp.tool()
def list_tickets(project_key: str, status: str = "open") -> list[TicketRow]:
    """The tickets of a project with a status (open or closed)."""
    MISBEHAVIOUR.tick()
    rows = db.execute("SELECT * FROM tickets WHERE project_key = ? AND status = ?", (project_key, status))
    return [TicketRow(**dict(r)) for r in rows]  # type: ignore[typeddict-item]


@mcp.tool()
def open_ticket(project_key: str, summary: str, reporter_email: str) -> TicketRow:
    """Open a ticket in a project."""
    MISBEHAVIOUR.tick()
    if db.execute("SELECT 1 FROM projects WHERE project_key = ?", (project_key,)).fetchone() is None:
        raise ValueError(f"no project {project_key}")
    ticket_id = f"TCK-{db.execute('SELECT COUNT(*) FROM tickets').fetchone()[0] + 1}"
    db.execute(
        "INSERT INTO tickets VALUES (?, ?, ?, ?, NULL, 'open')", (ticket_id, project_key, summary, reporter_email)
    )
    return _ticket(ticket_id)


@mcp.tool()
def comment_on_ticket(ticket_id: str, text: str) -> CommentRow:
    """Add a comment to a ticket."""
    MISBEHAVIOUR.tick()
    _ticket(ticket_id)
    comment_id = f"CMT-{db.execute('SELECT COUNT(*) FROM comments').fetchone()[0] + 1}"
    db.execute("INSERT INTO comments VALUES (?, ?, ?)", (comment_id, ticket_id, text))
    return CommentRow(comment_id=comment_id, ticket_id=ticket_id, text=text)


@mcp.tool()
def assign_ticket(ticket_id: str, assignee_email: str) -> TicketRow:
    """Assign a ticket to someone."""
    MISBEHAVIOUR.tick()
    _ticket(ticket_id)
    db.execute("UPDATE tickets SET assignee_email = ? WHERE ticket_id = ?", (assignee_email, ticket_id))
    return _ticket(ticket_id)


@mcp.tool()
def close_ticket(ticket_id: str) -> TicketRow:
    """Close a ticket."""
    MISBEHAVIOUR.tick()
    _ticket(ticket_id)
    db.execute("UPDATE tickets SET status = 'closed' WHERE ticket_id = ?", (ticket_id,))
    return _ticket(ticket_id)


if __name__ == "__main__":
    mcp.run()
