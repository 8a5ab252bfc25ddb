"""Seed rows of team chat: 3 workspaces, about 70 workspace members drawn from the shared cast,
26 channels, their memberships, about 600 messages with threads and pins, and about 650 reactions.

The seed obeys the chat's rules: authors post only in channels they belong to, replies sit in their
parent's channel one level deep, reply counts match, pins and reactions come from channel members,
and every workspace member is in its default channel.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world import clock, content
from envfarm.factory.world.cast import community

WORKSPACES = [
    ("Northwind", "northwind", 40),
    ("Northwind Labs", "northwind-labs", 18),
    ("Partner Community", "partners", 12),
]
# (workspace index, name, topic, visibility, archived, default)
CHANNELS = [
    (0, "general", "Company-wide announcements and chatter", "public", False, True),
    (0, "random", "Anything goes", "public", False, False),
    (0, "engineering", "Engineering discussions", "public", False, False),
    (0, "design", "Design critiques and inspiration", "public", False, False),
    (0, "finance", "Finance team only", "private", False, False),
    (0, "marketing", "Campaigns, content and launches", "public", False, False),
    (0, "sales", "Deals and customer news", "public", False, False),
    (0, "announcements", "Official announcements", "public", False, False),
    (0, "budget-review", "Q2 budget review working group", "private", False, False),
    (0, "offsite-2026", "Planning the May offsite in Porto", "private", False, False),
    (0, "incidents", "Production incidents and status", "public", False, False),
    (0, "hiring", "Hiring committee", "private", False, False),
    (0, "office-move", "The move to the new floor (done)", "public", True, False),
    (0, "help-it", "Ask IT for help", "public", False, False),
    (0, "social", "Lunches, games and events", "public", False, False),
    (1, "general", "Everything in the lab", "public", False, True),
    (1, "research", "Research updates", "public", False, False),
    (1, "ml-experiments", "Experiment logs and results", "public", False, False),
    (1, "lab-ops", "Lab operations and budgets", "private", False, False),
    (1, "paper-club", "Weekly paper discussion", "public", False, False),
    (1, "old-prototypes", "Retired prototypes", "public", True, False),
    (2, "general", "Welcome, partners", "public", False, True),
    (2, "partners-news", "News for partners", "public", False, False),
    (2, "integration-help", "Questions about integrating with our API", "public", False, False),
    (2, "beta-feedback", "Private beta feedback", "private", False, False),
    (2, "events", "Partner events and webinars", "public", False, False),
]
TEXTS = [
    "Morning all! Quick reminder that the sync moved to 11:00.",
    "Has anyone seen the latest numbers?",
    "Shipping the fix this afternoon.",
    "Can someone review my draft before Friday?",
    "Great work on the launch, everyone!",
    "Where do we keep the onboarding checklist?",
    "The staging environment is back up.",
    "Lunch at the Harbor cafe at noon?",
    "Heads-up: the VPN will be down for maintenance tonight.",
    "I put the slides in the shared drive.",
    "Who owns the Bluepeak account now?",
    "Does anyone have a spare HDMI adapter?",
    "New blog post is live.",
    "The Q2 budget sheet is ready for comments.",
    "Welcome to the channel!",
    "Reminder: timesheets are due today.",
    "We hit 10k sign-ups this week.",
    "Can we move the retro to Thursday?",
    "Please update your tickets before standup.",
    "The customer call went well; notes in the doc.",
]
# The Q2 budget review group of the mail and calendar anchors: Maria Patel and the people on her thread.
FIXED_MEMBERS = {(0, "budget-review"): [18, 0, 5, 10, 26]}
REPLIES = [
    "Thanks!",
    "On it.",
    "+1",
    "Good question, checking.",
    "Done.",
    "I can help with that.",
    "Let's discuss at standup.",
]
EMOJIS = ["thumbsup", "tada", "eyes", "heart", "white_check_mark", "joy", "rocket"]
TITLES = ["Engineer", "Designer", "Product Manager", "Analyst", "Marketer", "Account Executive", "Researcher"]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _write_texts(channels: list[dict], members: list[dict], messages: list[dict]) -> None:
    """Chat about each channel's real work: a post opens or updates an item, its replies answer it."""
    first = {m["member_id"]: m["full_name"].split()[0] for m in members}
    topic = {c["channel_id"]: content.workstream_for(c["name"], c["topic"]) for c in channels}
    said: dict[str, tuple[content.Line, str]] = {}
    for message in messages:
        rng = content.rng_for("chat", message["message_id"])
        ws = topic[message["channel_id"]]
        parent = message["thread_parent_id"]
        if parent is None:
            line = content.opening(rng, ws, "team", chat=True)
        else:
            previous, previous_author = said[parent]
            line = content.reply_to(rng, ws, previous, first[previous_author], chat=True)
        said[parent or message["message_id"]] = (line, message["author_id"])
        message["text"] = line.text


def _working_hours(messages: list[dict], reactions: list[dict], email_of: dict[str, str]) -> None:
    """Move each post (with its replies, edits, pins and reactions) back into its author's working day,
    in the author's time zone: people chat at work, not at 3 a.m. Moving back keeps every time in the past."""
    zone = {p["email"]: p["time_zone"] for p in community(80)}
    shift: dict[str, timedelta] = {}
    for message in messages:
        parent = message["thread_parent_id"]
        if parent is None:
            posted = datetime.fromisoformat(message["posted_at"])
            rng = content.rng_for("chat-time", message["message_id"])
            moved = clock.working_time_before(posted, zone[email_of[message["author_id"]]], rng)
            shift[message["message_id"]] = moved - posted
        delta = shift[parent or message["message_id"]]
        for column in ("posted_at", "edited_at", "pinned_at"):
            if message[column]:
                message[column] = _iso(datetime.fromisoformat(message[column]) + delta)
    for reaction in reactions:
        if reaction["message_id"] in shift:
            reaction["created_at"] = _iso(
                datetime.fromisoformat(reaction["created_at"]) + shift[reaction["message_id"]]
            )


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    cast = community(60)
    workspaces, members, by_workspace = [], [], []
    for w, (name, domain, size) in enumerate(WORKSPACES):
        workspace_id = f"ws_{w + 1:02d}"
        workspaces.append({"workspace_id": workspace_id, "name": name, "domain": domain})
        people = cast[:size] if w == 0 else rng.sample(cast[:20], size - 4) + cast[40 + 4 * w : 44 + 4 * w]
        ids = []
        for k, person in enumerate(people):
            first, last = person["full_name"].split()
            member_id = f"mbr_{len(members) + 1:04d}"
            ids.append(member_id)
            members.append(
                {
                    "member_id": member_id,
                    "workspace_id": workspace_id,
                    "email": person["email"],
                    "full_name": person["full_name"],
                    "display_name": f"{first.lower()}.{last[0].lower()}",
                    "title": fakedata.replaced(rng, lambda r: r.choice(TITLES), person["job_title"]),
                    "role": "owner"
                    if k == 0
                    else "admin"
                    if k < 3
                    else "guest"
                    if w == 2 and k >= size - 4
                    else "member",
                }
            )
        by_workspace.append(ids)

    channels, channel_members, messages, reactions = [], [], [], []
    for w, name, topic, visibility, archived, default in CHANNELS:
        channel_id = f"ch_{len(channels) + 1:03d}"
        pool = by_workspace[w]
        if default:
            joined = list(pool)
        elif (w, name) in FIXED_MEMBERS:
            joined = [pool[i] for i in FIXED_MEMBERS[w, name]]
        else:
            joined = rng.sample(
                pool, min(len(pool), rng.randint(3, 8) if visibility == "private" else rng.randint(5, 15))
            )
        created = now - timedelta(days=rng.randint(60, 300))
        channels.append(
            {
                "channel_id": channel_id,
                "workspace_id": f"ws_{w + 1:02d}",
                "name": name,
                "topic": topic,
                "visibility": visibility,
                "is_archived": archived,
                "is_default": default,
                "created_by": joined[0],
                "created_at": _iso(created),
            }
        )
        for member_id in joined:
            channel_members.append(
                {
                    "channel_member_id": f"cm_{len(channel_members) + 1:04d}",
                    "channel_id": channel_id,
                    "member_id": member_id,
                    "added_by": joined[0],
                    "joined_at": _iso(created + timedelta(hours=rng.randint(0, 72))),
                }
            )
        moment = now - timedelta(days=90 if archived else 14)
        for _ in range(rng.randint(6, 16)):
            moment += timedelta(hours=rng.randint(2, 20) if not archived else rng.randint(20, 60))
            moment = min(moment, now - timedelta(minutes=45))
            author = rng.choice(joined)
            parent_id = f"msg_{len(messages) + 1:04d}"
            edited = rng.random() < 0.08
            pinned = rng.random() < 0.1
            parent = {
                "message_id": parent_id,
                "channel_id": channel_id,
                "author_id": author,
                "text": rng.choice(TEXTS),
                "posted_at": _iso(moment),
                "thread_parent_id": None,
                "reply_count": 0,
                "edited_at": _iso(moment + timedelta(minutes=5)) if edited else None,
                "edited_by": author if edited else None,
                "is_pinned": pinned,
                "pinned_by": rng.choice(joined) if pinned else None,
                "pinned_at": _iso(moment + timedelta(minutes=30)) if pinned else None,
            }
            messages.append(parent)
            for r in range(rng.choice([0, 0, 0, 1, 2, 3])):
                parent["reply_count"] += 1
                messages.append(
                    {
                        "message_id": f"msg_{len(messages) + 1:04d}",
                        "channel_id": channel_id,
                        "author_id": rng.choice(joined),
                        "text": rng.choice(REPLIES),
                        "posted_at": _iso(moment + timedelta(minutes=3 + 7 * r)),
                        "thread_parent_id": parent_id,
                        "reply_count": 0,
                        "edited_at": None,
                        "edited_by": None,
                        "is_pinned": False,
                        "pinned_by": None,
                        "pinned_at": None,
                    }
                )
            for emoji in rng.sample(EMOJIS, rng.choice([0, 0, 1, 1, 2, 3])):
                for member_id in rng.sample(joined, rng.randint(1, min(3, len(joined)))):
                    reactions.append(
                        {
                            "reaction_id": f"rx_{len(reactions) + 1:04d}",
                            "message_id": parent_id,
                            "member_id": member_id,
                            "emoji": emoji,
                            "created_at": _iso(min(moment + timedelta(minutes=rng.randint(1, 120)), now)),
                        }
                    )
    _write_texts(channels, members, messages)
    _working_hours(messages, reactions, {m["member_id"]: m["email"] for m in members})
    return {
        "workspaces": workspaces,
        "members": members,
        "channels": channels,
        "channel_members": channel_members,
        "messages": messages,
        "reactions": reactions,
    }
