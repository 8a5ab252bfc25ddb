"""What the five mcp 1.x test servers share: the people of their scenario and a misbehaviour switch.

These servers stand for another project's code: they import the mcp 1.x SDK (`mcp.server.fastmcp`),
never envfarm, and run in their own virtual environment. `--crash-after N` makes the process exit
abruptly on its Nth tool call and `--hang` makes every call hang, so tests can check that one bad
server ends its own episode only.
"""

from __future__ import annotations

import os
import sys
import time

PEOPLE = [
    {"name": "Ana Silva", "email": "ana.silva@example.com", "city": "Lisbon"},
    {"name": "Li Wei", "email": "li.wei@example.com", "city": "Singapore"},
    {"name": "Sam Okafor", "email": "sam.okafor@example.com", "city": "Lagos"},
    {"name": "Maria Rossi", "email": "maria.rossi@example.com", "city": "Turin"},
]


class Misbehaviour:
    """Reads `--hang` / `--crash-after N` from argv; `tick()` runs at the start of every tool call."""

    def __init__(self, argv: list[str]) -> None:
        self.hang = "--hang" in argv
        self.crash_after = int(argv[argv.index("--crash-after") + 1]) if "--crash-after" in argv else 0
        self.calls = 0

    def tick(self) -> None:
        self.calls += 1
        if self.hang:
            time.sleep(3600)
        if self.crash_after and self.calls >= self.crash_after:
            sys.stderr.write("simulated crash\n")
            os._exit(17)


MISBEHAVIOUR = Misbehaviour(sys.argv)
