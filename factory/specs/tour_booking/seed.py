"""Seed rows of the tour operator: 30 tours in 10 cities, 21 local guides, weekly departures from three
weeks ago to four weeks ahead, 60 travellers (the farm's shared cast), their bookings, refunds and reviews.

Prices follow `handlers.book_tour`; tour ratings are the average of their reviews. Tour tour_001 (Lisbon,
in English) is laid out on purpose so the spec's rule examples hit exactly one rule each (random bookings
never touch its departures or the scenario travellers trv_0001..trv_0010):
- dep_0001 (in 5 days) has 11 of 12 seats taken; dep_0002 (in 10 days, no guide yet) has tbk_0001 of trv_0001;
- dep_0003 (tomorrow) has tbk_0002; dep_0004 (a week ago) was completed: tbk_0003 completed, tbk_0004 a
  no-show, tbk_0005 completed and reviewed; dep_0005 was cancelled by the operator; dep_0006 starts within
  the hour (tbk_0008); tbk_0006 is on dep_0001, tbk_0007 was cancelled and refunded;
- dep_0007 (tour_002) ran this morning and is not closed yet;
- guide gd_001 leads a tour_003 departure at the same time as dep_0002; gd_002 does not speak English.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

CITY_LANGUAGE = {
    "Lisbon": "Portuguese",
    "Porto": "Portuguese",
    "Madrid": "Spanish",
    "Prague": "Czech",
    "Vienna": "German",
    "Dublin": "Irish",
    "Milan": "Italian",
    "Osaka": "Japanese",
    "Seoul": "Korean",
    "Krakow": "Polish",
}
TOURS = [
    # (city, title, category, language, hours, price, capacity, start hour, meeting point)
    ("Lisbon", "Alfama Food and Fado Walk", "food", "English", 3, 65.0, 12, 10, "Largo do Chafariz de Dentro"),
    ("Lisbon", "Tagus Sunrise Sailing", "boat", "English", 2.5, 55.0, 10, 5.5, "Doca de Santo Amaro pier"),
    ("Lisbon", "Sintra Palaces Day Trip", "day_trip", "English", 8, 89.0, 16, 8, "Rossio station clock"),
    ("Porto", "Port Wine Cellars Tour", "food", "English", 3, 49.0, 14, 15, "Ribeira square fountain"),
    ("Porto", "Douro Valley Vineyards", "day_trip", "English", 9, 115.0, 14, 8, "Sao Bento station"),
    ("Porto", "Porto by Bike", "bike", "Portuguese", 3, 39.0, 10, 9, "Cordoaria garden gate"),
    ("Madrid", "Prado Museum Masterpieces", "museum", "English", 2.5, 45.0, 15, 10, "Goya statue, Prado north door"),
    ("Madrid", "Tapas Crawl in La Latina", "food", "Spanish", 3, 59.0, 12, 19, "Plaza de la Paja"),
    ("Madrid", "Toledo Half-Day Trip", "day_trip", "English", 5, 69.0, 20, 9, "Atocha station main hall"),
    ("Prague", "Old Town and Jewish Quarter Walk", "walking", "English", 3, 29.0, 18, 10, "Astronomical clock"),
    ("Prague", "Vltava Dinner Cruise", "boat", "English", 2.5, 75.0, 30, 19, "Cechuv bridge pier 5"),
    ("Prague", "Cesky Krumlov Day Trip", "day_trip", "Czech", 10, 99.0, 16, 7, "Florenc bus terminal"),
    ("Vienna", "Imperial Vienna Walking Tour", "walking", "English", 2.5, 32.0, 18, 10, "Albertina terrace"),
    ("Vienna", "Coffee House and Cake Tasting", "food", "German", 2, 42.0, 10, 14, "Cafe Central entrance"),
    ("Vienna", "Danube Valley Bike Ride", "bike", "English", 6, 85.0, 12, 9, "Melk station forecourt"),
    ("Dublin", "Literary Pub Crawl", "walking", "English", 2.5, 27.0, 20, 19, "Duke pub, Duke Street"),
    ("Dublin", "Cliffs of Moher Day Trip", "day_trip", "English", 11, 79.0, 30, 7, "Gresham hotel steps"),
    ("Dublin", "Howth Coastal Hike", "adventure", "English", 4, 45.0, 12, 10, "Howth DART station"),
    ("Milan", "Last Supper and Duomo Tour", "museum", "English", 3, 89.0, 15, 9, "Piazza del Duomo, north side"),
    ("Milan", "Lake Como Boat and Villas", "boat", "Italian", 9, 105.0, 16, 8, "Milano Centrale platform 1"),
    ("Milan", "Navigli Aperitivo Walk", "food", "English", 2.5, 49.0, 12, 18, "Darsena dock steps"),
    ("Osaka", "Dotonbori Street Food Night", "food", "English", 3, 70.0, 10, 18, "Glico sign bridge"),
    ("Osaka", "Nara Deer Park Day Trip", "day_trip", "Japanese", 7, 95.0, 18, 9, "Namba station central gate"),
    ("Osaka", "Osaka Castle by Bike", "bike", "English", 3, 52.0, 10, 10, "Osakajokoen station exit"),
    ("Seoul", "Bukchon Hanok Village Walk", "walking", "English", 2.5, 35.0, 16, 10, "Anguk station exit 2"),
    ("Seoul", "DMZ Day Tour", "day_trip", "English", 9, 110.0, 30, 7, "City Hall station exit 6"),
    ("Seoul", "Gwangjang Market Food Tour", "food", "Korean", 3, 58.0, 12, 17, "Market east gate"),
    ("Krakow", "Wawel Castle and Old Town", "walking", "English", 3, 30.0, 18, 10, "Adam Mickiewicz monument"),
    ("Krakow", "Wieliczka Salt Mine Trip", "day_trip", "English", 5, 59.0, 25, 9, "Galeria Krakowska main door"),
    ("Krakow", "Kazimierz Food Walk", "food", "Polish", 3, 45.0, 12, 16, "Plac Nowy rotunda"),
]
COMMENTS = {
    5: [
        "Unforgettable, our guide was brilliant.",
        "Best thing we did on the whole trip.",
        "Perfectly organised, would book again.",
    ],
    4: [
        "Very good tour, a bit rushed at the end.",
        "Great guide, the group was slightly large.",
        "Lovely experience overall.",
    ],
    3: [
        "Nice but overpriced.",
        "Interesting, though the meeting point was hard to find.",
        "Okay tour, the guide was hard to hear.",
    ],
}


def _iso(moment: datetime) -> str:
    return moment.replace(second=0, microsecond=0).isoformat().replace("+00:00", "Z")


def booking_ref(number: int) -> str:
    """The same reference as handlers.booking_ref."""
    return f"TB-{number * 7207 % 100000:05d}"


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    cast = {p["full_name"] for p in community(80)}
    guide_names = [n for n in fakedata.unique_people(rng, 70) if n not in cast]
    guides = []
    for city, local in CITY_LANGUAGE.items():
        languages = [["English", local], [local, "Spanish" if local != "Spanish" else "French"]]
        if city == "Lisbon":
            languages.append(["English", "French"])
        for spoken in languages:
            guides.append(
                {
                    "guide_id": f"gd_{len(guides) + 1:03d}",
                    "name": guide_names[len(guides)],
                    "city": city,
                    "languages": ", ".join(dict.fromkeys(spoken)),
                    "rating": round(rng.uniform(4.2, 5.0), 1),
                }
            )
    tours = [
        {
            "tour_id": f"tour_{i:03d}",
            "title": title,
            "city": city,
            "category": category,
            "language": language,
            "duration_hours": float(hours),
            "price_per_person": price,
            "max_group_size": capacity,
            "meeting_point": meeting,
            "avg_rating": None,
            "review_count": 0,
        }
        for i, (city, title, category, language, hours, price, capacity, _, meeting) in enumerate(TOURS, start=1)
    ]
    start_hour = {f"tour_{i:03d}": row[7] for i, row in enumerate(TOURS, start=1)}
    guides_of = {city: [g for g in guides if g["city"] == city] for city in CITY_LANGUAGE}
    busy: dict[str, list[tuple[datetime, datetime]]] = {}

    departures: list[dict] = []

    def depart(tour: dict, start: datetime, status: str, guide: dict | None) -> dict:
        end = start + timedelta(hours=tour["duration_hours"])
        if guide is not None:
            busy.setdefault(guide["guide_id"], []).append((start, end))
        row = {
            "departure_id": f"dep_{len(departures) + 1:04d}",
            "tour_id": tour["tour_id"],
            "guide_id": guide["guide_id"] if guide else None,
            "starts_at": _iso(start),
            "capacity": tour["max_group_size"],
            "seats_booked": 0,
            "status": status,
        }
        departures.append(row)
        return row

    def free_guide(tour: dict, start: datetime) -> dict | None:
        end = start + timedelta(hours=tour["duration_hours"])
        for guide in guides_of[tour["city"]]:
            speaks = tour["language"] in guide["languages"]
            clash = any(s < end and start < e for s, e in busy.get(guide["guide_id"], []))
            if speaks and not clash and guide["guide_id"] != "gd_002":
                return guide
        return None

    tour = {t["tour_id"]: t for t in tours}
    guide = {g["guide_id"]: g for g in guides}
    t1 = tour["tour_001"]

    def at(day: int, hour: float) -> datetime:
        return today + timedelta(days=day, hours=hour)

    # The tour_001 scenario (see the module docstring).
    depart(t1, at(5, 10), "scheduled", guide["gd_001"])
    depart(t1, at(10, 10), "scheduled", None)
    depart(t1, at(1, 10), "scheduled", guide["gd_003"])
    depart(t1, at(-7, 10), "completed", guide["gd_001"])
    depart(t1, at(3, 10), "cancelled", guide["gd_003"])
    depart(t1, at(0, 10), "scheduled", guide["gd_001"])
    depart(tour["tour_002"], at(0, 5.5), "scheduled", guide["gd_003"])
    depart(tour["tour_003"], at(10, 8), "scheduled", guide["gd_001"])
    for t in tours:
        if t["tour_id"] == "tour_001":
            continue
        offset = rng.randrange(0, 7)
        for week in range(-3, 4):
            start = at(week * 7 + offset, start_hour[t["tour_id"]])
            if any(d["tour_id"] == t["tour_id"] and d["starts_at"] == _iso(start) for d in departures):
                continue
            finished = start + timedelta(hours=t["duration_hours"]) <= now
            status = "completed" if finished else "scheduled"
            if rng.random() < 0.05:
                status = "cancelled"
            depart(t, start, status, free_guide(t, start) if rng.random() < 0.9 or finished else None)

    travellers = [
        {
            "traveller_id": f"trv_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "phone": p["phone"],
            "home_country": fakedata.replaced(rng, lambda r: r.choice(range(10)), p["country"]),
        }
        for i, p in enumerate(community(60), start=1)
    ]
    trv = {t["traveller_id"]: t for t in travellers}
    dep = {d["departure_id"]: d for d in departures}
    bookings: list[dict] = []
    refunds: list[dict] = []
    reviews: list[dict] = []

    def book(traveller: dict, departure: dict, seats: int, status: str, reviewed: int | None = None) -> dict:
        start = datetime.fromisoformat(departure["starts_at"])
        price = tour[departure["tour_id"]]["price_per_person"]
        booked_at = min(
            start - timedelta(days=rng.randrange(3, 40), hours=rng.randrange(0, 12)), now - timedelta(hours=3)
        )
        row = {
            "booking_id": f"tbk_{len(bookings) + 1:04d}",
            "booking_ref": booking_ref(len(bookings) + 1),
            "traveller_id": traveller["traveller_id"],
            "departure_id": departure["departure_id"],
            "seats": seats,
            "total_price": round(seats * price, 2),
            "status": status,
            "booked_at": _iso(booked_at),
            "cancelled_at": None,
        }
        bookings.append(row)
        if status == "cancelled":
            latest = min(start - timedelta(hours=49), now)
            cancelled = booked_at + (latest - booked_at) * rng.uniform(0.1, 0.9)
            row["cancelled_at"] = _iso(cancelled)
            reason = "cancelled by the operator" if departure["status"] == "cancelled" else "traveller cancelled"
            refunds.append(
                {
                    "refund_id": f"rfd_{len(refunds) + 1:04d}",
                    "booking_id": row["booking_id"],
                    "amount": row["total_price"],
                    "reason": reason,
                    "refunded_at": row["cancelled_at"],
                }
            )
        else:
            departure["seats_booked"] += seats
        if reviewed is not None:
            reviews.append(
                {
                    "review_id": f"rev_{len(reviews) + 1:04d}",
                    "booking_id": row["booking_id"],
                    "tour_id": departure["tour_id"],
                    "rating": reviewed,
                    "comment": rng.choice(COMMENTS[reviewed]),
                    "created_at": _iso(
                        min(start + timedelta(days=rng.randrange(1, 4), hours=rng.randrange(1, 10)), now)
                    ),
                }
            )
        return row

    book(trv["trv_0001"], dep["dep_0002"], 2, "confirmed")
    book(trv["trv_0002"], dep["dep_0003"], 2, "confirmed")
    book(trv["trv_0003"], dep["dep_0004"], 2, "completed")
    book(trv["trv_0004"], dep["dep_0004"], 1, "no_show")
    book(trv["trv_0005"], dep["dep_0004"], 3, "completed", reviewed=5)
    book(trv["trv_0006"], dep["dep_0001"], 1, "confirmed")
    book(trv["trv_0007"], dep["dep_0002"], 2, "cancelled")
    book(trv["trv_0008"], dep["dep_0006"], 1, "confirmed")
    customers = travellers[10:]
    full = dep["dep_0001"]
    for person in rng.sample(customers, len(customers)):
        seats = min(rng.choice([1, 2, 2, 3]), full["capacity"] - 1 - full["seats_booked"])
        if seats == 0:
            break
        book(person, full, seats, "confirmed")
    for departure in departures:
        if departure["departure_id"] in ("dep_0001", "dep_0002", "dep_0003", "dep_0004", "dep_0006"):
            continue
        for person in rng.sample(customers, rng.randrange(1, 6)):
            seats = rng.choice([1, 1, 2, 2, 2, 3, 4])
            if departure["seats_booked"] + seats > departure["capacity"]:
                break
            if departure["status"] == "cancelled":
                book(person, departure, seats, "cancelled")
            elif departure["status"] == "completed":
                roll = rng.random()
                status = "no_show" if roll < 0.06 else ("cancelled" if roll < 0.12 else "completed")
                reviewable = status == "completed" and departure["starts_at"][:10] < now.date().isoformat()
                review = rng.choice([5, 5, 5, 4, 4, 3]) if reviewable and rng.random() < 0.45 else None
                book(person, departure, seats, status, review)
            else:
                book(person, departure, seats, "cancelled" if rng.random() < 0.1 else "confirmed")
    for t in tours:
        ratings = [r["rating"] for r in reviews if r["tour_id"] == t["tour_id"]]
        t["review_count"] = len(ratings)
        t["avg_rating"] = round(sum(ratings) / len(ratings), 2) if ratings else None
    reviews.sort(key=lambda r: (r["created_at"], r["booking_id"]))
    for n, review in enumerate(reviews, start=1):
        review["review_id"] = f"rev_{n:04d}"
    refunds.sort(key=lambda r: (r["refunded_at"], r["booking_id"]))
    for n, refund in enumerate(refunds, start=1):
        refund["refund_id"] = f"rfd_{n:04d}"
    return {
        "guides": guides,
        "tours": tours,
        "departures": departures,
        "travellers": travellers,
        "bookings": bookings,
        "refunds": refunds,
        "reviews": reviews,
    }
