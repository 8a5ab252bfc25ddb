"""Custom behaviour of the mail server (copied into servers/mail/ by the factory).

Sending is shared by `send_draft` and `reply_to_thread`: one message row, the thread's counters, and
every participant's conversation (the sender's view stays read, each recipient's view returns to the
inbox unread).
"""

from envfarm.servers.runtime.database import Database, contains_pattern


def _addresses(text: str) -> list[str]:
    """Distinct lower-cased addresses of a comma-separated list, in order."""
    found: list[str] = []
    for raw in text.split(","):
        address = raw.strip().lower()
        if address and address not in found:
            found.append(address)
    return found


def _deliver(
    db: Database, sender: str, thread_id: str | None, subject: str, to: list[str], cc: list[str], body: str
) -> dict:
    """Record one sent message: start or extend the thread, then update every participant's view of it.
    Every address has a mailbox: the argument check refused unknown ones when the draft or reply was made."""
    if thread_id is None:
        thread_id = db.next_id("threads")
        db.insert(
            "threads",
            {
                "thread_id": thread_id,
                "subject": subject,
                "started_by": sender,
                "created_at": db.now,
                "last_message_at": db.now,
                "message_count": 1,
            },
        )
    else:
        db.execute(
            "UPDATE threads SET last_message_at = ?, message_count = message_count + 1 WHERE thread_id = ?",
            (db.now, thread_id),
        )
        subject = db.scalar("SELECT subject FROM threads WHERE thread_id = ?", (thread_id,))
    message_id = db.next_id("messages")
    db.insert(
        "messages",
        {
            "message_id": message_id,
            "thread_id": thread_id,
            "sender_email": sender,
            "to_emails": ", ".join(to),
            "cc_emails": ", ".join(cc),
            "body": body,
            "sent_at": db.now,
        },
    )
    for address in [sender, *(a for a in to + cc if a != sender)]:
        is_sender = address == sender
        existing = db.one(
            "SELECT conversation_id FROM conversations WHERE thread_id = ? AND mailbox_email = ?", (thread_id, address)
        )
        if existing is None:
            db.insert(
                "conversations",
                {
                    "conversation_id": db.next_id("conversations"),
                    "thread_id": thread_id,
                    "mailbox_email": address,
                    "subject": subject,
                    "folder": "sent" if is_sender else "inbox",
                    "is_read": is_sender,
                    "is_starred": False,
                    "last_message_at": db.now,
                },
            )
        elif is_sender:
            db.execute(
                "UPDATE conversations SET is_read = 1, last_message_at = ? WHERE conversation_id = ?",
                (db.now, existing["conversation_id"]),
            )
        else:
            db.execute(
                "UPDATE conversations SET folder = 'inbox', is_read = 0, last_message_at = ? WHERE conversation_id = ?",
                (db.now, existing["conversation_id"]),
            )
    return db.require("messages", message_id)


def send_draft(db: Database, draft_id: str) -> dict:
    """Deliver the draft, then mark it sent and link it to the message it became."""
    draft = db.require("drafts", draft_id)
    subject = draft["subject"] or ""
    message = _deliver(
        db,
        draft["mailbox_email"],
        draft["thread_id"],
        subject,
        _addresses(draft["to_emails"]),
        _addresses(draft["cc_emails"]),
        draft["body"],
    )
    db.execute(
        "UPDATE drafts SET status = 'sent', sent_message_id = ?, updated_at = ? WHERE draft_id = ?",
        (message["message_id"], db.now, draft_id),
    )
    db.execute("UPDATE attachments SET message_id = ? WHERE draft_id = ?", (message["message_id"], draft_id))
    return message


def reply_to_thread(db: Database, thread_id: str, body: str, reply_all: bool = True) -> dict:
    """Answer the latest message's author (or, if the replier wrote it, its recipients); reply-all copies
    everyone else who sent or received a message on the thread. The replier is the signed-in user."""
    mailbox_email = str(db.principal)
    messages = db.all("SELECT * FROM messages WHERE thread_id = ? ORDER BY sent_at, message_id", (thread_id,))
    latest = messages[-1]
    if latest["sender_email"] != mailbox_email:
        to = [latest["sender_email"]]
    else:
        to = [a for a in _addresses(latest["to_emails"]) if a != mailbox_email]
    cc: list[str] = []
    if reply_all:
        for message in messages:
            for address in [
                message["sender_email"],
                *_addresses(message["to_emails"]),
                *_addresses(message["cc_emails"]),
            ]:
                if address != mailbox_email and address not in to and address not in cc:
                    cc.append(address)
    if not to:
        db.reject(f"Nobody else is on thread {thread_id} to reply to; write a new message with create_draft.")
    return _deliver(db, mailbox_email, thread_id, "", to, cc, body)


def search_mail(
    db: Database,
    *,
    text: str | None = None,
    from_email: str | None = None,
    folder: str | None = None,
    label: str | None = None,
    limit: int,
    cursor: str | None = None,
) -> dict:
    """Conversations of the user's mailbox whose subject or any message body holds `text`, filtered by
    sender, folder and label name; a mail client's search box, which a plain column filter cannot express."""
    page = db.page(
        "SELECT c.* FROM conversations c WHERE c.mailbox_email = :mailbox"
        " AND (:text IS NULL OR lower(c.subject) LIKE :pattern ESCAPE '!' OR EXISTS"
        "      (SELECT 1 FROM messages m WHERE m.thread_id = c.thread_id AND lower(m.body) LIKE :pattern ESCAPE '!'))"
        " AND (:sender IS NULL OR EXISTS"
        "      (SELECT 1 FROM messages m WHERE m.thread_id = c.thread_id AND m.sender_email = lower(:sender)))"
        " AND (:folder IS NULL OR c.folder = :folder)"
        " AND (:label IS NULL OR EXISTS (SELECT 1 FROM conversation_labels cl JOIN labels l ON l.label_id = cl.label_id"
        "      WHERE cl.conversation_id = c.conversation_id AND lower(l.name) = lower(:label)))"
        " ORDER BY c.last_message_at DESC, c.conversation_id",
        {
            "mailbox": db.principal,
            "text": text,
            "pattern": contains_pattern(text),
            "sender": from_email,
            "folder": folder,
            "label": label,
        },
        limit,
        cursor,
    )
    rows = page["rows"]
    return {
        "conversations": rows,
        "count": len(rows),
        "total": page["total"],
        "has_more": page["has_more"],
        "cursor": page["cursor"],
    }


def _recipients(to_emails: list[str], cc_emails: list[str] | None) -> tuple[list[str], list[str]]:
    """Distinct lower-cased To and Cc lists; an address in To is not copied again in Cc."""
    to = _addresses(", ".join(to_emails))
    return to, [a for a in _addresses(", ".join(cc_emails or [])) if a not in to]


def send_message(
    db: Database, to_emails: list[str], subject: str, body: str, cc_emails: list[str] | None = None
) -> dict:
    """A new thread sent at once from the signed-in user's mailbox, without a draft."""
    to, cc = _recipients(to_emails, cc_emails)
    return _deliver(db, str(db.principal), None, subject.strip(), to, cc, body)


def forward_message(
    db: Database, message_id: str, to_emails: list[str], cc_emails: list[str] | None = None, note: str = ""
) -> dict:
    """A new thread quoting the original message under the note, with copies of its attachments."""
    original = db.require("messages", message_id)
    subject = db.scalar("SELECT subject FROM threads WHERE thread_id = ?", (original["thread_id"],))
    quoted = (
        "---------- Forwarded message ----------\n"
        f"From: {original['sender_email']}\nDate: {original['sent_at']}\nSubject: {subject}\n"
        f"To: {original['to_emails']}\n\n{original['body']}"
    )
    to, cc = _recipients(to_emails, cc_emails)
    body = f"{note.strip()}\n\n{quoted}" if note.strip() else quoted
    message = _deliver(db, str(db.principal), None, f"Fwd: {subject}", to, cc, body)
    for attachment in db.all("SELECT * FROM attachments WHERE message_id = ? ORDER BY rowid", (message_id,)):
        db.insert(
            "attachments",
            {
                **attachment,
                "attachment_id": db.next_id("attachments"),
                "message_id": message["message_id"],
                "draft_id": None,
                "created_at": db.now,
            },
        )
    return message


def trash_conversation(db: Database, conversation_id: str) -> dict:
    """Only the signed-in user's view moves; the folder it left is kept for untrash."""
    db.execute(
        "UPDATE conversations SET trashed_from = folder, folder = 'trash' WHERE conversation_id = ?",
        (conversation_id,),
    )
    return db.require("conversations", conversation_id)


def untrash_conversation(db: Database, conversation_id: str) -> dict:
    """Back to the folder it was trashed from, or the inbox for mail trashed before folders were kept."""
    db.execute(
        "UPDATE conversations SET folder = coalesce(trashed_from, 'inbox'), trashed_from = NULL"
        " WHERE conversation_id = ?",
        (conversation_id,),
    )
    return db.require("conversations", conversation_id)
