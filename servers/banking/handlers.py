"""Custom behaviour of banking: money movements debit and credit inside one transaction.

The spec's rules have already checked the accounts' status, the funds and the daily limit, so a handler
only writes the ledger: the transfer, the statement lines with running balances, and the new balances.
"""

from envfarm.servers.runtime.database import Database


def _post(db: Database, account_id: str, amount: float, description: str, transfer_id: str) -> None:
    """Change the balance and add the statement line showing the balance after it."""
    db.execute("UPDATE accounts SET balance = round(balance + ?, 2) WHERE account_id = ?", (amount, account_id))
    balance = db.scalar("SELECT balance FROM accounts WHERE account_id = ?", (account_id,))
    db.insert(
        "transactions",
        {
            "txn_id": db.next_id("transactions"),
            "account_id": account_id,
            "posted_at": db.now,
            "amount": amount,
            "description": description,
            "category": "transfer",
            "balance_after": balance,
            "transfer_id": transfer_id,
        },
    )


def _record(
    db: Database,
    from_account_id: str,
    amount: float,
    memo: str | None,
    scope: str,
    to_account_id: str | None = None,
    payee_id: str | None = None,
) -> str:
    transfer_id = db.next_id("transfers")
    db.insert(
        "transfers",
        {
            "transfer_id": transfer_id,
            "from_account_id": from_account_id,
            "to_account_id": to_account_id,
            "payee_id": payee_id,
            "amount": amount,
            "memo": memo,
            "scope": scope,
            "status": "completed",
            "created_at": db.now,
        },
    )
    return transfer_id


def transfer_funds(
    db: Database, from_account_id: str, to_account_number: str, amount: float, memo: str | None = None
) -> dict:
    """Debit the sender and credit the receiver; the scope says whether the money left the customer."""
    amount = round(amount, 2)  # cents: the transfer, its ledger lines and both balances move by the same amount
    source = db.require("accounts", from_account_id, "from_account_id")
    # The recipient's account may be anyone's: found by its number, outside the sender's own rows.
    target = db.one("SELECT * FROM accounts WHERE account_number = ?", (to_account_number,))
    assert target is not None, "the spec's rule rejects an unknown account number before the handler runs"
    to_account_id = target["account_id"]
    scope = "own" if source["customer_id"] == target["customer_id"] else "internal"
    transfer_id = _record(db, from_account_id, amount, memo, scope, to_account_id=to_account_id)
    _post(db, from_account_id, -amount, f"Transfer to account {target['account_number']}", transfer_id)
    _post(db, to_account_id, amount, f"Transfer from account {source['account_number']}", transfer_id)
    return db.require("transfers", transfer_id)


def pay_payee(db: Database, from_account_id: str, payee_id: str, amount: float, memo: str | None = None) -> dict:
    """Debit the account; the money leaves the bank for the payee."""
    amount = round(amount, 2)
    payee = db.require("payees", payee_id)
    transfer_id = _record(db, from_account_id, amount, memo, "external", payee_id=payee_id)
    _post(db, from_account_id, -amount, f"Transfer to {payee['name']}", transfer_id)
    return db.require("transfers", transfer_id)
