"""`envfarm`: one console script, one subcommand per job. The parser is put together from the command groups
(`farm`, `factory`, `imports`, `checks`, `driver`), each module registering its subcommands in the order
`envfarm --help` lists them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from envfarm.cli import checks, driver, factory, farm, imports


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="envfarm", description="An MCP server farm for training tool-use agents.")
    p.add_argument(
        "--farm",
        type=Path,
        help="farm root holding servers/ and registry.json (default: $ENVFARM_HOME, else the installed farm)",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for group in (farm, factory, imports, checks, driver):
        group.add_parsers(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader went away (`envfarm config | head`): not an error of ours. Point stdout at
        # the null device so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
