"""The fork server rollout workers come from (`envfarm.clients.workers`), in a module light enough to import
first: `envfarm rollout --workers N` starts it before its own imports, so the server's one import of the
driver and the server runtime runs beside them instead of after them."""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.context import ForkServerContext

# What the fork server imports once, before forking workers: the driver and the server runtime.
PRELOAD = ["envfarm.clients.workers", "envfarm.clients.scoring", "envfarm.servers.runtime.farm"]


def fork_server() -> ForkServerContext:
    """The standard library's forkserver context, its server started (once per process) with PRELOAD."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    from multiprocessing import forkserver

    forkserver.ensure_running()
    return context


# `envfarm rollout` without `--workers`: one worker per core from this many episodes (tasks x k) of an offline
# policy and user. Below it the in-process run is short anyway (~2 s of episodes on one core) and a worker
# pool's fixed costs (the fork server's import, ~1.1 s of CPU, and each worker's start) weigh more than the
# cores gain; the bench's `workers` section measures where two workers start to finish first
# (`break_even_episodes`). An LLM policy or user waits on its endpoint, not on cores, and `--concurrency` is
# per worker: such runs keep one process unless asked.
AUTO_WORKERS_MIN_EPISODES = 200
OFFLINE = frozenset({"heuristic", "oracle", "scripted"})


def machine_cores() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def auto_workers(episodes: int, *, policy: str, user: str) -> int:
    """`--workers` left out: the machine's cores for a job of AUTO_WORKERS_MIN_EPISODES or more offline
    episodes, else 1 (this process)."""
    if episodes >= AUTO_WORKERS_MIN_EPISODES and {policy, user} <= OFFLINE:
        return machine_cores()
    return 1
