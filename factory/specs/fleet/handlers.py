"""Custom behaviour of the fleet server (copied into servers/fleet/ by the factory).

Scheduling derives the planned arrival from the route's duration; the spec's rules (run before this)
already checked the vehicle, the driver's licence and both schedules against that same end time.
"""

from datetime import UTC, datetime, timedelta
from typing import Any

from envfarm.servers.runtime.database import Database


def schedule_trip(
    db: Database, route_id: str, vehicle_id: str, driver_id: str, scheduled_start: str, cargo: str
) -> dict[str, Any]:
    """Book the trip from scheduled_start to scheduled_start + the route's duration (UTC, ISO 8601)."""
    route = db.require("routes", route_id)
    start = datetime.fromisoformat(scheduled_start)  # the runtime refuses a time that is not a real one
    start = start.replace(tzinfo=UTC) if start.tzinfo is None else start.astimezone(UTC)
    end = start + timedelta(minutes=route["duration_minutes"])
    trip_id = db.next_id("trips")
    db.insert(
        "trips",
        {
            "trip_id": trip_id,
            "route_id": route_id,
            "vehicle_id": vehicle_id,
            "driver_id": driver_id,
            "cargo": cargo,
            "scheduled_start": start.isoformat().replace("+00:00", "Z"),
            "scheduled_end": end.isoformat().replace("+00:00", "Z"),
            "status": "scheduled",
            "actual_start": None,
            "actual_end": None,
            "start_odometer_km": None,
            "end_odometer_km": None,
        },
    )
    return db.require("trips", trip_id)
