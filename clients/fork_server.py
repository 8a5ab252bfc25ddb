"""The fork server rollout workers come from (`envfarm.clients.workers`), in a module light enough to import
first: `envfarm rollout --workers N` starts it before its own imports, so the server's one import of the
driver and the server runtime runs beside them instead of after them."""

from __future__ import annotations

import multiprocessing
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
