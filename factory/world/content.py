"""Deterministic, varied and coherent work text: mail, chat, comments and documents.

Every body is written about one of the company's workstreams (its items, figures and meeting), by a
named person to a named person, from an rng keyed by the row id: so it never shifts the seed builder's
own random stream, the same row always gets the same text, and a reply answers what was asked
(a question about an item gets an answer about that item, quoting the workstream's figure).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel


class Workstream(BaseModel):
    """One piece of the company's real work that mail, chat, documents and meetings talk about."""

    key: str
    title: str
    words: tuple[str, ...]  # lower-case words that tie a subject, channel or title to it
    items: tuple[str, ...]
    figures: dict[str, str]  # a figure's name -> its value, quoted identically everywhere
    meeting: str
    document: str  # the drive document that holds the figures


WORKSTREAMS: tuple[Workstream, ...] = (
    Workstream(
        key="budget",
        document="Q2 budget draft",
        title="Q2 budget review",
        words=("budget", "forecast", "spend", "finance", "expense"),
        items=("cloud spend", "marketing line", "travel budget", "headcount plan", "vendor cost line"),
        figures={
            "Q2 total": "$412,000",
            "engineering cloud spend": "$48,200 (8% over plan)",
            "marketing paid social": "$36,500",
            "travel": "$21,000",
        },
        meeting="Q2 budget review",
    ),
    Workstream(
        key="offsite",
        document="Porto offsite plan",
        title="May offsite in Porto",
        words=("offsite", "porto", "social", "lunch", "events"),
        items=("venue", "flight booking", "dietary list", "agenda", "hotel block"),
        figures={"dates": "May 18-20", "hotel block": "24 rooms", "budget per head": "$1,150"},
        meeting="Offsite planning",
    ),
    Workstream(
        key="launch",
        document="v3.2 launch plan",
        title="v3.2 launch",
        words=("launch", "release", "v3.2", "checklist", "go/no-go", "beta"),
        items=("release note draft", "feature flag plan", "migration script", "launch checklist", "beta feedback"),
        figures={"launch date": "April 28", "open blockers": "3", "beta accounts": "42"},
        meeting="Release go/no-go",
    ),
    Workstream(
        key="incident",
        document="API outage postmortem",
        title="API outage postmortem",
        words=("incident", "outage", "postmortem", "on-call", "failover", "runbook"),
        items=("timeline", "root cause", "alert threshold review", "failover runbook", "status page"),
        figures={"outage length": "42 minutes", "failed requests": "18,400", "error budget left": "61%"},
        meeting="Incident postmortem",
    ),
    Workstream(
        key="hiring",
        document="Senior designer scorecard",
        title="Senior product designer hire",
        words=("hiring", "designer", "interview", "candidate", "scorecard", "onboarding", "new hire"),
        items=("scorecard summary", "portfolio review", "reference check", "offer", "interview panel"),
        figures={"finalists": "3", "salary band": "$118,000-$132,000", "start date": "June 1"},
        meeting="Hiring debrief",
    ),
    Workstream(
        key="bluepeak",
        document="Bluepeak renewal proposal",
        title="Bluepeak account",
        words=("bluepeak", "customer", "escalation", "renewal", "account", "churn", "sales"),
        items=("dashboard latency", "renewal quote", "support backlog", "usage report", "QBR deck"),
        figures={"contract value": "$96,000 a year", "p95 dashboard load": "7.8 s", "open tickets": "11"},
        meeting="Customer call: Bluepeak",
    ),
    Workstream(
        key="copperline",
        document="Copperline contract costs",
        title="Copperline vendor renewal",
        words=("copperline", "vendor", "contract", "invoice", "legal"),
        items=(
            "price increase",
            "data-processing addendum",
            "contract end date",
            "usage tier table",
            "invoice backlog",
        ),
        figures={"proposed increase": "12%", "contract end": "May 31", "current fee": "$5,400 a month"},
        meeting="Vendor demo: Copperline",
    ),
    Workstream(
        key="campaign",
        document="Spring campaign brief",
        title="Spring marketing campaign",
        words=("campaign", "marketing", "paid social", "website", "homepage", "seo", "brand", "blog"),
        items=("paid social plan", "homepage copy", "landing page", "agency invoice", "launch email"),
        figures={"campaign budget": "$36,500", "sign-ups last week": "10,240", "cost per lead": "$14.80"},
        meeting="Campaign kickoff",
    ),
    Workstream(
        key="pipeline",
        document="Data pipeline migration plan",
        title="Data pipeline migration",
        words=(
            "pipeline",
            "data",
            "architecture",
            "search",
            "api",
            "engineering",
            "spec",
            "rfc",
            "ml",
            "experiment",
            "research",
        ),
        items=("event schema", "backfill job", "warehouse table layout", "service split", "search index"),
        figures={"daily events": "3.1 million", "backfill ETA": "April 24", "query cost cut": "27%"},
        meeting="Data pipeline walkthrough",
    ),
    Workstream(
        key="security",
        document="Security policy",
        title="Security and IT",
        words=("security", "training", "laptop", "it", "vpn", "policy", "retention", "audit", "help-it"),
        items=("security training", "laptop refresh", "VPN maintenance", "audit log retention", "access review"),
        figures={"training completion": "68%", "laptops to replace": "17", "log retention": "400 days"},
        meeting="Security awareness training",
    ),
    Workstream(
        key="office",
        document="Office move checklist",
        title="Office move",
        words=("office", "move", "seating", "moving company", "floor"),
        items=("seating plan", "moving company", "desk packing", "meeting room plan", "parking badge list"),
        figures={"move day": "Saturday April 25", "desks": "64", "new floor": "5th floor"},
        meeting="Office move planning",
    ),
    Workstream(
        key="partners",
        document="Greenfield partnership deck",
        title="Greenfield partnership",
        words=("greenfield", "partner", "partnership", "webinar", "integration"),
        items=("co-hosted webinar", "integration guide", "partner pricing", "joint case study", "API key rotation"),
        figures={"webinar date": "June 11", "registrations": "310", "partner discount": "15%"},
        meeting="Partner sync: Greenfield",
    ),
    Workstream(
        key="pricing",
        document="Quarterly review deck",
        title="New pricing tiers",
        words=("pricing", "okr", "quarterly", "roadmap", "planning", "sprint", "retro", "review", "product"),
        items=("tier limit table", "annual discount", "OKR draft", "roadmap priority list", "sprint scope"),
        figures={"team tier": "$29 per seat", "annual discount": "18%", "Q3 OKRs": "4 objectives"},
        meeting="Pricing workshop",
    ),
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "next Monday", "end of week", "tomorrow")

ASK = (
    "{to}, can you confirm the {item} by {day}?",
    "Quick question on the {item}: are we still at {figure} for {fname}?",
    "Does anyone have the latest on the {item}? I need it before the {meeting}.",
    "{to}, could you take a look at the {item} before {day}?",
    "Where did we land on the {item}? Last I saw, {fname} was {figure}.",
    "Can we settle the {item} at the {meeting}, or do you need more time, {to}?",
)
ANSWER = (
    "Yes, the {item} is settled: {fname} stays at {figure}.",
    "Checked the {item} this morning; {fname} is {figure}, same as in the doc.",
    "The {item} is done on my side, {to}. I noted {fname} ({figure}) in the doc.",
    "Not yet, {to}: the {item} needs one more pass, I'll have it by {day}.",
    "{to}, the {item} is in the shared doc now; {fname} came out at {figure}.",
    "Short answer: {figure} for {fname}. The {item} follows from that.",
)
UPDATE = (
    "Update on the {item}: {fname} is now {figure}.",
    "Heads-up: the {item} moved, and {fname} is {figure} as of today.",
    "I finished the {item}. {fname}: {figure}. Details in the doc.",
    "Sharing where the {item} stands before the {meeting}: {fname} at {figure}.",
)
CONCERN = (
    "I'm worried about the {item}; with {fname} at {figure} we have little room.",
    "The {item} looks risky to me. Can we revisit it at the {meeting}?",
    "Before we sign off on the {item}, can someone double-check {fname} ({figure})?",
)
ACK = (
    "Thanks {to}, that settles the {item} for me.",
    "Great, I'll reflect {figure} for {fname} in my part.",
    "Perfect. Let's close the {item} at the {meeting} on {day}.",
    "Thanks {to}. I'll update the {item} tracker tonight.",
)
OPENERS = ("", "", "Hi {to}, ", "Morning {to}! ", "Hey {to}, ")
CLOSERS = ("", "", " Thanks!", " Let me know.", " Cheers.", " Happy to jump on a call.")
LOWER_AFTER_GREETING = {
    "Can",
    "Could",
    "Does",
    "Where",
    "Quick",
    "Yes,",
    "Not",
    "Checked",
    "Short",
    "Update",
    "Heads-up:",
    "Sharing",
    "Before",
    "Thanks",
    "Great,",
    "Perfect.",
    "The",
}
ACTS = {"ask": ASK, "answer": ANSWER, "update": UPDATE, "concern": CONCERN, "ack": ACK}
NEXT_ACT = {"ask": "answer", "answer": "ack", "update": "ask", "concern": "answer", "ack": "update"}


class Line(BaseModel):
    """One written message and what it was about, so the next one can answer it."""

    text: str
    act: str
    item: str


def rng_for(*key: object) -> random.Random:
    """An rng of its own for one row: the builder's random stream is left untouched."""
    return random.Random("/".join(map(str, key)))


def _mentions(haystack: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", haystack) is not None


def matching_workstream(*texts: str) -> Workstream | None:
    """The workstream a subject, channel, folder or title is about (most matching words wins), if any."""
    haystack = " ".join(texts).lower()
    score, _, best = max(
        ((sum(_mentions(haystack, w) for w in ws.words), -n, ws) for n, ws in enumerate(WORKSTREAMS)),
        key=lambda s: s[:2],
    )
    return best if score else None


def workstream_for(*texts: str) -> Workstream:
    """The workstream a text is about, or (for small talk) one picked by the text, so it still has one."""
    haystack = " ".join(texts).lower()
    return matching_workstream(haystack) or WORKSTREAMS[len(haystack) % len(WORKSTREAMS)]


def agenda_note(ws: Workstream) -> str:
    """What a meeting's description says about its document; the invariants look the title up."""
    return f'Agenda and figures: "{ws.document}" in the drive.'


def write(rng: random.Random, ws: Workstream, act: str, to: str, item: str | None = None, chat: bool = False) -> Line:
    """One message of act `act` about `item` (or a fresh item of the workstream), addressed to `to`;
    `chat` gives the bare sentence (chat posts, or a line added to a message), mail adds a greeting and sign-off."""
    item = item or rng.choice(ws.items)
    fname, figure = rng.choice(sorted(ws.figures.items()))
    sentence = rng.choice(ACTS[act]).format(
        to=to, item=item, fname=fname, figure=figure, day=rng.choice(DAYS), meeting=ws.meeting
    )
    sentence = sentence[0].upper() + sentence[1:]
    if chat:
        return Line(text=sentence, act=act, item=item)
    opener = "" if to in sentence else rng.choice(OPENERS).format(to=to)
    if opener.endswith(", ") and sentence.split()[0] in LOWER_AFTER_GREETING:
        sentence = sentence[0].lower() + sentence[1:]
    return Line(text=opener + sentence + rng.choice(CLOSERS), act=act, item=item)


def reply_to(rng: random.Random, ws: Workstream, previous: Line, to: str, chat: bool = False) -> Line:
    """The answer to `previous`: the act it calls for, about the same item."""
    return write(rng, ws, NEXT_ACT[previous.act], to, previous.item, chat)


def opening(rng: random.Random, ws: Workstream, to: str, chat: bool = False) -> Line:
    return write(rng, ws, rng.choice(["ask", "update", "concern", "ask"]), to, chat=chat)


def document(rng: random.Random, ws: Workstream, title: str, revision: int) -> str:
    """A document with real sections: summary, the figures others quote, decisions, open questions."""
    items = rng.sample(list(ws.items), 3)
    figures = "\n".join(f"- {name}: {value}" for name, value in sorted(ws.figures.items()))
    return (
        f"# {title}\n\n## Summary\nThis document tracks the {ws.title}: "
        f"{items[0]}, {items[1]} and {items[2]}. Revision {revision}.\n\n"
        f"## Figures\n{figures}\n\n## Decisions\n- The {items[0]} is owned by the {ws.meeting} group.\n"
        f"- {items[1].capitalize()} is reviewed on {rng.choice(DAYS[:5])}s.\n\n"
        f"## Open questions\n- Is the {items[2]} final before the {ws.meeting}?"
    )


COMMENT = (
    "Can we double-check the {item} here? I have {figure} for {fname}.",
    "The {item} section reads well; {fname} ({figure}) matches the mail thread.",
    "Please add last quarter next to {fname} ({figure}) for the {item}.",
    "Who owns the {item}? It should be ready for the {meeting}.",
    "Typo in the {item} paragraph; also {fname} should say {figure}.",
    "Blocked on the {item} until we agree on {fname}.",
    "{item} done; moved the notes into the doc before {day}.",
    "I'd move the {item} to the appendix; the {meeting} only needs {fname}.",
)


def comment(rng: random.Random, ws: Workstream, about: str) -> str:
    """A comment on a document or task titled `about`."""
    fname, figure = rng.choice(sorted(ws.figures.items()))
    text = rng.choice(COMMENT).format(
        item=rng.choice(ws.items), fname=fname, figure=figure, meeting=ws.meeting, day=rng.choice(DAYS)
    )
    return f"{text[0].upper()}{text[1:]} ({about})" if rng.random() < 0.3 else text[0].upper() + text[1:]


def distinct_ratio(texts: Iterable[str]) -> float:
    """Distinct bodies / bodies: 1.0 when no two bodies are the same; 1.0 for no bodies."""
    bodies = [t.strip() for t in texts if t is not None]
    return len(set(bodies)) / len(bodies) if bodies else 1.0


# content kind -> the (server, table, column) cells that hold it
CONTENT_CELLS: dict[str, list[tuple[str, str, str]]] = {
    "mail": [("mail", "messages", "body")],
    "chat": [("team_chat", "messages", "text")],
    "comments": [("docs_drive", "comments", "body"), ("project_tracker", "comments", "body")],
    "documents": [("docs_drive", "documents", "content")],
}


def variety(seeds: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, tuple[int, float]]:
    """Per content kind: how many bodies the seeds hold and their distinct-body ratio."""
    report = {}
    for kind, cells in CONTENT_CELLS.items():
        bodies = [row[column] for server, table, column in cells for row in seeds.get(server, {}).get(table, [])]
        report[kind] = (len(bodies), round(distinct_ratio(bodies), 3))
    return report
