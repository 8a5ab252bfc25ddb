"""What /proc says about a process, in a module that imports nothing heavy: the bench's meter
(`envfarm.bench.proctree`) polls it while the command it measures runs, and must not compete for its cores."""

from __future__ import annotations

from pathlib import Path


def pss_kb(pid: int) -> int:
    """Proportional set size of a process in kB (0 where the kernel does not say)."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
