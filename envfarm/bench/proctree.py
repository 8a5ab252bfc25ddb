"""CPU and memory of a whole process tree, grandchildren included: what `/usr/bin/time` misses.

`envfarm rollout --workers N` is three generations of processes: the command, the fork server it starts,
and the workers the fork server forks. The fork server is never waited for by the command (it exits on its
own once the command is gone), so the command's rusage, and `time`'s, leave out the fork server and every
worker. Two ways of counting, used together:

- `tree_cpu_s` sums /proc: for every live process of the tree, its own user + system time plus that of the
  children it has already reaped (`cutime + cstime`). A child not yet reaped is still in /proc and counted
  there; once reaped it is in its parent's `cutime`; so the sum counts each process once, at any instant.
- `run_metered` runs a command in a meter process that is the tree's child subreaper: an orphan (the fork
  server once the command exits) is re-parented to the meter, which reaps it, so when every process is gone
  the meter's `RUSAGE_CHILDREN` is the exact total. While the command runs it polls /proc for the
  per-process split (the command, the fork server, each worker: CPU and PSS), which the last poll can only
  undercount by one interval.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

from pydantic import BaseModel, Field

from envfarm.clients.procfs import pss_kb

PR_SET_CHILD_SUBREAPER = 36
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


class ProcStat(BaseModel):
    """One process as /proc/PID/stat and smaps_rollup say."""

    pid: int
    ppid: int
    name: str
    cpu_s: float = Field(description="its own user + system time")
    reaped_cpu_s: float = Field(description="user + system time of the children it has waited for")
    pss_mb: float = 0.0


def proc_stat(pid: int, *, pss: bool = False) -> ProcStat | None:
    """The process's CPU times (and with `pss`, its proportional set size); None once it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    head, _, tail = raw.rpartition(")")
    fields = tail.split()  # fields[0] is the state: field 3 of proc(5)
    stat = ProcStat(
        pid=pid,
        ppid=int(fields[1]),
        name=head.partition("(")[2],
        cpu_s=(int(fields[11]) + int(fields[12])) * TICK_S,
        reaped_cpu_s=(int(fields[13]) + int(fields[14])) * TICK_S,
    )
    if pss:
        stat.pss_mb = round(pss_kb(pid) / 1024, 1)
    return stat


def descendants(root: int) -> list[int]:
    """`root` and every live process below it, parents before children (one pass over /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                tail = Path(f"/proc/{entry.name}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            children.setdefault(int(tail[1]), []).append(int(entry.name))
    found, frontier = [root], [root]
    while frontier:
        frontier = [c for p in frontier for c in sorted(children.get(p, ()))]
        found += frontier
    return found


def tree_stats(root: int, *, pss: bool = False) -> list[ProcStat]:
    """Every live process of the tree under `root` (itself included)."""
    return [s for pid in descendants(root) if (s := proc_stat(pid, pss=pss)) is not None]


def tree_cpu_s(root: int) -> float:
    """CPU seconds the tree under `root` has used so far: each process's own time and its reaped children's."""
    return sum(s.cpu_s + s.reaped_cpu_s for s in tree_stats(root))


class Metered(BaseModel):
    """A command run under `run_metered`."""

    returncode: int
    wall_s: float
    cpu_s: float = Field(description="every process of the run, exact (reaped by the meter), their exits included")
    wall_cpu_s: float = Field(
        description="the same until the command ended: its own (exact) and the rest as /proc said then; what "
        "the fork server spends exiting after the command is not in it"
    )
    polled_cpu_s: float = Field(description="the same from the last /proc poll: a check on the exact figure")
    processes: list[ProcStat] = Field(
        description="each process at its last poll, PSS at its largest, ppid the one it started with"
    )
    outlived: list[int] = Field(description="the processes still there when the command ended")
    reaped_cpu_s: dict[int, float] = Field(
        description="pid -> CPU of each process the meter reaped (the command, orphans), its own reaped children's in"
    )
    stdout: str
    stderr: str

    @property
    def cores(self) -> float:
        """Cores the run kept busy while the command ran."""
        return self.wall_cpu_s / self.wall_s if self.wall_s else 0.0


def run_metered(argv: list[str], *, poll_s: float = 0.05, timeout: float = 600.0, cwd: Path | None = None) -> Metered:
    """Run `argv` in a meter process (this file as a script: `envfarm.bench` imports much more, and the meter
    should have its imports done before the command starts) and return what it measured."""
    meter = [sys.executable, __file__, str(poll_s), *argv]
    done = subprocess.run(meter, check=False, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"the meter failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return Metered.model_validate_json(done.stdout)


def _meter(poll_s: float, argv: list[str]) -> Metered:
    """The meter process's work: become the subreaper, run the command, poll its tree, reap everything."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    out: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda k=k, f=f: out.__setitem__(k, f.read()), daemon=True)
        for k, f in (("stdout", process.stdout), ("stderr", process.stderr))
    ]
    for reader in readers:
        reader.start()
    seen: dict[int, ProcStat] = {}
    reaped: dict[int, float] = {}
    me = os.getpid()
    polled = 0.0
    returncode: int | None = None
    while True:
        stats = [s for s in tree_stats(me, pss=True) if s.pid != me]
        for stat in stats:
            if (old := seen.get(stat.pid)) is not None:
                stat.pss_mb = max(stat.pss_mb, old.pss_mb)
                stat.ppid = old.ppid  # the parent it was started by, not the meter it was re-parented to
            seen[stat.pid] = stat
        if stats:
            polled = sum(s.cpu_s + s.reaped_cpu_s for s in stats)
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            returncode = os.waitstatus_to_exitcode(status)
            reaped[pid] = round(usage.ru_utime + usage.ru_stime, 3)
            break
        time.sleep(poll_s)
    wall = time.perf_counter() - started
    # What outlives the command (the fork server, exiting on its own) as it stood when the command ended.
    rest = [s for s in tree_stats(me) if s.pid != me]
    for stat in rest:
        stat.pss_mb = seen[stat.pid].pss_mb if stat.pid in seen else 0.0
        stat.ppid = seen[stat.pid].ppid if stat.pid in seen else stat.ppid
        seen[stat.pid] = stat
    in_wall = reaped[process.pid] + sum(s.cpu_s + s.reaped_cpu_s for s in rest)
    process.returncode = returncode
    # The orphans (the fork server, any worker it left) are ours now: wait for every one.
    while True:
        try:
            pid, _, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        reaped[pid] = round(usage.ru_utime + usage.ru_stime, 3)
    for reader in readers:
        reader.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Metered(
        returncode=returncode if returncode is not None else -1,
        wall_s=round(wall, 3),
        cpu_s=round(cpu, 3),
        wall_cpu_s=round(in_wall, 3),
        outlived=[s.pid for s in rest],
        polled_cpu_s=round(polled, 3),
        processes=list(seen.values()),
        reaped_cpu_s=reaped,
        stdout=out.get("stdout", b"").decode(errors="replace"),
        stderr=out.get("stderr", b"").decode(errors="replace"),
    )


if __name__ == "__main__":
    print(_meter(float(sys.argv[1]), sys.argv[2:]).model_dump_json())
