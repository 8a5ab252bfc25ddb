"""Custom behaviour of team chat (copied into servers/team_chat/ by the factory).

The signed-in user (`db.principal`, an email) has one member id per workspace: every write acts as the
member of the workspace it touches. Reading goes through these handlers where what a member may see
depends on channel privacy and their memberships; the spec's rules refuse private channels to
non-members before a handler runs, and the principal's scope hides their messages everywhere else.
"""

from envfarm.servers.runtime.database import Database, contains_pattern


def _me(db: Database, channel_id: str) -> str:
    """The signed-in user's member id in the channel's workspace (a rule already refused outsiders)."""
    return db.scalar(
        "SELECT m.member_id FROM members m JOIN channels c ON c.workspace_id = m.workspace_id"
        " WHERE c.channel_id = ? AND m.email = ?",
        (channel_id, db.principal),
    )


def read_channel(
    db: Database, channel_id: str, pinned_only: bool = False, limit: int = 30, cursor: str | None = None
) -> dict:
    """The latest `limit` top-level messages, returned oldest first like a chat window; the cursor pages
    back to older ones."""
    channel = db.require("channels", channel_id)
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


def read_thread(db: Database, message_id: str) -> dict:
    """The thread's first message and its replies; given a reply, the whole thread it belongs to."""
    message = db.require("messages", message_id)
    parent_id = message["thread_parent_id"] or message_id
    parent = db.require("messages", parent_id)
    replies = db.all("SELECT * FROM messages WHERE thread_parent_id = ? ORDER BY posted_at, message_id", (parent_id,))
    return {"parent": parent, "replies": replies}


def search_messages(
    db: Database, text: str | None = None, channel_id: str | None = None, limit: int = 50, cursor: str | None = None
) -> dict:
    """Messages holding `text` in the channels the user may read (the principal's scope on messages)."""
    page = db.page(
        f"SELECT * FROM messages WHERE {db.visible('messages')}"
        " AND (:pattern IS NULL OR lower(text) LIKE :pattern ESCAPE '!')"
        " AND (:channel IS NULL OR channel_id = :channel)"
        " ORDER BY posted_at DESC, message_id DESC",
        {"principal": db.principal, "pattern": contains_pattern(text), "channel": channel_id},
        limit,
        cursor,
    )
    return {
        "messages": page["rows"],
        "count": len(page["rows"]),
        "total": page["total"],
        "has_more": page["has_more"],
        "cursor": page["cursor"],
    }


def post_message(db: Database, channel_id: str, text: str, thread_parent_id: str | None = None) -> dict:
    """A message by the user's member id in the channel's workspace; a reply counts on its thread."""
    row = db.insert(
        "messages",
        {
            "message_id": db.next_id("messages"),
            "channel_id": channel_id,
            "author_id": _me(db, channel_id),
            "text": text,
            "posted_at": db.now,
            "thread_parent_id": thread_parent_id,
            "reply_count": 0,
            "is_pinned": False,
        },
    )
    if thread_parent_id is not None:
        db.execute("UPDATE messages SET reply_count = reply_count + 1 WHERE message_id = ?", (thread_parent_id,))
    return row


def add_reaction(db: Database, message_id: str, emoji: str) -> dict:
    """The user's reaction, as their member id in the message's workspace."""
    message = db.require("messages", message_id)
    return db.insert(
        "reactions",
        {
            "reaction_id": db.next_id("reactions"),
            "message_id": message_id,
            "member_id": _me(db, message["channel_id"]),
            "emoji": emoji,
            "created_at": db.now,
        },
    )


def add_channel_member(db: Database, channel_id: str, member_id: str | None = None) -> dict:
    """Join the channel (no member_id) or add someone; either way the user is who added them."""
    me = _me(db, channel_id)
    return db.insert(
        "channel_members",
        {
            "channel_member_id": db.next_id("channel_members"),
            "channel_id": channel_id,
            "member_id": member_id or me,
            "added_by": me,
            "joined_at": db.now,
        },
    )


def create_channel(db: Database, workspace_id: str, name: str, visibility: str = "public", topic: str = "") -> dict:
    """The channel and its creator's membership (the user's member id in that workspace), written together."""
    me = db.scalar("SELECT member_id FROM members WHERE workspace_id = ? AND email = ?", (workspace_id, db.principal))
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
            "created_by": me,
            "created_at": db.now,
        },
    )
    db.insert(
        "channel_members",
        {
            "channel_member_id": db.next_id("channel_members"),
            "channel_id": channel_id,
            "member_id": me,
            "added_by": me,
            "joined_at": db.now,
        },
    )
    return db.require("channels", channel_id)
