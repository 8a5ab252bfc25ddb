"""What every command shares: its typed options (built from argparse's namespace, so a command reads fields
a type checker knows instead of `args.whatever`), the farm it works on, and the one way to refuse bad input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict

from envfarm.servers.runtime.registry import REGISTRY_FILE, Registry, default_farm_root, load_registry, registry_file


class CommandOptions(BaseModel):
    """The options of one command: the global `--farm` plus the command's own fields (subclasses)."""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)

    farm: Path | None = None

    @classmethod
    def parse(cls, args: argparse.Namespace) -> Self:
        """The command's options out of argparse's namespace (which also holds `func` and the other commands'
        destinations: ignored). argparse already converted and checked every value; this only types them."""
        return cls.model_validate(vars(args))

    def farm_root(self) -> Path:
        """`--farm`, else $ENVFARM_HOME, else the installed farm; absolute."""
        return (self.farm or default_farm_root()).resolve()

    def registry(self) -> Registry:
        return load_registry(self.farm_root())


def fail(message: str) -> int:
    """Bad input: one line on stderr naming what is wrong, exit status 2 (never a traceback)."""
    print(f"error: {message}", file=sys.stderr)
    return 2


def writable_farm(out: Path | None, options: CommandOptions) -> Path | None:
    """The farm `build`-like commands publish into (--out, else --farm), or None (and a message) if it is
    the read-only installed farm."""
    farm_root = (out or options.farm_root()).resolve()
    if registry_file(farm_root) != farm_root / REGISTRY_FILE:
        fail(f"the installed farm {farm_root} is read-only; build into a folder with --out DIR")
        return None
    return farm_root
