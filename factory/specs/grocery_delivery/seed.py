"""Seed rows of grocery_delivery: 6 stores, 108 products, 108 delivery windows, 40 customers
(the farm's shared cast), carts with items, 45 orders with their items, and substitutions.

A few rows are placed on purpose so the spec's rule examples hit exactly one rule each:
- cart crt_0001 is open but empty; crt_0002 holds one product beyond its current stock;
  crt_0003 is below the store's minimum order; crt_0004.. are ordinary open carts;
- window win_0012 (store sto_01, tomorrow 18:00) is fully booked; win_0001 is in the past;
- orders: the first orders of store sto_01 sit in today's first window and are out for delivery.
"""

import random
from datetime import datetime, timedelta
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.world.cast import community

STORE_CITIES = ["Lisbon", "Berlin", "Toronto", "Austin", "Dublin", "Seattle"]
CATALOG = [
    # (name, category, unit, base price, organic)
    ("Bananas", "produce", "kg", 1.29, False),
    ("Gala apples", "produce", "kg", 2.99, False),
    ("Organic baby spinach 200g", "produce", "pack", 2.49, True),
    ("Hass avocado", "produce", "each", 1.19, False),
    ("Cherry tomatoes 250g", "produce", "pack", 3.49, False),
    ("Organic carrots", "produce", "kg", 1.79, True),
    ("Lemons", "produce", "each", 0.59, False),
    ("Whole milk 1L", "dairy", "bottle", 1.39, False),
    ("Organic whole milk 1L", "dairy", "bottle", 1.89, True),
    ("Greek yogurt 500g", "dairy", "pack", 3.29, False),
    ("Cheddar cheese 200g", "dairy", "pack", 4.19, False),
    ("Free-range eggs x12", "dairy", "pack", 3.99, False),
    ("Salted butter 250g", "dairy", "pack", 2.89, False),
    ("Sourdough loaf", "bakery", "loaf", 4.50, False),
    ("Whole wheat bread", "bakery", "loaf", 2.79, False),
    ("Butter croissants x4", "bakery", "pack", 3.80, False),
    ("Chicken breast 500g", "meat_fish", "pack", 6.49, False),
    ("Salmon fillet 300g", "meat_fish", "pack", 8.99, False),
    ("Ground beef 500g", "meat_fish", "pack", 5.99, False),
    ("Basmati rice 1kg", "pantry", "pack", 3.19, False),
    ("Spaghetti 500g", "pantry", "pack", 1.59, False),
    ("Extra virgin olive oil 750ml", "pantry", "bottle", 8.49, False),
    ("Organic rolled oats 1kg", "pantry", "pack", 2.69, True),
    ("Crunchy peanut butter", "pantry", "jar", 3.59, False),
    ("Frozen garden peas 1kg", "frozen", "pack", 2.29, False),
    ("Vanilla ice cream 1L", "frozen", "tub", 4.99, False),
    ("Orange juice 1L", "beverages", "bottle", 2.99, False),
    ("Sparkling water 6x1L", "beverages", "pack", 3.49, False),
    ("Ground coffee 250g", "beverages", "pack", 5.49, False),
    ("Dish soap 500ml", "household", "bottle", 2.19, False),
    ("Paper towels x6", "household", "pack", 5.99, False),
]
WINDOW_HOURS = (9, 13, 18)
NOTES = [None, None, "Leave at the front door", "Ring twice", "Call on arrival", "Back entrance please"]
SUB_REASONS = ["out of stock at picking", "damaged in store", "short delivery from supplier"]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    people = community(40)
    customers: list[dict[str, Any]] = [
        {
            "customer_id": f"cus_{i:04d}",
            "full_name": p["full_name"],
            "email": p["email"],
            "phone": p["phone"],
            "address": fakedata.replaced(rng, fakedata.address, p["address"]),
        }
        for i, p in enumerate(people, start=1)
    ]
    stores: list[dict[str, Any]] = [
        {
            "store_id": f"sto_{i:02d}",
            "name": f"FreshCart {city}",
            "city": city,
            "address": fakedata.address(rng).rsplit(",", 1)[0] + f", {city}",
            "delivery_fee": rng.choice([3.99, 4.49, 4.99, 5.99]),
            "free_delivery_over": 50.0,
            "minimum_order": 15.0,
        }
        for i, city in enumerate(STORE_CITIES, start=1)
    ]

    products: list[dict] = []
    by_store: dict[str, list[dict]] = {}
    for store in stores:
        picks = sorted(rng.sample(range(len(CATALOG)), 18))
        for k, index in enumerate(picks):
            name, category, unit, price, organic = CATALOG[index]
            row = {
                "product_id": f"prd_{len(products) + 1:04d}",
                "store_id": store["store_id"],
                "name": name,
                "category": category,
                "unit": unit,
                "price": round(price * rng.uniform(0.92, 1.1), 2),
                # Every store has a product or two sold out and a few low on stock.
                "stock": 0 if k in (4, 11) else (rng.randrange(1, 4) if k % 5 == 1 else rng.randrange(12, 80)),
                "is_organic": organic,
            }
            products.append(row)
            by_store.setdefault(store["store_id"], []).append(row)

    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    windows: list[dict] = []
    by_store_windows: dict[str, list[dict]] = {}
    for store in stores:
        for day_offset in range(-2, 4):
            for hour in WINDOW_HOURS:
                start = midnight + timedelta(days=day_offset, hours=hour)
                row = {
                    "window_id": f"win_{len(windows) + 1:04d}",
                    "store_id": store["store_id"],
                    "starts_at": _iso(start),
                    "ends_at": _iso(start + timedelta(hours=2)),
                    "capacity": rng.randrange(4, 8),
                    "booked": 0,
                }
                windows.append(row)
                by_store_windows.setdefault(store["store_id"], []).append(row)
    # sto_01's windows are win_0001..win_0018, three a day from two days ago; tomorrow 18:00 is win_0012.
    full_window = by_store_windows["sto_01"][3 * 3 + 2]
    full_window["capacity"] = 3

    carts: list[dict] = []
    cart_items: list[dict] = []
    orders: list[dict] = []
    order_items: list[dict] = []
    substitutions: list[dict] = []

    def new_cart(customer: dict, store: dict, status: str, created: datetime) -> dict:
        cart = {
            "cart_id": f"crt_{len(carts) + 1:04d}",
            "customer_id": customer["customer_id"],
            "store_id": store["store_id"],
            "status": status,
            "created_at": _iso(created),
        }
        carts.append(cart)
        return cart

    def add_item(cart: dict, product: dict, quantity: int) -> None:
        cart_items.append(
            {
                "cart_item_id": f"cit_{len(cart_items) + 1:04d}",
                "cart_id": cart["cart_id"],
                "product_id": product["product_id"],
                "quantity": quantity,
                "allow_substitution": rng.random() < 0.7,
            }
        )

    def stocked(store: dict, least: int) -> list[dict]:
        return [p for p in by_store[store["store_id"]] if p["stock"] >= least]

    # Open carts: 26 of them for distinct customers. The first three are the rule examples.
    open_owners = customers[:26]
    for n, customer in enumerate(open_owners):
        store = stores[n % len(stores)]
        cart = new_cart(customer, store, "open", now - timedelta(hours=rng.randrange(1, 72)))
        if n == 0:
            continue  # crt_0001: empty
        if n == 1:  # crt_0002: one product beyond its stock (it sold out since it was added)
            low = next(p for p in by_store[store["store_id"]] if p["stock"] == 0)
            add_item(cart, low, 2)
            add_item(cart, stocked(store, 20)[0], 3)
            continue
        if n == 2:  # crt_0003: one cheap item, below the minimum order
            cheapest = min(stocked(store, 10), key=lambda p: p["price"])
            add_item(cart, cheapest, 1)
            continue
        for product in rng.sample(stocked(store, 12), rng.randrange(3, 6)):
            add_item(cart, product, rng.randrange(2, 5))

    # Orders: status follows the delivery window's time.
    def place(customer: dict, store: dict, window: dict, status: str) -> None:
        start = datetime.fromisoformat(window["starts_at"])
        placed = min(start - timedelta(hours=rng.randrange(14, 60)), now - timedelta(hours=rng.randrange(1, 30)))
        cart = new_cart(customer, store, "checked_out", placed - timedelta(hours=1))
        order_id = f"ord_{len(orders) + 1:04d}"
        subtotal = 0.0
        for product in rng.sample(stocked(store, 1), rng.randrange(3, 8)):
            quantity = rng.randrange(1, 5)
            add_item(cart, product, quantity)
            line_total = round(product["price"] * quantity, 2)
            subtotal = round(subtotal + line_total, 2)
            order_items.append(
                {
                    "order_item_id": f"oit_{len(order_items) + 1:04d}",
                    "order_id": order_id,
                    "product_id": product["product_id"],
                    "quantity": quantity,
                    "unit_price": product["price"],
                    "line_total": line_total,
                    "allow_substitution": cart_items[-1]["allow_substitution"],
                }
            )
        fee = 0.0 if subtotal >= store["free_delivery_over"] else store["delivery_fee"]
        orders.append(
            {
                "order_id": order_id,
                "customer_id": customer["customer_id"],
                "store_id": store["store_id"],
                "cart_id": cart["cart_id"],
                "window_id": window["window_id"],
                "status": status,
                "subtotal": subtotal,
                "delivery_fee": fee,
                "total": round(subtotal + fee, 2),
                "delivery_address": customer["address"],
                "delivery_notes": rng.choice(NOTES),
                "placed_at": _iso(placed),
                "cancel_reason": "changed plans" if status == "cancelled" else None,
            }
        )
        if status != "cancelled":
            window["booked"] += 1

    # The special orders of sto_01 first: two out for delivery today 09:00, then the full window.
    # They go to people of the store's city, as every order does (a Lisbon store delivers in Lisbon)
    sto_01 = stores[0]
    # (those without an open cart there, so an open cart stays a customer's only cart: some order twice)
    near = [c for c in customers[len(open_owners) :] if c["address"].endswith(f", {sto_01['city']}")]
    near = [near[k % len(near)] for k in range(7)]
    today_first = by_store_windows["sto_01"][2 * 3]
    place(near[0], sto_01, today_first, "out_for_delivery")
    place(near[1], sto_01, today_first, "out_for_delivery")
    for k in range(3):
        place(near[2 + k], sto_01, full_window, "placed")
    place(near[5], sto_01, by_store_windows["sto_01"][0], "delivered")
    place(near[6], sto_01, by_store_windows["sto_01"][4], "cancelled")

    while len(orders) < 45:
        store = rng.choice(stores)
        window = rng.choice(by_store_windows[store["store_id"]])
        if window is full_window or window["booked"] >= window["capacity"] - 1:
            continue
        start = window["starts_at"]
        if window["ends_at"] <= _iso(now):
            status = "cancelled" if rng.random() < 0.15 else "delivered"
        elif start[:10] == _iso(now)[:10]:
            status = "out_for_delivery" if start[11:13] == "09" else "picking"
        else:
            status = "placed"
        drawn = customers.index(rng.choice(customers))  # the draw of the old pick: later rows keep their values
        local = [c for c in customers if c["address"].endswith(f", {store['city']}")] or customers
        place(local[drawn % len(local)], store, window, status)  # people shop at a store of their own city

    # Substitutions proposed while picking (before the window starts): a same-category product of the store.
    picked_before = {w["window_id"]: datetime.fromisoformat(w["starts_at"]) for w in windows}
    for item in order_items:
        order = next(o for o in orders if o["order_id"] == item["order_id"])
        if order["status"] not in ("picking", "out_for_delivery", "delivered") or len(substitutions) >= 24:
            continue
        if rng.random() > 0.45:
            continue
        original = next(p for p in products if p["product_id"] == item["product_id"])
        options = [
            p
            for p in by_store[order["store_id"]]
            if p["category"] == original["category"] and p["product_id"] != original["product_id"] and p["stock"] > 0
        ]
        if not options:
            continue
        # The picker asked while picking; orders that left the store have every answer in.
        answered = order["status"] != "picking" or rng.random() < 0.35
        substitutions.append(
            {
                "substitution_id": f"sub_{len(substitutions) + 1:04d}",
                "order_id": order["order_id"],
                "order_item_id": item["order_item_id"],
                "original_product_id": original["product_id"],
                "substitute_product_id": rng.choice(options)["product_id"],
                "reason": rng.choice(SUB_REASONS),
                "status": rng.choice(["accepted", "rejected"]) if answered else "proposed",
                "proposed_at": _iso(min(picked_before[order["window_id"]], now) - timedelta(hours=rng.randrange(1, 4))),
            }
        )

    return {
        "stores": stores,
        "customers": customers,
        "products": products,
        "delivery_windows": windows,
        "carts": carts,
        "cart_items": cart_items,
        "orders": orders,
        "order_items": order_items,
        "substitutions": substitutions,
    }
