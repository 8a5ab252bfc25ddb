"""Custom behaviour of the car rental server: availability, reservations and billing at return.

The spec's rules have already rejected invalid calls (age, licence, overlaps, one-way...) when these run.
"""

import math
from typing import Any

from envfarm.servers.runtime.database import Database

ONE_WAY_FEE = 75.0
FUEL_CHARGE = 65.0
GRACE_HOURS = 59 / 60
CONFIRMATION_MULTIPLIER = 3571


def confirmation_code(number: int) -> str:
    """A short code for the driver; multiplying by a number coprime to 100000 keeps codes unique."""
    return f"RA{number * CONFIRMATION_MULTIPLIER % 100000:05d}"


def rental_days(db: Database, pickup_at: str, returned_at: str) -> int:
    """Started 24-hour periods after 59 minutes of grace; at least one. SQLite parses both times, so any
    ISO form the caller used (with or without a zone) works."""
    hours = db.scalar("SELECT (julianday(?) - julianday(?)) * 24", (returned_at, pickup_at))
    return max(1, math.ceil(round(hours - GRACE_HOURS, 6) / 24))


def search_available_vehicles(
    db: Database, branch_id: str, pickup_at: str, return_due_at: str, class_id: str | None = None
) -> dict[str, Any]:
    """Cars at the branch, in service, with no reserved or active rental overlapping the period; cars booked
    on a one-way trip away from the branch are not offered there."""
    vehicles = db.all(
        "SELECT v.* FROM vehicles v JOIN vehicle_classes c ON c.class_id = v.class_id"
        " WHERE v.branch_id = ? AND v.status IN ('available', 'rented') AND (? IS NULL OR v.class_id = ?)"
        " AND NOT EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = v.vehicle_id"
        " AND r.status IN ('reserved', 'active')"
        " AND julianday(r.pickup_at) < julianday(?) AND julianday(?) < julianday(r.return_due_at))"
        " AND NOT EXISTS (SELECT 1 FROM rentals o WHERE o.vehicle_id = v.vehicle_id"
        " AND o.status IN ('reserved', 'active')"
        " AND o.dropoff_branch_id != v.branch_id)"
        " ORDER BY c.daily_rate, v.rowid",
        (branch_id, class_id, class_id, return_due_at, pickup_at),
    )
    class_ids = {v["class_id"] for v in vehicles}
    classes = [c for c in db.all("SELECT * FROM vehicle_classes ORDER BY rowid") if c["class_id"] in class_ids]
    return {"branch_id": branch_id, "vehicles": vehicles, "classes": classes}


def create_rental(
    db: Database, driver_id: str, vehicle_id: str, dropoff_branch_id: str, pickup_at: str, return_due_at: str
) -> dict[str, Any]:
    """Reserve the car from its current branch at its class's daily rate."""
    vehicle = db.require("vehicles", vehicle_id)
    vehicle_class = db.require("vehicle_classes", vehicle["class_id"])
    rental_id = db.next_id("rentals")
    db.insert(
        "rentals",
        {
            "rental_id": rental_id,
            "confirmation_code": confirmation_code(db.id_number("rentals")),
            "driver_id": driver_id,
            "vehicle_id": vehicle_id,
            "pickup_branch_id": vehicle["branch_id"],
            "dropoff_branch_id": dropoff_branch_id,
            "pickup_at": pickup_at,
            "return_due_at": return_due_at,
            "daily_rate": vehicle_class["daily_rate"],
            "status": "reserved",
        },
    )
    return db.require("rentals", rental_id)


def return_vehicle(
    db: Database, rental_id: str, return_branch_id: str, odometer_km: int, fuel_full: bool
) -> dict[str, Any]:
    """Bill the rental up to now and put the car back in service at the return branch."""
    rental = db.require("rentals", rental_id)
    days = rental_days(db, rental["pickup_at"], db.now)
    per_day = db.scalar(
        "SELECT COALESCE(sum(quantity * daily_price), 0) FROM rental_extras WHERE rental_id = ?", (rental_id,)
    )
    rental_charge = round(days * rental["daily_rate"], 2)
    extras_charge = round(days * per_day, 2)
    one_way_fee = ONE_WAY_FEE if return_branch_id != rental["pickup_branch_id"] else 0.0
    fuel_charge = 0.0 if fuel_full else FUEL_CHARGE
    total = round(rental_charge + extras_charge + one_way_fee + fuel_charge, 2)
    db.execute(
        "UPDATE rentals SET status = 'returned', returned_at = ?, return_branch_id = ?, odometer_in = ?,"
        " total_charged = ?"
        " WHERE rental_id = ?",
        (db.now, return_branch_id, odometer_km, total, rental_id),
    )
    db.execute(
        "UPDATE vehicles SET status = 'available', branch_id = ?, odometer_km = ? WHERE vehicle_id = ?",
        (return_branch_id, odometer_km, rental["vehicle_id"]),
    )
    return {
        "rental_id": rental_id,
        "days": days,
        "rental_charge": rental_charge,
        "extras_charge": extras_charge,
        "one_way_fee": one_way_fee,
        "fuel_charge": fuel_charge,
        "total_charged": total,
        "km_driven": odometer_km - rental["odometer_out"],
    }
