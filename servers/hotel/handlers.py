"""Custom behaviour of the hotel server: availability, booking, room moves, folios and check-out.

The spec's rules have already rejected invalid calls (bad dates, overlaps, wrong status...) when these run.
"""

from typing import Any

from envfarm.servers.runtime.database import Database

LOYALTY_DISCOUNT_PERCENT = {"none": 0, "silver": 5, "gold": 10, "platinum": 15}  # off room rates (policy.md)
CONFIRMATION_MULTIPLIER = 7919


def cents(amount: float) -> float:
    """A USD amount to whole cents: sums and products of cent amounts carry float noise."""
    return round(amount, 2)


def discounted_rate(rate: float, tier: str) -> float:
    """A room type's nightly rate less the loyalty tier's discount."""
    return cents(rate * (100 - LOYALTY_DISCOUNT_PERCENT[tier]) / 100)


def confirmation_code(number: int) -> str:
    """A short code for the guest; multiplying by a number coprime to 100000 keeps codes unique."""
    return f"HB{number * CONFIRMATION_MULTIPLIER % 100000:05d}"


def find_available_rooms(
    db: Database, hotel_id: str, arrival_date: str, departure_date: str, adults: int
) -> dict[str, Any]:
    """Rooms with no confirmed or in-house stay overlapping [arrival, departure), big enough, not out of order."""
    rooms = db.all(
        "SELECT r.* FROM rooms r JOIN room_types t ON t.type_id = r.type_id"
        " WHERE r.hotel_id = ? AND t.max_guests >= ? AND r.housekeeping_status != 'out_of_order'"
        " AND NOT EXISTS (SELECT 1 FROM reservations s WHERE s.room_id = r.room_id"
        " AND s.status IN ('confirmed', 'checked_in') AND s.arrival_date < ? AND ? < s.departure_date)"
        " ORDER BY t.nightly_rate, r.number",
        (hotel_id, adults, departure_date, arrival_date),
    )
    type_ids = {r["type_id"] for r in rooms}
    types = [t for t in db.all("SELECT * FROM room_types ORDER BY rowid") if t["type_id"] in type_ids]
    nights = db.scalar("SELECT CAST(julianday(?) - julianday(?) AS INTEGER)", (departure_date, arrival_date))
    return {"hotel_id": hotel_id, "nights": nights, "rooms": rooms, "room_types": types}


def create_reservation(
    db: Database,
    guest_id: str,
    room_id: str,
    arrival_date: str,
    departure_date: str,
    adults: int,
    special_requests: str | None = None,
) -> dict[str, Any]:
    """Book the room at its type's rate less the guest's loyalty discount."""
    guest = db.require("guests", guest_id)
    room = db.require("rooms", room_id)
    room_type = db.require("room_types", room["type_id"])
    res_id = db.next_id("reservations")
    db.insert(
        "reservations",
        {
            "res_id": res_id,
            "confirmation_code": confirmation_code(db.id_number("reservations")),
            "guest_id": guest_id,
            "hotel_id": room["hotel_id"],
            "room_id": room_id,
            "arrival_date": arrival_date,
            "departure_date": departure_date,
            "adults": adults,
            "nightly_rate": discounted_rate(room_type["nightly_rate"], guest["loyalty_tier"]),
            "status": "confirmed",
            "special_requests": special_requests,
            "booked_at": db.now,
        },
    )
    return db.require("reservations", res_id)


def move_room(db: Database, res_id: str, room_id: str) -> dict[str, Any]:
    """Reassign the room; for an in-house guest the old room is left dirty and the new one occupied."""
    reservation = db.require("reservations", res_id)
    if reservation["status"] == "checked_in":
        db.execute("UPDATE rooms SET housekeeping_status = 'vacant_dirty' WHERE room_id = ?", (reservation["room_id"],))
        db.execute("UPDATE rooms SET housekeeping_status = 'occupied' WHERE room_id = ?", (room_id,))
    db.execute("UPDATE reservations SET room_id = ? WHERE res_id = ?", (room_id, res_id))
    return db.require("reservations", res_id)


def folio_totals(db: Database, res_id: str) -> tuple[float, float]:
    """(charges, payments) of a stay in USD, both positive."""
    charges = db.scalar("SELECT COALESCE(sum(amount), 0) FROM folio_charges WHERE res_id = ? AND amount > 0", (res_id,))
    payments = db.scalar(
        "SELECT COALESCE(-sum(amount), 0) FROM folio_charges WHERE res_id = ? AND amount < 0", (res_id,)
    )
    return cents(charges), cents(payments)


def get_folio(db: Database, res_id: str) -> dict[str, Any]:
    """Every line of the stay's bill and what is still due."""
    lines = db.all("SELECT * FROM folio_charges WHERE res_id = ? ORDER BY posted_at, rowid", (res_id,))
    charges, payments = folio_totals(db, res_id)
    return {
        "res_id": res_id,
        "charges": lines,
        "total_charges": charges,
        "total_payments": payments,
        "balance": cents(charges - payments),
    }


def _post(db: Database, res_id: str, category: str, description: str, amount: float) -> None:
    db.insert(
        "folio_charges",
        {
            "charge_id": db.next_id("folio_charges"),
            "res_id": res_id,
            "posted_at": db.now,
            "category": category,
            "description": description,
            "amount": cents(amount),
        },
    )


def check_out(db: Database, res_id: str, payment_method: str) -> dict[str, Any]:
    """Post room nights and city tax up to today, settle the balance, free the room for housekeeping."""
    stay = db.require("reservations", res_id)
    hotel = db.require("hotels", stay["hotel_id"])
    room = db.require("rooms", stay["room_id"])
    today = db.scalar("SELECT date(?)", (db.now,))
    nights = max(1, db.scalar("SELECT CAST(julianday(?) - julianday(?) AS INTEGER)", (today, stay["arrival_date"])))
    extras, _ = folio_totals(db, res_id)
    room_total = cents(nights * stay["nightly_rate"])
    city_tax = cents(nights * hotel["city_tax_per_night"])
    _post(db, res_id, "room", f"Room {room['number']}, {nights} night(s) at {stay['nightly_rate']:.2f}", room_total)
    _post(db, res_id, "city_tax", f"City tax, {nights} night(s)", city_tax)
    charges, payments = folio_totals(db, res_id)
    due = cents(charges - payments)
    _post(db, res_id, "payment", f"Payment by {payment_method.replace('_', ' ')}", -due)
    departure = min(stay["departure_date"], today)
    db.execute(
        "UPDATE reservations SET status = 'checked_out', checked_out_at = ?, departure_date = ? WHERE res_id = ?",
        (db.now, departure, res_id),
    )
    db.execute("UPDATE rooms SET housekeeping_status = 'vacant_dirty' WHERE room_id = ?", (stay["room_id"],))
    return {
        "res_id": res_id,
        "nights": nights,
        "room_total": room_total,
        "city_tax": city_tax,
        "extras_total": extras,
        "amount_paid": due,
        "payment_method": payment_method,
    }


FREE_CANCELLATION_DAYS = 2  # cancel at least this many days before arrival for free (policy.md)


def _late_fee(db: Database, stay: dict[str, Any]) -> tuple[str, float]:
    """(last free cancellation date, fee if cancelled today): a late cancellation costs the first night
    at the agreed rate plus one night of city tax."""
    hotel = db.require("hotels", stay["hotel_id"])
    free_until = db.scalar("SELECT date(?, ?)", (stay["arrival_date"], f"-{FREE_CANCELLATION_DAYS} days"))
    today = db.scalar("SELECT date(?)", (db.now,))
    fee = 0.0 if today <= free_until else cents(stay["nightly_rate"] + hotel["city_tax_per_night"])
    return free_until, fee


def quote_stay(
    db: Database, type_id: str, arrival_date: str, departure_date: str, adults: int, guest_id: str | None = None
) -> dict[str, Any]:
    """Price a stay in a room type before booking: the rate the guest would get, the totals, how many
    rooms of the type are free for every night, and what cancelling would cost."""
    room_type = db.require("room_types", type_id)
    hotel = db.require("hotels", room_type["hotel_id"])
    tier = db.require("guests", guest_id)["loyalty_tier"] if guest_id else "none"
    rate = discounted_rate(room_type["nightly_rate"], tier)
    nights = db.scalar("SELECT CAST(julianday(?) - julianday(?) AS INTEGER)", (departure_date, arrival_date))
    free = db.scalar(
        "SELECT count(*) FROM rooms r WHERE r.type_id = ? AND r.housekeeping_status != 'out_of_order'"
        " AND NOT EXISTS (SELECT 1 FROM reservations s WHERE s.room_id = r.room_id"
        " AND s.status IN ('confirmed', 'checked_in') AND s.arrival_date < ? AND ? < s.departure_date)",
        (type_id, departure_date, arrival_date),
    )
    room_total = cents(nights * rate)
    city_tax = cents(nights * hotel["city_tax_per_night"])
    free_until, _ = _late_fee(db, {"hotel_id": hotel["hotel_id"], "arrival_date": arrival_date, "nightly_rate": rate})
    return {
        "type_id": type_id,
        "hotel_id": hotel["hotel_id"],
        "nights": nights,
        "base_rate": room_type["nightly_rate"],
        "loyalty_discount_percent": LOYALTY_DISCOUNT_PERCENT[tier],
        "nightly_rate": rate,
        "room_total": room_total,
        "city_tax": city_tax,
        "total": cents(room_total + city_tax),
        "rooms_available": free,
        "free_cancellation_until": free_until,
        "late_cancellation_fee": cents(rate + hotel["city_tax_per_night"]),
    }


def change_reservation_dates(db: Database, res_id: str, arrival_date: str, departure_date: str) -> dict[str, Any]:
    """Move a confirmed stay to new dates in the same room at the agreed nightly rate; the room total
    is recomputed for the new number of nights."""
    stay = db.require("reservations", res_id)
    nights_before = db.scalar(
        "SELECT CAST(julianday(?) - julianday(?) AS INTEGER)", (stay["departure_date"], stay["arrival_date"])
    )
    nights = db.scalar("SELECT CAST(julianday(?) - julianday(?) AS INTEGER)", (departure_date, arrival_date))
    db.execute(
        "UPDATE reservations SET arrival_date = ?, departure_date = ? WHERE res_id = ?",
        (arrival_date, departure_date, res_id),
    )
    before = cents(nights_before * stay["nightly_rate"])
    after = cents(nights * stay["nightly_rate"])
    return {
        "res_id": res_id,
        "room_id": stay["room_id"],
        "arrival_date": arrival_date,
        "departure_date": departure_date,
        "nights": nights,
        "nightly_rate": stay["nightly_rate"],
        "room_total": after,
        "previous_room_total": before,
        "difference": cents(after - before),
    }


def get_cancellation_fee(db: Database, res_id: str) -> dict[str, Any]:
    """What cancelling the reservation today would cost, by the cancellation policy."""
    stay = db.require("reservations", res_id)
    free_until, fee = _late_fee(db, stay)
    return {"res_id": res_id, "free_cancellation_until": free_until, "fee": fee, "free": fee == 0}


def cancel_reservation(db: Database, res_id: str, cancel_reason: str) -> dict[str, Any]:
    """Cancel the stay; a late cancellation posts the fee to the reservation's folio."""
    stay = db.require("reservations", res_id)
    _, fee = _late_fee(db, stay)
    if fee > 0:
        _post(db, res_id, "cancellation_fee", "Late cancellation: first night and city tax", fee)
    db.execute(
        "UPDATE reservations SET status = 'cancelled', cancelled_at = ?, cancel_reason = ? WHERE res_id = ?",
        (db.now, cancel_reason, res_id),
    )
    return db.require("reservations", res_id)
