"""The runtime every generated server shares: episodes, transactions, control plane, transports.

Its public face is what a server's tools module is written with (a generated `tools.py` imports only these
names, from here): `Database`, the episode's database handle (parameterized queries binding `:now` and
`:principal` themselves, `require(table, id)`, `page`, `reject`, the SQL function `contains`); `Page`, the
result model of a list; the `Limit` and `Cursor` parameters of a list; `field()`, a pydantic field that
also advertises the key a value refers to, the column it reads and whether a user knows it; and the
binders of array arguments, `json_array` and `comma_joined`. `Rejected` is what `Database.reject` raises.
Everything else (the server, episodes, transports) is the runtime's own business.

Imports nothing from `factory` or `clients`, and nothing at all until one of these names is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envfarm.servers.runtime.database import Database, Rejected, comma_joined, contains, json_array
    from envfarm.servers.runtime.toolkit import Cursor, Limit, Page, field

# name -> the module defining it. Imported on first use (PEP 562), so that importing a module of the runtime
# (`cli`, which starts a server before the SDK and pydantic are imported) does not import these as well.
_PUBLIC = {
    "Cursor": "toolkit",
    "Database": "database",
    "Limit": "toolkit",
    "Page": "toolkit",
    "Rejected": "database",
    "comma_joined": "database",
    "contains": "database",
    "field": "toolkit",
    "json_array": "database",
}

__all__ = [
    "Cursor",
    "Database",
    "Limit",
    "Page",
    "Rejected",
    "comma_joined",
    "contains",
    "field",
    "json_array",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
