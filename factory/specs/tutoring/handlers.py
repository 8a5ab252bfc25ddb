"""Custom behaviour of the tutoring server (copied into servers/tutoring/ by the factory).

Booking and rescheduling move prepaid hours between a package and a session and occupy or free slots
in one step; the spec's rules have already checked ownership, expiry, hours and clashes.
"""

from typing import Any

from envfarm.servers.runtime.database import Database


def _charge(db: Database, package_id: str, hours: float) -> None:
    """Take hours from a package (negative hours refund), keeping its status in step with the balance."""
    db.execute(
        "UPDATE packages SET hours_remaining = hours_remaining - ?, "
        "status = CASE WHEN hours_remaining - ? <= 0 THEN 'exhausted' ELSE 'active' END WHERE package_id = ?",
        (hours, hours, package_id),
    )


def book_session(db: Database, student_id: str, slot_id: str, subject_id: str, package_id: str) -> dict[str, Any]:
    """Create the session in the slot and pay for it from the package."""
    slot = db.require("availability_slots", slot_id)
    hours = slot["duration_minutes"] / 60
    session_id = db.next_id("sessions")
    db.insert(
        "sessions",
        {
            "session_id": session_id,
            "student_id": student_id,
            "tutor_id": slot["tutor_id"],
            "subject_id": subject_id,
            "slot_id": slot_id,
            "package_id": package_id,
            "starts_at": slot["starts_at"],
            "hours": hours,
            "status": "scheduled",
            "tutor_notes": None,
            "cancelled_at": None,
        },
    )
    db.execute("UPDATE availability_slots SET is_booked = 1 WHERE slot_id = ?", (slot_id,))
    _charge(db, package_id, hours)
    return db.require("sessions", session_id)


def reschedule_session(db: Database, session_id: str, slot_id: str) -> dict[str, Any]:
    """Swap slots and settle the difference in length with the session's package."""
    session = db.require("sessions", session_id)
    slot = db.require("availability_slots", slot_id)
    hours = slot["duration_minutes"] / 60
    db.execute("UPDATE availability_slots SET is_booked = 0 WHERE slot_id = ?", (session["slot_id"],))
    db.execute("UPDATE availability_slots SET is_booked = 1 WHERE slot_id = ?", (slot_id,))
    if hours != session["hours"]:
        _charge(db, session["package_id"], hours - session["hours"])
    db.execute(
        "UPDATE sessions SET slot_id = ?, starts_at = ?, hours = ? WHERE session_id = ?",
        (slot_id, slot["starts_at"], hours, session_id),
    )
    return db.require("sessions", session_id)
