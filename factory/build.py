"""`envfarm build` and `envfarm verify`: validate -> generate -> verify -> publish, and drift checks."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from factory.publish import publish, stage
from factory.source import SPEC_NAMES, load_environment
from factory.spec import SpecError


def expand_spec_paths(paths: list[Path]) -> list[Path]:
    """A spec file, a spec folder, or a folder of spec folders (built in name order)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir() and not any((path / n).is_file() for n in SPEC_NAMES):
            found += sorted(p for p in path.iterdir() if p.is_dir() and any((p / n).is_file() for n in SPEC_NAMES))
        else:
            found.append(path)
    return found


def build_all(paths: list[Path], farm_root: Path, verify: bool = True) -> int:
    """Build every spec; a failure leaves that server and the registry as they were. Exit code 1 if any failed."""
    failures = 0
    for path in expand_spec_paths(paths):
        try:
            source = load_environment(path)
        except SpecError as exc:
            print(exc, file=sys.stderr)
            failures += 1
            continue
        staging = stage(source, farm_root)
        try:
            entry = publish(source, staging, farm_root, verification="unverified")
        finally:
            if staging.exists():
                shutil.rmtree(staging)
        print(f"{entry.name:<24} {entry.tool_count:>3} tools  {entry.verification}")
    return 1 if failures else 0


def verify_published(farm_root: Path, names: list[str], all_servers: bool = False) -> int:
    raise NotImplementedError("verification lands with the factory pipeline")
