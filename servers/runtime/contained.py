"""Handlers of untrusted servers, run in a sandboxed process at serve time.

A server built from the project's own reviewed specs (`trust: "reviewed"` in registry.json) runs its
handlers in the serving process, as fast as a function call. Any other (proposed, imported, or a
registry entry without the field) gets, in place of its `handlers` module, a `ContainedHandlers` that
runs each handler function in one long-lived child, `python -I -m envfarm.factory.sandbox.handlers`, under the
verifier's resource limits and audit hook plus a stricter lock (no new imports, no code from strings,
no frames, no files but time zones) and, where the host runs as root, as the user nobody with no
processes or threads allowed at all. The host keeps the episode: the child's `Database` sends each
SQL statement back over the pipe and the host runs it in the call's transaction under a SQLite
authorizer that allows reading and changing rows and nothing else (no ATTACH, VACUUM INTO, PRAGMA
writes, schema changes or transaction control). A call that runs past its time limit, or a child
that dies, is a failed call (nothing changed); the next call starts a fresh child.

The protocol is JSON lines: the host sends `{"call", "arguments", "context"}`; the child answers
`{"sql", "params"}` (the host replies `{"columns", "rows", "rowcount"}` or `{"raise"}`) any number of
times, then `{"result"}` or `{"raise": [type, message]}`.
"""

from __future__ import annotations

import ast
import base64
import builtins
import json
import os
import select
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from envfarm.servers.runtime.database import Database, Rejected
from envfarm.servers.runtime.python_ast import parse_module

if TYPE_CHECKING:
    import subprocess

SANDBOXED_ENV = "ENVFARM_SANDBOXED"  # set inside a sandboxed process: its handlers are contained already
CALL_TIMEOUT_S = 10.0  # a handler takes milliseconds; a stuck one stalls its server's calls
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_ERROR_CHARS = 2000
MAX_ROWS = 100_000  # rows one contained statement may return
MAX_VALUE_BYTES = 16 * 1024 * 1024  # the largest string or blob contained SQL may build (SQLite's default: 1 GB)
PROGRESS_STEPS = 10_000  # virtual machine steps between checks of the call's deadline
SQLITE_ERRORS = ("IntegrityError", "OperationalError", "ProgrammingError", "DataError", "DatabaseError")
# What untrusted SQL may do: read and change rows (triggers included), call SQL functions, recurse.
AUTHORIZED_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_INSERT,
        sqlite3.SQLITE_UPDATE,
        sqlite3.SQLITE_DELETE,
        sqlite3.SQLITE_FUNCTION,
        sqlite3.SQLITE_RECURSIVE,
    }
)
READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "foreign_key_list"})


class ContainedError(Exception):
    """A contained handler failed in a way that is not its own exception: it timed out, its process
    died, or it broke the protocol."""


def encode(value: Any) -> Any:
    """A value as JSON can carry it: bytes become {"$bytes": base64}; tuples become lists."""
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("$bytes"), str):
            return base64.b64decode(value["$bytes"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(encode(message), separators=(",", ":"), default=str).encode() + b"\n"


def exception_for(kind: str, message: str) -> Exception:
    """The exception a contained call raised, rebuilt on this side: the runtime's Rejected, SQLite's
    errors and builtin exceptions as themselves (so the tool runner answers exactly as in-process),
    anything else as ContainedError naming its type."""
    message = str(message)[:MAX_ERROR_CHARS]
    if kind == "Rejected":
        return Rejected(message)
    if kind in SQLITE_ERRORS:
        error: Exception = getattr(sqlite3, kind)(message)
        return error
    builtin = getattr(builtins, str(kind), None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        return builtin(message)
    return ContainedError(f"{str(kind)[:100]}: {message}")


def authorize(action: int, arg1: str | None, arg2: str | None, database: str | None, trigger: str | None) -> int:
    """SQLite authorizer for untrusted SQL: rows in, rows out, nothing else."""
    if action in AUTHORIZED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg1 in READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def handler_functions(folder: Path) -> frozenset[str]:
    """Top-level function names of `folder/handlers.py`, read without running it."""
    path = folder / "handlers.py"
    if not path.is_file():
        return frozenset()
    tree = parse_module(path.read_text(encoding="utf-8"), str(path))
    return frozenset(n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def child_environment() -> dict[str, str]:
    """None of the host's environment (its secrets) but what an interpreter may need to start at all."""
    return {key: os.environ[key] for key in ("LD_LIBRARY_PATH",) if key in os.environ}


def context_of(db: Database) -> dict[str, Any]:
    """What a `Database` is beyond its connection: the clock, id formats, principal and scopes."""
    return {
        "now": db.now,
        "id_formats": dict(db._id_formats),
        "principal": db.principal,
        "scopes": dict(db._scopes),
        "id_namespace": db._id_namespace,
    }


class HandlerProcess:
    """One sandboxed child running one server's handlers; started on the first call, again after it dies."""

    def __init__(self, folder: Path, package: str, timeout: float = CALL_TIMEOUT_S) -> None:
        self.folder = folder
        self.package = package
        self.timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._lock = threading.Lock()

    def command(self) -> list[str]:
        return [sys.executable, "-I", "-m", "envfarm.factory.sandbox.handlers", str(self.folder), self.package]

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            import subprocess  # here, not at the top: the sandboxed child imports this module too

            self._process = subprocess.Popen(
                self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_environment(), close_fds=True
            )
            self._buffer = b""
            weakref.finalize(self, _stop, self._process)
        return self._process

    def stop(self) -> None:
        if self._process is not None:
            _stop(self._process)
            self._process = None

    def _fail(self, why: str) -> ContainedError:
        self.stop()
        return ContainedError(f"the handler's sandboxed process {why}")

    def _send(self, process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
        assert process.stdin is not None
        try:
            process.stdin.write(dumps(message))
            process.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise self._fail(f"ended ({exc})") from exc

    def _receive(self, process: subprocess.Popen[bytes], deadline: float) -> dict[str, Any]:
        assert process.stdout is not None
        fd = process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise self._fail(f"did not answer within {self.timeout:g} s (stopped)")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                code = process.wait(timeout=5)
                raise self._fail(f"ended with exit code {code} (killed by its limits, or crashed)")
            self._buffer += chunk
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise self._fail(f"sent a message over {MAX_MESSAGE_BYTES} bytes")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = decode(json.loads(line))
        except ValueError as exc:
            raise self._fail(f"broke the protocol ({exc})") from exc
        if not isinstance(message, dict):
            raise self._fail("broke the protocol (not an object)")
        return message

    def call(self, name: str, db: Database, arguments: dict[str, Any]) -> Any:
        """Run handler `name` in the child on `db`'s episode; its SQL runs here, under `authorize`."""
        with self._lock:
            process = self._running()
            connection = db.connection
            deadline = time.monotonic() + self.timeout
            # The child's SQL runs here: rows only, and bounded in time (the call's deadline) and size.
            connection.set_authorizer(authorize)
            connection.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_STEPS)
            length = connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            try:
                self._send(process, {"call": name, "arguments": arguments, "context": context_of(db)})
                while True:
                    message = self._receive(process, deadline)
                    if "sql" in message:
                        self._send(process, _execute(connection, message))
                    elif "result" in message:
                        return message["result"]
                    elif isinstance(raised := message.get("raise"), list) and len(raised) == 2:
                        raise exception_for(str(raised[0]), str(raised[1]))
                    else:
                        raise self._fail("broke the protocol (an unknown message)")
            finally:
                connection.set_authorizer(None)
                connection.set_progress_handler(None, 0)
                connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, length)


def _execute(connection: sqlite3.Connection, message: dict[str, Any]) -> dict[str, Any]:
    params = message.get("params")
    try:
        cursor = connection.execute(str(message["sql"]), params if isinstance(params, dict | list) else ())
        rows = cursor.fetchmany(MAX_ROWS + 1)
    except sqlite3.Error as exc:
        return {"raise": [type(exc).__name__, str(exc)]}
    if len(rows) > MAX_ROWS:
        return {"raise": ["OperationalError", f"a statement returned over {MAX_ROWS:,} rows"]}
    columns = [d[0] for d in cursor.description] if cursor.description else None
    return {"columns": columns, "rows": rows, "rowcount": cursor.rowcount}


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(timeout=5)
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


class ContainedHandlers(ModuleType):
    """Stands in for `envfarm.servers.<name>.handlers` in the serving process: each function runs in the
    sandboxed child, never here (this process never imports the untrusted module)."""

    def __init__(self, package: str, folder: Path) -> None:
        super().__init__(
            f"{package}.handlers", "handlers run in a sandboxed process (envfarm.servers.runtime.contained)"
        )
        self._functions = handler_functions(folder)
        self._process = HandlerProcess(folder, package)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_") or name not in self._functions:
            raise AttributeError(f"{self.__name__} has no function {name!r}")
        process = self._process

        def contained(db: Database, **arguments: Any) -> Any:
            return process.call(name, db, arguments)

        contained.__name__ = name
        return contained


def contain(package: str, folder: Path) -> ContainedHandlers:
    """Put a `ContainedHandlers` in place of `package.handlers` before the package is imported."""
    handlers = ContainedHandlers(package, folder)
    sys.modules[f"{package}.handlers"] = handlers
    return handlers


def inside_sandbox() -> bool:
    """Whether this process is itself a sandboxed server (the verifier's): its handlers run where it does."""
    return os.environ.get(SANDBOXED_ENV) == "1"
