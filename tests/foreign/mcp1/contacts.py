"""A contacts book (mcp 1.x FastMCP, SQLite in memory). Tools return JSON strings, which mcp 1.x
wraps as `{"result": "<json>"}`: the data is JSON text inside structured content."""

from __future__ import annotations

import json
import sqlite3

from common import MISBEHAVIOUR, PEOPLE
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("contacts")
db = sqlite3.connect(":memory:")
db.row_factory = sqlite3.Row
db.executescript(
    """
    CREATE TABLE contacts (contact_id TEXT PRIMARY KEY, name TEXT, email TEXT, phone TEXT);
    CREATE TABLE groups (group_id TEXT PRIMARY KEY, label TEXT);
    CREATE TABLE members (group_id TEXT, contact_id TEXT, PRIMARY KEY (group_id, contact_id));
    INSERT INTO groups VALUES ('grp_family', 'Family'), ('grp_work', 'Work'), ('grp_club', 'Book club');
    """
)
for n, person in enumerate(PEOPLE):
    db.execute(
        "INSERT INTO contacts VALUES (?, ?, ?, ?)",
        (f"ct{n + 1:03d}", person["name"], person["email"], f"+351 900 000 {n:03d}"),
    )


@mcp.tool()
def list_contacts() -> str:
    """Every contact."""
    MISBEHAVIOUR.tick()
    return json.dumps({"contacts": [dict(r) for r in db.execute("SELECT * FROM contacts ORDER BY contact_id")]})


@mcp.tool()
def list_groups() -> str:
    """Every contact group."""
    MISBEHAVIOUR.tick()
    return json.dumps({"groups": [dict(r) for r in db.execute("SELECT * FROM groups ORDER BY group_id")]})


@mcp.tool()
def search_contacts(name: str) -> str:
    """Contacts whose name contains the text."""
    MISBEHAVIOUR.tick()
    rows = db.execute("SELECT * FROM contacts WHERE name LIKE ?", (f"%{name}%",))
    return json.dumps({"contacts": [dict(r) for r in rows]})


@mcp.tool()
def add_to_group(contact_id: str, group_id: str) -> str:
    """Put a contact into a group."""
    MISBEHAVIOUR.tick()
    if db.execute("SELECT 1 FROM contacts WHERE contact_id = ?", (contact_id,)).fetchone() is None:
        raise ValueError(f"no contact {contact_id}")
    if db.execute("SELECT 1 FROM groups WHERE group_id = ?", (group_id,)).fetchone() is None:
        raise ValueError(f"no group {group_id}")
    db.execute("INSERT OR IGNORE INTO members VALUES (?, ?)", (group_id, contact_id))
    return json.dumps({"group_id": group_id, "contact_id": contact_id, "added": True})


@mcp.tool()
def group_members(group_id: str) -> str:
    """The contacts in a group."""
    MISBEHAVIOUR.tick()
    rows = db.execute(
        "SELECT c.* FROM contacts c JOIN members m ON m.contact_id = c.contact_id WHERE m.group_id = ?", (group_id,)
    )
    return json.dumps({"group_id": group_id, "members": [dict(r) for r in rows]})


@mcp.tool()
def update_phone(contact_id: str, phone: str) -> str:
    """Change a contact's phone number."""
    MISBEHAVIOUR.tick()
    if db.execute("UPDATE contacts SET phone = ? WHERE contact_id = ?", (phone, contact_id)).rowcount == 0:
        raise ValueError(f"no contact {contact_id}")
    return json.dumps({"contact_id": contact_id, "phone": phone})


if __name__ == "__main__":
    mcp.run()
