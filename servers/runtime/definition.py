"""What a generated server is: its tools (`ToolDefinition`) and everything else it declares
(`ServerDefinition`: identity, clock, schema, seed, principal, policy and intents, read from its folder).

Generated `server.py` files build one `ServerDefinition` and hand it to `build_server`.
"""

from __future__ import annotations

import importlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any

from mcp_types import ToolAnnotations

from envfarm.servers.runtime.database import set_principal
from envfarm.servers.runtime.effects import Effect, effect_hints
from envfarm.servers.runtime.episodes import SEED_IMAGE, build_seed, open_memory
from envfarm.servers.runtime.listing import SPEC_FILE, Listing
from envfarm.servers.runtime.principal import PrincipalDefinition, render_instructions

if TYPE_CHECKING:
    from envfarm.servers.runtime.intents import ServerIntents

POLICY_FILE = "policy.md"


@dataclass(frozen=True)
class ToolDefinition:
    """One tool as generated code declares it: the function (or its name in the server's
    `tools_module`, imported on the first call) and its effect. The annotations follow from the
    effect; `read_only` marks a custom tool that writes nothing, the other two override."""

    function: Callable[..., Any] | str
    effect: Effect
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None

    @property
    def name(self) -> str:
        return self.function if isinstance(self.function, str) else self.function.__name__

    @property
    def annotations(self) -> ToolAnnotations:
        hints = effect_hints(
            self.effect, read_only=self.read_only, destructive=self.destructive, idempotent=self.idempotent
        )
        return ToolAnnotations(**hints.model_dump())


def declared_tool(tool: dict[str, Any]) -> ToolDefinition:
    """A tool as spec.json declares it, named for the server's `tools_module`: its effect, title and
    annotation overrides; a custom tool that writes no table is read-only."""
    overrides = tool.get("annotations") or {}
    return ToolDefinition(
        tool["name"],
        tool["effect"],
        title=tool.get("title") or None,
        read_only=True if tool["effect"] == "custom" and not tool.get("writes") else None,
        destructive=overrides.get("destructive"),
        idempotent=overrides.get("idempotent"),
    )


def _worded(tool: dict[str, Any], entities: dict[str, Any]) -> dict[str, Any]:
    """A tool's intent with the words its slots use, its own or its tables': a param that fills an enum column
    is said in that table's words, a `{param.column}` slot in the referenced table's."""
    from envfarm.servers.runtime.intents import slots

    intent = dict(tool["intent"])
    words = dict(intent.get("words") or {})
    params = tool.get("params") or {}
    entity = entities.get(tool.get("entity") or "") or {}
    for phrasing in intent.get("say") or []:
        for slot in slots(phrasing):
            key = f"{slot.name}.{slot.follow}" if slot.follow else slot.name
            param = params.get(slot.name) or {}
            if key in words or not param:
                continue
            if slot.follow:
                column = (entity.get("columns") or {}).get(param.get("column") or slot.name) or {}
                ref = param.get("ref") or column.get("ref") or ""
                keyed = slot.name == tool.get("key")  # a get/update/delete's key names a row of its own table
                table = entity if keyed else entities.get(str(ref).partition(".")[0]) or {}
                found = (table.get("words") or {}).get(slot.follow)
            else:
                found = (entity.get("words") or {}).get(param.get("column") or slot.name)
            if found:
                words[key] = found
    if words:
        intent["words"] = words
    return intent


@dataclass(frozen=True)
class ServerDefinition:
    """Everything a generated server is: identity, clock, schema, seed and tools.

    `directory` is the server's package folder, `importlib.resources.files("envfarm.servers.<name>")` or a Path:
    schema.sql and seed.json are read from it, so a checkout and an installed wheel load alike.
    """

    name: str
    title: str
    description: str
    version: str
    now: str
    directory: Traversable
    id_formats: dict[str, str]
    id_namespace: str | None = None  # opaque ids (database.opaque_id) in this namespace; None: sequential
    tools: list[ToolDefinition] | None = None  # None: the tools spec.json beside the code declares
    principal: PrincipalDefinition | None = None
    tools_module: str | None = None  # where tools named by a string live, e.g. "envfarm.servers.clinic.tools"

    def tool_definitions(self, shipped: Listing | None = None) -> list[ToolDefinition]:
        """The server's tools, in order: as given, or as spec.json beside the code declares them, the one
        tool contract of a generated server's folder (its server.py lists none; tools.py holds the functions,
        tools.json their derived schemas). A current `tools.json` listing carries the declarations too, so a
        start need not parse the whole spec."""
        if self.tools is not None:
            return self.tools
        declared = shipped.declared if shipped is not None else self._spec_document().get("tools") or []
        return [declared_tool(tool) for tool in declared]

    def function(self, tool: ToolDefinition) -> Callable[..., Any]:
        """The function of `tool`. A tool named by a string is looked up in `tools_module`, imported
        now: a farm host lists every tool from the shipped `tools.json` and imports a server's tools
        (its pydantic models, a third of the farm's start-up) only when one is first called."""
        if not isinstance(tool.function, str):
            return tool.function
        if self.tools_module is None:
            raise LookupError(f"{self.name}: the tool {tool.function!r} is named, but no tools_module is given")
        function: Callable[..., Any] = getattr(importlib.import_module(self.tools_module), tool.function)
        return function

    def tool_module(self, tool: ToolDefinition) -> str:
        """The name of the module defining `tool`'s function, without importing it."""
        return (self.tools_module or "") if isinstance(tool.function, str) else tool.function.__module__

    def schema_sql(self) -> str:
        return (self.directory / "schema.sql").read_text(encoding="utf-8")

    def policy(self) -> str:
        """The server's policy (policy.md beside the code), or "" when it has none."""
        path = self.directory / POLICY_FILE
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def _spec_document(self) -> dict[str, Any]:
        """spec.json beside the code, parsed; {} when the folder has none (a server built without one)."""
        path = self.directory / SPEC_FILE
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def policy_rules(self) -> list[dict[str, Any]]:
        """The policy rules the tools leave to the agent (`unenforced_rules` of spec.json beside the code),
        so a task synthesizer can grade them over MCP; [] when the folder has none."""
        rules = self._spec_document().get("unenforced_rules") or []
        return [{"id": r["id"], "rule": r["rule"], "tools": list(r.get("tools") or [])} for r in rules]

    def intents(self) -> ServerIntents:
        """Every tool's intent and every table's reference phrasings (from spec.json beside the code), so a
        task writer can say what a person wants in their words; empty when the folder has none. (Its module is
        imported here: a server's start never needs it.)"""
        from envfarm.servers.runtime.intents import Intent, ServerIntents

        spec = self._spec_document()
        entities = spec.get("entities") or {}
        return ServerIntents(
            tools={
                t["name"]: Intent.model_validate(_worded(t, entities))
                for t in spec.get("tools") or []
                if t.get("intent")
            },
            refer={name: e["refer"] for name, e in entities.items() if e.get("refer")},
            words={name: e["words"] for name, e in entities.items() if e.get("words")},
        )

    def instructions(self, acting_for: str | None, policy: str) -> str:
        return render_instructions(self.title, self.description, self.now, self.principal, acting_for, policy)

    def seed_rows(self) -> dict[str, list[dict[str, Any]]]:
        return json.loads((self.directory / "seed.json").read_text(encoding="utf-8"))

    def seed(self) -> sqlite3.Connection:
        """The seed database, from the image the factory ships (`seed.sqlite`); a folder without one
        (built by an older factory) has it built from schema.sql and seed.json."""
        image = self.directory / SEED_IMAGE
        default = self.principal.default if self.principal else None
        if not image.is_file():
            return build_seed(self.schema_sql(), self.seed_rows(), default, self.id_namespace)
        seed = open_memory(image.read_bytes())
        set_principal(seed, default)  # the image is the data alone; whom episodes act for is the definition's
        return seed
