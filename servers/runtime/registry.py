"""registry.json: the list of published servers, read by the CLI, the farm host and the driver.

A farm is a folder holding `servers/<name>/` and `registry.json`: a checkout, or a farm built with
`envfarm build --out DIR`. The farm a wheel installs is the folder holding its `servers` package
(site-packages); a wheel cannot put a file at the top of site-packages, so it carries the checkout's
registry.json inside the package, as `servers/registry.json` (copied there by setup.py's build hook).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

REGISTRY_FILE = "registry.json"
Trust = Literal["reviewed", "generated"]


class Launch(BaseModel):
    """How to reach a server: its stdio command (for the installed farm; `envfarm --farm DIR serve <name>`
    runs a server of any other farm), and its HTTP path on the farm host."""

    command: str = "python"
    args: list[str]
    http_path: str


SourceKind = Literal["builtin", "imported", "generated"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("builtin", "imported", "generated")


class Source(BaseModel):
    """Where an imported server came from: the API document behind it, so a farm of hundreds of imports
    can be told apart from the hand-written servers (and from each other) without opening every spec."""

    kind: Literal["imported"] = "imported"
    title: str = Field(description="the document's info.title")
    version: str = Field(default="", description="the document's info.version (the API's version, not the format's)")
    provider: str = Field(
        default="", description="who publishes the API: x-providerName, else the host it is served at"
    )
    format: str = Field(default="", description="e.g. 'Swagger 2.0', 'OpenAPI 3.1.0'")
    document: str = Field(default="", description="the document's file name")
    documents: list[str] = Field(
        default_factory=list,
        description="the provider's documents combined into this server, where it serves several (`document` is empty)",
    )


class RegistryEntry(BaseModel):
    name: str
    domain: str
    title: str
    description: str
    version: str
    tags: list[str] = Field(default_factory=list)
    tool_count: int
    write_tool_count: int
    tables: int
    seed_rows: int
    launch: Launch
    spec_hash: str
    code_hash: str
    verification: str = Field(description="'passed', 'failed' or 'unverified'")
    verified_at: str | None = None
    trust: Trust = Field(
        "generated",
        description="'reviewed': built from the project's own reviewed specs, its handlers run in the serving "
        "process; 'generated' (proposed, imported, anything else, and the default): its handlers run in a "
        "sandboxed process at serve time",
    )
    source: Source | None = Field(None, description="the API document an imported server came from")

    @property
    def source_kind(self) -> SourceKind:
        """'imported' (from an API document), 'builtin' (the project's reviewed specs), else 'generated'."""
        if self.source is not None:
            return self.source.kind
        return "builtin" if self.trust == "reviewed" else "generated"


class Registry(BaseModel):
    servers: list[RegistryEntry] = Field(default_factory=list)

    def get(self, name: str) -> RegistryEntry | None:
        return next((s for s in self.servers if s.name == name), None)

    def names(self, sources: Sequence[str] | None = None) -> list[str]:
        """The servers' names, only those of the given source kinds (`SOURCE_KINDS`) when any are named:
        train on the deep farm (`builtin`), the broad farm (`imported`) or both."""
        unknown = sorted(set(sources or ()) - set(SOURCE_KINDS))
        if unknown:
            raise ValueError(f"unknown source {', '.join(unknown)}: expected one of {', '.join(SOURCE_KINDS)}")
        return [s.name for s in self.servers if not sources or s.source_kind in sources]

    def select(self, servers: Sequence[str] | None, sources: Sequence[str] | None) -> list[str] | None:
        """`--servers` narrowed to `--source` kinds (either may be absent; None: every server). A selection
        that leaves nothing is an error naming both, not a silent run over no server."""
        if not sources:
            return list(servers) if servers else None
        of_source = self.names(sources)
        chosen = [n for n in servers if n in of_source] if servers else of_source
        if not chosen:
            among = f" among {', '.join(servers)}" if servers else ""
            raise LookupError(f"no server of source {', '.join(sources)}{among} in the registry")
        return chosen

    def with_entry(self, entry: RegistryEntry) -> Registry:
        others = [s for s in self.servers if s.name != entry.name]
        return Registry(servers=sorted([*others, entry], key=lambda s: s.name))


def registry_file(farm_root: Path) -> Path:
    """The farm's registry.json: at its root, or inside `servers/` where an installed wheel ships it."""
    top = farm_root / REGISTRY_FILE
    packaged = farm_root / "servers" / REGISTRY_FILE
    return packaged if not top.is_file() and packaged.is_file() else top


def load_registry(farm_root: Path) -> Registry:
    path = registry_file(farm_root)
    if not path.exists():
        return Registry()
    try:
        return Registry.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not a valid registry: {exc}") from exc


def registry_text(registry: Registry) -> str:
    """The registry as written to disk; an entry without a source (a hand-written server) has no `source` key."""
    document = registry.model_dump(mode="json")
    for entry in document["servers"]:
        if entry.get("source") is None:
            entry.pop("source", None)
    return json.dumps(document, indent=2) + "\n"


def write_registry(farm_root: Path, registry: Registry) -> None:
    """Replace registry.json atomically (write a temp file, then rename)."""
    fd, tmp = tempfile.mkstemp(dir=farm_root, prefix=".registry.", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(registry_text(registry))
    os.replace(tmp, farm_root / REGISTRY_FILE)


def packaged_farm_root() -> Path:
    """The farm this installation ships: the folder holding the `servers` package that holds this runtime
    (the checkout for an editable install, site-packages for a wheel)."""
    runtime = resources.files(__package__ or "envfarm.servers.runtime")
    if isinstance(runtime, Path):
        return runtime.resolve().parents[1]
    raise RuntimeError(f"envfarm must be installed as files on disk to serve its farm, not as {runtime}")


def default_farm_root() -> Path:
    """The farm to use: $ENVFARM_HOME if set, else the installed farm."""
    if home := os.environ.get("ENVFARM_HOME"):
        return Path(home).resolve()
    return packaged_farm_root()
