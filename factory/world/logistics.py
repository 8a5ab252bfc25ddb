"""Goods that leave a warehouse travel with the parcel carrier: each shipped outbound order of the
warehouse server is one parcel and one shipment on parcel_shipping, from the warehouse's city to the
store that ordered it, picked up when the warehouse says it shipped.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from envfarm.factory import fakedata

# A store chain's receiving dock is in the nearest big city of the warehouse's region (a plausible road route).
REGION_CITIES = {
    "Lisbon": ["Porto", "Madrid"],
    "Berlin": ["Vienna", "Krakow"],
    "Toronto": ["Boston", "Toronto"],
    "Austin": ["Austin", "Denver"],
}


class OutboundShipment(BaseModel):
    """One shipped outbound order as the carrier sees it."""

    order_number: str
    warehouse: str
    origin_city: str
    store: str
    destination_city: str
    shipped_at: str
    weight_kg: float
    cartons: int


def contents_of(order_number: str, cartons: int) -> str:
    return f"Outbound order {order_number}: {cartons} cartons"


def dispatch_email(warehouse_code: str) -> str:
    return f"dispatch.{warehouse_code.lower()}@northwind-logistics.example.com"


def store_email(store: str) -> str:
    return f"receiving@{fakedata.slug(store).replace('.', '-')}.example.com"


def outbound_shipments(warehouse: dict[str, list[dict[str, Any]]]) -> list[OutboundShipment]:
    """Every outbound order the warehouse seed marks shipped, with its weight from the SKUs it holds."""
    sites = {w["warehouse_id"]: w for w in warehouse["warehouses"]}
    weight_of = {s["sku_id"]: s["unit_weight_kg"] for s in warehouse["skus"]}
    shipped = []
    for order in warehouse["orders"]:
        if order["status"] != "shipped":
            continue
        lines = [line for line in warehouse["order_lines"] if line["order_id"] == order["order_id"]]
        weight = round(sum(weight_of[line["sku_id"]] * line["quantity"] for line in lines) + 0.4 * len(lines), 2)
        site = sites[order["warehouse_id"]]
        region = REGION_CITIES[site["city"]]
        shipped.append(
            OutboundShipment(
                order_number=order["order_number"],
                warehouse=site["name"],
                origin_city=site["city"],
                store=order["customer"],
                destination_city=region[len(order["customer"]) % len(region)],
                shipped_at=order["shipped_at"],
                weight_kg=max(weight, 1.5),
                cartons=max(1, len(lines)),
            )
        )
    return shipped
