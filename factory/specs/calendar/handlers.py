"""Custom behaviour of the calendar server (copied into servers/calendar/ by the factory)."""

from datetime import UTC, datetime, timedelta
from typing import Any

from envfarm.servers.runtime.database import Database


def check_room_availability(db: Database, room_id: str, starts_at: str, ends_at: str) -> dict:
    """Confirmed events in the room overlapping the window; the room is available when there are none.
    Every booking shows as busy time, but only the principal's own meetings as events (others' are private,
    as on a real calendar's room resource)."""
    blocking = db.all(
        "SELECT *, event_id IN (SELECT event_id FROM events WHERE " + db.visible("events") + ") AS mine"
        " FROM events WHERE room_id = :room AND status = 'confirmed'"
        " AND julianday(starts_at) < julianday(:high) AND julianday(ends_at) > julianday(:low)"
        " ORDER BY starts_at, event_id",
        {"room": room_id, "low": starts_at, "high": ends_at, "principal": db.principal},
    )
    low, high = _parse(starts_at), _parse(ends_at)
    busy = [f"{_iso(max(_parse(e['starts_at']), low))}/{_iso(min(_parse(e['ends_at']), high))}" for e in blocking]
    conflicts = [{k: v for k, v in e.items() if k != "mine"} for e in blocking if e["mine"]]
    return {"room_id": room_id, "available": not blocking, "busy": busy, "conflicts": conflicts}


def get_agenda(db: Database, starts_after: str, starts_before: str) -> dict:
    """The principal's meetings (organized, or not declined), a recurring series once per occurrence in the
    window; other people's agendas are private (get_free_busy shows only when they are busy)."""
    email = str(db.principal)
    return {"email": email, "events": _attending(db, email, starts_after, starts_before, overlapping=False)}


def _attendees(db: Database, organizer_email: str, attendee_emails: list[str]) -> list[str]:
    """The distinct emails of the list, without the organizer (each is a known person: the argument check
    refuses unknown ones before the handler runs)."""
    emails: list[str] = []
    for raw in attendee_emails:
        email = raw.strip().lower()
        if email and email != organizer_email and email not in emails:
            emails.append(email)
    if not emails:
        db.reject("attendee_emails names nobody besides the organizer; give at least one invitee's email.")
    return emails


def schedule_meeting(
    db: Database,
    title: str,
    starts_at: str,
    ends_at: str,
    attendee_emails: list[str],
    room_id: str | None = None,
    description: str | None = None,
) -> dict:
    """Create the event on the signed-in organizer's personal calendar and one pending invitation per attendee."""
    organizer_email = str(db.principal)
    attendees = _attendees(db, organizer_email, attendee_emails)
    if room_id is not None:
        capacity = db.scalar("SELECT capacity FROM rooms WHERE room_id = ?", (room_id,))
        if len(attendees) + 1 > capacity:
            db.reject(
                f"Room {room_id} seats {capacity}, but the meeting has {len(attendees) + 1} people with the organizer; "
                "find_rooms with min_capacity lists bigger rooms."
            )
    calendar_id = db.scalar(
        "SELECT calendar_id FROM calendars WHERE owner_email = ? AND kind = 'personal'", (organizer_email,)
    )
    event_id = db.next_id("events")
    db.insert(
        "events",
        {
            "event_id": event_id,
            "calendar_id": calendar_id,
            "title": title,
            "description": description or "",
            "starts_at": starts_at,
            "ends_at": ends_at,
            "room_id": room_id,
            "organizer_email": organizer_email,
            "status": "confirmed",
            "created_at": db.now,
        },
    )
    for email in attendees:
        db.insert(
            "invitations",
            {"invitation_id": db.next_id("invitations"), "event_id": event_id, "email": email, "response": "pending"},
        )
    return db.require("events", event_id)


# Recurring series: an event with a recurrence repeats from its first occurrence (starts_at/ends_at), like
# an RRULE of FREQ (daily, weekdays = daily on Monday to Friday, weekly, monthly), INTERVAL, COUNT and UNTIL.


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _shift(start: datetime, freq: str, steps: int) -> datetime | None:
    """The start `steps` periods after the first; None for a month lacking the day (skipped, as RRULE does)."""
    if freq == "monthly":
        month = start.month - 1 + steps
        try:
            return start.replace(year=start.year + month // 12, month=month % 12 + 1)
        except ValueError:
            return None
    return start + timedelta(days=steps * (7 if freq == "weekly" else 1))


def occurrence_starts(event: dict[str, Any], window_end: datetime) -> list[datetime]:
    """Every occurrence start of the event up to window_end: one for a single event."""
    first = _parse(event["starts_at"])
    freq = event.get("recurrence")
    if freq is None:
        return [first] if first < window_end else []
    until = event.get("recurrence_until")
    starts: list[datetime] = []
    step = 0
    while True:  # every caller bounds the window, and occurrence starts only grow
        moment = _shift(first, freq, step * (1 if freq == "weekdays" else event["recurrence_interval"]))
        step += 1
        if moment is None:
            continue
        if moment >= window_end or (until is not None and moment.date().isoformat() > until):
            break
        if freq == "weekdays" and moment.weekday() >= 5:
            continue
        starts.append(moment)
        if event.get("recurrence_count") is not None and len(starts) >= event["recurrence_count"]:
            break
    return starts


def occurrences(db: Database, event: dict[str, Any], starts_after: str, starts_before: str) -> list[dict[str, Any]]:
    """The event once per occurrence starting in [starts_after, starts_before], times moved to it; cancelled
    occurrences of a series are left out."""
    low, high = _parse(starts_after), _parse(starts_before)
    length = _parse(event["ends_at"]) - _parse(event["starts_at"])
    cancelled = {
        row["occurrence_start"]
        for row in db.all("SELECT occurrence_start FROM event_exceptions WHERE event_id = ?", (event["event_id"],))
    }
    return [
        {**event, "starts_at": _iso(start), "ends_at": _iso(start + length)}
        for start in occurrence_starts(event, high + timedelta(seconds=1))
        if low <= start <= high and _iso(start) not in cancelled
    ]


def _attending(
    db: Database, email: str, starts_after: str, starts_before: str, overlapping: bool
) -> list[dict[str, Any]]:
    """The person's confirmed meetings (organized, or invited and not declined) starting in the window; with
    overlapping, also those that started earlier and still run at its start (a meeting may last days)."""
    candidates = db.all(
        "SELECT * FROM events WHERE status = 'confirmed' AND julianday(starts_at) <= julianday(?)"
        " AND (organizer_email = ? OR event_id IN"
        "      (SELECT event_id FROM invitations WHERE email = ? AND response != 'declined'))",
        (starts_before, email, email),
    )
    found: list[dict[str, Any]] = []
    for event in candidates:
        after = starts_after
        if overlapping:  # an occurrence overlaps the window when it starts less than its length before it
            after = _iso(_parse(starts_after) - (_parse(event["ends_at"]) - _parse(event["starts_at"])))
        found.extend(occurrences(db, event, after, starts_before))
    return sorted(found, key=lambda e: (e["starts_at"], e["ends_at"], e["event_id"]))  # ids only break full ties


def create_recurring_event(
    db: Database,
    calendar_id: str,
    title: str,
    starts_at: str,
    ends_at: str,
    recurrence: str,
    interval: int,
    count: int | None = None,
    until: str | None = None,
    attendee_emails: list[str] | None = None,
    description: str | None = None,
) -> dict:
    """The series is one event row (its first occurrence) with the rule, plus one invitation per attendee."""
    organizer_email = str(db.principal)
    attendees = [e for e in dict.fromkeys(a.strip().lower() for a in attendee_emails or []) if e != organizer_email]
    event_id = db.next_id("events")
    db.insert(
        "events",
        {
            "event_id": event_id,
            "calendar_id": calendar_id,
            "title": title,
            "description": description or "",
            "starts_at": starts_at,
            "ends_at": ends_at,
            "room_id": None,
            "organizer_email": organizer_email,
            "status": "confirmed",
            "created_at": db.now,
            "recurrence": recurrence,
            "recurrence_interval": interval,
            "recurrence_count": count,
            "recurrence_until": until,
        },
    )
    for email in attendees:
        db.insert(
            "invitations",
            {"invitation_id": db.next_id("invitations"), "event_id": event_id, "email": email, "response": "pending"},
        )
    return db.require("events", event_id)


def list_occurrences(db: Database, event_id: str, starts_after: str, starts_before: str) -> dict:
    """The dates a series meets in the window, and those cancelled one by one."""
    event = db.require("events", event_id)
    found = occurrences(db, event, starts_after, starts_before)
    cancelled = db.all(
        "SELECT occurrence_start FROM event_exceptions WHERE event_id = ?"
        " AND julianday(occurrence_start) BETWEEN julianday(?) AND julianday(?) ORDER BY occurrence_start",
        (event_id, starts_after, starts_before),
    )
    return {
        "event_id": event_id,
        "recurrence": event["recurrence"],
        "occurrences": found,
        "cancelled_starts": [row["occurrence_start"] for row in cancelled],
    }


def cancel_occurrence(db: Database, event_id: str, occurrence_start: str, reason: str | None = None) -> dict:
    """Cancel one meeting of a series; the others stay."""
    event = db.require("events", event_id)
    if event["status"] == "cancelled":
        db.reject(f"Series {event_id} is cancelled as a whole already.")
    moment = _parse(occurrence_start)
    if moment not in occurrence_starts(event, moment + timedelta(seconds=1)):
        db.reject(
            f"Series {event_id} does not meet at {occurrence_start}; list_occurrences gives its exact start times."
        )
    exception_id = db.next_id("event_exceptions")
    db.insert(
        "event_exceptions",
        {
            "exception_id": exception_id,
            "event_id": event_id,
            "occurrence_start": _iso(moment),
            "status": "cancelled",
            "reason": reason,
            "created_at": db.now,
        },
    )
    return db.require("event_exceptions", exception_id)


def get_free_busy(db: Database, emails: list[str], starts_after: str, starts_before: str, min_minutes: int) -> dict:
    """Each person's busy times in the window (recurring meetings expanded) and the gaps when all are free."""
    people = list(dict.fromkeys(e.strip().lower() for e in emails))
    low, high = _parse(starts_after), _parse(starts_before)
    busy: dict[str, list[list[str]]] = {}
    spans: list[tuple[datetime, datetime]] = []
    for email in people:
        meetings = _attending(db, email, starts_after, starts_before, overlapping=True)
        intervals = []
        for meeting in meetings:
            start, end = max(_parse(meeting["starts_at"]), low), min(_parse(meeting["ends_at"]), high)
            if start < end:
                intervals.append([_iso(start), _iso(end)])
                spans.append((start, end))
        busy[email] = intervals
    free: list[str] = []
    cursor = low
    for start, end in sorted(spans):
        if (start - cursor).total_seconds() >= min_minutes * 60:
            free.append(f"{_iso(cursor)}/{_iso(start)}")
        cursor = max(cursor, end)
    if (high - cursor).total_seconds() >= min_minutes * 60:
        free.append(f"{_iso(cursor)}/{_iso(high)}")
    return {"emails": people, "busy": busy, "free_slots": free}
