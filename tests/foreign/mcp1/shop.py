"""A shop (mcp 1.x FastMCP, state in memory): customers, products and orders, as pydantic models
(structured content with full output schemas)."""

from __future__ import annotations

from common import MISBEHAVIOUR, PEOPLE
from mcp.server.fastmcp import FastMCP
from pydantic import BaseModel

mcp = FastMCP("shop", instructions="An online shop: find customers and products, place and manage orders.")


class Customer(BaseModel):
    customer_id: str
    name: str
    email: str
    city: str


class Product(BaseModel):
    sku: str
    title: str
    price: float
    stock: int


class Order(BaseModel):
    order_id: str
    customer_id: str
    sku: str
    quantity: int
    status: str


CUSTOMERS = [Customer(customer_id=f"cus_{n + 101}", **person) for n, person in enumerate(PEOPLE)]
PRODUCTS = [
    Product(sku="SKU-TEA", title="Green tea", price=4.5, stock=40),
    Product(sku="SKU-MUG", title="Blue mug", price=9.0, stock=12),
    Product(sku="SKU-PEN", title="Fountain pen", price=25.0, stock=5),
]
ORDERS: dict[str, Order] = {
    "ord_5001": Order(order_id="ord_5001", customer_id="cus_101", sku="SKU-MUG", quantity=1, status="shipped"),
    "ord_5002": Order(order_id="ord_5002", customer_id="cus_102", sku="SKU-TEA", quantity=3, status="placed"),
}


@mcp.tool()
def list_customers() -> list[Customer]:
    """Every customer."""
    MISBEHAVIOUR.tick()
    return CUSTOMERS


@mcp.tool()
def find_customer(email: str) -> Customer:
    """The customer with this email address."""
    MISBEHAVIOUR.tick()
    for customer in CUSTOMERS:
        if customer.email == email:
            return customer
    raise ValueError(f"no customer with email {email}")


@mcp.tool()
def list_products() -> list[Product]:
    """The catalog."""
    MISBEHAVIOUR.tick()
    return PRODUCTS


@mcp.tool()
def list_orders(customer_id: str) -> list[Order]:
    """A customer's orders."""
    MISBEHAVIOUR.tick()
    return [o for o in ORDERS.values() if o.customer_id == customer_id]


@mcp.tool()
def place_order(customer_id: str, sku: str, quantity: int = 1) -> Order:
    """Place an order for a product."""
    MISBEHAVIOUR.tick()
    if customer_id not in {c.customer_id for c in CUSTOMERS}:
        raise ValueError(f"no customer {customer_id}")
    product = next((p for p in PRODUCTS if p.sku == sku), None)
    if product is None or not 1 <= quantity <= product.stock:
        raise ValueError(f"cannot order {quantity} of {sku}")
    order = Order(
        order_id=f"ord_{5001 + len(ORDERS)}", customer_id=customer_id, sku=sku, quantity=quantity, status="placed"
    )
    ORDERS[order.order_id] = order
    return order


@mcp.tool()
def cancel_order(order_id: str) -> Order:
    """Cancel an order that has not shipped."""
    MISBEHAVIOUR.tick()
    order = ORDERS.get(order_id)
    if order is None or order.status != "placed":
        raise ValueError(f"order {order_id} cannot be cancelled")
    ORDERS[order_id] = order.model_copy(update={"status": "cancelled"})
    return ORDERS[order_id]


if __name__ == "__main__":
    mcp.run()
