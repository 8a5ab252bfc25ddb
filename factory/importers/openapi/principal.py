"""Who the server acts for: a per-user principal when the document's auth and a current-user path or users
resource say so, else `staff`.
"""

from __future__ import annotations

import re
from typing import Any

from envfarm.factory.importers.openapi.document import security_schemes
from envfarm.factory.importers.openapi.tables import TableBuilder

# Paths that read "the signed-in user" rather than a row someone names.
CURRENT_USER = re.compile(
    r"/(me|my|myself|user|account|profile|whoami|(users|accounts)/(me|current|self))/?", re.IGNORECASE
)


USER_TABLES = ("users", "accounts", "profiles", "members", "customers", "people", "persons")


PER_USER_AUTH = ("oauth2", "openIdConnect", "apiKey", "bearer")


PRINCIPAL_COLUMNS = ("email", "username", "login", "handle", "user_name", "name")


def owner_fields(spec: dict[str, Any], users: str) -> list[tuple[str, str]]:
    """(table, column) of the columns naming a row's owner (`owner`, `owner_id`, `owner_login`...) in the
    tables other than the users table: where an imported API may keep rows private to a user."""
    return [
        (table, column)
        for table, entity in spec["entities"].items()
        if table != users
        for column in entity["columns"]
        if column == "owner" or column.startswith("owner_")
    ]


def infer_principal(
    importer: TableBuilder, data: dict[str, Any], spec: dict[str, Any], title: str
) -> tuple[dict[str, Any], list[str]]:
    """Whom the imported server acts for, and notes saying why. Per-user credentials (OAuth 2, OpenID,
    bearer tokens, API keys) and a users resource -- the one a current-user path (`/me`, `/user`)
    returns, else a table named like users -- make a `user` principal named by its most personal
    unique column; anything else is `staff` operating the API for customers."""
    notes: list[str] = []
    auth = [k for k in security_schemes(data) if k in PER_USER_AUTH]
    current = [
        path
        for path, item in (data.get("paths") or {}).items()
        if CURRENT_USER.fullmatch(path) and isinstance(item, dict) and "get" in item
    ]
    table = None
    for path in current:
        response = importer.response(importer.doc.deref(data["paths"][path])[1]["get"])
        record = importer.record_of(response, "User") if response is not None else None
        node = importer.doc.deref(response)[1] if response is not None else {}
        # The schema it returns, or one it extends (`private-user: allOf [simple-user, {...}]`).
        names = [record[0] if record else None] + [
            str(part["$ref"]).rsplit("/", 1)[-1] for part in node.get("allOf") or [] if "$ref" in part
        ]
        found = [importer.by_schema[n] for n in names if n and importer.by_schema.get(n) in spec["entities"]]
        if found:
            table = found[0]
            break
    table = table or next((t for u in USER_TABLES for t in spec["entities"] if t == u or t.endswith(f"_{u}")), None)
    if auth and table is not None:
        rows = spec["seed"].get(table) or []
        columns = spec["entities"][table]["columns"]
        candidates = [c for c in PRINCIPAL_COLUMNS if c in columns] + [spec["entities"][table]["primary_key"]]
        distinct = [
            c
            for c in candidates
            if rows
            and all(isinstance(r.get(c), str) and r.get(c) != "" for r in rows)  # a principal is a string
            and len({r[c] for r in rows}) == len(rows)
        ]
        column = distinct[0] if distinct else None
        if column is not None:
            why = f"per-user credentials ({', '.join(sorted(set(auth)))})"
            why += f" and the current-user path {current[0]}" if current else f" and the `{table}` resource"
            owners = owner_fields(spec, table)
            private = (
                f"the document names owner fields ({', '.join(f'`{t}.{c}`' for t, c in owners)}) but not whether "
                "they make rows private: scope them with `principal.scope`, e.g. "
                f'`{owners[0][0]}: "{owners[0][1]} IN (SELECT ... FROM {table} WHERE {column} = :principal)"`'
                if owners
                else "the document does not say which are private (add `principal.scope`)"
            )
            notes.append(
                f"principal: user, one of `{table}.{column}` (default {rows[0][column]!r}), from {why}. Rows are "
                f"not scoped to the user: {private}"
            )
            return {
                "kind": "user",
                "description": f"a signed-in user of {title}",
                "table": table,
                "column": column,
                "default": rows[0][column],
            }, notes
    reason = (
        "no security scheme"
        if not security_schemes(data)
        else "no per-user credentials"
        if not auth
        else "no users resource"
    )
    notes.append(f"principal: staff operating the API for customers ({reason} to act as a signed-in user)")
    operator = f"{title} operator"
    return {
        "kind": "staff",
        "description": f"an operator of {title} acting for customers",
        "values": [operator],
        "default": operator,
        "customers": "the customer names the record they mean (its id, or a name or email that finds it); "
        "confirm it with them before changing anything",
    }, notes
