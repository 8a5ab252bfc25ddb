"""Seed rows of the newsletter service: 14 lists, 70 subscribers from the shared cast, about 300
subscriptions, 20 templates, 40 campaigns, the sends of every sent campaign, and an unsubscribe
record for every unsubscribed subscription.

Sends go exactly to the list's subscribers who were subscribed when the campaign went out, each
sent campaign's recipient count matches its sends, and one active list has no subscribers at all
(with a draft campaign waiting for it).
"""

import random
from datetime import datetime, timedelta

from envfarm.factory.world.cast import community

LISTS = [
    ("Weekly Digest", "The week's best posts and product news."),
    ("Product Updates", "Release notes and new features."),
    ("Engineering Blog", "Deep dives from the engineering team."),
    ("Community Events", "Meetups, webinars and conferences."),
    ("Customer Newsletter EU", "Monthly newsletter for customers in Europe."),
    ("Customer Newsletter US", "Monthly newsletter for customers in the Americas."),
    ("Partner News", "Updates for integration partners."),
    ("Beta Testers", "Early access programme announcements."),
    ("Careers", "Open roles and life at the company."),
    ("Webinar Invitations", "Invitations to upcoming webinars."),
    ("Design Notes", "Notes from the design team."),
    ("Security Advisories", "Security notices and patches."),
    ("Osaka Launch Waitlist", "People waiting for the Osaka launch."),
    ("Old Announcements", "Retired list of legacy announcements."),
]
EMPTY_LIST, ARCHIVED_LIST = 13, 14
TEMPLATES = [
    ("Digest classic", "digest"),
    ("Digest compact", "digest"),
    ("Digest with hero image", "digest"),
    ("Release notes", "announcement"),
    ("Feature spotlight", "announcement"),
    ("Security notice", "announcement"),
    ("Company news", "announcement"),
    ("Webinar invite", "event"),
    ("Meetup invite", "event"),
    ("Conference recap", "event"),
    ("Event reminder", "event"),
    ("Spring promo", "promo"),
    ("Upgrade offer", "promo"),
    ("Referral programme", "promo"),
    ("Partner spotlight", "announcement"),
    ("Job openings", "announcement"),
    ("Beta invitation", "event"),
    ("Survey request", "promo"),
    ("Year in review", "digest"),
    ("Plain text", "digest"),
]
SUBJECTS = [
    "What's new this week",
    "April product update",
    "How we cut build times in half",
    "Join our spring webinar",
    "Your monthly roundup",
    "New integrations are live",
    "We're hiring in Lisbon",
    "Security patch for v3.1",
    "Meet us at DevDays",
    "Tips for power users",
    "Early access: offline mode",
    "Design notes: the new icons",
]
REASONS = ["Too many emails", "No longer relevant", "Never signed up", "Content not useful"]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    lists = [
        {
            "list_id": f"lst_{n:03d}",
            "name": name,
            "description": description,
            "status": "archived" if n == ARCHIVED_LIST else "active",
            "created_at": _iso(now - timedelta(days=400 - 20 * n)),
        }
        for n, (name, description) in enumerate(LISTS, start=1)
    ]
    subscribers = [
        {
            "subscriber_id": f"sub_{n:04d}",
            "email": p["email"],
            "full_name": p["full_name"],
            "created_at": _iso(now - timedelta(days=rng.randint(150, 380))),
        }
        for n, p in enumerate(community(70), start=1)
    ]
    templates = [
        {
            "template_id": f"tpl_{n:03d}",
            "name": name,
            "category": category,
            "subject_line": f"{name}: {{subject}}",
            "body": f"<h1>{{subject}}</h1><p>{name} layout.</p><p><a href='{{unsubscribe_url}}'>Unsubscribe</a></p>",
            "created_at": _iso(now - timedelta(days=rng.randint(100, 500))),
        }
        for n, (name, category) in enumerate(TEMPLATES, start=1)
    ]
    subscriptions = []
    for subscriber in subscribers:
        joined = datetime.fromisoformat(subscriber["created_at"])
        for lst in rng.sample([x for i, x in enumerate(lists, start=1) if i != EMPTY_LIST], rng.randint(2, 6)):
            subscribed = joined + timedelta(days=rng.randint(0, 30))
            left = rng.random() < 0.15
            subscriptions.append(
                {
                    "subscription_id": f"sbn_{len(subscriptions) + 1:04d}",
                    "list_id": lst["list_id"],
                    "subscriber_id": subscriber["subscriber_id"],
                    "status": "unsubscribed" if left else "subscribed",
                    "source": rng.choice(["signup_form", "signup_form", "import", "event", "manual"]),
                    "subscribed_at": _iso(subscribed),
                    "unsubscribed_at": _iso(now - timedelta(days=rng.randint(1, 60))) if left else None,
                }
            )
    subscriptions.sort(key=lambda s: (s["list_id"], s["subscriber_id"]))
    for n, subscription in enumerate(subscriptions, start=1):
        subscription["subscription_id"] = f"sbn_{n:04d}"

    campaigns, sends = [], []
    plan = ["sent"] * 22 + ["scheduled"] * 6 + ["draft"] * 8 + ["cancelled"] * 4
    for n, status in enumerate(plan, start=1):
        list_number = EMPTY_LIST if n == 30 else rng.choice(list(range(1, 13)))
        lst = lists[list_number - 1]
        sent_at = now - timedelta(days=rng.randint(2, 120), hours=rng.randint(0, 8)) if status == "sent" else None
        scheduled = (
            now + timedelta(days=rng.randint(1, 20), hours=rng.randint(8, 16)) if status == "scheduled" else None
        )
        created = (sent_at or now) - timedelta(days=rng.randint(1, 10))
        campaign_id = f"cmp_{n:03d}"
        recipients = 0
        if sent_at is not None:
            for subscription in subscriptions:
                if subscription["list_id"] != lst["list_id"] or subscription["subscribed_at"] > _iso(sent_at):
                    continue
                if subscription["status"] == "unsubscribed" and subscription["unsubscribed_at"] <= _iso(sent_at):
                    continue
                recipients += 1
                sends.append(
                    {
                        "send_id": f"snd_{len(sends) + 1:05d}",
                        "campaign_id": campaign_id,
                        "subscriber_id": subscription["subscriber_id"],
                        "status": rng.choices(["delivered", "opened", "clicked", "bounced"], [0.45, 0.3, 0.15, 0.1])[0],
                        "sent_at": _iso(sent_at),
                    }
                )
        campaigns.append(
            {
                "campaign_id": campaign_id,
                "list_id": lst["list_id"],
                "template_id": rng.choice(templates)["template_id"],
                "subject": rng.choice(SUBJECTS),
                "status": status,
                "scheduled_for": _iso(scheduled) if scheduled else (_iso(sent_at) if sent_at else None),
                "sent_at": _iso(sent_at) if sent_at else None,
                "recipient_count": recipients,
                "created_at": _iso(created),
            }
        )

    unsubscribes = []
    for subscription in subscriptions:
        if subscription["status"] != "unsubscribed":
            continue
        earlier = [
            c
            for c in campaigns
            if c["list_id"] == subscription["list_id"]
            and c["sent_at"]
            and c["sent_at"] < subscription["unsubscribed_at"]
        ]
        unsubscribes.append(
            {
                "unsubscribe_id": f"uns_{len(unsubscribes) + 1:04d}",
                "subscription_id": subscription["subscription_id"],
                "list_id": subscription["list_id"],
                "subscriber_id": subscription["subscriber_id"],
                "campaign_id": max(earlier, key=lambda c: c["sent_at"])["campaign_id"] if earlier else None,
                "reason": rng.choice(REASONS),
                "created_at": subscription["unsubscribed_at"],
            }
        )
    return {
        "lists": lists,
        "subscribers": subscribers,
        "subscriptions": subscriptions,
        "templates": templates,
        "campaigns": campaigns,
        "sends": sends,
        "unsubscribes": unsubscribes,
    }
