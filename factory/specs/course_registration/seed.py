"""Seed rows of course_registration: 60 students (the farm's shared cast), 14 instructors, 6 terms,
25 courses with 22 prerequisite links, 39 sections, transcripts for three past terms, and
Spring/Summer 2026 enrollments that respect prerequisites, seats, time clashes and the credit limit.

The clock sits on 2026-04-13: Spring 2026 is in progress (registration closed, drop deadline passed),
Summer 2026 registration is open, Fall 2026 opens later. Hand-placed rows that the spec's rule examples
rely on: stu_0004 has a registration hold; the second MATH 310 section of Summer is cancelled; the single
HIST 230 section of Summer is full with a waitlist.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

DEPARTMENTS = ["CS", "MATH", "PHYS", "BIO", "ECON", "HIST", "WRIT"]
PROGRAM_DEPARTMENTS = {
    "computer_science": ["CS", "MATH"],
    "mathematics": ["MATH", "CS", "PHYS"],
    "physics": ["PHYS", "MATH"],
    "biology": ["BIO", "MATH"],
    "economics": ["ECON", "MATH"],
    "history": ["HIST", "WRIT"],
}
# (code, title, credits, pass/fail allowed, prerequisite codes)
CATALOG = [
    ("CS 101", "Introduction to Programming", 4, True, []),
    ("CS 150", "Discrete Structures", 3, True, ["MATH 101"]),
    ("CS 201", "Data Structures", 4, False, ["CS 101"]),
    ("CS 220", "Computer Systems", 4, False, ["CS 201"]),
    ("CS 301", "Algorithms", 3, False, ["CS 201", "CS 150"]),
    ("CS 340", "Databases", 3, True, ["CS 201"]),
    ("CS 370", "Machine Learning", 3, False, ["CS 201", "MATH 210"]),
    ("MATH 101", "Calculus I", 4, False, []),
    ("MATH 102", "Calculus II", 4, False, ["MATH 101"]),
    ("MATH 210", "Linear Algebra", 3, True, ["MATH 101"]),
    ("MATH 250", "Probability", 3, True, ["MATH 102"]),
    ("MATH 310", "Real Analysis", 3, False, ["MATH 102"]),
    ("PHYS 101", "Mechanics", 4, True, ["MATH 101"]),
    ("PHYS 102", "Electricity and Magnetism", 4, True, ["PHYS 101", "MATH 102"]),
    ("BIO 101", "Cell Biology", 4, True, []),
    ("BIO 210", "Genetics", 3, True, ["BIO 101"]),
    ("BIO 250", "Ecology", 3, True, ["BIO 101"]),
    ("ECON 101", "Principles of Microeconomics", 3, True, []),
    ("ECON 102", "Principles of Macroeconomics", 3, True, []),
    ("ECON 201", "Intermediate Microeconomics", 3, False, ["ECON 101", "MATH 101"]),
    ("ECON 310", "Econometrics", 3, False, ["ECON 201", "MATH 250"]),
    ("HIST 101", "World History to 1500", 3, True, []),
    ("HIST 210", "Modern Europe", 3, True, ["HIST 101"]),
    ("HIST 230", "History of Science", 3, True, []),
    ("WRIT 100", "Academic Writing", 3, False, []),
]
TERMS = [
    # name, starts, ends, registration opens, registration closes, drop deadline, status
    ("Winter 2025", "2024-12-02", "2025-03-21", "2024-07-15", "2024-12-13", "2024-12-27", "completed"),
    ("Summer 2025", "2025-04-28", "2025-08-15", "2025-02-17", "2025-05-09", "2025-05-23", "completed"),
    ("Winter 2026", "2025-12-01", "2026-03-20", "2025-07-14", "2025-12-12", "2025-12-26", "completed"),
    ("Spring 2026", "2026-04-06", "2026-05-01", "2026-02-16", "2026-04-07", "2026-04-10", "in_progress"),
    ("Summer 2026", "2026-04-27", "2026-08-14", "2026-02-16", "2026-05-08", "2026-05-22", "registration_open"),
    ("Fall 2026", "2026-08-31", "2026-10-30", "2026-06-15", "2026-09-04", "2026-09-11", "upcoming"),
]
SPRING_TIMES = [
    ("MWF", "09:00", "09:50"),
    ("MWF", "10:00", "10:50"),
    ("MWF", "11:00", "11:50"),
    ("MWF", "13:00", "13:50"),
    ("TR", "09:30", "10:45"),
    ("TR", "11:00", "12:15"),
    ("TR", "14:00", "15:15"),
    ("MW", "15:30", "16:45"),
    ("TR", "16:00", "17:15"),
]
BUILDINGS = ["Ashby Hall", "Keller Science Center", "Marlow Library", "Quinn Hall", "Sato Building"]
GRADE_WEIGHTS = {"A": 30, "B": 35, "C": 18, "D": 5, "F": 7, "W": 5}
PASSING = {"A", "B", "C", "D", "P"}
CREDIT_LIMIT = 18


def staff_names(rng: random.Random, count: int, exclude: set[str]) -> list[str]:
    """Distinct names that are not in the shared cast, so faculty never look like students."""
    names = [n for n in fakedata.unique_people(rng, count + len(exclude)) if n not in exclude]
    return names[:count]


def overlaps(a: dict, b: dict) -> bool:
    return bool(set(a["days"]) & set(b["days"])) and a["start_time"] < b["end_time"] and b["start_time"] < a["end_time"]


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    people = community(60)
    programs = list(PROGRAM_DEPARTMENTS)
    students = [
        {
            "student_id": f"stu_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "program": programs[(i - 1) % len(programs)],
            "year_level": 1 + (i * 7) % 4,
            "registration_hold": i in (4, 37, 52),
        }
        for i, p in enumerate(people, start=1)
    ]
    faculty = staff_names(rng, 14, {p["full_name"] for p in people})
    instructor_departments = DEPARTMENTS + DEPARTMENTS
    instructors = [
        {
            "instructor_id": f"ins_{i:03d}",
            "name": f"Prof. {name.split()[1]}",
            "department": instructor_departments[i - 1],
            "email": fakedata.email(name, "northgate.edu"),
        }
        for i, name in enumerate(faculty, start=1)
    ]
    terms = [
        {
            "term_id": f"trm_{i:02d}",
            "name": name,
            "starts_on": starts,
            "ends_on": ends,
            "registration_opens_on": opens,
            "registration_closes_on": closes,
            "drop_deadline": deadline,
            "status": status,
        }
        for i, (name, starts, ends, opens, closes, deadline, status) in enumerate(TERMS, start=1)
    ]
    term_id = {t["name"]: t["term_id"] for t in terms}
    courses = [
        {
            "course_id": f"crs_{i:03d}",
            "code": code,
            "title": title,
            "department": code.split()[0],
            "credits": credits,
            "pass_fail_allowed": pass_fail,
        }
        for i, (code, title, credits, pass_fail, _) in enumerate(CATALOG, start=1)
    ]
    course_by_code = {c["code"]: c for c in courses}
    prereqs_of = {code: reqs for code, _, _, _, reqs in CATALOG}
    prerequisites = []
    for code, reqs in prereqs_of.items():
        for req in reqs:
            prerequisites.append(
                {
                    "prerequisite_id": f"pre_{len(prerequisites) + 1:03d}",
                    "course_id": course_by_code[code]["course_id"],
                    "required_course_id": course_by_code[req]["course_id"],
                }
            )
    by_department = {d: [i for i in instructors if i["department"] == d] for d in DEPARTMENTS}

    # Transcripts: first-years have Winter 2026 only, everyone else the three past terms.
    passed: dict[str, set[str]] = {s["student_id"]: set() for s in students}
    grades = []
    past_terms = ["Winter 2025", "Summer 2025", "Winter 2026"]
    for student in students:
        sid = student["student_id"]
        taken_terms = past_terms[-1:] if student["year_level"] == 1 else past_terms
        preferred = PROGRAM_DEPARTMENTS[student["program"]]
        for term_name in taken_terms:
            eligible = [
                code
                for code, reqs in prereqs_of.items()
                if code not in passed[sid] and all(r in passed[sid] for r in reqs)
            ]
            eligible.sort(key=lambda code: (code.split()[0] not in preferred, rng.random()))
            earned_now = []
            for code in eligible[: rng.choice([3, 4])]:
                grade = rng.choices(list(GRADE_WEIGHTS), weights=list(GRADE_WEIGHTS.values()))[0]
                if grade == "C" and course_by_code[code]["pass_fail_allowed"] and rng.random() < 0.3:
                    grade = "P"
                grades.append(
                    {
                        "grade_id": f"grd_{len(grades) + 1:04d}",
                        "student_id": sid,
                        "course_id": course_by_code[code]["course_id"],
                        "term_id": term_id[term_name],
                        "grade": grade,
                    }
                )
                if grade in PASSING:
                    earned_now.append(code)
            passed[sid].update(earned_now)

    # Sections: Spring intensives, a full Summer timetable, a Fall preview.
    sections: list[dict] = []

    def add_section(code: str, term_name: str, number: str, days: str, start: str, end: str, capacity: int) -> dict:
        department = code.split()[0]
        section = {
            "section_id": f"sec_{len(sections) + 1:04d}",
            "course_id": course_by_code[code]["course_id"],
            "term_id": term_id[term_name],
            "section_code": number,
            "instructor_id": rng.choice(by_department[department])["instructor_id"],
            "days": days,
            "start_time": start,
            "end_time": end,
            "room": f"{rng.choice(BUILDINGS)} {rng.randrange(1, 4)}{rng.randrange(1, 30):02d}",
            "capacity": capacity,
            "enrolled_count": 0,
            "status": "open",
            "_code": code,
        }
        sections.append(section)
        return section

    for code, start, end in [
        ("ECON 101", "09:00", "11:30"),
        ("WRIT 100", "13:00", "15:00"),
        ("HIST 101", "09:00", "11:30"),
        ("BIO 101", "13:00", "15:30"),
    ]:
        add_section(code, "Spring 2026", "W1", "MTWRF", start, end, 12)
    spring_codes = [c[0] for c in CATALOG] + ["CS 101", "MATH 101", "WRIT 100", "ECON 101", "CS 201", "MATH 310"]
    for n, code in enumerate(spring_codes):
        number = "02" if n >= len(CATALOG) else "01"
        days, start, end = SPRING_TIMES[(n * 4 + rng.randrange(0, 3)) % len(SPRING_TIMES)]
        capacity = 6 if code == "HIST 230" else rng.choice([8, 10, 12, 15, 20])
        section = add_section(code, "Summer 2026", number, days, start, end, capacity)
        if code == "MATH 310" and number == "02":
            section["status"] = "cancelled"
    for code, days, start, end in [
        ("CS 101", "MTWR", "09:00", "11:00"),
        ("MATH 101", "MTWR", "13:00", "15:00"),
        ("HIST 101", "MTWR", "09:00", "11:00"),
        ("ECON 102", "MTWR", "13:00", "15:00"),
    ]:
        add_section(code, "Fall 2026", "S1", days, start, end, 25)

    # Enrollments: registration happened between the opening of Spring/Summer registration and today.
    enrollments: list[dict] = []
    waitlists: dict[str, int] = {}
    registration_start = datetime(2026, 2, 16, 8, 0, tzinfo=now.tzinfo)

    def register(student: dict, section: dict) -> None:
        """Take a seat, or the next waitlist place when the section is full."""
        sid = section["section_id"]
        status = "enrolled" if section["enrolled_count"] < section["capacity"] else "waitlisted"
        position = None
        if status == "enrolled":
            section["enrolled_count"] += 1
        else:
            waitlists[sid] = waitlists.get(sid, 0) + 1
            position = waitlists[sid]
        registered = registration_start + timedelta(hours=rng.randrange(0, 24 * 50))
        enrollments.append(
            {
                "enrollment_id": f"enr_{len(enrollments) + 1:04d}",
                "student_id": student["student_id"],
                "section_id": sid,
                "status": status,
                "waitlist_position": position,
                "grading_basis": "pass_fail"
                if status == "enrolled" and course_by_code[section["_code"]]["pass_fail_allowed"] and rng.random() < 0.1
                else "letter",
                "registered_at": registered.isoformat().replace("+00:00", "Z"),
                "dropped_at": None,
            }
        )

    winter = [s for s in sections if s["term_id"] == term_id["Spring 2026"]]
    spring = [s for s in sections if s["term_id"] == term_id["Summer 2026"] and s["status"] == "open"]
    for student in students[:24]:
        options = [
            s for s in winter if s["_code"] not in passed[student["student_id"]] and s["enrolled_count"] < s["capacity"]
        ]
        if options and student["student_id"] != "stu_0004":
            register(student, rng.choice(options))
    history_of_science = next(s for s in spring if s["_code"] == "HIST 230")
    for student in students[40:48]:
        register(student, history_of_science)
    for student in students:
        if student["registration_hold"]:
            continue
        sid = student["student_id"]
        # Every tenth student carries a heavy load close to the credit limit.
        wanted = 6 if sid.endswith("5") else rng.choice([2, 3, 3, 4])
        mine = [e for e in enrollments if e["student_id"] == sid]
        chosen = [next(s for s in sections if s["section_id"] == e["section_id"]) for e in mine]
        credits = sum(course_by_code[s["_code"]]["credits"] for s in chosen if s["term_id"] == term_id["Summer 2026"])
        candidates = sorted(
            spring, key=lambda s: (s["_code"].split()[0] not in PROGRAM_DEPARTMENTS[student["program"]], rng.random())
        )
        for section in candidates:
            spring_mine = [s for s in chosen if s["term_id"] == term_id["Summer 2026"]]
            if len(spring_mine) >= wanted:
                break
            code = section["_code"]
            course_credits = course_by_code[code]["credits"]
            if (
                code in passed[sid]
                or not all(r in passed[sid] for r in prereqs_of[code])
                or any(s["_code"] == code for s in spring_mine)
                or any(overlaps(section, s) for s in spring_mine)
                or credits + course_credits > CREDIT_LIMIT
                or section["enrolled_count"] >= section["capacity"]
            ):
                continue
            register(student, section)
            chosen.append(section)
            credits += course_credits
    # A few students changed their minds before the deadline.
    for enrollment in rng.sample([e for e in enrollments if e["status"] == "enrolled"], 10):
        section = next(s for s in sections if s["section_id"] == enrollment["section_id"])
        if section["_code"] == "HIST 230" or section["term_id"] != term_id["Summer 2026"]:
            continue
        enrollment["status"] = "dropped"
        enrollment["grading_basis"] = "letter"
        registered = datetime.fromisoformat(enrollment["registered_at"])
        dropped = min(registered + timedelta(hours=rng.randrange(2, 24 * 14)), now - timedelta(hours=3))
        enrollment["dropped_at"] = dropped.isoformat().replace("+00:00", "Z")
        section["enrolled_count"] -= 1

    overrides = []
    # Approved, pending and denied requests for courses the student lacks a prerequisite of.
    for student in students[8:40:2]:
        sid = student["student_id"]
        lacking = [
            code
            for code, reqs in prereqs_of.items()
            if reqs and code not in passed[sid] and not all(r in passed[sid] for r in reqs)
        ]
        if not lacking:
            continue
        code = rng.choice(lacking)
        overrides.append(
            {
                "override_id": f"ovr_{len(overrides) + 1:04d}",
                "student_id": sid,
                "course_id": course_by_code[code]["course_id"],
                "reason": rng.choice(
                    [
                        "Took an equivalent course at another university",
                        "Passed the placement exam",
                        "Prerequisite taken concurrently in Spring 2026",
                        "Instructor consent after an interview",
                    ]
                ),
                "status": ["approved", "pending", "denied"][len(overrides) % 3],
                "requested_at": fakedata.moment(now, -rng.randrange(24, 24 * 40)),
            }
        )
    for section in sections:
        del section["_code"]
    return {
        "students": students,
        "instructors": instructors,
        "terms": terms,
        "courses": courses,
        "prerequisites": prerequisites,
        "sections": sections,
        "enrollments": enrollments,
        "grades": grades,
        "prerequisite_overrides": overrides,
    }
