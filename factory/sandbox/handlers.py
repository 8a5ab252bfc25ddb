"""`python -I -m envfarm.factory.sandbox.handlers SERVER_FOLDER PACKAGE`: an untrusted server's handlers, run for
the serving process (`envfarm.servers.runtime.contained`) in a process of their own.

In order, before one line of handlers.py runs: the protocol moves to private descriptors (stdout goes
to stderr, stdin to /dev/null), the environment is emptied, the allowed modules are loaded, the process
drops to the user nobody where it runs as root, takes the verifier's resource limits with no processes
or threads at all (RLIMIT_NPROC 0), disarms `_posixsubprocess`, and installs the verifier's audit hook.
handlers.py then runs as a module whose builtins lack every reflective one (`open`, `eval`, `getattr`,
...) and whose `__import__` admits only the allow-list; a second audit hook then locks the process:
no module loads, no code from strings, code objects or marshal/pickle, no frames or the collector, no
sockets, no SQLite connection of its own, no file but a time zone's.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from envfarm.factory.sandbox.guard import (
    ALLOWED_MODULES,
    IMPLIED_MODULES,
    REFLECTIVE_NAMES,
    VIOLATION,
    Limits,
    allowed_module,
    apply_limits,
    audit_hook,
    disarm_process_spawning,
)
from envfarm.servers.runtime.contained import SQLITE_ERRORS, decode, dumps
from envfarm.servers.runtime.database import Database

NOBODY = 65534
LOCKED_EVENTS = (
    "compile",
    "exec",
    "code.__new__",
    "function.__new__",
    "marshal.",
    "pickle.",
    "sys._getframe",
    "sys._current_frames",
    "sys.settrace",
    "sys.setprofile",
    "gc.",
    "object.__getattr__",
    "object.__setattr__",
    "object.__delattr__",
    "socket.",
    "sqlite3.",
    "os.listdir",
    "os.scandir",
    "os.chdir",
    "os.putenv",
    "os.unsetenv",
    "signal.",
    "builtins.input",
    "cpython.",
)


class _Stream:
    """The child's side of the protocol: JSON lines on two private descriptors."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self.reader = reader
        self.writer = writer

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(dumps(message))
        self.writer.flush()

    def receive(self) -> dict[str, Any] | None:
        line = self.reader.readline()
        if not line:
            return None
        message = decode(json.loads(line))
        if not isinstance(message, dict):
            raise TypeError("the host sent something that is not an object")
        return message


class _Cursor:
    def __init__(self, reply: Mapping[str, Any]) -> None:
        columns = reply.get("columns")
        self.description = [(c, None, None, None, None, None, None) for c in columns] if columns else None
        self._rows = [tuple(r) for r in reply.get("rows") or []]
        self.rowcount = int(reply.get("rowcount", -1))

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None


class RemoteConnection:
    """What `Database` needs of a connection (`execute` and a cursor), run by the host on the episode."""

    def __init__(self, stream: _Stream) -> None:
        self._stream = stream

    def execute(self, sql: str, params: Any = ()) -> _Cursor:
        self._stream.send({"sql": sql, "params": dict(params) if isinstance(params, Mapping) else list(params)})
        reply = self._stream.receive()
        if reply is None:
            raise SystemExit(0)
        raised = reply.get("raise")
        if isinstance(raised, list) and len(raised) == 2:
            kind = raised[0] if raised[0] in SQLITE_ERRORS else "DatabaseError"
            raise getattr(sqlite3, kind)(str(raised[1]))
        return _Cursor(reply)


def _refuse(what: str) -> PermissionError:
    message = f"{VIOLATION}: {what} is not allowed in a farm server"
    _report(message)
    return PermissionError(message)


def _report(message: str) -> None:
    try:
        os.write(2, (message + "\n").encode())
    except OSError:
        pass


def guarded_import(real: Callable[..., ModuleType]) -> Callable[..., ModuleType]:
    """`__import__` for handlers: only the allow-list, and no private or off-list module through `from`."""

    def __import__(
        name: str, globals: Any = None, locals: Any = None, fromlist: Sequence[str] = (), level: int = 0
    ) -> ModuleType:
        if level or not allowed_module(name):
            raise _refuse(f"importing {name}")
        module = real(name, globals, locals, fromlist, level)
        for item in fromlist or ():
            value = getattr(module, item, None)
            if item.startswith("_") or (isinstance(value, ModuleType) and not allowed_module(value.__name__)):
                raise _refuse(f"importing {name}.{item}")
        return module

    return __import__


def handler_builtins() -> dict[str, Any]:
    """The builtins a handler module sees: none of the reflective ones, and a guarded `__import__`."""
    names = dict(builtins.__dict__)
    for name in REFLECTIVE_NAMES:
        names.pop(name, None)
    names["__import__"] = guarded_import(builtins.__import__)
    return names


def load_handlers(source: str, filename: str, module_name: str) -> ModuleType:
    module = ModuleType(module_name)
    module.__dict__["__builtins__"] = handler_builtins()
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - the one place handlers run
    return module


def _time_zone_roots() -> tuple[str, ...]:
    import zoneinfo

    roots = [os.path.realpath(p) for p in zoneinfo.TZPATH]
    tzdata = importlib.util.find_spec("tzdata")
    if tzdata is not None and tzdata.origin:
        roots.append(os.path.realpath(os.path.dirname(tzdata.origin)))
    return tuple(r.rstrip("/") + "/" for r in roots)


def lock_hook(zones: tuple[str, ...]) -> Callable[[str, tuple[Any, ...]], None]:
    """The second hook, once handlers.py is loaded: every name it uses is bound here, so nothing a
    handler rebinds later (a module global, a builtin) changes what it refuses."""
    refused, allowed, implied, report = LOCKED_EVENTS, ALLOWED_MODULES, IMPLIED_MODULES, _report
    error, text = PermissionError, str

    def hook(event: str, args: tuple[Any, ...]) -> None:
        what = None
        if event == "import":
            module = text(args[0]) if args else ""
            root = module.split(".", 1)[0]
            if module not in allowed and root not in allowed - {"envfarm"} and root not in implied:
                what = f"importing {module}"
        elif event == "open":
            path = args[0] if args else None
            if type(path) is not int:
                mode, flags = (list(args) + [None, None, None])[1:3]
                writing = (type(mode) is str and any(c in mode for c in "wax+")) or (
                    type(flags) is int and flags & 0o3103  # O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND
                )
                # Only a plain path inside a time-zone folder, read: no decoding or resolving that a
                # handler could have rebound.
                if writing or type(path) is not str or not path.startswith(zones) or "/.." in path:
                    what = f"opening the file {text(path)[:200]}"
        elif event.startswith(refused):
            what = f"{event} in a handler"
        if what is not None:
            message = f"{VIOLATION}: {what} is not allowed in a farm server"
            report(message)
            raise error(message)

    return hook


def serve(stream: _Stream, module: ModuleType) -> None:
    """Answer calls until the host closes the pipe."""
    key_columns: dict[str, str] = {}
    connection = RemoteConnection(stream)
    while (message := stream.receive()) is not None:
        context = message.get("context") or {}
        db = Database(
            connection,  # type: ignore[arg-type]
            context.get("now", ""),
            context.get("id_formats") or {},
            context.get("principal"),
            context.get("scopes") or {},
            context.get("id_namespace"),
            key_columns,
        )
        try:
            function = module.__dict__.get(str(message.get("call")))
            if not callable(function):
                raise TypeError(f"handlers.py has no function {message.get('call')!r}")
            result = function(db, **(message.get("arguments") or {}))
            reply: dict[str, Any] = {"result": result}
            dumps(reply)  # refuse what JSON cannot carry here, as the handler's own error
        except SystemExit:
            raise
        except BaseException as exc:  # noqa: BLE001 - every failure of untrusted code goes back to the host
            reply = {"raise": [type(exc).__name__, str(exc)]}
        try:
            stream.send(reply)
        except (TypeError, ValueError) as exc:
            stream.send({"raise": ["TypeError", f"the handler returned something JSON cannot carry: {exc}"]})


def _drop_privileges() -> None:
    """Run as nobody where this process is root: the kernel then refuses signals to the host, writes
    to its files and, with RLIMIT_NPROC 0, any new process or thread."""
    import resource

    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))


def main(argv: Sequence[str] | None = None) -> int:
    folder, package = (list(sys.argv[1:] if argv is None else argv) + ["", ""])[:2]
    stream = _Stream(os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb"))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # print() and stray writes go to stderr, never into the protocol
    os.close(null)
    sys.stdout = sys.stderr
    os.environ.clear()
    sys.dont_write_bytecode = True
    path = Path(folder) / "handlers.py"
    source = path.read_text(encoding="utf-8")
    for name in sorted(ALLOWED_MODULES | IMPLIED_MODULES):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    zones = _time_zone_roots()
    disarm_process_spawning()
    apply_limits(Limits(cpu_s=120, address_space_mb=1024, file_size_mb=1, open_files=64))
    _drop_privileges()
    sys.addaudithook(audit_hook(None, _report))
    try:
        module = load_handlers(source, str(path), f"{package}.handlers")
    except BaseException as exc:  # noqa: BLE001 - a handler module that fails to load answers every call so
        failed = [type(exc).__name__, f"handlers.py did not load: {exc}"]
        sys.addaudithook(lock_hook(zones))
        while stream.receive() is not None:
            stream.send({"raise": failed})
        return 0
    sys.addaudithook(lock_hook(zones))
    serve(stream, module)
    return 0


if __name__ == "__main__":
    sys.exit(main())
