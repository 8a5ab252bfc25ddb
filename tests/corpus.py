"""Test helpers for the good example and the broken corpus (tests/good/, tests/broken/).

A corpus case is a spec folder (spec.yaml, handlers.py) with an optional `edits.yaml`: regex
replacements applied to the generated files, standing for a hand edit or a generator bug.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from envfarm.factory.publish import stage
from envfarm.factory.source import load_environment

TESTS = Path(__file__).parent
GOOD = TESTS / "good" / "shed"
BROKEN = TESTS / "broken"


def apply_edits(case: Path, server_dir: Path) -> None:
    """Apply the case's edits.yaml to a generated server folder; each edit must change something."""
    edits = case / "edits.yaml"
    for edit in yaml.safe_load(edits.read_text(encoding="utf-8")) if edits.is_file() else []:
        path = server_dir / edit["file"]
        text = path.read_text(encoding="utf-8")
        edited = re.sub(edit["pattern"], edit["replace"], text)
        assert edited != text, f"{edits}: {edit['pattern']!r} matches nothing in {edit['file']}"
        path.write_text(edited, encoding="utf-8")


def stage_case(case: Path, farm_root: Path) -> Path:
    """Generate the case into a staging folder of `farm_root` (edits applied); return the server folder."""
    staged = stage(load_environment(case), farm_root)
    apply_edits(case, staged)
    return staged


def farm_bytes(farm_root: Path) -> dict[str, bytes]:
    """Every file under servers/ plus registry.json, byte for byte (bytecode caches aside)."""
    files = [farm_root / "registry.json", *(farm_root / "servers").rglob("*")]
    return {
        str(p.relative_to(farm_root)): p.read_bytes() for p in files if p.is_file() and "__pycache__" not in p.parts
    }
