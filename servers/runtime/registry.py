"""registry.json: the list of published servers, read by the CLI, the farm host and the driver."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

REGISTRY_FILE = "registry.json"


class Launch(BaseModel):
    """How to reach a server: a stdio command run from the farm root, and its HTTP path on the farm host."""

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


class Registry(BaseModel):
    servers: list[RegistryEntry] = Field(default_factory=list)

    def get(self, name: str) -> RegistryEntry | None:
        return next((s for s in self.servers if s.name == name), None)

    def with_entry(self, entry: RegistryEntry) -> Registry:
        others = [s for s in self.servers if s.name != entry.name]
        return Registry(servers=sorted([*others, entry], key=lambda s: s.name))


def load_registry(farm_root: Path) -> Registry:
    path = farm_root / REGISTRY_FILE
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


def default_farm_root() -> Path:
    """The farm to use: $ENVFARM_HOME if set, else the folder holding this `servers` package."""
    if home := os.environ.get("ENVFARM_HOME"):
        return Path(home).resolve()
    return Path(__file__).resolve().parents[2]
