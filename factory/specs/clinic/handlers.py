"""Custom behaviour of the clinic server (copied into servers/clinic/ by the factory)."""

from envfarm.servers.runtime.database import Database


def reschedule_appointment(db: Database, appointment_id: str, slot_id: str) -> dict:
    """Move the appointment to the new slot; free the old slot and take the new one."""
    appointment = db.require("appointments", appointment_id)
    db.execute("UPDATE slots SET is_free = 1 WHERE slot_id = ?", (appointment["slot_id"],))
    db.execute("UPDATE slots SET is_free = 0 WHERE slot_id = ?", (slot_id,))
    db.execute("UPDATE appointments SET slot_id = ? WHERE appointment_id = ?", (slot_id, appointment_id))
    return db.require("appointments", appointment_id)
