"""Custom behaviour of the tour booking server: booking seats, changing them, and refunds.

The spec's rules have already rejected invalid calls (full departure, 48-hour limit, wrong status...) when
these run.
"""

from typing import Any

from envfarm.servers.runtime.database import Database

REF_MULTIPLIER = 7207


def booking_ref(number: int) -> str:
    """A short reference for the traveller; multiplying by a number coprime to 100000 keeps it unique."""
    return f"TB-{number * REF_MULTIPLIER % 100000:05d}"


def _price(db: Database, departure_id: str) -> float:
    return db.scalar(
        "SELECT t.price_per_person FROM departures d JOIN tours t ON t.tour_id = d.tour_id WHERE d.departure_id = ?",
        (departure_id,),
    )


def _refund(db: Database, booking_id: str, amount: float, reason: str) -> str:
    refund_id = db.next_id("refunds")
    db.insert(
        "refunds",
        {
            "refund_id": refund_id,
            "booking_id": booking_id,
            "amount": round(amount, 2),
            "reason": reason,
            "refunded_at": db.now,
        },
    )
    return refund_id


def book_tour(db: Database, traveller_id: str, departure_id: str, seats: int) -> dict[str, Any]:
    """Take the seats and charge seats times the price per person."""
    booking_id = db.next_id("bookings")
    db.insert(
        "bookings",
        {
            "booking_id": booking_id,
            "booking_ref": booking_ref(db.id_number("bookings")),
            "traveller_id": traveller_id,
            "departure_id": departure_id,
            "seats": seats,
            "total_price": round(seats * _price(db, departure_id), 2),
            "status": "confirmed",
            "booked_at": db.now,
        },
    )
    db.execute("UPDATE departures SET seats_booked = seats_booked + ? WHERE departure_id = ?", (seats, departure_id))
    return db.require("bookings", booking_id)


def change_seats(db: Database, booking_id: str, seats: int) -> dict[str, Any]:
    """Resize the booking; removed seats are refunded at the price per person."""
    booking = db.require("bookings", booking_id)
    price = _price(db, booking["departure_id"])
    difference = seats - booking["seats"]
    if difference < 0:
        _refund(db, booking_id, -difference * price, f"{-difference} seat(s) removed")
    db.execute(
        "UPDATE bookings SET seats = ?, total_price = ? WHERE booking_id = ?",
        (seats, round(seats * price, 2), booking_id),
    )
    db.execute(
        "UPDATE departures SET seats_booked = seats_booked + ? WHERE departure_id = ?",
        (difference, booking["departure_id"]),
    )
    return db.require("bookings", booking_id)


def _cancel(db: Database, booking: dict[str, Any], reason: str) -> str:
    db.execute(
        "UPDATE bookings SET status = 'cancelled', cancelled_at = ? WHERE booking_id = ?",
        (db.now, booking["booking_id"]),
    )
    db.execute(
        "UPDATE departures SET seats_booked = seats_booked - ? WHERE departure_id = ?",
        (booking["seats"], booking["departure_id"]),
    )
    return _refund(db, booking["booking_id"], booking["total_price"], reason)


def cancel_booking(db: Database, booking_id: str, reason: str) -> dict[str, Any]:
    """Cancel, free the seats and refund the full price."""
    booking = db.require("bookings", booking_id)
    refund_id = _cancel(db, booking, reason)
    return db.require("refunds", refund_id)


def cancel_departure(db: Database, departure_id: str, reason: str) -> dict[str, Any]:
    """Cancel the departure and refund every confirmed booking on it in full."""
    bookings = db.all(
        "SELECT * FROM bookings WHERE departure_id = ? AND status = 'confirmed' ORDER BY rowid", (departure_id,)
    )
    for booking in bookings:
        _cancel(db, booking, f"departure cancelled by the operator: {reason}")
    db.execute("UPDATE departures SET status = 'cancelled' WHERE departure_id = ?", (departure_id,))
    return {
        "departure_id": departure_id,
        "bookings_cancelled": len(bookings),
        "total_refunded": round(sum(b["total_price"] for b in bookings), 2),
    }
