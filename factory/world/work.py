"""Work facts shared by mail, chat and drive: the planted working groups and the figures they quote.

A group is one piece of work with one set of people: its mail thread, its private chat channel and its
document must name the same people, and every dollar figure anybody writes in mail or chat must be
one a document of the drive actually holds (the numbers others quote come from the sheet).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from envfarm.factory.world import content
from envfarm.factory.world.cast import build_cast
from envfarm.factory.world.invariants_base import RowRef, Violation

Seeds = dict[str, dict[str, list[dict[str, Any]]]]
MONEY = re.compile(r"\$\d{1,3}(?:,\d{3})*(?:\.\d+)?")


class Group(BaseModel):
    """A working group planted across mail, chat and drive."""

    key: str
    members: list[int]  # cast indexes; the first is the organizer
    mail_subject: str
    chat_channel: str
    document: str


GROUPS = [
    Group(
        key="budget",
        members=[18, 0, 5, 10, 26],
        mail_subject="Q2 budget review",
        chat_channel="budget-review",
        document="Q2 budget draft",
    ),
]


def _emails(group: Group) -> set[str]:
    cast = build_cast()
    return {cast[i].email for i in group.members}


def _split(value: str | None) -> set[str]:
    return {e.strip() for e in (value or "").split(",") if e.strip()}


def check_group(seeds: Seeds, group: Group) -> list[Violation]:
    """The group's thread, channel and document involve exactly its people."""
    want = _emails(group)
    found = []
    mail, chat, drive = seeds.get("mail"), seeds.get("team_chat"), seeds.get("docs_drive")
    if mail:
        thread = next((t for t in mail["threads"] if t["subject"] == group.mail_subject), None)
        if thread is None:
            found.append(Violation(rule="planted group", message=f"no mail thread {group.mail_subject!r}", rows=[]))
        else:
            first = next(m for m in mail["messages"] if m["thread_id"] == thread["thread_id"])
            people = {first["sender_email"]} | _split(first["to_emails"]) | _split(first["cc_emails"])
            if people != want:
                found.append(
                    Violation(
                        rule="planted group",
                        message=f"{group.key}: thread has {sorted(people)}, the world says {sorted(want)}",
                        rows=[RowRef(server="mail", table="threads", key=thread["thread_id"])],
                    )
                )
    if chat:
        home = chat["workspaces"][0]["workspace_id"]  # the first workspace, whatever form its id takes
        channel = next(
            (c for c in chat["channels"] if c["name"] == group.chat_channel and c["workspace_id"] == home), None
        )
        if channel is not None:
            email_of = {m["member_id"]: m["email"] for m in chat["members"]}
            people = {
                email_of[c["member_id"]] for c in chat["channel_members"] if c["channel_id"] == channel["channel_id"]
            }
            if people != want:
                found.append(
                    Violation(
                        rule="planted group",
                        message=f"{group.key}: channel has {sorted(people)}, the world says {sorted(want)}",
                        rows=[RowRef(server="team_chat", table="channels", key=channel["channel_id"])],
                    )
                )
    if drive:
        doc = next((d for d in drive["documents"] if d["title"] == group.document), None)
        if doc is not None:
            people = {p["email"] for p in drive["permissions"] if p["doc_id"] == doc["doc_id"]}
            if people != want:
                found.append(
                    Violation(
                        rule="planted group",
                        message=f"{group.key}: document shared with {sorted(people)}, the world says {sorted(want)}",
                        rows=[RowRef(server="docs_drive", table="documents", key=doc["doc_id"])],
                    )
                )
    return found


def check_quoted_figures(seeds: Seeds) -> list[Violation]:
    """Every dollar amount written in mail or chat is a figure some drive document holds."""
    drive = seeds.get("docs_drive")
    if not drive:
        return []
    held = {m for d in drive["documents"] for m in MONEY.findall(d["content"] or "")}
    found = []
    for server, table, key, column in (
        ("mail", "messages", "message_id", "body"),
        ("team_chat", "messages", "message_id", "text"),
    ):
        found += [
            Violation(
                rule="quoted figure",
                message=f"{amount} is in no drive document",
                rows=[
                    RowRef(server=server, table=table, key=row[key]),
                    RowRef(server="docs_drive", table="documents", key="*"),
                ],
            )
            for row in seeds.get(server, {}).get(table, [])
            for amount in MONEY.findall(row[column] or "")
            if amount not in held
        ]
    return found


AGENDA = re.compile(r'Agenda and figures: "([^"]+)"')


def check_documents(seeds: Seeds) -> list[Violation]:
    """Each workstream's document is in the drive with all its figures; every meeting's agenda note
    names a document the drive has."""
    drive = seeds.get("docs_drive")
    if not drive:
        return []
    by_title = {d["title"]: d for d in drive["documents"]}
    found = []
    for ws in content.WORKSTREAMS:
        doc = by_title.get(ws.document)
        if doc is None:
            found.append(
                Violation(rule="workstream document", message=f"{ws.key}: no document {ws.document!r}", rows=[])
            )
            continue
        missing = [value for value in ws.figures.values() if value not in (doc["content"] or "")]
        if missing:
            ref = RowRef(server="docs_drive", table="documents", key=doc["doc_id"])
            found.append(Violation(rule="workstream document", message=f"{ws.key}: lacks {missing}", rows=[ref]))
    found += [
        Violation(
            rule="meeting document",
            message=f"agenda names {title!r}, which the drive does not have",
            rows=[RowRef(server="calendar", table="events", key=event["event_id"])],
        )
        for event in seeds.get("calendar", {}).get("events", [])
        for title in AGENDA.findall(event["description"] or "")
        if title not in by_title
    ]
    return found


def check_work(seeds: Seeds) -> list[Violation]:
    return [
        *(v for g in GROUPS for v in check_group(seeds, g)),
        *check_quoted_figures(seeds),
        *check_documents(seeds),
    ]
