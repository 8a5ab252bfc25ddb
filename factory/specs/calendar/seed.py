"""Seed rows of the calendar: 40 people from the shared cast, 20 rooms, 46 calendars, 96 events,
about 300 invitations.

Events span ten days before the frozen clock to three weeks after it. Confirmed events never share
a room at overlapping times, and a room always seats the organizer plus every invitee who has not
declined: the seed obeys the rules the tools enforce.
"""

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from envfarm.factory import fakedata
from envfarm.factory.world import content
from envfarm.factory.world.cast import community

DEPARTMENTS = ["engineering", "design", "finance", "marketing", "sales", "operations"]
TITLES = {
    "engineering": ["Software Engineer", "Senior Engineer", "Engineering Manager", "SRE"],
    "design": ["Product Designer", "UX Researcher", "Design Lead"],
    "finance": ["Financial Analyst", "Controller", "Finance Manager"],
    "marketing": ["Content Strategist", "Marketing Manager", "Growth Analyst"],
    "sales": ["Account Executive", "Sales Engineer", "Sales Director"],
    "operations": ["Operations Manager", "Office Coordinator", "IT Administrator"],
}
ROOMS = [
    ("Harbor", 1, 8, True),
    ("Maple", 1, 4, False),
    ("Summit", 5, 20, True),
    ("Cedar", 2, 6, True),
    ("Atlas", 3, 12, True),
    ("Orion", 3, 2, False),
    ("Willow", 2, 4, True),
    ("Granite", 4, 10, True),
    ("Lagoon", 4, 6, False),
    ("Aspen", 2, 8, True),
    ("Beacon", 5, 30, True),
    ("Canyon", 3, 4, True),
    ("Delta", 1, 3, False),
    ("Ember", 4, 6, True),
    ("Fjord", 5, 16, True),
    ("Glacier", 2, 2, True),
    ("Horizon", 3, 10, True),
    ("Juniper", 1, 6, True),
    ("Kestrel", 4, 3, False),
    ("Lumen", 5, 12, True),
]
MEETINGS = [
    ("Sprint planning", "Plan the next two-week sprint and agree on scope."),
    ("Design review", "Walk through the latest mockups and collect feedback."),
    ("Product roadmap sync", "Align on priorities for the coming quarter."),
    ("Hiring debrief", "Discuss candidate interviews and make a decision."),
    ("Customer call: Bluepeak", "Quarterly check-in with the Bluepeak account team."),
    ("Vendor demo: Copperline", "Copperline demos their analytics platform."),
    ("Team retrospective", "What went well, what did not, what we change."),
    ("Architecture review", "Review the proposed service split and data flows."),
    ("Campaign kickoff", "Kick off the spring marketing campaign."),
    ("Security awareness training", "Mandatory yearly security training."),
    ("New hire onboarding", "Welcome session for this month's new hires."),
    ("Quarterly business review", "Results of the last quarter and the outlook."),
    ("Data pipeline walkthrough", "How events flow from the app into the warehouse."),
    ("Pricing workshop", "Workshop on the new pricing tiers."),
    ("Release go/no-go", "Decide whether the release ships this week."),
    ("Office move planning", "Logistics for the move to the new floor."),
    ("Brown bag: accessibility", "Lunch talk on accessible design."),
    ("Partner sync: Greenfield", "Monthly sync with the Greenfield partnership team."),
    ("Budget forecast check-in", "Check spend against the forecast."),
    ("Incident postmortem", "Blameless review of last week's outage."),
]
CANCEL_REASONS = ["Organizer is out sick", "Moved to next week", "No agenda items", "Conflicts with the all-hands"]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _overlaps(busy: list[tuple[datetime, datetime]], start: datetime, end: datetime) -> bool:
    return any(s < end and e > start for s, e in busy)


def _local(day: datetime, hour: float, zone: str) -> datetime:
    """`hour` o'clock on `day` in time zone `zone`, as UTC."""
    local = datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(zone)) + timedelta(hours=hour)
    return local.astimezone(UTC)


def _working(start: datetime, end: datetime, zone: str) -> bool:
    """Whether [start, end) is within 08:00-18:00 of a weekday in `zone`."""
    first, last = start.astimezone(ZoneInfo(zone)), end.astimezone(ZoneInfo(zone))
    return (
        first.weekday() < 5 and first.hour >= 8 and (last.hour, last.minute) <= (18, 0) and first.date() == last.date()
    )


def _recurring(
    cast: list[dict],
    people: list[dict],
    calendars: list[dict],
    team_calendar: dict[str, str],
    days: list[datetime],
    now: datetime,
    events: list[dict],
    invitations: list[dict],
) -> None:
    """The meetings that fill a real work week: each department's weekly sync and each manager's weekly
    1:1 with every report, at a business hour of the organizer's time zone, on video (no room), never
    double-booking anyone. Appended after the rows the spec examples name."""
    by_id = {e["event_id"]: e for e in events}
    busy: dict[str, list[tuple[datetime, datetime]]] = {}
    for event in events:
        if event["status"] == "confirmed":
            span = (datetime.fromisoformat(event["starts_at"]), datetime.fromisoformat(event["ends_at"]))
            busy.setdefault(event["organizer_email"], []).append(span)
    for invitation in invitations:
        event = by_id[invitation["event_id"]]
        if event["status"] == "confirmed" and invitation["response"] != "declined":
            span = (datetime.fromisoformat(event["starts_at"]), datetime.fromisoformat(event["ends_at"]))
            busy.setdefault(invitation["email"], []).append(span)
    series: list[tuple[str, str, str, dict, list[dict], int, float, int]] = []
    for department, calendar_id in team_calendar.items():
        members = [p for p in cast if p["department"] == department]
        series.append(
            (
                f"{department.capitalize()} weekly sync",
                f"Weekly sync of the {department} team.",
                calendar_id,
                members[0],
                members[1:],
                len(series) % 5,
                10.0,
                45,
            )
        )
    for person in cast:
        if person["manager_index"] is None:
            continue
        manager = cast[person["manager_index"]]
        calendar_id = next(
            c["calendar_id"] for c in calendars if c["owner_email"] == manager["email"] and c["kind"] == "personal"
        )
        title = f"1:1 {manager['first_name']} / {person['first_name']}"
        series.append((title, "Weekly one-on-one.", calendar_id, manager, [person], person["index"] % 5, 11.0, 30))
    for title, description, calendar_id, organizer, guests, weekday, hour, minutes in series:
        attendees = [organizer, *guests]
        for day in (d for d in days if d.weekday() == weekday):
            # the organizer's preferred hour, else the first half hour that is working time for everyone
            options = [_local(day, hour + k / 2, organizer["time_zone"]) for k in range(-4, 16)]
            options = sorted(options, key=lambda s: abs((s - options[4]).total_seconds()))
            for start in options:
                end = start + timedelta(minutes=minutes)
                if all(_working(start, end, p["time_zone"]) for p in attendees) and not any(
                    _overlaps(busy.get(p["email"], []), start, end) for p in attendees
                ):
                    break
            else:
                continue
            event_id = f"evt_{len(events) + 1:04d}"
            events.append(
                {
                    "event_id": event_id,
                    "calendar_id": calendar_id,
                    "title": title,
                    "description": description,
                    "starts_at": _iso(start),
                    "ends_at": _iso(end),
                    "room_id": None,
                    "organizer_email": organizer["email"],
                    "status": "confirmed",
                    "cancelled_by": None,
                    "cancel_reason": None,
                    "created_at": _iso(min(days[0] - timedelta(days=14), now)),
                }
            )
            for p in [organizer, *guests]:
                busy.setdefault(p["email"], []).append((start, end))
            for guest in guests:
                rng = random.Random(f"{event_id}/{guest['email']}")
                response = "accepted" if end <= now or rng.random() < 0.7 else "pending"
                invitations.append(
                    {
                        "invitation_id": f"inv_{len(invitations) + 1:04d}",
                        "event_id": event_id,
                        "email": guest["email"],
                        "response": response,
                        "responded_at": None if response == "pending" else _iso(min(start - timedelta(days=10), now)),
                    }
                )


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    cast = community(40)
    people = []
    for i, person in enumerate(cast, start=1):
        department = person["department"]
        people.append(
            {
                "person_id": f"per_{i:04d}",
                "full_name": person["full_name"],
                "email": person["email"],
                "department": department,
                "job_title": fakedata.replaced(rng, lambda r, d=department: r.choice(TITLES[d]), person["job_title"]),
            }
        )
    rooms = [
        {"room_id": f"room_{i:02d}", "name": name, "floor": floor, "capacity": capacity, "has_video": video}
        for i, (name, floor, capacity, video) in enumerate(ROOMS, start=1)
    ]
    calendars = [
        {
            "calendar_id": f"cal_{i:03d}",
            "name": p["full_name"],
            "owner_email": p["email"],
            "kind": "personal",
            "description": f"{p['full_name']}'s work calendar",
        }
        for i, p in enumerate(people, start=1)
    ]
    team_calendar = {}
    for department in DEPARTMENTS:
        lead = next(p for p in people if p["department"] == department)
        calendar_id = f"cal_{len(calendars) + 1:03d}"
        team_calendar[department] = calendar_id
        calendars.append(
            {
                "calendar_id": calendar_id,
                "name": f"{department.capitalize()} team",
                "owner_email": lead["email"],
                "kind": "team",
                "description": f"Shared calendar of the {department} team; anyone may add events",
            }
        )

    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    days = [midnight + timedelta(days=d) for d in range(-10, 22) if (midnight + timedelta(days=d)).weekday() < 5]
    room_busy: dict[str, list[tuple[datetime, datetime]]] = {r["room_id"]: [] for r in rooms}
    events: list[dict] = []
    invitations: list[dict] = []
    for n in range(96):
        organizer = rng.choice(people)
        title, description = MEETINGS[n % len(MEETINGS)] if n < 60 else ("1:1", "Weekly one-on-one.")
        guests = rng.sample([p for p in people if p is not organizer], 1 if title == "1:1" else rng.randint(2, 7))
        if title == "1:1":
            title = f"1:1 {organizer['full_name'].split()[0]} / {guests[0]['full_name'].split()[0]}"
        start = rng.choice(days) + timedelta(hours=rng.choice([9, 9.5, 10, 11, 13, 14, 14.5, 15, 16]))
        end = start + timedelta(minutes=rng.choice([30, 45, 60, 60, 90]))
        is_past = end <= now
        cancelled = n % 12 == 5
        room_id = None
        if rng.random() < 0.7:
            fitting = [r for r in rooms if r["capacity"] >= len(guests) + 1]
            free = [r for r in fitting if cancelled or not _overlaps(room_busy[r["room_id"]], start, end)]
            if free:
                room = min(free, key=lambda r: (r["capacity"], rng.random()))
                room_id = room["room_id"]
                if not cancelled:
                    room_busy[room_id].append((start, end))
        use_team = rng.random() < 0.2
        calendar_id = team_calendar[organizer["department"]] if use_team else f"cal_{people.index(organizer) + 1:03d}"
        created = min(start - timedelta(days=rng.randint(2, 12)), now - timedelta(hours=rng.randint(1, 48)))
        event_id = f"evt_{n + 1:04d}"
        events.append(
            {
                "event_id": event_id,
                "calendar_id": calendar_id,
                "title": title,
                "description": description,
                "starts_at": _iso(start),
                "ends_at": _iso(end),
                "room_id": room_id,
                "organizer_email": organizer["email"],
                "status": "cancelled" if cancelled else "confirmed",
                "cancelled_by": organizer["email"] if cancelled else None,
                "cancel_reason": rng.choice(CANCEL_REASONS) if cancelled else None,
                "created_at": _iso(created),
            }
        )
        for guest in guests:
            weights = [0.1, 0.7, 0.15, 0.05] if is_past else [0.45, 0.35, 0.1, 0.1]
            response = rng.choices(["pending", "accepted", "declined", "tentative"], weights)[0]
            responded = created + timedelta(hours=rng.randint(1, 30))
            invitations.append(
                {
                    "invitation_id": f"inv_{len(invitations) + 1:04d}",
                    "event_id": event_id,
                    "email": guest["email"],
                    "response": response,
                    "responded_at": None if response == "pending" else _iso(min(responded, now)),
                }
            )
    _recurring(cast, people, calendars, team_calendar, days, now, events, invitations)
    for event in events:  # a meeting about a workstream points at the document that holds its figures
        ws = content.matching_workstream(event["title"])
        if ws is not None and not event["title"].startswith("1:1"):
            event["description"] = f"{event['description']} {content.agenda_note(ws)}"
    exceptions = _series(people, team_calendar, events, invitations)
    return {
        "people": people,
        "rooms": rooms,
        "calendars": calendars,
        "events": events,
        "invitations": invitations,
        "event_exceptions": exceptions,
    }


def _series(
    people: list[dict], team_calendar: dict[str, str], events: list[dict], invitations: list[dict]
) -> list[dict]:
    """The sales team's weekly pipeline review, stored as one recurring series (12 Mondays from 30 March,
    its head organizing, the team accepted), one Monday cancelled for the kickoff offsite."""
    sales = [p for p in people if p["department"] == "sales"]
    head = sales[0]
    event_id = f"evt_{len(events) + 1:04d}"
    events.append(
        {
            "event_id": event_id,
            "calendar_id": team_calendar["sales"],
            "title": "Sales pipeline review",
            "description": "Weekly review of open deals and the forecast.",
            "starts_at": "2026-03-30T15:00:00Z",
            "ends_at": "2026-03-30T15:45:00Z",
            "room_id": None,
            "organizer_email": head["email"],
            "status": "confirmed",
            "cancelled_by": None,
            "cancel_reason": None,
            "created_at": "2026-03-23T10:00:00Z",
            "recurrence": "weekly",
            "recurrence_interval": 1,
            "recurrence_count": 12,
            "recurrence_until": None,
        }
    )
    for person in sales[1:]:
        invitations.append(
            {
                "invitation_id": f"inv_{len(invitations) + 1:04d}",
                "event_id": event_id,
                "email": person["email"],
                "response": "accepted",
                "responded_at": "2026-03-24T09:00:00Z",
            }
        )
    return [
        {
            "exception_id": "exc_0001",
            "event_id": event_id,
            "occurrence_start": "2026-04-20T15:00:00Z",
            "status": "cancelled",
            "reason": "Sales kickoff offsite",
            "created_at": "2026-04-08T12:00:00Z",
        }
    ]
