"""Custom behaviour of grocery_delivery: checkout and window changes touch several tables at once.

The spec's rules have already run when these are called (open cart, future window with room, stock),
so the handlers only do the bookkeeping, inside the call's single transaction.
"""

from envfarm.servers.runtime.database import Database


def checkout_cart(
    db: Database,
    cart_id: str,
    window_id: str,
    delivery_address: str | None = None,
    delivery_notes: str | None = None,
) -> dict:
    """Turn the cart into an order at current prices: fee below the threshold, stock taken, window booked."""
    cart = db.require("carts", cart_id)
    store = db.require("stores", cart["store_id"])
    customer = db.require("customers", cart["customer_id"])
    items = db.all(
        "SELECT i.product_id, i.quantity, i.allow_substitution, p.price FROM cart_items i"
        " JOIN products p ON p.product_id = i.product_id WHERE i.cart_id = ? ORDER BY i.rowid",
        (cart_id,),
    )
    line_totals = [round(item["price"] * item["quantity"], 2) for item in items]
    subtotal = round(sum(line_totals), 2)
    fee = 0.0 if subtotal >= store["free_delivery_over"] else store["delivery_fee"]
    order_id = db.next_id("orders")
    db.insert(
        "orders",
        {
            "order_id": order_id,
            "customer_id": cart["customer_id"],
            "store_id": cart["store_id"],
            "cart_id": cart_id,
            "window_id": window_id,
            "status": "placed",
            "subtotal": subtotal,
            "delivery_fee": fee,
            "total": round(subtotal + fee, 2),
            "delivery_address": delivery_address or customer["address"],
            "delivery_notes": delivery_notes,
            "placed_at": db.now,
        },
    )
    for item in items:
        db.insert(
            "order_items",
            {
                "order_item_id": db.next_id("order_items"),
                "order_id": order_id,
                "product_id": item["product_id"],
                "quantity": item["quantity"],
                "unit_price": item["price"],
                "line_total": round(item["price"] * item["quantity"], 2),
                "allow_substitution": item["allow_substitution"],
            },
        )
        db.execute("UPDATE products SET stock = stock - ? WHERE product_id = ?", (item["quantity"], item["product_id"]))
    db.execute("UPDATE delivery_windows SET booked = booked + 1 WHERE window_id = ?", (window_id,))
    db.execute("UPDATE carts SET status = 'checked_out' WHERE cart_id = ?", (cart_id,))
    return db.require("orders", order_id)


def change_delivery_window(db: Database, order_id: str, window_id: str) -> dict:
    """Release the old window's slot and book the new one (a no-op when it is the same window)."""
    order = db.require("orders", order_id)
    if order["window_id"] != window_id:
        db.execute("UPDATE delivery_windows SET booked = booked - 1 WHERE window_id = ?", (order["window_id"],))
        db.execute("UPDATE delivery_windows SET booked = booked + 1 WHERE window_id = ?", (window_id,))
        db.execute("UPDATE orders SET window_id = ? WHERE order_id = ?", (window_id, order_id))
    return db.require("orders", order_id)
