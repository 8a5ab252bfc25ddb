"""Custom behaviour of the fitness club server: freezing a membership and a member's overview.

The spec's rules have already rejected invalid calls (already frozen, plan without freezes...) when these run.
"""

from typing import Any

from envfarm.servers.runtime.database import Database


def freeze_membership(db: Database, member_id: str, days: int, reason: str) -> dict[str, Any]:
    """Freeze from today for `days` days: cancel what falls inside, push the renewal back by `days`."""
    starts_on = db.scalar("SELECT date(?)", (db.now,))
    ends_on = db.scalar("SELECT date(?, ?)", (starts_on, f"+{days - 1} days"))
    freeze_id = db.next_id("freezes")
    db.insert(
        "freezes",
        {
            "freeze_id": freeze_id,
            "member_id": member_id,
            "starts_on": starts_on,
            "ends_on": ends_on,
            "reason": reason,
            "status": "active",
        },
    )
    booked = db.all(
        "SELECT b.booking_id, b.class_id FROM bookings b JOIN classes c ON c.class_id = b.class_id"
        " WHERE b.member_id = ?"
        " AND b.status = 'booked' AND julianday(c.starts_at) > julianday(?) AND date(c.starts_at) <= ?",
        (member_id, db.now, ends_on),
    )
    for booking in booked:
        db.execute(
            "UPDATE bookings SET status = 'cancelled', cancelled_at = ? WHERE booking_id = ?",
            (db.now, booking["booking_id"]),
        )
        db.execute("UPDATE classes SET booked_count = booked_count - 1 WHERE class_id = ?", (booking["class_id"],))
    cancelled_pt = db.execute(
        "UPDATE pt_sessions SET status = 'cancelled' WHERE member_id = ? AND status = 'scheduled'"
        " AND julianday(starts_at) > julianday(?) AND date(starts_at) <= ?",
        (member_id, db.now, ends_on),
    )
    db.execute(
        "UPDATE members SET status = 'frozen', renews_on = date(renews_on, ?) WHERE member_id = ?",
        (f"+{days} days", member_id),
    )
    return {
        "freeze_id": freeze_id,
        "member_id": member_id,
        "starts_on": starts_on,
        "ends_on": ends_on,
        "renews_on": db.scalar("SELECT renews_on FROM members WHERE member_id = ?", (member_id,)),
        "cancelled_bookings": len(booked),
        "cancelled_pt_sessions": cancelled_pt,
    }


def get_member_overview(db: Database, member_id: str) -> dict[str, Any]:
    """Plan usage for the current Monday-to-Sunday week, and what is coming up."""
    member = db.require("members", member_id)
    plan = db.require("membership_plans", member["plan_id"])
    this_week = db.scalar(
        "SELECT count(*) FROM bookings b JOIN classes c ON c.class_id = b.class_id WHERE b.member_id = ?"
        " AND b.status IN ('booked', 'attended', 'no_show') AND strftime('%Y-%W', c.starts_at) = strftime('%Y-%W', ?)",
        (member_id, db.now),
    )
    upcoming = db.all(
        "SELECT b.* FROM bookings b JOIN classes c ON c.class_id = b.class_id WHERE b.member_id = ?"
        " AND b.status = 'booked' AND julianday(c.starts_at) > julianday(?) ORDER BY c.starts_at",
        (member_id, db.now),
    )
    sessions = db.all(
        "SELECT * FROM pt_sessions WHERE member_id = ? AND status = 'scheduled' AND julianday(starts_at) > julianday(?)"
        " ORDER BY starts_at",
        (member_id, db.now),
    )
    return {
        "member_id": member_id,
        "full_name": member["full_name"],
        "status": member["status"],
        "plan_name": plan["name"],
        "renews_on": member["renews_on"],
        "classes_this_week": this_week,
        "weekly_allowance": plan["classes_per_week"],
        "upcoming_bookings": upcoming,
        "upcoming_pt_sessions": sessions,
    }
