"""Seed rows of the project tracker: 40 people from the shared cast, 20 projects, their members,
milestones, about 200 tasks and 150 comments.

The seed obeys the tracker's rules: assignees, reporters and commenters are project members, tasks
in progress or in review have an assignee, closed milestones hold only finished tasks, and archived
projects have only closed milestones.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world import content
from envfarm.factory.world.cast import community

PROJECTS = [
    ("Website redesign", "New marketing site with the refreshed brand."),
    ("Mobile app 2.0", "Rebuild of the mobile app with offline mode."),
    ("Data warehouse migration", "Move reporting from the old warehouse to the new one."),
    ("Customer portal", "Self-service portal for invoices and support tickets."),
    ("Billing revamp", "Usage-based billing and a new invoice layout."),
    ("Onboarding flow", "Shorter sign-up and guided first steps."),
    ("Search improvements", "Faster, typo-tolerant search across the product."),
    ("Security audit 2026", "Fix the findings of this year's external audit."),
    ("Office move", "Move the Lisbon team to the new floor."),
    ("Partner API", "Public API for integration partners."),
    ("Analytics dashboards", "Self-serve dashboards for account managers."),
    ("Accessibility fixes", "Reach WCAG 2.2 AA across the web app."),
    ("Spring campaign", "Marketing campaign for the spring release."),
    ("Hiring pipeline", "Tooling and process for the engineering hiring push."),
    ("Support chatbot", "First-line chatbot for common support questions."),
    ("Infrastructure cost cut", "Reduce cloud spend by 20 percent."),
    ("Localization", "Translate the product into German and Japanese."),
    ("Design system", "Shared components and tokens for all products."),
    ("Q2 budget planning", "Collect and consolidate department budgets for Q2."),
    ("Legacy API sunset", "Retire the v1 API after moving customers off it."),
]
TASKS = [
    "Write the technical spec",
    "Set up the CI pipeline",
    "Design the landing page",
    "Fix login timeout",
    "Add error tracking",
    "Review copy with legal",
    "Migrate user table",
    "Load-test the new endpoints",
    "Update the onboarding emails",
    "Create the dashboard mockups",
    "Write API documentation",
    "Collect stakeholder feedback",
    "Add unit tests for billing",
    "Translate the settings screen",
    "Plan the rollout",
    "Clean up feature flags",
    "Benchmark search latency",
    "Audit third-party scripts",
    "Prepare the demo",
    "Draft the launch announcement",
    "Estimate cloud costs",
    "Fix flaky export test",
    "Add keyboard navigation",
    "Set up the staging environment",
    "Interview vendors",
    "Update the runbook",
]
DESCRIPTIONS = [
    "See the project brief for context.",
    "Blocked until the spec is approved.",
    "Small change; should take a day.",
    "Pair with design on this one.",
    "Customer-visible: coordinate with support.",
    "Needs a review from security.",
]
COMMENTS = [
    "I can pick this up next week.",
    "Pushed a first version, please take a look.",
    "Is this still needed?",
    "Blocked on the API change.",
    "Looks good to me.",
    "Added screenshots to the ticket.",
    "Moved the deadline after the planning meeting.",
    "Left a few comments on the draft.",
]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    cast = community(40)
    people = [
        {
            "person_id": f"per_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "job_title": fakedata.replaced(rng, lambda r: r.choice(range(6)), p["job_title"]),
        }
        for i, p in enumerate(cast, start=1)
    ]
    emails = [p["email"] for p in people]
    projects, memberships, milestones, tasks, comments = [], [], [], [], []
    for n, (name, description) in enumerate(PROJECTS, start=1):
        status = "archived" if n in (9, 20) else "on_hold" if n in (7, 15) else "active"
        created = now - timedelta(days=rng.randint(40, 200))
        team = rng.sample(emails, rng.randint(4, 8))
        project_id = f"prj_{n:03d}"
        projects.append(
            {
                "project_id": project_id,
                "name": name,
                "description": description,
                "owner_email": team[0],
                "status": status,
                "created_on": created.date().isoformat(),
            }
        )
        for k, email in enumerate(team):
            memberships.append(
                {
                    "membership_id": f"mem_{len(memberships) + 1:04d}",
                    "project_id": project_id,
                    "email": email,
                    "role": "owner" if k == 0 else rng.choice(["maintainer", "contributor", "contributor"]),
                    "joined_at": _iso(created + timedelta(days=rng.randint(0, 20))),
                }
            )
        own_milestones = []
        for k, label in enumerate(["Alpha", "Beta", "Launch"][: rng.randint(2, 3)]):
            due = now + timedelta(days=-30 + 25 * k + rng.randint(-5, 5))
            closed = status == "archived" or (k == 0 and due < now)
            milestone = {
                "milestone_id": f"mls_{len(milestones) + 1:03d}",
                "project_id": project_id,
                "name": label,
                "due_date": due.date().isoformat(),
                "status": "closed" if closed else "open",
            }
            milestones.append(milestone)
            own_milestones.append(milestone)
        for title in rng.sample(TASKS, rng.randint(7, 13)):
            milestone = rng.choice([*own_milestones, None])
            if status == "archived" or (milestone and milestone["status"] == "closed"):
                task_status = "done"
            else:
                task_status = rng.choices(["todo", "in_progress", "review", "done"], [0.4, 0.25, 0.15, 0.2])[0]
            assignee = rng.choice(team) if task_status != "todo" or rng.random() < 0.6 else None
            created_at = created + timedelta(days=rng.randint(1, 30), hours=rng.randint(8, 17))
            due = (
                milestone["due_date"]
                if milestone
                else (None if rng.random() < 0.3 else (now + timedelta(days=rng.randint(-10, 30))).date().isoformat())
            )
            task_id = f"tsk_{len(tasks) + 1:04d}"
            tasks.append(
                {
                    "task_id": task_id,
                    "project_id": project_id,
                    "title": title,
                    "description": rng.choice(DESCRIPTIONS),
                    "status": task_status,
                    "priority": rng.choice(["low", "medium", "medium", "high", "urgent"]),
                    "assignee_email": assignee,
                    "reporter_email": rng.choice(team),
                    "milestone_id": milestone["milestone_id"] if milestone else None,
                    "due_date": due,
                    "created_at": _iso(created_at),
                    "updated_at": _iso(min(created_at + timedelta(days=rng.randint(1, 30)), now)),
                }
            )
            for _ in range(rng.choice([0, 0, 1, 1, 2])):
                comments.append(
                    {
                        "comment_id": f"cmt_{len(comments) + 1:04d}",
                        "task_id": task_id,
                        "author_email": rng.choice(team),
                        "body": rng.choice(COMMENTS),
                        "created_at": _iso(
                            min(created_at + timedelta(days=rng.randint(0, 20), hours=rng.randint(1, 8)), now)
                        ),
                    }
                )
    project_name = {p["project_id"]: p["name"] for p in projects}
    task_of = {t["task_id"]: t for t in tasks}
    for comment in comments:  # comments about the task's real work, each its own text
        task = task_of[comment["task_id"]]
        ws = content.workstream_for(task["title"], project_name[task["project_id"]])
        comment["body"] = content.comment(content.rng_for("task-comment", comment["comment_id"]), ws, task["title"])
    return {
        "people": people,
        "projects": projects,
        "memberships": memberships,
        "milestones": milestones,
        "tasks": tasks,
        "comments": comments,
    }
