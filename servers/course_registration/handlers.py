"""Custom behaviour of the course_registration server (copied into servers/course_registration/ by the factory).

Seat bookkeeping lives here because it depends on state: a full section puts the student on its waitlist,
and a dropped seat goes to the first waitlisted student, whose position the others move up behind.
"""

from typing import Any

from envfarm.servers.runtime.database import Database

GRADE_POINTS = {"A": 4.0, "B": 3.0, "C": 2.0, "D": 1.0, "F": 0.0}
PASSING = ("A", "B", "C", "D", "P")


def get_academic_record(db: Database, student_id: str) -> dict[str, Any]:
    """Transcript with credits earned and GPA, so an agent can answer standing questions in one call."""
    student = db.require("students", student_id)
    rows = db.all(
        "SELECT g.*, c.credits FROM grades g JOIN courses c ON c.course_id = g.course_id "
        "WHERE g.student_id = ? ORDER BY (SELECT t.rowid FROM terms t WHERE t.term_id = g.term_id), g.rowid",
        (student_id,),
    )
    credits = sum(r["credits"] for r in rows if r["grade"] in PASSING)
    lettered = [r for r in rows if r["grade"] in GRADE_POINTS]
    points = sum(GRADE_POINTS[r["grade"]] * r["credits"] for r in lettered)
    attempted = sum(r["credits"] for r in lettered)
    return {
        "student_id": student_id,
        "full_name": student["full_name"],
        "credits_earned": credits,
        "gpa": round(points / attempted, 2) if attempted else None,
        "grades": [{k: v for k, v in r.items() if k != "credits"} for r in rows],
    }


def enroll_in_section(db: Database, student_id: str, section_id: str) -> dict[str, Any]:
    """Take a seat if one is free, otherwise join the end of the waitlist (the spec's rules ran already)."""
    section = db.require("sections", section_id)
    new_id = db.next_id("enrollments")
    if section["enrolled_count"] < section["capacity"]:
        status, position = "enrolled", None
        db.execute("UPDATE sections SET enrolled_count = enrolled_count + 1 WHERE section_id = ?", (section_id,))
    else:
        last = db.scalar(
            "SELECT max(waitlist_position) FROM enrollments WHERE section_id = ? AND status = 'waitlisted'",
            (section_id,),
        )
        status, position = "waitlisted", (last or 0) + 1
    db.insert(
        "enrollments",
        {
            "enrollment_id": new_id,
            "student_id": student_id,
            "section_id": section_id,
            "status": status,
            "waitlist_position": position,
            "grading_basis": "letter",
            "registered_at": db.now,
            "dropped_at": None,
        },
    )
    return db.require("enrollments", new_id)


def drop_enrollment(db: Database, enrollment_id: str) -> dict[str, Any]:
    """Drop, then give a freed seat to waitlist position 1 and move everyone behind up one place."""
    enrollment = db.require("enrollments", enrollment_id)
    section_id = enrollment["section_id"]
    db.execute(
        "UPDATE enrollments SET status = 'dropped', waitlist_position = NULL, dropped_at = ? WHERE enrollment_id = ?",
        (db.now, enrollment_id),
    )
    if enrollment["status"] == "waitlisted":
        db.execute(
            "UPDATE enrollments SET waitlist_position = waitlist_position - 1 "
            "WHERE section_id = ? AND status = 'waitlisted' AND waitlist_position > ?",
            (section_id, enrollment["waitlist_position"]),
        )
    else:
        promoted = db.one(
            "SELECT enrollment_id FROM enrollments WHERE section_id = ? AND status = 'waitlisted' "
            "ORDER BY waitlist_position LIMIT 1",
            (section_id,),
        )
        if promoted is None:
            db.execute("UPDATE sections SET enrolled_count = enrolled_count - 1 WHERE section_id = ?", (section_id,))
        else:
            db.execute(
                "UPDATE enrollments SET status = 'enrolled', waitlist_position = NULL WHERE enrollment_id = ?",
                (promoted["enrollment_id"],),
            )
            db.execute(
                "UPDATE enrollments SET waitlist_position = waitlist_position - 1 "
                "WHERE section_id = ? AND status = 'waitlisted'",
                (section_id,),
            )
    return db.require("enrollments", enrollment_id)
