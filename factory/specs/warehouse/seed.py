"""Seed rows of warehouse: 4 distribution centres, 40 SKUs, 72 bins, stock in bulk and pick bins,
24 inbound receipts with lines, 40 outbound orders with lines and picks, transfers and cycle counts.

Quantities agree: no bin holds more than its capacity (a few are nearly full), an order's status matches
its lines (picking when partly picked, picked when complete), picks add up to each line's picked_qty,
received quantities never exceed expected ones, and a received transfer sits in a bin of its destination.
The clock is Monday 2026-02-16 07:00 UTC, the start of the early shift.
"""

import random
from datetime import datetime, timedelta

from envfarm.factory import fakedata

WAREHOUSES = [
    ("LIS", "Lisbon North DC", "Lisbon"),
    ("BER", "Berlin Spandau DC", "Berlin"),
    ("TOR", "Toronto East DC", "Toronto"),
    ("AUS", "Austin Logistics Park", "Austin"),
]
PRODUCTS = [
    ("USB-C charger 65W", "electronics", 0.3),
    ("Wireless earbuds", "electronics", 0.2),
    ("27-inch monitor", "electronics", 6.5),
    ("Mechanical keyboard", "electronics", 1.1),
    ("HDMI cable 2m", "electronics", 0.15),
    ("Smart plug", "electronics", 0.1),
    ("Power bank 20000mAh", "electronics", 0.45),
    ("Webcam 1080p", "electronics", 0.25),
    ("Men's rain jacket M", "apparel", 0.6),
    ("Women's rain jacket S", "apparel", 0.55),
    ("Wool socks 3-pack", "apparel", 0.2),
    ("Running shoes 42", "apparel", 0.8),
    ("Cotton t-shirt L", "apparel", 0.2),
    ("Winter beanie", "apparel", 0.1),
    ("Ceramic mug set", "home", 1.8),
    ("Bath towel", "home", 0.7),
    ("Desk lamp", "home", 1.4),
    ("Cast iron skillet", "home", 2.9),
    ("Throw blanket", "home", 1.2),
    ("Storage box 40L", "home", 1.5),
    ("Olive oil 1L", "grocery", 1.0),
    ("Ground coffee 1kg", "grocery", 1.0),
    ("Green tea 100 bags", "grocery", 0.25),
    ("Basmati rice 5kg", "grocery", 5.0),
    ("Dark chocolate bar", "grocery", 0.1),
    ("Building blocks 500pc", "toys", 1.3),
    ("Plush bear", "toys", 0.4),
    ("Puzzle 1000pc", "toys", 0.9),
    ("Toy drone", "toys", 0.7),
    ("Board game: Harbor", "toys", 1.6),
    ("Cordless drill", "hardware", 1.9),
    ("Screwdriver set", "hardware", 0.8),
    ("LED bulb 4-pack", "hardware", 0.3),
    ("Measuring tape 5m", "hardware", 0.25),
    ("Work gloves", "hardware", 0.2),
    ("Extension cord 10m", "hardware", 1.1),
    ("Padlock", "hardware", 0.35),
    ("Wall anchors 100pc", "hardware", 0.4),
    ("Garden hose 15m", "hardware", 2.4),
    ("Step ladder", "hardware", 5.5),
]
SUPPLIERS = [
    "Copperline Components",
    "Greenfield Foods",
    "Silverleaf Textiles",
    "Ironbridge Tools",
    "Sunhaven Home",
    "Redwood Toys",
    "Bluepeak Electronics",
]
CUSTOMERS = [f"{c} {kind}" for c in fakedata.COMPANIES for kind in ("Retail", "Stores")]
STAFF = [
    "Ana Ribeiro",
    "Jonas Keller",
    "Priya Nair",
    "Tom Walsh",
    "Lucia Ferreira",
    "Marek Nowak",
    "Dana Brooks",
    "Felipe Soto",
]
ZONES = [("receiving", 2, 2000), ("bulk", 6, 600), ("pick", 10, 150)]


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def build(rng: random.Random, now: datetime) -> dict[str, list[dict]]:
    warehouses = [
        {"warehouse_id": f"wh_{i:02d}", "code": code, "name": name, "city": city}
        for i, (code, name, city) in enumerate(WAREHOUSES, start=1)
    ]
    skus = [
        {
            "sku_id": f"sku_{i:04d}",
            "sku_code": f"SKU-{10000 + i * 37}",
            "name": name,
            "category": category,
            "unit_weight_kg": weight,
        }
        for i, (name, category, weight) in enumerate(PRODUCTS, start=1)
    ]
    bins = []
    for wh, (code, _, _) in zip(warehouses, WAREHOUSES):
        for zone, count, capacity in ZONES:
            for n in range(count):
                bins.append(
                    {
                        "bin_id": f"bin_{len(bins) + 1:04d}",
                        "warehouse_id": wh["warehouse_id"],
                        "bin_code": f"{code}-{zone[0].upper()}-{n // 2 + 1:02d}-{n % 2 + 1}",
                        "zone": zone,
                        "capacity_units": capacity,
                    }
                )
    bins_of = {w["warehouse_id"]: [b for b in bins if b["warehouse_id"] == w["warehouse_id"]] for w in warehouses}

    # Stock: each warehouse carries 24 SKUs, with a pick face and most of them a bulk location too.
    stock = []
    used = {b["bin_id"]: 0 for b in bins}

    def put(bin_: dict, sku_id: str, quantity: int) -> None:
        """Add units to the bin, never beyond its capacity; one stock record per bin and SKU."""
        quantity = min(quantity, bin_["capacity_units"] - used[bin_["bin_id"]])
        if quantity <= 0:
            return
        used[bin_["bin_id"]] += quantity
        existing = next((s for s in stock if s["bin_id"] == bin_["bin_id"] and s["sku_id"] == sku_id), None)
        if existing is not None:
            existing["quantity"] += quantity
            return
        stock.append(
            {
                "stock_id": "",
                "warehouse_id": bin_["warehouse_id"],
                "bin_id": bin_["bin_id"],
                "sku_id": sku_id,
                "quantity": quantity,
                "last_counted_at": None,
            }
        )

    carried: dict[str, list[str]] = {}
    for wh in warehouses:
        wid = wh["warehouse_id"]
        carried[wid] = [s["sku_id"] for s in rng.sample(skus, 24)]
        picks = [b for b in bins_of[wid] if b["zone"] == "pick"]
        bulks = [b for b in bins_of[wid] if b["zone"] == "bulk"]
        for n, sku_id in enumerate(carried[wid]):
            put(picks[n % len(picks)], sku_id, rng.randrange(10, 60))
            if n % 4 != 3:
                put(bulks[n % len(bulks)], sku_id, rng.randrange(60, 220))
        # The first pick bin of each warehouse is nearly full: three units of room left.
        put(picks[0], carried[wid][0], picks[0]["capacity_units"] - used[picks[0]["bin_id"]] - 3)
    stock.sort(key=lambda s: (s["warehouse_id"], s["bin_id"], s["sku_id"]))
    for n, row in enumerate(stock, start=1):
        row["stock_id"] = f"stk_{n:05d}"
        if rng.random() < 0.3:
            row["last_counted_at"] = iso(now - timedelta(hours=rng.randrange(2, 24 * 40)))

    # Inbound: closed receipts from the last weeks, open ones arriving around today.
    receipts, receipt_lines = [], []
    for n in range(24):
        wh = warehouses[n % 4]
        is_open = n < 10
        expected = now + timedelta(days=rng.randrange(-2, 6)) if is_open else now - timedelta(days=rng.randrange(3, 45))
        receipt = {
            "receipt_id": f"rcp_{n + 1:04d}",
            "warehouse_id": wh["warehouse_id"],
            "reference": f"PO-{48000 + n * 53}",
            "supplier": rng.choice(SUPPLIERS),
            "expected_on": expected.date().isoformat(),
            "status": "open" if is_open else "closed",
            "closed_at": None if is_open else iso(expected + timedelta(hours=rng.randrange(6, 30))),
        }
        receipts.append(receipt)
        for sku_id in rng.sample(carried[wh["warehouse_id"]], rng.randrange(2, 5)):
            qty = rng.choice([24, 48, 60, 96, 120])
            if is_open:
                received = rng.choice([0, 0, qty // 2]) if expected <= now else 0
            else:
                received = qty - rng.choice([0, 0, 0, 6, 12])
            receipt_lines.append(
                {
                    "line_id": f"rln_{len(receipt_lines) + 1:04d}",
                    "receipt_id": receipt["receipt_id"],
                    "sku_id": sku_id,
                    "expected_qty": qty,
                    "received_qty": received,
                }
            )

    # Outbound orders: older ones shipped, recent ones in every earlier state.
    orders, order_lines, picks = [], [], []
    stock_by = {(s["bin_id"], s["sku_id"]): s for s in stock}
    for n in range(40):
        wh = warehouses[n % 4]
        wid = wh["warehouse_id"]
        age = n * 0.6
        created = now - timedelta(days=age)
        status = (
            "pending"
            if n < 12
            else "picking"
            if n < 16
            else "picked"
            if n < 20
            else "cancelled"
            if n % 9 == 0
            else "shipped"
        )
        order = {
            "order_id": f"ord_{n + 1:04d}",
            "order_number": f"SO-{20400 + n * 17}",
            "warehouse_id": wid,
            "customer": rng.choice(CUSTOMERS),
            "ship_by": (created + timedelta(days=3)).date().isoformat(),
            "status": status,
            "shipped_at": iso(created + timedelta(hours=rng.randrange(6, 40))) if status == "shipped" else None,
        }
        orders.append(order)
        lines = []
        for sku_id in rng.sample(carried[wid], rng.randrange(1, 4)):
            qty = rng.randrange(2, 20)
            lines.append(
                {
                    "order_line_id": f"oln_{len(order_lines) + 1:04d}",
                    "order_id": order["order_id"],
                    "sku_id": sku_id,
                    "quantity": qty,
                    "picked_qty": 0,
                }
            )
            order_lines.append(lines[-1])
        if status in ("picking", "picked", "shipped"):
            for m, line in enumerate(lines):
                if status == "picking" and m == len(lines) - 1:
                    continue  # the last line is still to pick
                pick_bin = next(
                    b for b in bins_of[wid] if b["zone"] == "pick" and (b["bin_id"], line["sku_id"]) in stock_by
                )
                line["picked_qty"] = line["quantity"]
                picks.append(
                    {
                        "pick_id": "",
                        "order_line_id": line["order_line_id"],
                        "bin_id": pick_bin["bin_id"],
                        "quantity": line["quantity"],
                        "picker": rng.choice(STAFF),
                        "picked_at": iso(created + timedelta(hours=rng.randrange(1, 5))),
                    }
                )
    picks.sort(key=lambda p: p["picked_at"])
    for n, row in enumerate(picks, start=1):
        row["pick_id"] = f"pck_{n:05d}"

    # Transfers: the first ones are on the road now, older ones were put away at the destination.
    transfers = []
    for n in range(22):
        source = stock[(n * 7) % len(stock)]
        destination = warehouses[(int(source["warehouse_id"][-2:]) + n % 3) % 4]
        shipped = now - timedelta(hours=6 + n * 20)
        received = n >= 8
        to_bin = None
        if received:
            candidates = [b for b in bins_of[destination["warehouse_id"]] if b["zone"] == "bulk"]
            to_bin = candidates[n % len(candidates)]
        quantity = rng.choice([12, 24, 36])
        if to_bin is not None:
            key = (to_bin["bin_id"], source["sku_id"])
            if used[to_bin["bin_id"]] + quantity > to_bin["capacity_units"]:
                continue
            used[to_bin["bin_id"]] += quantity
            if key in stock_by:
                stock_by[key]["quantity"] += quantity
            else:
                row = {
                    "stock_id": f"stk_{len(stock) + 1:05d}",
                    "warehouse_id": to_bin["warehouse_id"],
                    "bin_id": to_bin["bin_id"],
                    "sku_id": source["sku_id"],
                    "quantity": quantity,
                    "last_counted_at": None,
                }
                stock.append(row)
                stock_by[key] = row
        transfers.append(
            {
                "transfer_id": f"trf_{len(transfers) + 1:04d}",
                "sku_id": source["sku_id"],
                "from_bin_id": source["bin_id"],
                "to_warehouse_id": destination["warehouse_id"],
                "to_bin_id": to_bin["bin_id"] if to_bin else None,
                "quantity": quantity,
                "status": "received" if received else "in_transit",
                "shipped_at": iso(shipped),
                "received_at": iso(shipped + timedelta(hours=rng.randrange(20, 60))) if received else None,
            }
        )

    # Cycle counts behind every counted stock record, plus older ones.
    counts = []
    for row in stock:
        if row["last_counted_at"] is None:
            continue
        expected = row["quantity"] + rng.choice([0, 0, 0, 1, -1, 2, -3])
        counts.append(
            {
                "count_id": "",
                "stock_id": row["stock_id"],
                "expected_qty": expected,
                "counted_qty": row["quantity"],
                "variance": row["quantity"] - expected,
                "counted_by": rng.choice(STAFF),
                "counted_at": row["last_counted_at"],
            }
        )
    counts.sort(key=lambda c: c["counted_at"])
    for n, row in enumerate(counts, start=1):
        row["count_id"] = f"cc_{n:04d}"
    return {
        "warehouses": warehouses,
        "skus": skus,
        "bins": bins,
        "stock_levels": stock,
        "receipts": receipts,
        "receipt_lines": receipt_lines,
        "orders": orders,
        "order_lines": order_lines,
        "picks": picks,
        "transfers": transfers,
        "cycle_counts": counts,
    }
