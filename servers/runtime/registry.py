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


class Registry(BaseModel):
    servers: list[RegistryEntry] = Field(default_factory=list)

    def get(self, name: str) -> RegistryEntry | None:
        return next((s for s in self.servers if s.name == name), None)

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
    return json.dumps(registry.model_dump(mode="json"), indent=2) + "\n"


def write_registry(farm_root: Path, registry: Registry) -> None:
    """Replace registry.json atomically (write a temp file, then rename)."""
    fd, tmp = tempfile.mkstemp(dir=farm_root, prefix=".registry.", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(registry_text(registry))
    os.replace(tmp, farm_root / REGISTRY_FILE)


def packaged_farm_root() -> Path:
    """The farm this installation ships: the folder holding the `servers` package that holds this runtime
    (the checkout for an editable install, site-packages for a wheel)."""
    runtime = resources.files(__package__ or "servers.runtime")
    if isinstance(runtime, Path):
        return runtime.resolve().parents[1]
    raise RuntimeError(f"envfarm must be installed as files on disk to serve its farm, not as {runtime}")


def default_farm_root() -> Path:
    """The farm to use: $ENVFARM_HOME if set, else the installed farm."""
    if home := os.environ.get("ENVFARM_HOME"):
        return Path(home).resolve()
    return packaged_farm_root()
