"""Notes app (mcp 1.x FastMCP, SQLite in memory): folders owned by people, notes in folders.
Tools return plain dicts: structured content whose schema names no fields."""

from __future__ import annotations

import sqlite3
from typing import Any

from common import MISBEHAVIOUR, PEOPLE
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("notes", instructions="Personal notes: folders and the notes in them.")
db = sqlite3.connect(":memory:")
db.row_factory = sqlite3.Row
db.executescript(
    """
    CREATE TABLE folders (folder_id TEXT PRIMARY KEY, name TEXT, owner_email TEXT);
    CREATE TABLE notes (note_id TEXT PRIMARY KEY, folder_id TEXT, title TEXT, body TEXT, pinned INTEGER);
    """
)
for n, person in enumerate(PEOPLE):
    for k, label in enumerate(("Work", "Travel")):
        db.execute(
            "INSERT INTO folders VALUES (?, ?, ?)", (f"fld-{n}{k}", f"{label} of {person['name']}", person["email"])
        )
        db.execute(
            "INSERT INTO notes VALUES (?, ?, ?, ?, 0)",
            (f"note-{n}{k}1", f"fld-{n}{k}", f"{label} ideas", f"First {label.lower()} note of {person['name']}"),
        )


def _next_note_id() -> str:
    count = db.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
    return f"note-x{count + 1}"


@mcp.tool()
def list_folders() -> dict[str, Any]:
    """All folders with their owner's email."""
    MISBEHAVIOUR.tick()
    return {"folders": [dict(r) for r in db.execute("SELECT * FROM folders ORDER BY folder_id")]}


@mcp.tool()
def list_notes(folder_id: str) -> dict[str, Any]:
    """The notes of a folder (titles only)."""
    MISBEHAVIOUR.tick()
    rows = db.execute("SELECT note_id, title, pinned FROM notes WHERE folder_id = ?", (folder_id,))
    return {"folder_id": folder_id, "notes": [dict(r) for r in rows]}


@mcp.tool()
def get_note(note_id: str) -> dict[str, Any]:
    """One note with its body."""
    MISBEHAVIOUR.tick()
    row = db.execute("SELECT * FROM notes WHERE note_id = ?", (note_id,)).fetchone()
    if row is None:
        raise ValueError(f"no note {note_id}")
    return dict(row)


@mcp.tool()
def create_note(folder_id: str, title: str, body: str = "") -> dict[str, Any]:
    """Create a note in a folder; returns the new note."""
    MISBEHAVIOUR.tick()
    if db.execute("SELECT 1 FROM folders WHERE folder_id = ?", (folder_id,)).fetchone() is None:
        raise ValueError(f"no folder {folder_id}")
    note_id = _next_note_id()
    db.execute("INSERT INTO notes VALUES (?, ?, ?, ?, 0)", (note_id, folder_id, title, body))
    return {"note_id": note_id, "folder_id": folder_id, "title": title}


@mcp.tool()
def pin_note(note_id: str) -> dict[str, Any]:
    """Pin a note to the top of its folder."""
    MISBEHAVIOUR.tick()
    if db.execute("UPDATE notes SET pinned = 1 WHERE note_id = ?", (note_id,)).rowcount == 0:
        raise ValueError(f"no note {note_id}")
    return {"note_id": note_id, "pinned": True}


@mcp.tool()
def delete_note(note_id: str) -> dict[str, Any]:
    """Delete a note."""
    MISBEHAVIOUR.tick()
    if db.execute("DELETE FROM notes WHERE note_id = ?", (note_id,)).rowcount == 0:
        raise ValueError(f"no note {note_id}")
    return {"note_id": note_id, "deleted": True}


if __name__ == "__main__":
    mcp.run()
