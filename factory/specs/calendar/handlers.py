"""Custom behaviour of the calendar server (copied into servers/calendar/ by the factory)."""

from servers.runtime.database import Database

OVERLAP = "julianday(starts_at) < julianday(?) AND julianday(ends_at) > julianday(?)"


def check_room_availability(db: Database, room_id: str, starts_at: str, ends_at: str) -> dict:
    """Confirmed events in the room overlapping the window; the room is available when there are none."""
    conflicts = db.all(
        f"SELECT * FROM events WHERE room_id = ? AND status = 'confirmed' AND {OVERLAP} ORDER BY starts_at",
        (room_id, ends_at, starts_at),
    )
    return {"room_id": room_id, "available": not conflicts, "conflicts": conflicts}


def get_agenda(db: Database, email: str, starts_after: str, starts_before: str) -> dict:
    """Meetings the person organizes or has not declined, so a caller can see when they are busy."""
    events = db.all(
        "SELECT * FROM events WHERE status = 'confirmed'"
        " AND julianday(starts_at) >= julianday(?) AND julianday(starts_at) <= julianday(?)"
        " AND (organizer_email = ? OR event_id IN"
        "      (SELECT event_id FROM invitations WHERE email = ? AND response != 'declined'))"
        " ORDER BY starts_at, event_id",
        (starts_after, starts_before, email, email),
    )
    return {"email": email, "events": events}


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
    return db.require("events", "event_id", event_id, "event_id")
