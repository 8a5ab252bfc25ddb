"""Run another built-in server's seed builder, so a shared fact is generated once, by its owner.

A grocery order is made by the grocery seed; the payments seed charges exactly that order and the
banking seed posts exactly that charge: each reads the owner's rows through `built_seed`.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

import yaml

from envfarm.factory.ids import opaque_seed
from envfarm.factory.world.clock import parse_instant

SPECS = Path(__file__).resolve().parents[1] / "specs"


def built_seed(server: str, specs: Path = SPECS) -> dict[str, list[dict[str, Any]]]:
    """The rows `specs/<server>/seed.py` builds with its spec's seed number and clock."""
    folder = specs / server
    header = yaml.safe_load((folder / "spec.yaml").read_text(encoding="utf-8"))
    module_spec = importlib.util.spec_from_file_location(f"_envfarm_world_{server}", folder / "seed.py")
    if module_spec is None or module_spec.loader is None:
        raise FileNotFoundError(f"{folder / 'seed.py'}: no seed builder")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    rows: dict[str, list[dict[str, Any]]] = module.build(
        random.Random(int(header.get("seed_number", 0))), parse_instant(str(header["now"]))
    )
    if header.get("ids") == "opaque":  # the owner's ids as its server publishes them, so quotes of them match
        entities = header["entities"]
        formats = {t: str(e["id_format"]) for t, e in entities.items()}
        namespace = str(header.get("id_namespace") or server)
        return opaque_seed(namespace, formats, {t: str(e["primary_key"]) for t, e in entities.items()}, rows)
    return rows
