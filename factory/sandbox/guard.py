"""Untrusted handlers: an import and introspection allow-list, and a sandboxed process to run them in.

Handlers are written by people or models and are untrusted. Two layers, each enough on its own for
the common escapes, so that one failing does not open the farm:

1. **Static** (`check_untrusted`, run by `static_checks.check_handlers`): handlers may import only
   an allow-list of pure modules (datetime, math, json, re, ...) and the runtime's `Database`, and may
   not touch dunder attributes (`__subclasses__`, `__globals__`, `__class__`, ...), frames or code
   (`f_back`, `gi_frame`, `co_code`), name a reflective builtin at all (`imp = __import__`, a default
   argument, a decorator: any mention, not only a call), reach a module through an allowed one's
   attributes (`typing.sys`, `statistics.random`) or pass a module around, or write SQL beyond rows
   (`ATTACH`, `VACUUM INTO`, `PRAGMA`).
2. **Dynamic** (`python -m envfarm.factory.sandbox.guard <envfarm args>`): every server the verifier launches runs
   under resource limits (CPU time, address space, file size, open files) and a PEP 578 audit hook,
   installed before anything else loads, that refuses network connections, new processes, opening
   files outside the interpreter's and the farm's folders (and any write at all), and SQLite files or
   extensions. A refusal raises inside the handler and is written to stderr, where the verifier
   attributes it to the call (a failed `output_stream` or `crash` check naming the violation). The
   hook also refuses native code (ctypes, mmap, loading `_posixsubprocess`), and any import off the
   allow-list while a handler is running; `_posixsubprocess.fork_exec`, which starts a process with no
   audit event, is replaced by a refusal before any server code loads.

At serve time, handlers of servers not marked `trust: "reviewed"` run in `envfarm.factory.sandbox.handlers`,
the same limits and hook plus a stricter lock (see `envfarm.servers.runtime.contained`).
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from pydantic import BaseModel

from envfarm.servers.runtime.contained import SANDBOXED_ENV
from envfarm.servers.runtime.python_ast import parse

ALLOWED_MODULES = frozenset(
    {
        "__future__",
        "bisect",
        "calendar",
        "collections",
        "dataclasses",
        "datetime",
        "decimal",
        "enum",
        "fractions",
        "functools",
        "heapq",
        "itertools",
        "json",
        "math",
        "operator",
        "re",
        "statistics",
        "string",
        "textwrap",
        "typing",
        "zoneinfo",
        "envfarm.servers.runtime.database",
        "envfarm.servers.runtime.errors",
    }
)
# Builtins that reach past the handler's namespace (code, files, module state, attributes by name):
# refused wherever they are named, not only where they are called, so no alias (`imp = __import__`,
# `def f(db, g=getattr)`, a decorator) can carry them past the check.
REFLECTIVE_NAMES = {
    "__import__": "dynamic imports",
    "__builtins__": "the interpreter's builtins",
    "__loader__": "the module loader",
    "__spec__": "the module loader",
    "eval": "code execution",
    "exec": "code execution",
    "compile": "code execution",
    "open": "file access",
    "globals": "module state",
    "vars": "module state",
    "locals": "frame state",
    "getattr": "attribute access by name",
    "setattr": "attribute change by name",
    "delattr": "attribute deletion by name",
    "breakpoint": "the debugger",
    "input": "reading stdin (the MCP stream on stdio)",
    "help": "the interactive help (imports modules)",
    "memoryview": "raw memory",
    "exit": "stopping the server",
    "quit": "stopping the server",
}
# Attributes that walk out of a value into the interpreter (frames, code, modules, the collector) or
# reach attributes by name; dunders (`__class__`, `__subclasses__`, `__globals__`, ...) are refused too.
REFLECTIVE_ATTRIBUTES = frozenset(
    {
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "f_trace",
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "tb_frame",
        "tb_next",
        "co_code",
        "co_consts",
        "func_globals",
        "mro",
        "modules",
        "_getframe",
        "_current_frames",
        "get_objects",
        "get_referrers",
        "get_referents",
        "attrgetter",
        "methodcaller",
        "get_type_hints",
        "system",
        "popen",
        "fork_exec",
        "connection",
    }
)
DUNDER_TEXT = re.compile(r"__\w+__")
# SQL that reaches past the episode's rows: other database files, the engine's settings, native code.
SQL_ESCAPE = re.compile(r"\b(attach|detach|vacuum|pragma|load_extension)\b", re.IGNORECASE)
VIOLATION = "envfarm sandbox"


class Limits(BaseModel):
    """Resource limits of a sandboxed server process (soft = hard)."""

    cpu_s: int = 300
    address_space_mb: int = 4096
    file_size_mb: int = 64
    open_files: int = 256


class UntrustedFinding(BaseModel):
    """One construct outside the allow-list: where, what, and why it is refused."""

    kind: str
    function: str | None
    line: int
    code: str
    reason: str


def allowed_module(module: str) -> bool:
    """Whether handlers may import `module`: a listed module or a submodule of one."""
    return module in ALLOWED_MODULES or module.split(".", 1)[0] in ALLOWED_MODULES - {"envfarm"}


_MISSING = object()


def _module_attribute(module: str, attribute: str) -> str | None:
    """Why `module.attribute` is refused (None when allowed): a private name, or a module off the
    allow-list that an allowed module happens to hold (`typing.sys`, `statistics.random`, `database.sqlite3`)."""
    if attribute.startswith("_"):
        return f"reaches {module}.{attribute}: a private name of the module"
    try:
        value = getattr(importlib.import_module(module), attribute, _MISSING)
    except ImportError:
        return None  # reported as an import
    if isinstance(value, type(sys)) and not allowed_module(value.__name__):
        return f"reaches {module}.{attribute}: the module {value.__name__}, not on the handler allow-list"
    return None


def _is_module(module: str, attribute: str) -> bool:
    try:
        return isinstance(getattr(importlib.import_module(module), attribute, None), type(sys))
    except ImportError:
        return False


class _AllowList(ast.NodeVisitor):
    """Imports by allow-list, and every way to reach past the handler's own namespace: reflective builtins
    however they are named, dunder and frame attributes, dunder names in strings (format fields,
    attrgetter), and modules reached through an allowed module's attributes (aliases followed)."""

    def __init__(self, source: str, denied: Callable[[str], bool], called: frozenset[str]) -> None:
        self.source = source
        self.denied = denied
        self.called = called
        self.function: str | None = None
        self.findings: list[UntrustedFinding] = []
        self.modules: dict[str, str] = {}  # local name -> the module it is bound to
        self.reached: set[int] = set()  # module names read where they may be: `re.match`, `r = re`

    def _add(self, kind: str, node: ast.AST, reason: str) -> None:
        code = (
            (ast.get_source_segment(self.source, node) or "").splitlines()[0][:120] if hasattr(node, "lineno") else ""
        )
        self.findings.append(
            UntrustedFinding(
                kind=kind, function=self.function, line=getattr(node, "lineno", 0), code=code, reason=reason
            )
        )

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer, self.function = self.function, self.function or node.name
        self.generic_visit(node)
        self.function = outer

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not allowed_module(alias.name):
                if not self.denied(alias.name):
                    self._add("import", node, f"imports {alias.name}: not on the handler allow-list")
            elif alias.asname:
                self.modules[alias.asname] = alias.name
            else:
                self.modules[alias.name.split(".", 1)[0]] = alias.name.split(".", 1)[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self._add("import", node, "a relative import: handlers import only allow-listed modules")
            return
        if not allowed_module(module):
            if not self.denied(module):
                self._add("import", node, f"imports from {module}: not on the handler allow-list")
            return
        for alias in node.names:
            if alias.name == "*":
                self._add("import", node, f"`from {module} import *`: name what the handler uses")
            elif (why := _module_attribute(module, alias.name)) is not None:
                self._add("import", node, why)
            elif _is_module(module, alias.name):
                self.modules[alias.asname or alias.name] = f"{module}.{alias.name}"

    def _module_of(self, node: ast.expr) -> str | None:
        """The module an expression names, following aliases and attribute chains (`json.decoder`)."""
        if isinstance(node, ast.Name):
            return self.modules.get(node.id)
        if isinstance(node, ast.Attribute) and (parent := self._module_of(node.value)) is not None:
            return f"{parent}.{node.attr}" if _is_module(parent, node.attr) else None
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        module = self._module_of(node.value)
        if isinstance(node.value, ast.Name) and all(isinstance(t, ast.Name) for t in node.targets):
            self.reached.add(id(node.value))
        for target in node.targets:
            if isinstance(target, ast.Name):
                if module is not None:
                    self.modules[target.id] = module
                else:
                    self.modules.pop(target.id, None)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name):
            self.reached.add(id(node.value))
        if not isinstance(node.ctx, ast.Load) and self._module_of(node.value) is not None:
            self._add("introspection", node, f"changes {ast.unparse(node)}: a module is shared by every call")
        elif node.attr.startswith("__") and node.attr.endswith("__"):
            self._add(
                "introspection", node, f"touches .{node.attr}: an introspection escape from the handler's namespace"
            )
        elif node.attr in REFLECTIVE_ATTRIBUTES:
            self._add("introspection", node, f"touches .{node.attr}: a way out of the handler's namespace")
        elif (module := self._module_of(node.value)) is not None and (why := _module_attribute(module, node.attr)):
            self._add("introspection", node, why)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in REFLECTIVE_NAMES:
            self._add("introspection", node, f"names {node.id}: {REFLECTIVE_NAMES[node.id]} (however it is called)")
        elif node.id.startswith("__") and node.id.endswith("__") and node.id != "__name__":
            self._add("introspection", node, f"uses {node.id}: interpreter internals")
        elif isinstance(node.ctx, ast.Load) and node.id in self.modules and id(node) not in self.reached:
            self._add(
                "introspection",
                node,
                f"passes the module {self.modules[node.id]} around as a value: its attributes escape the check",
            )

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):  # a docstring: prose, not code
            return
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and (found := SQL_ESCAPE.search(node.value)):
            self._add("introspection", node, f"SQL with {found.group(0).upper()}: beyond the episode's own rows")
        elif isinstance(node.value, str) and DUNDER_TEXT.search(node.value):
            self._add(
                "introspection",
                node,
                f"a string naming {DUNDER_TEXT.search(node.value).group(0)}: interpreter internals by name",  # type: ignore[union-attr]
            )

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.called:
            for part in [*node.args, *node.keywords]:  # the call itself is reported by the caller's check
                self.visit(part)
            return
        self.generic_visit(node)


def check_untrusted(
    source: str, denied: Callable[[str], bool] = lambda module: False, called: frozenset[str] = frozenset()
) -> list[UntrustedFinding]:
    """Imports off the allow-list and introspection escapes in `source` (syntax errors are reported by
    the caller's own parse). `denied(module)` says which modules, `called` which direct calls, another
    check already reports."""
    try:
        tree = parse(source)
    except SyntaxError:
        return []
    visitor = _AllowList(source, denied, called)
    visitor.visit(tree)
    return visitor.findings


# ---- the sandboxed process ---------------------------------------------------------------------------

SUBPROCESS_EVENTS = (
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "os.kill",
    "os.killpg",
    "pty.spawn",
)
NETWORK_EVENTS = (
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "socket.sendmsg",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
    "socket.getnameinfo",
    "socket.listen",
)
# ctypes and mmap at all: raw memory and native calls reach past every other check.
NATIVE_EVENTS = ("ctypes.", "mmap.", "_ctypes.")
# Modules no farm server process loads after the hook is in place: processes without an audit event
# (`_posixsubprocess.fork_exec`), native code, raw memory, the interpreter's test hooks.
NATIVE_MODULES = frozenset(
    {"_posixsubprocess", "ctypes", "_ctypes", "mmap", "_testcapi", "_testinternalcapi", "_xxsubinterpreters", "pty"}
)
HANDLER_FILE = "/handlers.py"
# Modules allowed ones load lazily, on a handler's call (`datetime.strptime` imports _strptime).
IMPLIED_MODULES = frozenset(
    {"_strptime", "locale", "_locale", "unicodedata", "stringprep", "tzdata", "_pydecimal", "encodings"}
)
FILE_CHANGE_EVENTS = (
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.truncate",
    "os.symlink",
    "os.link",
    "shutil.rmtree",
    "shutil.copyfile",
    "os.utime",
)


def _readable_roots(farm_root: Path | None) -> list[str]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, "/usr/share/zoneinfo", "/dev/null"}
    roots.update(p for p in sys.path if p)
    import envfarm  # the installed packages (an editable install lives outside sys.prefix)

    roots.add(str(Path(envfarm.__file__).resolve().parents[1]))
    if farm_root is not None:
        roots.add(str(farm_root))
    return sorted({os.path.realpath(r) for r in roots if r})


def audit_hook(
    farm_root: Path | None,
    report: Callable[[str], None],
    writable: Sequence[Path] = (),
    native_calls: frozenset[int] = frozenset(),
) -> Callable[[str, tuple[Any, ...]], None]:
    """A PEP 578 hook that raises `PermissionError` (and reports it) for network, processes, writes and
    reads outside the interpreter's and the farm's folders, and SQLite files or extensions. `writable`
    folders are the exception, for the verifier's own instruments (coverage data), never the server's.
    Native code is refused (ctypes, mmap, loading process or memory modules) except calls to the function
    pointers in `native_calls` (the runtime's malloc_trim, resolved before the hook); an import from a
    running handler must be on the handler allow-list."""
    own = tuple(os.path.realpath(w).rstrip("/") + "/" for w in writable)
    readable = tuple(r.rstrip("/") + "/" for r in _readable_roots(farm_root)) + own
    exact = {r.rstrip("/") for r in readable}

    def instrument(path: Any) -> bool:
        return bool(own) and os.path.realpath(os.fsdecode(path)).startswith(own)

    def refuse(what: str) -> None:
        message = f"{VIOLATION}: {what} is not allowed in a farm server"
        report(message)
        raise PermissionError(message)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in NETWORK_EVENTS:
            target = (
                args[1] if event in ("socket.connect", "socket.bind", "socket.sendto") and len(args) > 1 else args[:2]
            )
            refuse(f"network access ({event} {target})")
        elif event.startswith(SUBPROCESS_EVENTS):
            refuse(f"starting a process ({event})")
        elif event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            if isinstance(path, int) or path is None:
                return
            name = os.fsdecode(path) if isinstance(path, bytes | os.PathLike) else str(path)
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
            )
            full = os.path.realpath(name)
            if writing and not instrument(name):
                refuse(f"writing the file {name}")
            if full not in exact and not full.startswith(readable):
                refuse(f"reading the file {name}")
        elif event.startswith(FILE_CHANGE_EVENTS):
            if not (args and isinstance(args[0], str | bytes | os.PathLike) and instrument(args[0])):
                refuse(f"changing the file system ({event})")
        elif event == "sqlite3.connect":
            database = (
                os.fsdecode(args[0])
                if args and isinstance(args[0], bytes | os.PathLike)
                else str(args[0] if args else "")
            )
            if (
                database not in ("", ":memory:")
                and not database.startswith("file::memory:")
                and not instrument(database)
            ):
                refuse(f"opening the SQLite file {database}")
        elif event in ("sqlite3.enable_load_extension", "sqlite3.load_extension") or event.startswith(NATIVE_EVENTS):
            if event != "ctypes.call_function" or not args or args[0] not in native_calls:
                refuse(f"native code or raw memory ({event})")
        elif event == "import" and args:
            module = str(args[0])
            if module.split(".", 1)[0] in NATIVE_MODULES:
                refuse(f"native code or raw memory (importing {module})")
            implied = module.split(".", 1)[0] in IMPLIED_MODULES
            if not allowed_module(module) and not implied and _handler_on_stack():
                refuse(f"importing {module} from a handler (not on the handler allow-list)")

    return hook


def _handler_on_stack() -> bool:
    """Whether a generated server's handlers.py is running (an import from it must be allow-listed;
    the runtime's own lazy imports are not)."""
    try:
        frame = sys._getframe(2)
    except ValueError:  # an import with no Python caller (the interpreter's own)
        return False
    while frame is not None:
        if frame.f_code.co_filename.endswith(HANDLER_FILE) and not _standard_library(frame):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _standard_library(frame: FrameType) -> bool:
    """Whether `frame` runs a standard-library module: `logging/handlers.py` (imported by uvicorn's config, so
    by the SDK's first import, which may come after the hook) is no generated server's handlers.py."""
    return str(frame.f_globals.get("__name__", "")).partition(".")[0] in sys.stdlib_module_names


def apply_limits(limits: Limits) -> None:
    """setrlimit for this process (and so for anything it could start): CPU, memory, file size, files."""
    import resource

    for which, value in (
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_AS, limits.address_space_mb * 1024 * 1024),
        (resource.RLIMIT_FSIZE, limits.file_size_mb * 1024 * 1024),
        (resource.RLIMIT_NOFILE, limits.open_files),
    ):
        _soft, hard = resource.getrlimit(which)
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (cap, cap))


def sandboxed_args(serve_args: Sequence[str]) -> list[str]:
    """`python -m envfarm.factory.sandbox.guard ...` arguments for a command line of
    `python -m envfarm.servers.runtime ...`."""
    return ["-m", "envfarm.factory.sandbox.guard", *serve_args]


def _farm_of(argv: Sequence[str]) -> Path | None:
    if "--farm" in argv and argv.index("--farm") + 1 < len(argv):
        return Path(argv[argv.index("--farm") + 1]).resolve()
    return None


def enter(envfarm_argv: Sequence[str], writable: Sequence[Path] = (), *, server: bool = True) -> None:
    """Put this process in the sandbox for good: limits, then the audit hook (which cannot be removed).
    Call it before any server code is imported; `envfarm_argv` names the farm that may be read.
    `server=False` (a seed builder) skips what only a server needs."""
    sys.dont_write_bytecode = True
    os.environ[SANDBOXED_ENV] = "1"  # the farm loader runs handlers here, inside, not in yet another process
    apply_limits(Limits())
    disarm_process_spawning()
    native_calls: frozenset[int] = frozenset()
    if server:
        # The runtime's one native helper (glibc's malloc_trim) is resolved before native loading is refused;
        # the SDK, trusted, is loaded before the hook as it always was (the runtime used to import it first):
        # its ~0.6 s of imports are not audited one by one.
        import ctypes

        import mcp.server.mcpserver  # noqa: F401

        from envfarm.servers.runtime.episodes import malloc_trim

        if (trim := malloc_trim()) is not None:
            native_calls = frozenset({ctypes.cast(trim, ctypes.c_void_p).value or 0})  # type: ignore[arg-type]

    def report(message: str) -> None:
        try:
            os.write(2, (message + "\n").encode())
        except OSError:
            pass

    sys.addaudithook(audit_hook(_farm_of(envfarm_argv), report, writable, native_calls))


def disarm_process_spawning() -> None:
    """Replace `_posixsubprocess.fork_exec`, which starts a process without any audit event, with a
    refusal, before anything can reach it (`subprocess` imports this very module object). Loading
    the module again is refused by the audit hook (NATIVE_MODULES)."""
    import _posixsubprocess

    def fork_exec(*args: Any, **kwargs: Any) -> NoReturn:
        message = f"{VIOLATION}: starting a process (_posixsubprocess.fork_exec) is not allowed in a farm server"
        os.write(2, (message + "\n").encode())
        raise PermissionError(message)

    _posixsubprocess.fork_exec = fork_exec


def main(argv: Sequence[str] | None = None) -> int:
    """The sandbox, then the runtime's own entry point (`python -m envfarm.servers.runtime --farm FOLDER NAME`) with
    the same arguments (so the server's own code, handlers included, only ever runs inside it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    enter(argv)
    from envfarm.servers.runtime.cli import farm_main

    return farm_main(argv)


if __name__ == "__main__":
    sys.exit(main())
