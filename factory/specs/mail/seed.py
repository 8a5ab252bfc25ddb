"""Seed rows of the mail server: 40 mailboxes from the shared cast, 48 threads with about 130 messages,
each participant's view of each thread (a conversation), labels, applied labels and drafts.

The first threads are written by hand so that cross-server tasks have solid anchors (Maria Patel's
Q2 budget review thread, an offsite thread, ...) and stay in their recipients' inboxes; the rest are
generated from topic scripts. Every conversation's folder, read flag and last-message time agree with
the messages of its thread.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory.world import clock, content
from envfarm.factory.world.cast import community

BUDGET_OPENER = (
    "Hi all, ahead of the Q2 budget review I have put the draft numbers in the shared sheet (Q2 budget draft): "
    "the Q2 total is $412,000. Could each of you check your team's lines before we meet? We need about an hour "
    "together next week."
)
# (subject, starter index, to indexes, cc indexes, [(sender index or None for "next participant", body)])
ANCHORS = [
    (
        "Q2 budget review",
        18,
        [0, 5, 10],
        [26],
        [
            (18, BUDGET_OPENER),
            (
                0,
                "Thanks Maria. Engineering's cloud spend is $48,200, 8% over plan; I'll add a note explaining the "
                "migration costs.",
            ),
            (
                5,
                "Marketing numbers are in: paid social is $36,500. Happy to meet any afternoon next week except "
                "Wednesday.",
            ),
        ],
    ),
    (
        "Offsite planning: May",
        1,
        [4, 12, 19],
        [],
        [
            (1, "We have the venue in Porto for May 18-20. Can you confirm dietary needs and travel dates by Friday?"),
            (12, "Confirmed. I'll fly in on the 17th. Vegetarian meals for me, please."),
        ],
    ),
    (
        "Budget numbers for the marketing campaign",
        25,
        [30, 36],
        [],
        [
            (25, "Attached are the campaign budget numbers. The paid social line doubled; can we discuss?"),
            (30, "Let's go through it in our next 1:1, Maria."),
            (36, "I can join if it helps, I have the agency invoices."),
        ],
    ),
    (
        "Vendor contract renewal: Copperline",
        7,
        [11],
        [39],
        [
            (7, "Copperline's contract ends on May 31. They propose a 12% increase; I think we can push back."),
            (11, "Agreed. Legal wants the new data-processing terms in the renewal too."),
            (7, "I'll ask for a call with their account manager."),
        ],
    ),
]
TOPICS = [
    (
        "Customer escalation: Bluepeak",
        "Bluepeak reported slow dashboards since Tuesday. Can someone look at their instance?",
    ),
    ("Launch checklist for v3.2", "Here is the launch checklist for v3.2. Please tick your items by Thursday."),
    (
        "Hiring: senior product designer",
        "We have three finalists for the senior designer role. Feedback forms are due tomorrow.",
    ),
    ("Security training reminder", "The yearly security awareness training is due by the end of the month."),
    ("New expense policy", "Finance updated the expense policy: receipts above 50 USD now need a project code."),
    ("Office move logistics", "Movers arrive on Saturday morning. Please pack your desks on Friday afternoon."),
    ("Quarterly OKR draft", "The first draft of next quarter's OKRs is ready for comments."),
    ("Incident report: API outage", "Yesterday's API outage lasted 42 minutes. Draft postmortem attached."),
    ("Partnership proposal from Greenfield", "Greenfield wants to co-host a webinar in June. Thoughts?"),
    ("Team lunch on Friday", "Team lunch this Friday at noon at the Harbor cafe. Who is in?"),
    ("Data retention question", "A customer asked how long we keep audit logs. Do we have a written answer?"),
    ("Invoice 2291 overdue", "Invoice 2291 from Silverleaf is 30 days overdue. Can finance follow up?"),
    ("Conference talk submission", "The call for papers for DevDays closes next week. Anyone submitting?"),
    (
        "Onboarding plan for new hires",
        "Three people start on Monday. Here is the onboarding plan for their first week.",
    ),
    ("Website copy review", "The new homepage copy is ready for review. Comments welcome in the doc."),
    ("Laptop refresh", "IT will replace laptops older than four years. Reply if yours qualifies."),
]
REPLIES = [
    "Thanks, I'll take a look today.",
    "Sounds good to me.",
    "Can we discuss this in the next sync?",
    "I added my comments. Let me know if anything is unclear.",
    "Done on my side.",
    "I'm out until Wednesday; I'll reply then.",
    "Looping in the right people here.",
    "Could you share the latest version?",
]
LABELS = ["Finance", "Follow up", "Clients", "Hiring", "Travel", "Reports", "Urgent", "Vendors"]
COLORS = ["red", "orange", "yellow", "green", "blue", "purple", "gray"]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _script(rng: random.Random, subject: str, body: str) -> tuple:
    people = rng.sample(range(40), rng.randint(2, 6))
    starter, others = people[0], people[1:]
    split = rng.randint(1, len(others))
    replies = [(None, rng.choice(REPLIES)) for _ in range(rng.randint(0, 3))]
    return subject, starter, others[:split], others[split:], [(starter, body), *replies]


def _write_bodies(threads: list[dict], messages: list[dict], drafts: list[dict], first: dict[str, str]) -> None:
    """Give the generated threads and drafts text about their subject, each reply answering the one before.

    The hand-written anchor threads keep their text; a sent draft keeps the text of the message it became.
    """
    last: dict[str, content.Line] = {}
    for thread in threads[len(ANCHORS) :]:
        ws = content.workstream_for(thread["subject"])
        line = None
        for message in (m for m in messages if m["thread_id"] == thread["thread_id"]):
            rng = content.rng_for("mail", message["message_id"])
            to = first[message["to_emails"].split(", ")[0]]
            if line is None:  # the topic's own opening line, then a question or update of its workstream
                line = content.opening(rng, ws, to, chat=True)  # a bare sentence: no second greeting
                message["body"] = f"{message['body']} {line.text}"
            else:
                line = content.reply_to(rng, ws, line, to)
                message["body"] = line.text
        if line is not None:
            last[thread["thread_id"]] = line
    subject_of = {t["thread_id"]: t["subject"] for t in threads}
    for draft in drafts:
        if draft["status"] != "draft":
            continue
        rng = content.rng_for("mail", draft["draft_id"])
        subject = subject_of[draft["thread_id"]] if draft["thread_id"] else draft["subject"]
        ws = content.workstream_for(subject)
        to = first.get(draft["to_emails"].split(", ")[0], "all")
        previous = last.get(draft["thread_id"] or "")
        draft["body"] = (content.reply_to(rng, ws, previous, to) if previous else content.opening(rng, ws, to)).text


SUBJECTS = (
    "{title}: {item}",
    "Question on the {item}",
    "Notes on the {item} ({title})",
    "{item} before the {meeting}",
    "Re-check: {item}",
    "{title}, {item} status",
)
EXTRA_THREADS = 170


def _more_threads(
    cast: list[dict], now: datetime, threads: list[dict], messages: list[dict], conversations: list[dict]
) -> None:
    """A working volume of mail (a few dozen conversations per mailbox, so search and filters matter),
    written in each sender's business hours, appended after the rows the spec examples name."""
    for n in range(EXTRA_THREADS):
        rng = content.rng_for("mail-thread", n)
        ws = content.WORKSTREAMS[n % len(content.WORKSTREAMS)]
        item = rng.choice(ws.items)
        subject = rng.choice(SUBJECTS).format(title=ws.title, item=item, meeting=ws.meeting)
        people = rng.sample(cast, rng.randint(2, 5))
        thread_id = f"thr_{len(threads) + 1:04d}"
        moment = now - timedelta(days=rng.randint(1, 45), hours=rng.randint(0, 23))
        line = None
        senders = [people[0], *(rng.choice(people[1:] if k % 2 == 0 else people) for k in range(rng.randint(0, 4)))]
        last = people[0]
        first_at = ""
        for k, sender in enumerate(senders):
            if k and sender is last:
                sender = next(p for p in people if p is not last)
            to = people[1:2] if k == 0 else [last]
            cc = [p for p in people if p is not sender and p not in to]
            moment = clock.business_hours(moment + timedelta(minutes=rng.randint(20, 1500)), sender["time_zone"], rng)
            if moment > now - timedelta(minutes=30):
                break
            line = (
                content.write(rng, ws, rng.choice(["ask", "update", "concern"]), to[0]["first_name"], item)
                if line is None
                else content.reply_to(rng, ws, line, to[0]["first_name"])
            )
            messages.append(
                {
                    "message_id": f"msg_{len(messages) + 1:04d}",
                    "thread_id": thread_id,
                    "sender_email": sender["email"],
                    "to_emails": ", ".join(p["email"] for p in to),
                    "cc_emails": ", ".join(p["email"] for p in cc),
                    "body": line.text,
                    "sent_at": _iso(moment),
                }
            )
            first_at = first_at or _iso(moment)
            last = sender
        own = [m for m in messages if m["thread_id"] == thread_id]
        if not own:
            continue
        threads.append(
            {
                "thread_id": thread_id,
                "subject": subject,
                "started_by": people[0]["email"],
                "created_at": first_at,
                "last_message_at": own[-1]["sent_at"],
                "message_count": len(own),
            }
        )
        received = {e for m in own for e in (m["to_emails"] + ", " + m["cc_emails"]).split(", ") if e}
        for person in people:
            folder = "inbox" if person["email"] in received else "sent"
            if folder == "inbox":
                folder = rng.choices(["inbox", "archive", "trash"], [0.6, 0.35, 0.05])[0]
            conversations.append(
                {
                    "conversation_id": f"cnv_{len(conversations) + 1:04d}",
                    "thread_id": thread_id,
                    "mailbox_email": person["email"],
                    "subject": subject,
                    "folder": folder,
                    "is_read": person["email"] == own[-1]["sender_email"] or rng.random() < 0.7,
                    "is_starred": rng.random() < 0.08,
                    "last_message_at": own[-1]["sent_at"],
                }
            )


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    cast = community(40)
    mailboxes = [
        {
            "mailbox_id": f"mbx_{i:04d}",
            "email": p["email"],
            "full_name": p["full_name"],
            "signature": f"Best,\n{p['full_name']}",
        }
        for i, p in enumerate(cast, start=1)
    ]
    email_of = [p["email"] for p in cast]
    scripts = list(ANCHORS)
    for n in range(44):
        subject, body = TOPICS[n % len(TOPICS)]
        prefix = ["", "Update: ", "Reminder: "][n // len(TOPICS)]
        scripts.append(_script(rng, prefix + subject, body))

    threads: list[dict] = []
    messages: list[dict] = []
    conversations: list[dict] = []
    for subject, starter, to, cc, steps in scripts:
        thread_id = f"thr_{len(threads) + 1:04d}"
        participants = [starter, *to, *cc]
        moment = now - timedelta(days=rng.randint(1, 14), hours=rng.randint(0, 8))
        received: set[int] = set()
        last_sender = starter
        for k, (sender, body) in enumerate(steps):
            if sender is None:
                sender = rng.choice([p for p in participants if p != last_sender])
            if k == 0:
                msg_to, msg_cc = to, cc
            else:
                msg_to = [last_sender]
                msg_cc = [p for p in participants if p not in (sender, last_sender)]
            received.update(msg_to + msg_cc)
            moment = min(
                moment + timedelta(hours=rng.randint(1, 20), minutes=rng.randint(0, 59)), now - timedelta(minutes=30)
            )
            messages.append(
                {
                    "message_id": f"msg_{len(messages) + 1:04d}",
                    "thread_id": thread_id,
                    "sender_email": email_of[sender],
                    "to_emails": ", ".join(email_of[p] for p in msg_to),
                    "cc_emails": ", ".join(email_of[p] for p in msg_cc),
                    "body": body,
                    "sent_at": _iso(moment),
                }
            )
            last_sender = sender
        first_at = next(m["sent_at"] for m in messages if m["thread_id"] == thread_id)
        threads.append(
            {
                "thread_id": thread_id,
                "subject": subject,
                "started_by": email_of[starter],
                "created_at": first_at,
                "last_message_at": _iso(moment),
                "message_count": len(steps),
            }
        )
        for p in participants:
            folder = "inbox" if p in received else "sent"
            if folder == "inbox" and len(threads) > len(ANCHORS):
                folder = rng.choices(["inbox", "archive", "trash"], [0.65, 0.3, 0.05])[0]
            conversations.append(
                {
                    "conversation_id": f"cnv_{len(conversations) + 1:04d}",
                    "thread_id": thread_id,
                    "mailbox_email": email_of[p],
                    "subject": subject,
                    "folder": folder,
                    "is_read": p == last_sender or rng.random() < 0.6,
                    "is_starred": rng.random() < 0.1,
                    "last_message_at": _iso(moment),
                }
            )

    labels = []
    for box in mailboxes:
        for name in rng.sample(LABELS, 2):
            labels.append(
                {
                    "label_id": f"lbl_{len(labels) + 1:04d}",
                    "mailbox_email": box["email"],
                    "name": name,
                    "color": rng.choice(COLORS),
                }
            )
    applied = []
    for conversation in rng.sample(conversations, 60):
        own = [label for label in labels if label["mailbox_email"] == conversation["mailbox_email"]]
        applied.append(
            {
                "tag_id": f"tag_{len(applied) + 1:04d}",
                "conversation_id": conversation["conversation_id"],
                "label_id": rng.choice(own)["label_id"],
                "applied_at": conversation["last_message_at"],
            }
        )

    drafts = []
    for n in range(26):
        box = rng.choice(mailboxes)
        stamp = _iso(now - timedelta(hours=rng.randint(1, 72)))
        mine = [c for c in conversations if c["mailbox_email"] == box["email"]]
        if n % 3 == 2 and mine:
            thread = rng.choice(mine)
            others = sorted(
                {m["sender_email"] for m in messages if m["thread_id"] == thread["thread_id"]} - {box["email"]}
            )
            draft = {
                "thread_id": thread["thread_id"],
                "subject": None,
                "to_emails": ", ".join(others[:1]),
                "cc_emails": "",
            }
        else:
            subject, body = rng.choice(TOPICS)
            recipients = rng.sample([e for e in email_of if e != box["email"]], rng.randint(1, 3)) if n % 4 else []
            draft = {
                "thread_id": None,
                "subject": f"Follow-up: {subject}",
                "to_emails": ", ".join(recipients),
                "cc_emails": "",
            }
        drafts.append(
            {
                "draft_id": f"drf_{n + 1:04d}",
                "mailbox_email": box["email"],
                **draft,
                "body": rng.choice(REPLIES),
                "status": "draft",
                "sent_message_id": None,
                "created_at": stamp,
                "updated_at": stamp,
            }
        )
    for message in messages[1:12:3]:  # replies in the hand-written threads, sent from a draft
        drafts.append(
            {
                "draft_id": f"drf_{len(drafts) + 1:04d}",
                "mailbox_email": message["sender_email"],
                "thread_id": message["thread_id"],
                "subject": None,
                "to_emails": message["to_emails"],
                "cc_emails": message["cc_emails"],
                "body": message["body"],
                "status": "sent",
                "sent_message_id": message["message_id"],
                "created_at": message["sent_at"],
                "updated_at": message["sent_at"],
            }
        )
    _write_bodies(threads, messages, drafts, {p["email"]: p["first_name"] for p in cast})
    _more_threads(cast, now, threads, messages, conversations)
    return {
        "mailboxes": mailboxes,
        "threads": threads,
        "messages": messages,
        "conversations": conversations,
        "labels": labels,
        "conversation_labels": applied,
        "drafts": drafts,
        "attachments": _attachments(threads, messages, drafts),
    }


# The file the first message of a thread about it carries (the documents the drive and chat talk about).
ATTACHED_FILES = {
    "Q2 budget review": "Q2 budget draft.xlsx",
    "Budget numbers for the marketing campaign": "Campaign budget.xlsx",
    "Vendor contract renewal: Copperline": "Copperline contract 2026.pdf",
    "Incident report: API outage": "API outage postmortem.pdf",
    "Invoice 2291 overdue": "Invoice 2291.pdf",
    "Launch checklist for v3.2": "v3.2 launch checklist.pdf",
    "Hiring: senior product designer": "Senior designer scorecard.xlsx",
    "Partnership proposal from Greenfield": "Greenfield partnership deck.pptx",
    "Website copy review": "Homepage copy.docx",
    "Quarterly OKR draft": "Q2 OKRs.docx",
    "New expense policy": "Expense policy.pdf",
}
MIME_TYPES = {
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "pdf": "application/pdf",
}


def _attachments(threads: list[dict], messages: list[dict], drafts: list[dict]) -> list[dict]:
    """The file of each thread about it, on its first message; half the unsent follow-ups re-attach it."""
    rows = []
    for thread in threads:
        filename = ATTACHED_FILES.get(thread["subject"])
        if filename is None:
            continue
        first = min((m for m in messages if m["thread_id"] == thread["thread_id"]), key=lambda m: m["sent_at"])
        rows.append(
            {
                "attachment_id": f"att_{len(rows) + 1:04d}",
                "message_id": first["message_id"],
                "draft_id": None,
                "filename": filename,
                "mime_type": MIME_TYPES[filename.rsplit(".", 1)[1]],
                "size_kb": 40 + int(first["message_id"][-4:]) * 37 % 900,
                "created_at": first["sent_at"],
            }
        )
    for draft in drafts:
        topic = (draft["subject"] or "").removeprefix("Follow-up: ")
        if draft["status"] != "draft" or topic not in ATTACHED_FILES or int(draft["draft_id"][-4:]) % 2:
            continue
        filename = ATTACHED_FILES[topic]
        rows.append(
            {
                "attachment_id": f"att_{len(rows) + 1:04d}",
                "message_id": None,
                "draft_id": draft["draft_id"],
                "filename": filename,
                "mime_type": MIME_TYPES[filename.rsplit(".", 1)[1]],
                "size_kb": 40 + int(draft["draft_id"][-4:]) * 53 % 900,
                "created_at": draft["updated_at"],
            }
        )
    return rows
