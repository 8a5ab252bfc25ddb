"""To-do lists (mcp 1.x FastMCP, state in dicts). No return annotations: every answer is JSON text,
and a list comes back as one text block per item."""

from __future__ import annotations

from common import MISBEHAVIOUR, PEOPLE
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("todo")
LISTS = [
    {"list_id": f"L{n + 1}", "title": f"{person['name'].split()[0]}'s errands", "owner_email": person["email"]}
    for n, person in enumerate(PEOPLE)
]
ITEMS = {
    f"I{n + 1}": {"item_id": f"I{n + 1}", "list_id": f"L{n % 4 + 1}", "text": text, "done": False}
    for n, text in enumerate(["buy milk", "call the bank", "book flights", "return library books", "fix the bike"])
}


@mcp.tool()
def get_lists():
    """Every to-do list and who owns it."""
    MISBEHAVIOUR.tick()
    return LISTS


@mcp.tool()
def get_items(list_id: str):
    """The items of one to-do list."""
    MISBEHAVIOUR.tick()
    if list_id not in {entry["list_id"] for entry in LISTS}:
        raise ValueError(f"unknown list {list_id}")
    return [item for item in ITEMS.values() if item["list_id"] == list_id]


@mcp.tool()
def add_item(list_id: str, text: str):
    """Add an item to a to-do list."""
    MISBEHAVIOUR.tick()
    if list_id not in {entry["list_id"] for entry in LISTS}:
        raise ValueError(f"unknown list {list_id}")
    item_id = f"I{len(ITEMS) + 1}"
    ITEMS[item_id] = {"item_id": item_id, "list_id": list_id, "text": text, "done": False}
    return ITEMS[item_id]


@mcp.tool()
def complete_item(item_id: str):
    """Tick an item off."""
    MISBEHAVIOUR.tick()
    if item_id not in ITEMS:
        raise ValueError(f"unknown item {item_id}")
    ITEMS[item_id]["done"] = True
    return ITEMS[item_id]


if __name__ == "__main__":
    mcp.run()
