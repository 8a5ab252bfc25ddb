"""Seed rows of the document drive: 40 people from the shared cast, 24 folders, 80 documents with
their version history, sharing permissions and comments.

Every document has exactly one owner permission (its owner's), its current text and version number
match its latest version row, versions and comments are written by people with access, and a few
documents sit in the trash. The first document is Maria Patel's "Q2 budget draft" sheet, shared with
the people on her mail thread about the budget review.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory.world import content
from envfarm.factory.world.cast import COST_CENTER_DEPARTMENT, community

FOLDERS = [
    ("Engineering", None),
    ("Design", None),
    ("Finance", None),
    ("Marketing", None),
    ("Sales", None),
    ("Operations", None),
    ("People", None),
    ("Shared", None),
    ("Specs", "Engineering"),
    ("Runbooks", "Engineering"),
    ("Postmortems", "Engineering"),
    ("Research", "Design"),
    ("Brand", "Design"),
    ("Budgets", "Finance"),
    ("Invoices", "Finance"),
    ("Campaigns", "Marketing"),
    ("Website", "Marketing"),
    ("Proposals", "Sales"),
    ("Accounts", "Sales"),
    ("Policies", "Operations"),
    ("Office move", "Operations"),
    ("Onboarding", "People"),
    ("Hiring", "People"),
    ("Templates", "Shared"),
]
# Team folder -> department, as the cast's org chart maps cost centers (People is part of operations).
TEAM_DEPARTMENT = {
    name: COST_CENTER_DEPARTMENT[name] for name, parent in FOLDERS if parent is None and name in COST_CENTER_DEPARTMENT
}
TEAM_DEPARTMENT["Design"] = "design"
TITLES = {
    "Specs": [
        ("Search service design", "document"),
        ("Partner API spec", "document"),
        ("Offline mode RFC", "document"),
    ],
    "Runbooks": [("Database failover runbook", "document"), ("On-call handbook", "document")],
    "Postmortems": [("API outage postmortem", "document"), ("Billing delay postmortem", "document")],
    "Research": [("Onboarding interview notes", "document"), ("Usability test results", "presentation")],
    "Brand": [("Brand guidelines", "presentation"), ("Logo usage", "document")],
    "Budgets": [
        ("Q1 budget actuals", "spreadsheet"),
        ("Travel budget 2026", "spreadsheet"),
        ("Headcount plan", "spreadsheet"),
    ],
    "Invoices": [("Vendor invoices March", "spreadsheet"), ("Copperline contract costs", "spreadsheet")],
    "Campaigns": [
        ("Spring campaign brief", "document"),
        ("Campaign results Q1", "presentation"),
        ("Paid social plan", "spreadsheet"),
    ],
    "Website": [("Homepage copy", "document"), ("SEO keyword list", "spreadsheet")],
    "Proposals": [("Bluepeak renewal proposal", "document"), ("Greenfield partnership deck", "presentation")],
    "Accounts": [("Key accounts overview", "spreadsheet"), ("Churn risk list", "spreadsheet")],
    "Policies": [("Expense policy", "document"), ("Remote work policy", "document"), ("Security policy", "document")],
    "Office move": [("Office move checklist", "spreadsheet"), ("Seating plan", "spreadsheet")],
    "Onboarding": [("New hire checklist", "document"), ("First week agenda", "document")],
    "Hiring": [("Senior designer scorecard", "spreadsheet"), ("Interview question bank", "document")],
    "Templates": [
        ("Meeting notes template", "document"),
        ("Project brief template", "document"),
        ("Quarterly review deck", "presentation"),
    ],
}
EDITS = [
    "Initial draft",
    "Added figures",
    "Fixed typos",
    "Restructured sections",
    "Addressed review comments",
    "Updated dates",
]
COMMENTS = [
    "Can we double-check these numbers?",
    "Looks good to me.",
    "This section needs a source.",
    "Should we move this to the appendix?",
    "Please add the Q1 comparison.",
    "Typo in the second paragraph.",
]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


RETITLED = {
    "doc_0075": "Data pipeline migration plan",
    "doc_0079": "Porto offsite plan",
    "doc_0080": "v3.2 launch plan",
}


def _write_texts(documents: list[dict], versions: list[dict], comments: list[dict], folder: dict[str, str]) -> None:
    """Documents with real sections and the figures mail and chat quote; comments about their items.

    Three of the old "(copy)" documents become the plans of the pipeline, the offsite and the launch, so every
    workstream that mail and chat talk about has its document.
    """
    for doc_id, new_title in RETITLED.items():
        document = next(d for d in documents if d["doc_id"] == doc_id)
        document["title"] = new_title
    topic = {d["doc_id"]: content.workstream_for(d["title"], folder[d["folder_id"]]) for d in documents}
    title = {d["doc_id"]: d["title"] for d in documents}
    for version in versions:
        rng = content.rng_for("doc", version["version_id"])
        version["content"] = content.document(
            rng, topic[version["doc_id"]], title[version["doc_id"]], version["number"]
        )
    latest = {v["doc_id"]: v["content"] for v in versions}  # versions are in order: the last one is current
    for document in documents:
        document["content"] = latest[document["doc_id"]]
    for document in documents:  # trashed during someone's working day, not all at the same minute
        if document["trashed_at"]:
            moment = datetime.fromisoformat(document["trashed_at"]) + timedelta(
                minutes=content.rng_for("trash", document["doc_id"]).randrange(0, 8 * 60)
            )
            document["trashed_at"] = _iso(
                max(moment, datetime.fromisoformat(document["updated_at"]) + timedelta(hours=1))
            )
    for comment in comments:
        rng = content.rng_for("doc-comment", comment["comment_id"])
        comment["body"] = content.comment(rng, topic[comment["doc_id"]], title[comment["doc_id"]])


def _set_departments(folders: list[dict], documents: list[dict]) -> None:
    """A folder belongs to the department of its team folder (the cast's org chart); Shared to none."""
    by_id = {f["folder_id"]: f for f in folders}
    for folder in folders:
        team = by_id[folder["parent_id"]]["name"] if folder["parent_id"] else folder["name"]
        folder["department"] = TEAM_DEPARTMENT.get(team)
    for document in documents:
        document["department"] = by_id[document["folder_id"]]["department"]


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    cast = community(40)
    people = [
        {"person_id": f"per_{i:04d}", "full_name": p["full_name"], "email": p["email"], "department": p["department"]}
        for i, p in enumerate(cast, start=1)
    ]
    emails = [p["email"] for p in people]
    folders, folder_ids = [], {}
    for name, parent in FOLDERS:
        folder_id = f"fld_{len(folders) + 1:03d}"
        folder_ids[name] = folder_id
        folders.append(
            {
                "folder_id": folder_id,
                "name": name,
                "parent_id": folder_ids[parent] if parent else None,
                "owner_email": rng.choice(emails),
                "created_at": _iso(now - timedelta(days=rng.randint(200, 400))),
            }
        )
    plans = [
        (
            "Q2 budget draft",
            "spreadsheet",
            "Budgets",
            emails[18],
            {emails[0]: "editor", emails[5]: "editor", emails[10]: "editor", emails[26]: "viewer"},
        )
    ]
    pool = [(title, kind, folder) for folder, titles in TITLES.items() for title, kind in titles]
    while len(plans) < 80:
        title, kind, folder = pool[len(plans) % len(pool)]
        if len(plans) >= len(pool):
            title = f"{title} - 2025" if len(plans) < 2 * len(pool) else f"{title} (copy)"
        owner = rng.choice(emails)
        shared = rng.sample([e for e in emails if e != owner], rng.randint(0, 5))
        plans.append((title, kind, folder, owner, {e: rng.choice(["viewer", "viewer", "editor"]) for e in shared}))

    documents, permissions, versions, comments = [], [], [], []
    for n, (title, kind, folder, owner, shares) in enumerate(plans, start=1):
        doc_id = f"doc_{n:04d}"
        created = now - timedelta(days=rng.randint(5, 120), hours=rng.randint(0, 9))
        writers = [owner, *(e for e, role in shares.items() if role == "editor")]
        readers = [owner, *shares]
        moment = created
        text = f"{title}: first draft."
        for number in range(1, rng.randint(1, 4) + 1):
            author = owner if number == 1 else rng.choice(writers)
            summary = EDITS[0] if number == 1 else rng.choice(EDITS[1:])
            text = f"{title}: first draft." if number == 1 else f"{title}: revision {number} ({summary.lower()})."
            versions.append(
                {
                    "version_id": f"ver_{len(versions) + 1:04d}",
                    "doc_id": doc_id,
                    "number": number,
                    "content": text,
                    "author_email": author,
                    "summary": summary,
                    "created_at": _iso(moment),
                }
            )
            last_author, last_moment, last_number = author, moment, number
            moment = min(moment + timedelta(days=rng.randint(1, 10), hours=rng.randint(1, 6)), now - timedelta(hours=1))
        trashed = n % 11 == 7
        documents.append(
            {
                "doc_id": doc_id,
                "title": title,
                "kind": kind,
                "folder_id": folder_ids[folder],
                "owner_email": owner,
                "content": text,
                "version": last_number,
                "status": "trashed" if trashed else "active",
                "trashed_by": owner if trashed else None,
                "trashed_at": _iso(now - timedelta(days=rng.randint(1, 4))) if trashed else None,
                "created_at": _iso(created),
                "updated_at": _iso(last_moment),
                "last_edited_by": last_author,
            }
        )
        for email, role in [(owner, "owner"), *shares.items()]:
            permissions.append(
                {
                    "permission_id": f"prm_{len(permissions) + 1:04d}",
                    "doc_id": doc_id,
                    "email": email,
                    "role": role,
                    "granted_by": owner,
                    "granted_at": _iso(created if role == "owner" else created + timedelta(hours=rng.randint(1, 48))),
                }
            )
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            resolved = rng.random() < 0.3
            comments.append(
                {
                    "comment_id": f"cmt_{len(comments) + 1:04d}",
                    "doc_id": doc_id,
                    "author_email": rng.choice(readers),
                    "body": rng.choice(COMMENTS),
                    "created_at": _iso(min(created + timedelta(days=rng.randint(1, 20)), now - timedelta(hours=2))),
                    "resolved": resolved,
                    "resolved_by": rng.choice(writers) if resolved else None,
                }
            )
    _write_texts(documents, versions, comments, {f["folder_id"]: f["name"] for f in folders})
    _set_departments(folders, documents)
    return {
        "people": people,
        "folders": folders,
        "documents": documents,
        "permissions": permissions,
        "versions": versions,
        "comments": comments,
    }
