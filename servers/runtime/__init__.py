"""The runtime every generated server shares: episodes, transactions, control plane, transports.

Its public face is what a server's tools module is written with (a generated `tools.py` imports only these
names, from here): `Database`, the episode's database handle (parameterized queries binding `:now` and
`:principal` themselves, `require(table, id)`, `page`, `reject`, the SQL function `contains`); `Page`, the
result model of a list; the `Limit` and `Cursor` parameters of a list; `field()`, a pydantic field that
also advertises the key a value refers to, the column it reads and whether a user knows it; and the
binders of array arguments, `json_array` and `comma_joined`. `Rejected` is what `Database.reject` raises.
Everything else (the server, episodes, transports) is the runtime's own business.

Imports nothing from `factory` or `clients`.
"""

from envfarm.servers.runtime.database import Database, Rejected, comma_joined, contains, json_array
from envfarm.servers.runtime.toolkit import Cursor, Limit, Page, field

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
