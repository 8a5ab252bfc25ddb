"""Custom behaviour of the warehouse server (copied into servers/warehouse/ by the factory).

Put-away adds units to the stock record of a bin and SKU, creating the record the first time that SKU
lands in that bin; the spec's rules have checked the receipt, the warehouse and the bin's capacity.
"""

from typing import Any

from envfarm.servers.runtime.database import Database


def _put_away(db: Database, bin_id: str, sku_id: str, quantity: int) -> None:
    """Increase the bin's stock of the SKU, or open a stock record for it."""
    changed = db.execute(
        "UPDATE stock_levels SET quantity = quantity + ? WHERE bin_id = ? AND sku_id = ?", (quantity, bin_id, sku_id)
    )
    if not changed:
        warehouse_id = db.scalar("SELECT warehouse_id FROM bins WHERE bin_id = ?", (bin_id,))
        db.insert(
            "stock_levels",
            {
                "stock_id": db.next_id("stock_levels"),
                "warehouse_id": warehouse_id,
                "bin_id": bin_id,
                "sku_id": sku_id,
                "quantity": quantity,
                "last_counted_at": None,
            },
        )


def get_bin_usage(db: Database, bin_id: str) -> dict[str, Any]:
    """Capacity against contents, so an agent can choose a put-away bin that fits."""
    bin_ = db.require("bins", bin_id)
    rows = db.all("SELECT * FROM stock_levels WHERE bin_id = ? ORDER BY rowid", (bin_id,))
    used = sum(r["quantity"] for r in rows)
    return {
        "bin_id": bin_id,
        "bin_code": bin_["bin_code"],
        "capacity_units": bin_["capacity_units"],
        "used_units": used,
        "free_units": bin_["capacity_units"] - used,
        "stock": rows,
    }


def receive_receipt_line(db: Database, line_id: str, quantity: int, bin_id: str) -> dict[str, Any]:
    """Count the arrived units on the line and put them away in the bin."""
    line = db.require("receipt_lines", line_id)
    db.execute("UPDATE receipt_lines SET received_qty = received_qty + ? WHERE line_id = ?", (quantity, line_id))
    _put_away(db, bin_id, line["sku_id"], quantity)
    return db.require("receipt_lines", line_id)


def receive_transfer(db: Database, transfer_id: str, bin_id: str) -> dict[str, Any]:
    """Put the transferred units away at the destination and close the transfer."""
    transfer = db.require("transfers", transfer_id)
    _put_away(db, bin_id, transfer["sku_id"], transfer["quantity"])
    db.execute(
        "UPDATE transfers SET status = 'received', to_bin_id = ?, received_at = ? WHERE transfer_id = ?",
        (bin_id, db.now, transfer_id),
    )
    return db.require("transfers", transfer_id)
