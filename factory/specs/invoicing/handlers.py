"""Custom behaviour of invoicing: numbering new invoices, pricing lines into the totals, statements.

The spec's rules have already rejected archived clients, future dates, and paid or void invoices.
"""

from datetime import date, timedelta

from envfarm.servers.runtime.database import Database

NUMBER_BASE = 1000  # the 57th invoice is printed as INV-1057


def create_invoice(db: Database, client_id: str, issued_on: str | None = None, notes: str | None = None) -> dict:
    """A draft with the next number; due after the client's payment terms."""
    client = db.require("clients", client_id)
    issued = date.fromisoformat(issued_on) if issued_on else date.fromisoformat(db.now[:10])
    invoice_id = db.next_id("invoices")
    db.insert(
        "invoices",
        {
            "invoice_id": invoice_id,
            "number": f"INV-{NUMBER_BASE + db.id_number('invoices')}",
            "client_id": client_id,
            "issued_on": issued.isoformat(),
            "due_on": (issued + timedelta(days=client["payment_terms_days"])).isoformat(),
            "status": "draft",
            "notes": notes,
        },
    )
    return db.require("invoices", invoice_id)


def add_invoice_line(
    db: Database,
    invoice_id: str,
    item_id: str,
    quantity: float,
    unit_price: float | None = None,
    description: str | None = None,
) -> dict:
    """Price the line (list price unless negotiated), tax it, and add it to the invoice's totals and balance."""
    item = db.require("catalog_items", item_id)
    price = item["unit_price"] if unit_price is None else unit_price
    line_subtotal = round(quantity * price, 2)
    line_tax = round(line_subtotal * item["tax_rate"], 2)
    line_id = db.next_id("invoice_lines")
    db.insert(
        "invoice_lines",
        {
            "line_id": line_id,
            "invoice_id": invoice_id,
            "item_id": item_id,
            "description": description or item["name"],
            "quantity": quantity,
            "unit_price": price,
            "tax_rate": item["tax_rate"],
            "line_subtotal": line_subtotal,
            "line_tax": line_tax,
        },
    )
    amount = round(line_subtotal + line_tax, 2)
    db.execute(
        "UPDATE invoices SET subtotal = round(subtotal + ?, 2), tax_total = round(tax_total + ?, 2),"
        " total = round(total + ?, 2), balance_due = round(balance_due + ?, 2) WHERE invoice_id = ?",
        (line_subtotal, line_tax, amount, amount, invoice_id),
    )
    invoice = db.require("invoices", invoice_id)
    return {
        "line_id": line_id,
        "invoice_id": invoice_id,
        "line_subtotal": line_subtotal,
        "line_tax": line_tax,
        "invoice_total": invoice["total"],
        "balance_due": invoice["balance_due"],
    }


def client_statement(db: Database, client_id: str) -> dict:
    """Open invoices with what is owed; overdue means past due_on on the frozen clock."""
    client = db.require("clients", client_id)
    open_invoices = db.all(
        "SELECT * FROM invoices WHERE client_id = ? AND status IN ('sent', 'partially_paid') AND balance_due > 0"
        " ORDER BY due_on, invoice_id",
        (client_id,),
    )
    today = db.now[:10]
    overdue = [i for i in open_invoices if i["due_on"] < today]
    return {
        "client_id": client_id,
        "company_name": client["company_name"],
        "open_invoices": open_invoices,
        "total_outstanding": round(sum(i["balance_due"] for i in open_invoices), 2),
        "overdue_count": len(overdue),
        "overdue_amount": round(sum(i["balance_due"] for i in overdue), 2),
    }
