"""Custom behaviour of marketplace: accepting an offer and buying a label each change several tables.

The spec's rules have already checked that the offer is pending and unexpired (a pending offer always
sits on an active listing: selling or withdrawing a listing declines its pending offers), or that the
sale awaits shipment, so these handlers only do the bookkeeping inside the call's transaction.
"""

from envfarm.servers.runtime.database import Database

# Carrier tariffs in USD: (base price, price per kg); express costs 60% more.
TARIFFS = {"parcelpost": (4.5, 0.9), "swiftship": (5.9, 1.1), "greenlane": (3.9, 0.8)}
EXPRESS_FACTOR = 1.6


def accept_offer(db: Database, offer_id: str) -> dict:
    """Sell the listing at the offered price: sale created, listing sold, competing offers declined."""
    offer = db.require("offers", offer_id)
    listing = db.require("listings", offer["listing_id"])
    sale_id = db.next_id("sales")
    db.insert(
        "sales",
        {
            "sale_id": sale_id,
            "listing_id": listing["listing_id"],
            "offer_id": offer_id,
            "buyer_id": offer["buyer_id"],
            "seller_id": listing["seller_id"],
            "price": offer["amount"],
            "sold_at": db.now,
            "status": "awaiting_shipment",
        },
    )
    db.execute("UPDATE offers SET status = 'accepted' WHERE offer_id = ?", (offer_id,))
    db.execute(
        "UPDATE offers SET status = 'declined' WHERE listing_id = ? AND status = 'pending' AND offer_id != ?",
        (listing["listing_id"], offer_id),
    )
    db.execute("UPDATE listings SET status = 'sold' WHERE listing_id = ?", (listing["listing_id"],))
    return db.require("sales", sale_id)


def create_shipping_label(db: Database, sale_id: str, carrier: str, service: str, weight_kg: float) -> dict:
    """Price the label from the carrier tariff, give it a tracking number and mark the sale shipped."""
    base, per_kg = TARIFFS[carrier]
    cost = (base + per_kg * weight_kg) * (EXPRESS_FACTOR if service == "express" else 1.0)
    label_id = db.next_id("shipping_labels")
    number = db.id_number("shipping_labels")
    db.insert(
        "shipping_labels",
        {
            "label_id": label_id,
            "sale_id": sale_id,
            "carrier": carrier,
            "service": service,
            "weight_kg": weight_kg,
            "cost": round(cost, 2),
            "tracking_number": f"{carrier[:2].upper()}{7000100 + (number - 1) * 37:09d}",
            "created_at": db.now,
            "status": "created",
        },
    )
    db.execute("UPDATE sales SET status = 'shipped' WHERE sale_id = ?", (sale_id,))
    return db.require("shipping_labels", label_id)
