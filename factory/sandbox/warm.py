"""A warm launcher for verifying many servers in a row (mutation testing): one process imports the
`mcp` SDK, the runtime and coverage.py once, then forks a fresh server process per launch.

`python -m envfarm.factory.sandbox.warm SOCKET` listens on a Unix socket. A launch is a tiny stdlib-only stub
(`python -I -S -c STUB SOCKET ARGS...`) that hands its stdin, stdout and stderr to the warm process with
SCM_RIGHTS and waits; the warm process forks, the child takes those three descriptors and runs the runtime's
entry point (`envfarm.servers.runtime.cli.farm_main ARGS`) in the sandbox (or the coverage gate, which enters
it too) exactly as a cold `python -m envfarm.factory.sandbox.guard ARGS` would, and the stub exits when the
child does. So the verifier still drives a real server subprocess over stdio, its own pid and its own imports
of the server under test (servers are imported by location, never before the fork), and a launch costs a fork
instead of an interpreter start and the SDK import.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

STUB = (
    "import json,socket,sys\n"
    "s=socket.socket(socket.AF_UNIX)\n"
    "s.connect(sys.argv[1])\n"
    "socket.send_fds(s,[json.dumps(sys.argv[2:]).encode()],[0,1,2])\n"
    "while s.recv(64):pass\n"
)
ENTRY_POINTS = ("serve", "coverage")


def stub_args(socket_path: Path, entry: str, args: Sequence[str]) -> list[str]:
    """The arguments after `python` that launch `entry ARGS` through the warm process at `socket_path`."""
    if entry not in ENTRY_POINTS:
        raise ValueError(f"entry {entry!r} is not one of {ENTRY_POINTS}")
    return ["-I", "-S", "-c", STUB, str(socket_path), entry, *args]


def _end_with_stub(connection: socket.socket) -> None:
    """The stub waits on `connection` until the child ends. If the stub ends first (the verifier killed it
    on a timeout), the child must not live on as an orphan: a hung handler would spin forever."""
    try:
        connection.recv(1)
    except OSError:
        pass
    os._exit(1)


def _run_child(connection: socket.socket, fds: list[int], argv: list[str]) -> None:
    """In the forked child: become the server process the stub stands for, then exit."""
    code: int | str | None = 1
    try:
        threading.Thread(target=_end_with_stub, args=(connection,), daemon=True).start()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
            os.close(fd)
        entry, args = argv[0], argv[1:]
        if entry == "coverage":  # enters the sandbox itself, once coverage is recording
            from envfarm.factory.verify.coverage_gate import main as entry_main
        else:  # the runtime in the sandbox, as a cold launch (`python -m envfarm.factory.sandbox.guard`) runs it
            from envfarm.factory.sandbox.guard import main as entry_main
        code = entry_main(args)
    except SystemExit as exc:
        code = exc.code
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code if isinstance(code, int) else 1)  # closes the connection: the stub exits too


def preload() -> None:
    """Load, before any fork, what every child would otherwise load after it: the SDK, the runtime,
    coverage, the sandbox, the CLI's parser (and the modules its commands import), the event loop
    backend, and inspect's map of loaded modules (coverage walks the stack with inspect when it
    starts recording, which costs a realpath per loaded module on a cold map)."""
    import inspect

    import anyio._backends._asyncio  # noqa: F401 - chosen by anyio.run only when the server runs
    import coverage  # noqa: F401 - imported once here, used by every child
    import mcp.server.mcpserver  # noqa: F401

    import envfarm.factory.sandbox.guard
    import envfarm.factory.verify.coverage_gate
    import envfarm.servers.runtime.cli
    import envfarm.servers.runtime.farm
    import envfarm.servers.runtime.server

    envfarm.servers.runtime.cli.add_serving_arguments(argparse.ArgumentParser())  # argparse's lazy imports
    inspect.stack()


def serve(socket_path: Path) -> None:
    """Preload what every server needs, then fork one child per stub that connects. Single-threaded, so
    forking is safe; children are reaped by the kernel (SIGCHLD ignored)."""
    preload()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(socket_path))
    listener.listen(64)
    while True:
        connection, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(connection, 65536, 3)
        argv = json.loads(message)
        if os.fork() == 0:
            listener.close()
            _run_child(connection, fds, argv)
        connection.close()
        for fd in fds:
            os.close(fd)


@contextmanager
def warm_launcher(timeout: float = 60.0) -> Iterator[Path]:
    """Start the warm process; yield its socket path; stop it (and only it) at the end."""
    with tempfile.TemporaryDirectory(prefix="envfarm-warm-") as tmp:
        path = Path(tmp) / "launch.sock"
        process = subprocess.Popen(
            [sys.executable, "-m", "envfarm.factory.sandbox.warm", str(path)], stdin=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + timeout
            while not path.exists():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the warm launcher did not start (exit code {process.poll()})")
                time.sleep(0.05)
            yield path
        finally:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
