"""Custom behaviour of team chat (copied into servers/team_chat/ by the factory).

Reading goes through these handlers rather than plain searches because what a member may see
depends on channel privacy and their memberships; the spec's rules refuse private channels to
non-members before a handler runs.
"""

from servers.runtime.database import Database, contains_pattern


def read_channel(
    db: Database, channel_id: str, member_id: str, pinned_only: bool = False, limit: int = 30, cursor: str | None = None
) -> dict:
    """The latest `limit` top-level messages, returned oldest first like a chat window; the cursor pages
    back to older ones."""
    channel = db.require("channels", "channel_id", channel_id, "channel_id")
    page = db.page(
        "SELECT * FROM messages WHERE channel_id = :channel AND thread_parent_id IS NULL"
        " AND (:pinned = 0 OR is_pinned = 1) ORDER BY posted_at DESC, message_id DESC",
        {"channel": channel_id, "pinned": int(pinned_only)},
        limit,
        cursor,
    )
    messages = list(reversed(page["rows"]))
    return {
        "channel_id": channel_id,
        "name": channel["name"],
        "messages": messages,
        "count": len(messages),
        "total": page["total"],
        "has_more": page["has_more"],
        "cursor": page["cursor"],
    }


def read_thread(db: Database, message_id: str, member_id: str) -> dict:
    """The thread's first message and its replies; given a reply, the whole thread it belongs to."""
    message = db.require("messages", "message_id", message_id, "message_id")
    parent_id = message["thread_parent_id"] or message_id
    parent = db.require("messages", "message_id", parent_id, "message_id")
    replies = db.all("SELECT * FROM messages WHERE thread_parent_id = ? ORDER BY posted_at, message_id", (parent_id,))
    return {"parent": parent, "replies": replies}


def search_messages(db: Database, member_id: str, text: str) -> dict:
    """Messages holding `text` in the channels the member may read: public ones of their workspace and
    private ones they belong to."""
    rows = db.all(
        "SELECT msg.* FROM messages msg JOIN channels c ON c.channel_id = msg.channel_id"
        " JOIN members me ON me.member_id = :member"
        " WHERE c.workspace_id = me.workspace_id AND lower(msg.text) LIKE :pattern ESCAPE '!'"
        " AND (c.visibility = 'public' OR EXISTS"
        "      (SELECT 1 FROM channel_members cm WHERE cm.channel_id = c.channel_id AND cm.member_id = :member))"
        " ORDER BY msg.posted_at DESC, msg.message_id DESC LIMIT 50",
        {"member": member_id, "text": text, "pattern": contains_pattern(text)},
    )
    return {"messages": rows, "count": len(rows)}


def create_channel(
    db: Database, workspace_id: str, name: str, created_by: str, visibility: str = "public", topic: str = ""
) -> dict:
    """The channel and its creator's membership, written together."""
    channel_id = db.next_id("channels")
    db.insert(
        "channels",
        {
            "channel_id": channel_id,
            "workspace_id": workspace_id,
            "name": name,
            "topic": topic,
            "visibility": visibility,
            "is_archived": False,
            "is_default": False,
            "created_by": created_by,
            "created_at": db.now,
        },
    )
    db.insert(
        "channel_members",
        {
            "channel_member_id": db.next_id("channel_members"),
            "channel_id": channel_id,
            "member_id": created_by,
            "added_by": created_by,
            "joined_at": db.now,
        },
    )
    return db.require("channels", "channel_id", channel_id, "channel_id")
