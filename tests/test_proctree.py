"""CPU of a whole process tree (`envfarm.bench.proctree`), on small trees whose every process burns a known
amount of CPU: the /proc sum counts a live grandchild and one its parent has reaped, each once; the meter
counts an orphaned grandchild that outlives the command, which the command's own rusage misses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import suppress
from pathlib import Path

from envfarm.bench.proctree import descendants, run_metered, tree_cpu_s, tree_stats

BURN = """
import os, sys, time
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
"""

# The root burns 0.2 s; its child forks a grandchild that burns 0.3 s and exits (reaped by the child, so
# counted in the child's cutime); the child burns 0.1 s; then each says so on stdout and sleeps.
TREE = (
    BURN
    + """
if os.fork() == 0:
    pid = os.fork()
    if pid == 0:
        burn(0.3)
        os._exit(0)
    os.waitpid(pid, 0)
    burn(0.1)
    print("child ready", flush=True)
    time.sleep(60)
    os._exit(0)
burn(0.2)
print("root ready", flush=True)
time.sleep(60)
"""
)

# The root forks a child that forks a grandchild and exits at once; the grandchild, orphaned, burns 0.4 s
# after the root has exited; the root burns 0.1 s and exits without waiting for anyone.
ORPHAN = (
    BURN
    + """
if os.fork() == 0:
    if os.fork() == 0:
        time.sleep(0.3)
        burn(0.4)
        os._exit(0)
    os._exit(0)
burn(0.1)
"""
)


def test_the_proc_sum_counts_a_live_tree_and_reaped_grandchildren_once() -> None:
    root = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert root.stdout is not None
        said = {root.stdout.readline().strip(), root.stdout.readline().strip()}
        assert said == {"root ready", "child ready"}
        stats = tree_stats(root.pid)
        assert stats[0].pid == root.pid and len(stats) == 2  # the grandchild is gone, reaped
        assert len(descendants(root.pid)) == 2
        child = next(s for s in stats if s.pid != root.pid)
        assert child.ppid == root.pid and child.reaped_cpu_s >= 0.29  # the grandchild's 0.3 s
        cpu = tree_cpu_s(root.pid)
        # 0.6 s burnt, plus the interpreters' start-up (~0.03 s each); a double count would be >= 0.9, a missed
        # grandchild about 0.3. The floor leaves room for 10 ms clock ticks on a loaded machine (0.58 seen in CI).
        assert 0.55 <= cpu < 0.85, cpu
    finally:
        for pid in reversed(descendants(root.pid)):
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        root.wait()


def test_the_meter_counts_an_orphan_that_outlives_the_command(tmp_path: Path) -> None:
    script = tmp_path / "orphan.py"
    script.write_text(textwrap.dedent(ORPHAN))
    started = time.monotonic()
    metered = run_metered([sys.executable, str(script)], poll_s=0.02, timeout=60)
    assert metered.returncode == 0
    assert metered.wall_s < 0.3 + 5 and time.monotonic() - started < 30
    # The command's own rusage (what `time` reports) holds the root's 0.1 s and the child's nothing...
    assert len(metered.reaped_cpu_s) >= 2  # the command, and the orphaned grandchild the meter reaped
    root_cpu = next(iter(metered.reaped_cpu_s.values()))
    assert root_cpu < 0.35, metered.reaped_cpu_s
    # ...the meter's total has the orphan's 0.4 s as well, all of it spent after the command ended.
    assert 0.49 <= metered.cpu_s < 0.8, metered
    assert metered.wall_cpu_s < 0.35 and metered.cores == metered.wall_cpu_s / metered.wall_s
    assert any(p.pid in metered.outlived for p in metered.processes)


def test_a_failing_command_is_its_exit_status() -> None:
    metered = run_metered([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], timeout=60)
    assert metered.returncode == 3 and metered.stdout == "out\n"
