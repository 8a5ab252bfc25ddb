"""Seed rows of library: 50 members (the farm's shared cast), 40 titles, about 110 copies over three
branches, a loan history with active, overdue, returned and lost loans, holds in every state, and fines.

Copy statuses agree with loans and holds: on_loan exactly when an active loan exists, on_hold_shelf
exactly when a ready hold points at it, lost when its last loan was declared lost. Hand-placed members
that the spec's rule examples rely on: mem_0002 is suspended, mem_0003 has 5 items on loan, mem_0004
owes more than $10 in unpaid fines, mem_0005 owes exactly $10 (the limit, so still allowed to borrow).
"""

import random
from datetime import date, datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

BRANCHES = ["Central", "Riverside", "Hillcrest"]
# (title, author, genre, year, replacement cost)
CATALOG = [
    ("Pride and Prejudice", "Jane Austen", "fiction", 1813, 14.0),
    ("The Hound of the Baskervilles", "Arthur Conan Doyle", "mystery", 1902, 12.0),
    ("Frankenstein", "Mary Shelley", "science_fiction", 1818, 13.0),
    ("The Time Machine", "H. G. Wells", "science_fiction", 1895, 11.0),
    ("Moby-Dick", "Herman Melville", "fiction", 1851, 16.0),
    ("Middlemarch", "George Eliot", "fiction", 1871, 17.0),
    ("The Moonstone", "Wilkie Collins", "mystery", 1868, 13.0),
    ("Twenty Thousand Leagues Under the Seas", "Jules Verne", "science_fiction", 1870, 14.0),
    ("Alice's Adventures in Wonderland", "Lewis Carroll", "children", 1865, 10.0),
    ("The Wind in the Willows", "Kenneth Grahame", "children", 1908, 10.0),
    ("The Secret Garden", "Frances Hodgson Burnett", "children", 1911, 11.0),
    ("The Origin of Species", "Charles Darwin", "science", 1859, 18.0),
    ("Walden", "Henry David Thoreau", "biography", 1854, 12.0),
    ("Narrative of the Life of Frederick Douglass", "Frederick Douglass", "biography", 1845, 12.0),
    ("The Art of Cookery Made Plain and Easy", "Hannah Glasse", "cooking", 1747, 20.0),
    ("Innocents Abroad", "Mark Twain", "travel", 1869, 14.0),
    ("The Glass Orchard", "Lena Marsh", "fiction", 2019, 26.0),
    ("Salt and Iron", "Tobias Wren", "fantasy", 2021, 28.0),
    ("The Cartographer's Daughter", "Imogen Vale", "fantasy", 2018, 24.0),
    ("Quiet Harbor Murders", "Declan Shaw", "mystery", 2020, 22.0),
    ("A Death on Mill Street", "Priya Raman", "mystery", 2022, 25.0),
    ("Orbitfall", "Kenji Sato", "science_fiction", 2023, 27.0),
    ("The Last Lighthouse Keeper", "Marta Oliveira", "fiction", 2017, 23.0),
    ("Rivers of the North", "Anders Holm", "travel", 2016, 30.0),
    ("Weeknight Vegetables", "Sofia Marin", "cooking", 2021, 32.0),
    ("One Pot, Many Tables", "Kwame Asante", "cooking", 2019, 29.0),
    ("The Hidden Life of Fungi", "Elena Petrova", "science", 2020, 31.0),
    ("Small Numbers, Big Ideas", "Omar Farouk", "science", 2022, 27.0),
    ("Empire of Spices", "Arjun Mehta", "history", 2015, 33.0),
    ("The Long Winter of 1816", "Grace Whitfield", "history", 2018, 26.0),
    ("Letters from the Front", "Hugo Lemaire", "history", 2014, 24.0),
    ("Becoming a Mountain", "Yuki Mori", "biography", 2021, 25.0),
    ("The Clockmaker's Apprentice", "Rosa Delgado", "children", 2020, 15.0),
    ("Dragons of Ember Vale", "Liam Carrow", "fantasy", 2022, 21.0),
    ("The Tidewater Secret", "Nadia Brooks", "mystery", 2023, 26.0),
    ("Stars Over Patagonia", "Mateo Ruiz", "travel", 2019, 28.0),
    ("The Baker's Notebook", "Ines Laurent", "cooking", 2018, 30.0),
    ("Signals from Deep Space", "Wei Zhang", "science", 2023, 29.0),
    ("The Silent Fleet", "Jonas Berg", "science_fiction", 2021, 24.0),
    ("A Garden in Every Season", "Chloe Hartley", "fiction", 2022, 22.0),
]
LOAN_DAYS = 21
FINE_PER_DAY = 0.25


def isbn13(rng: random.Random) -> str:
    digits = [9, 7, 8] + [rng.randrange(10) for _ in range(9)]
    check = (10 - sum(d * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits)) % 10) % 10
    return "".join(map(str, digits + [check]))


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    today = now.date()
    people = community(50)
    members = [
        {
            "member_id": f"mem_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "phone": p["phone"],
            "card_number": f"LC-{200000 + i * 37 + rng.randrange(0, 30):06d}",
            "membership_type": rng.choice(["adult", "adult", "student", "senior"]),
            "status": "suspended" if i in (2, 29) else "expired" if i == 41 else "active",
            "joined_on": fakedata.day(today, -rng.randrange(60, 3000)),
        }
        for i, p in enumerate(people, start=1)
    ]
    active_members = [m["member_id"] for m in members if m["status"] == "active"]
    titles = [
        {
            "title_id": f"ttl_{i:04d}",
            "title": title,
            "author": author,
            "isbn": isbn13(rng),
            "genre": genre,
            "published_year": year,
            "replacement_cost": cost,
        }
        for i, (title, author, genre, year, cost) in enumerate(CATALOG, start=1)
    ]
    copies = []
    for t in titles:
        for branch in rng.sample(BRANCHES, rng.choice([2, 3, 3])):
            copies.append(
                {
                    "copy_id": f"cpy_{len(copies) + 1:04d}",
                    "title_id": t["title_id"],
                    "barcode": f"3120000{len(copies) * 41 + 1000:04d}",
                    "branch": branch,
                    "status": "available",
                }
            )
    title_of = {c["copy_id"]: c["title_id"] for c in copies}
    cost_of = {t["title_id"]: t["replacement_cost"] for t in titles}

    loans: list[dict] = []
    fines: list[dict] = []

    def add_loan(copy: dict, member_id: str, borrowed: date, renewals: int, status: str, returned: date | None) -> dict:
        loan = {
            "loan_id": f"ln_{len(loans) + 1:05d}",
            "copy_id": copy["copy_id"],
            "member_id": member_id,
            "borrowed_on": borrowed.isoformat(),
            "due_on": (borrowed + timedelta(days=LOAN_DAYS * (renewals + 1))).isoformat(),
            "returned_on": returned.isoformat() if returned else None,
            "renewals": renewals,
            "status": status,
        }
        loans.append(loan)
        return loan

    def add_fine(member_id: str, loan_id: str | None, amount: float, reason: str, issued: date, status: str) -> None:
        fines.append(
            {
                "fine_id": f"fin_{len(fines) + 1:04d}",
                "member_id": member_id,
                "loan_id": loan_id,
                "amount": round(amount, 2),
                "reason": reason,
                "issued_on": issued.isoformat(),
                "status": status,
                "paid_at": fakedata.moment(datetime.combine(issued, now.timetz()), rng.randrange(2, 240))
                if status == "paid"
                else None,
            }
        )

    # Active loans first so the low loan ids are the ones rule examples point at.
    shelf = list(copies)
    rng.shuffle(shelf)
    loan_count = dict.fromkeys(active_members, 0)
    borrowers = ["mem_0001"] + ["mem_0003"] * 5 + ["mem_0004"]
    borrowers += [rng.choice(active_members[4:]) for _ in range(34)]
    for n, member_id in enumerate(borrowers):
        if loan_count[member_id] >= (5 if member_id == "mem_0003" else 4):
            continue
        copy = shelf.pop()
        # Every fifth loan is overdue; the rest fall due within the next three weeks.
        if n % 5 == 2:
            borrowed = today - timedelta(days=rng.randrange(LOAN_DAYS + 2, LOAN_DAYS + 30))
            renewals = 0
        else:
            renewals = rng.choice([0, 0, 0, 1, 2])
            borrowed = today - timedelta(days=rng.randrange(1, LOAN_DAYS - 1) + LOAN_DAYS * renewals)
        add_loan(copy, member_id, borrowed, renewals, "active", None)
        copy["status"] = "on_loan"
        loan_count[member_id] += 1
    # Two copies are being repaired and three were lost by their borrowers.
    for copy in shelf[:2]:
        copy["status"] = "in_repair"
    for copy in shelf[2:5]:
        member_id = rng.choice(active_members[4:])
        borrowed = today - timedelta(days=rng.randrange(70, 150))
        loan = add_loan(copy, member_id, borrowed, 0, "lost", None)
        copy["status"] = "lost"
        cost = cost_of[title_of[copy["copy_id"]]]
        add_fine(member_id, loan["loan_id"], cost, "lost_item", borrowed + timedelta(days=LOAN_DAYS + 30), "paid")

    # Returned loans over the last eight months, some late (with an overdue fine).
    def busy(copy_id: str, start: date, end: date) -> bool:
        """Whether the copy was out on loan at some point between start and end (a copy has one borrower)."""
        for loan in loans:
            if loan["copy_id"] != copy_id:
                continue
            loan_end = date.fromisoformat(loan["returned_on"]) if loan["returned_on"] else today
            if date.fromisoformat(loan["borrowed_on"]) <= end and start <= loan_end:
                return True
        return False

    returned_loans = 0
    while returned_loans < 80:
        copy = rng.choice(copies)
        member_id = rng.choice(active_members[4:])
        borrowed = today - timedelta(days=rng.randrange(30, 240))
        late = rng.random() < 0.35
        kept = LOAN_DAYS + rng.randrange(2, 25) if late else rng.randrange(5, LOAN_DAYS)
        returned = min(borrowed + timedelta(days=kept), today - timedelta(days=1))
        if busy(copy["copy_id"], borrowed, returned):
            continue
        returned_loans += 1
        loan = add_loan(copy, member_id, borrowed, 0, "returned", returned)
        days_late = (returned - date.fromisoformat(loan["due_on"])).days
        if days_late > 0:
            add_fine(
                member_id,
                loan["loan_id"],
                days_late * FINE_PER_DAY,
                "overdue",
                returned,
                rng.choice(["paid", "paid", "unpaid", "waived"]),
            )
    # mem_0004 damaged a book: a large unpaid fine that blocks borrowing.
    add_fine("mem_0004", None, 12.5, "damage", today - timedelta(days=9), "unpaid")
    add_fine("mem_0002", None, 18.0, "damage", today - timedelta(days=40), "unpaid")
    # mem_0005 owes exactly the limit: borrowing is refused only above $10.
    add_fine("mem_0005", None, 10.0, "damage", today - timedelta(days=3), "unpaid")
    # Keep every other member under the $10 borrowing limit.
    for member_id in active_members:
        if member_id == "mem_0004":
            continue
        owed = [f for f in fines if f["member_id"] == member_id and f["status"] == "unpaid"]
        while sum(f["amount"] for f in owed) > 10:
            owed.pop()["status"] = "waived"

    holds: list[dict] = []

    def add_hold(title_id: str, member_id: str, status: str, copy_id: str | None, hours_ago: int, branch: str) -> None:
        holds.append(
            {
                "hold_id": f"hld_{len(holds) + 1:04d}",
                "title_id": title_id,
                "member_id": member_id,
                "pickup_branch": branch,
                "placed_at": fakedata.moment(now, -hours_ago),
                "status": status,
                "copy_id": copy_id,
                "ready_until": fakedata.day(today, rng.randrange(1, 7)) if status == "ready" else None,
            }
        )

    def holders_of(title_id: str) -> set[str]:
        on_loan = {x["member_id"] for x in loans if x["status"] == "active" and title_of[x["copy_id"]] == title_id}
        waiting = {h["member_id"] for h in holds if h["title_id"] == title_id and h["status"] in ("waiting", "ready")}
        return on_loan | waiting

    # Ready holds: an available copy set aside on the hold shelf.
    for copy in [c for c in copies if c["status"] == "available"][:6]:
        member_id = rng.choice([m for m in active_members if m not in holders_of(copy["title_id"])])
        add_hold(copy["title_id"], member_id, "ready", copy["copy_id"], rng.randrange(30, 200), copy["branch"])
        copy["status"] = "on_hold_shelf"
    # Waiting holds on titles out on loan, picked up where no copy of the title is on the shelf.
    loaned_titles = sorted({title_of[loan["copy_id"]] for loan in loans if loan["status"] == "active"})
    for title_id in rng.sample(loaned_titles, 14):
        on_shelf = {c["branch"] for c in copies if c["title_id"] == title_id and c["status"] == "available"}
        branches = [b for b in BRANCHES if b not in on_shelf]
        if branches:
            member_id = rng.choice([m for m in active_members if m not in holders_of(title_id)])
            add_hold(title_id, member_id, "waiting", None, rng.randrange(5, 300), rng.choice(branches))
    # Past holds: fulfilled, cancelled, expired.
    for status in ["fulfilled"] * 6 + ["cancelled"] * 4 + ["expired"] * 2:
        title = rng.choice(titles)
        add_hold(
            title["title_id"], rng.choice(active_members), status, None, rng.randrange(400, 3000), rng.choice(BRANCHES)
        )
    holds.sort(key=lambda h: h["placed_at"])
    for n, hold in enumerate(holds, start=1):
        hold["hold_id"] = f"hld_{n:04d}"
    return {"members": members, "titles": titles, "copies": copies, "loans": loans, "holds": holds, "fines": fines}
