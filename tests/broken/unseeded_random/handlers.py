"""Fault: unseeded randomness, so replaying the same calls gives different codes."""

import random

from envfarm.servers.runtime.database import Database


def issue_pickup_code(db: Database, loan_id: str) -> dict:
    db.require("loans", loan_id)
    db.execute("UPDATE loans SET pickup_code = ? WHERE loan_id = ?", (f"{random.getrandbits(32):08x}", loan_id))
    return db.require("loans", loan_id)
