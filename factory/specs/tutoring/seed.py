"""Seed rows of tutoring: 45 students (the farm's shared cast), 20 tutors, 20 subjects, the subjects each
tutor teaches, four weeks of availability slots (two past, two ahead), packages of prepaid hours,
sessions in every state and feedback on completed sessions.

Hours add up: an active or exhausted package's hours_remaining is its hours_purchased minus the hours of
its sessions that were not cancelled (expired packages were used before the four weeks kept here); a slot is
booked exactly when a scheduled, completed or no-show session holds it;
a tutor's rating is the average of their feedback. The clock is Monday 2026-05-04 08:00 UTC, so some
sessions of the last few days are still waiting to be marked completed.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

SUBJECTS = [
    ("Pre-Algebra", "middle_school"),
    ("Reading Comprehension", "middle_school"),
    ("Spanish I", "middle_school"),
    ("Algebra I", "high_school"),
    ("Geometry", "high_school"),
    ("Algebra II", "high_school"),
    ("Precalculus", "high_school"),
    ("AP Calculus", "high_school"),
    ("Biology", "high_school"),
    ("Chemistry", "high_school"),
    ("Physics", "high_school"),
    ("Essay Writing", "high_school"),
    ("SAT Math Prep", "high_school"),
    ("Intro to Python", "high_school"),
    ("Statistics", "university"),
    ("Linear Algebra", "university"),
    ("Organic Chemistry", "university"),
    ("Microeconomics", "university"),
    ("French I", "middle_school"),
    ("World History", "high_school"),
]
HEADLINES = [
    "Former high school math teacher",
    "PhD student in chemistry",
    "Patient coach for exam anxiety",
    "Engineer who loves teaching physics",
    "Published writer and writing coach",
    "Bilingual language tutor",
    "Test prep specialist",
    "Software developer and coding mentor",
    "Biology lab instructor",
    "Economics graduate and debate coach",
    "Retired university lecturer",
    "Math olympiad trainer",
    "Middle school reading specialist",
    "Statistics consultant",
    "Medical student who tutors biology",
    "Architect with a knack for geometry",
    "Former AP exam grader",
    "French teacher from Lyon",
    "History buff and essay coach",
    "Data analyst who teaches Python",
]
NOTES = [
    "Reviewed homework and corrected common mistakes; practise the odd-numbered exercises.",
    "Worked through two past exam papers; timing is improving.",
    "Covered the core definitions and did guided examples; next time independent practice.",
    "Focused on problem setup; the student should re-read chapter notes before next session.",
    "Essay outline finished; first draft due before the next session.",
]
COMMENTS = [
    "Very clear explanations, I finally get it.",
    "Helpful session, a bit rushed at the end.",
    "Great practice problems.",
    "Patient and encouraging.",
    "Good session but started late.",
    "Exactly what I needed before my exam.",
    "Could use more examples.",
]
TIMES = [(15, 0), (16, 30), (18, 0)]
PRICE_PER_HOUR = {5: 50, 10: 45, 20: 40}


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def use_up_a_package(
    sessions: list[dict], slots: list[dict], packages: list[dict], booked_times: dict, now: datetime
) -> None:
    """Spend the rest of one package on past sessions, so that one of its upcoming one-hour sessions cannot
    be moved to a longer slot of its tutor (the package has no hours left to pay the difference)."""
    free_long = {
        s["tutor_id"] for s in slots if not s["is_booked"] and s["duration_minutes"] == 90 and s["starts_at"] > iso(now)
    }
    by_id = {p["package_id"]: p for p in packages}
    candidates = [
        x
        for x in sessions
        if x["status"] == "scheduled"
        and x["hours"] == 1
        and x["starts_at"] > iso(now)
        and x["tutor_id"] in free_long
        and by_id[x["package_id"]]["hours_remaining"] % 1 == 0
    ]
    session = min(candidates, key=lambda x: (by_id[x["package_id"]]["hours_remaining"], x["starts_at"]))
    package = by_id[session["package_id"]]
    for slot in slots:
        if package["hours_remaining"] == 0:
            break
        start = datetime.fromisoformat(slot["starts_at"])
        end = start + timedelta(hours=1)
        if (
            slot["is_booked"]
            or slot["duration_minutes"] != 60
            or start >= now - timedelta(days=3)
            or slot["starts_at"] < package["purchased_at"]
            or any(s < end and start < e for s, e in booked_times[package["student_id"]])
        ):
            continue
        slot["is_booked"] = True
        booked_times[package["student_id"]].append((start, end))
        package["hours_remaining"] -= 1
        sessions.append(
            {
                "session_id": "",
                "student_id": package["student_id"],
                "tutor_id": slot["tutor_id"],
                "subject_id": next(x["subject_id"] for x in sessions if x["tutor_id"] == slot["tutor_id"]),
                "slot_id": slot["slot_id"],
                "package_id": package["package_id"],
                "starts_at": slot["starts_at"],
                "hours": 1.0,
                "status": "completed",
                "tutor_notes": NOTES[0],
                "cancelled_at": None,
            }
        )
    package["status"] = "exhausted"


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    people = community(45)
    students = [
        {
            "student_id": f"stu_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "phone": p["phone"],
            "school_level": rng.choice(["middle_school", "high_school", "high_school", "university"]),
        }
        for i, p in enumerate(people, start=1)
    ]
    cast = {p["full_name"] for p in people}
    tutor_names = [n for n in fakedata.unique_people(rng, 60) if n not in cast][:20]
    tutors = [
        {
            "tutor_id": f"tut_{i:03d}",
            "full_name": name,
            "email": fakedata.email(name, "brightpath.example"),
            "headline": HEADLINES[i - 1],
            "rating": None,
            "status": "on_leave" if i == 14 else "active",
        }
        for i, name in enumerate(tutor_names, start=1)
    ]
    subjects = [
        {"subject_id": f"sub_{i:03d}", "name": name, "level": level}
        for i, (name, level) in enumerate(SUBJECTS, start=1)
    ]
    tutor_subjects = []
    teaches: dict[str, list[str]] = {}
    for tutor in tutors:
        picked = rng.sample(subjects, rng.choice([2, 3, 3, 4]))
        teaches[tutor["tutor_id"]] = [s["subject_id"] for s in picked]
        for subject in picked:
            tutor_subjects.append(
                {
                    "tutor_subject_id": f"tsb_{len(tutor_subjects) + 1:04d}",
                    "tutor_id": tutor["tutor_id"],
                    "subject_id": subject["subject_id"],
                }
            )
    # Every subject has at least one teacher.
    for subject in subjects:
        if not any(subject["subject_id"] in s for s in teaches.values()):
            tutor = tutors[int(subject["subject_id"][-3:]) % 13]
            teaches[tutor["tutor_id"]].append(subject["subject_id"])
            tutor_subjects.append(
                {
                    "tutor_subject_id": f"tsb_{len(tutor_subjects) + 1:04d}",
                    "tutor_id": tutor["tutor_id"],
                    "subject_id": subject["subject_id"],
                }
            )

    # Slots: two weeks back and two ahead, Monday to Saturday, on three of those days per tutor and week.
    monday = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=now.weekday())
    slots = []
    for tutor in tutors:
        for week in (-2, -1, 0, 1):
            if tutor["status"] == "on_leave" and week >= 0:
                continue
            for weekday in sorted(rng.sample(range(6), 3)):
                for hour, minute in rng.sample(TIMES, 2):
                    start = monday + timedelta(days=7 * week + weekday, hours=hour, minutes=minute)
                    slots.append(
                        {
                            "slot_id": "",
                            "tutor_id": tutor["tutor_id"],
                            "starts_at": iso(start),
                            "duration_minutes": rng.choice([60, 60, 90]),
                            "mode": rng.choice(["online", "online", "in_person"]),
                            "is_booked": False,
                        }
                    )
    slots.sort(key=lambda s: (s["starts_at"], s["tutor_id"]))
    for n, slot in enumerate(slots, start=1):
        slot["slot_id"] = f"slot_{n:04d}"

    # Packages: a current one per student, some with an older expired or exhausted one before it.
    packages = []

    def add_package(student_id: str, hours: int, purchased: datetime, status: str) -> dict:
        package = {
            "package_id": f"pkg_{len(packages) + 1:04d}",
            "student_id": student_id,
            "hours_purchased": hours,
            "hours_remaining": float(hours),
            "price": float(hours * PRICE_PER_HOUR[hours]),
            "purchased_at": iso(purchased),
            "expires_on": (purchased + timedelta(days=180)).date().isoformat(),
            "status": status,
        }
        packages.append(package)
        return package

    current: dict[str, list[dict]] = {}
    for student in students:
        sid = student["student_id"]
        if rng.random() < 0.35:
            old = add_package(sid, 5, now - timedelta(days=rng.randrange(200, 300)), "expired")
            old["hours_remaining"] = float(rng.choice([0.5, 1, 2, 3]))
        hours = rng.choice([5, 5, 10, 10, 20])
        current[sid] = [add_package(sid, hours, now - timedelta(days=rng.randrange(20, 120)), "active")]
        if rng.random() < 0.2:
            current[sid].append(add_package(sid, 5, now - timedelta(days=rng.randrange(1, 15)), "active"))

    # Sessions: most past slots were used, about a third of future ones are booked.
    sessions = []
    booked_times: dict[str, list[tuple[datetime, datetime]]] = {s["student_id"]: [] for s in students}
    for slot in slots:
        start = datetime.fromisoformat(slot["starts_at"])
        past = start < now
        if rng.random() > (0.6 if past else 0.35):
            continue
        hours = slot["duration_minutes"] / 60
        end = start + timedelta(hours=hours)
        tutor_subjects_here = teaches[slot["tutor_id"]]
        for student in rng.sample(students, len(students)):
            sid = student["student_id"]
            package = next(
                (p for p in current[sid] if p["hours_remaining"] >= hours and p["purchased_at"] < slot["starts_at"]),
                None,
            )
            clash = any(s < end and start < e for s, e in booked_times[sid])
            if package is not None and not clash:
                break
        else:
            continue
        if past:
            status = rng.choices(["completed", "no_show", "cancelled"], weights=[85, 7, 8])[0]
            if status == "completed" and now - start < timedelta(days=3) and rng.random() < 0.5:
                status = "scheduled"  # the tutor has not marked it completed yet
        else:
            status = "cancelled" if rng.random() < 0.1 else "scheduled"
        sessions.append(
            {
                "session_id": "",
                "student_id": sid,
                "tutor_id": slot["tutor_id"],
                "subject_id": rng.choice(tutor_subjects_here),
                "slot_id": slot["slot_id"],
                "package_id": package["package_id"],
                "starts_at": slot["starts_at"],
                "hours": hours,
                "status": status,
                "tutor_notes": rng.choice(NOTES) if status == "completed" else None,
                "cancelled_at": iso(min(start - timedelta(days=rng.randrange(1, 4)), now - timedelta(hours=5)))
                if status == "cancelled"
                else None,
            }
        )
        if status != "cancelled":
            slot["is_booked"] = True
            booked_times[sid].append((start, end))
            package["hours_remaining"] -= hours
            if package["hours_remaining"] == 0:
                package["status"] = "exhausted"
    use_up_a_package(sessions, slots, packages, booked_times, now)
    sessions.sort(key=lambda s: (s["starts_at"], s["tutor_id"]))
    for n, session in enumerate(sessions, start=1):
        session["session_id"] = f"ses_{n:04d}"

    feedback = []
    for session in sessions:
        if session["status"] != "completed" or rng.random() > 0.6:
            continue
        start = datetime.fromisoformat(session["starts_at"])
        submitted = min(start + timedelta(hours=session["hours"] + rng.randrange(1, 30)), now - timedelta(hours=1))
        feedback.append(
            {
                "feedback_id": f"fb_{len(feedback) + 1:04d}",
                "session_id": session["session_id"],
                "tutor_id": session["tutor_id"],
                "rating": rng.choices([5, 4, 3, 2, 1], weights=[45, 30, 15, 6, 4])[0],
                "comment": rng.choice(COMMENTS),
                "submitted_at": iso(submitted),
            }
        )
    for tutor in tutors:
        ratings = [f["rating"] for f in feedback if f["tutor_id"] == tutor["tutor_id"]]
        tutor["rating"] = round(sum(ratings) / len(ratings), 2) if ratings else None
    return {
        "students": students,
        "tutors": tutors,
        "subjects": subjects,
        "tutor_subjects": tutor_subjects,
        "availability_slots": slots,
        "packages": packages,
        "sessions": sessions,
        "feedback": feedback,
    }
