"""Words the factory and the driver read tool and field names by, in one place at the bottom layer (both may
import the runtime; neither may import the other).

- `READ_VERBS`: a tool whose name starts with one of these reads and changes nothing. It decides "is this tool
  a read?" only where a server does not say (no `readOnlyHint` annotation): for the driver's tool graph and its
  agents' tool lists (`envfarm.clients.graph`, `envfarm.clients.policies`), and for the factory inferring a
  state model from tool metadata (`envfarm.factory.importers.metadata`).
- `ID_WORDS`: a field whose name ends in one of these words names a record (`from_account_id`, `order_key`)."""

from __future__ import annotations

READ_VERBS = frozenset(
    {"get", "list", "search", "find", "show", "read", "check", "view", "lookup", "fetch", "query", "retrieve"}
)
ID_WORDS = frozenset({"id", "key", "uuid"})

__all__ = ["ID_WORDS", "READ_VERBS"]
