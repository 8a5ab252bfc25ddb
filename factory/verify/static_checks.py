"""Static checks of a generated server's `handlers.py`, read as an AST and never imported.

Handlers are untrusted Python (written by people or models). They get a `Database` and must do
everything through it: no files, network, processes, wall clock, unseeded randomness, printing or
state that outlives a call. These checks are one layer; the verifier's dynamic checks catch the
effects of the same faults (determinism, isolation, output streams) independently.
"""

from __future__ import annotations

import ast
from typing import Literal

from pydantic import BaseModel

from envfarm.factory.sandbox.guard import check_untrusted
from envfarm.servers.runtime.python_ast import parse

StaticKind = Literal["syntax", "import", "call", "module_state", "global", "introspection"]

FORBIDDEN_MODULES: dict[str, str] = {
    "os": "operating system access",
    "sys": "interpreter and process access",
    "subprocess": "running processes",
    "multiprocessing": "running processes",
    "concurrent": "threads and processes",
    "threading": "threads",
    "asyncio": "event loops and I/O",
    "signal": "process signals",
    "socket": "network access",
    "ssl": "network access",
    "select": "I/O multiplexing",
    "selectors": "I/O multiplexing",
    "urllib": "network access",
    "http": "network access",
    "httpx": "network access",
    "requests": "network access",
    "ftplib": "network access",
    "smtplib": "network access",
    "random": "unseeded randomness",
    "secrets": "unseeded randomness",
    "uuid": "random or clock-based ids",
    "time": "the wall clock",
    "pathlib": "file access",
    "shutil": "file access",
    "tempfile": "file access",
    "glob": "file access",
    "io": "file access",
    "pickle": "code execution from data",
    "shelve": "file access",
    "importlib": "dynamic imports",
    "ctypes": "native code",
    "builtins": "rebinding builtins",
}
FORBIDDEN_CALLS: dict[str, str] = {
    "open": "file access",
    "eval": "code execution",
    "exec": "code execution",
    "compile": "code execution",
    "__import__": "dynamic imports",
    "print": "writing to stdout (the MCP stream on stdio)",
    "input": "reading stdin (the MCP stream on stdio)",
    "breakpoint": "the debugger",
    "globals": "module state",
    "vars": "module state",
    "setattr": "rebinding attributes",
    "exit": "stopping the server",
    "quit": "stopping the server",
}
WALL_CLOCK_METHODS = {"now", "today", "utcnow", "fromtimestamp", "utcfromtimestamp"}
MUTABLE_FACTORIES = {"list", "dict", "set", "bytearray", "defaultdict", "OrderedDict", "Counter", "deque"}
MUTATING_METHODS = {
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "update",
    "setdefault",
    "add",
    "discard",
    "popitem",
    "sort",
    "reverse",
    "appendleft",
    "popleft",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
    "__setitem__",
    "__delitem__",
}


class StaticFinding(BaseModel):
    """One forbidden construct: where it is (function, line), what kind, and why it is forbidden."""

    kind: StaticKind
    function: str | None
    line: int
    code: str
    reason: str


def _root(name: str) -> str:
    return name.split(".", 1)[0]


def _is_mutable(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in MUTABLE_FACTORIES
    return False


def _base_name(node: ast.expr) -> str | None:
    """The variable a subscript or attribute chain starts from: `CACHE` for `CACHE[k].items`."""
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _mutated_names(tree: ast.Module) -> set[str]:
    """Names whose object some statement changes in place: item or attribute assignment, `del`,
    augmented assignment, or a mutating method call."""
    names: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = [t for t in node.targets if isinstance(t, ast.Subscript | ast.Attribute)]
        elif (
            isinstance(node, ast.AugAssign)
            or isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Subscript | ast.Attribute)
        ):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING_METHODS:
            targets = [node.func.value]
        names.update(n for t in targets if (n := _base_name(t)))
    return names


class _Visitor(ast.NodeVisitor):
    def __init__(self, source: str) -> None:
        self.source = source
        self.findings: list[StaticFinding] = []
        self.function: str | None = None

    def _add(self, kind: StaticKind, node: ast.AST, reason: str) -> None:
        code = ast.get_source_segment(self.source, node) or ""
        line = getattr(node, "lineno", 0)
        self.findings.append(
            StaticFinding(kind=kind, function=self.function, line=line, code=code.splitlines()[0][:120], reason=reason)
        )

    def visit_Module(self, node: ast.Module) -> None:
        """Module-level containers outlive calls. An UPPER_CASE one that nothing mutates is a constant
        table and allowed; any other mutable one is state shared by every episode."""
        mutated = _mutated_names(node)
        for statement in node.body:
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(statement, ast.Assign):
                targets, value = statement.targets, statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets, value = [statement.target], statement.value
            if value is None or not _is_mutable(value):
                continue
            for target in targets:
                name = ast.unparse(target)
                if name in mutated:
                    self._add(
                        "module_state",
                        statement,
                        f"module-level {name} is mutated by the handlers: state shared by every episode",
                    )
                elif not name.isupper():
                    self._add(
                        "module_state",
                        statement,
                        f"module-level mutable {name}: shared by every episode (name constants in UPPER_CASE)",
                    )
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer, self.function = self.function, self.function or node.name
        self.generic_visit(node)
        self.function = outer

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _root(alias.name) in FORBIDDEN_MODULES:
                self._add("import", node, f"imports {alias.name}: {FORBIDDEN_MODULES[_root(alias.name)]}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0 and _root(module) in FORBIDDEN_MODULES:
            self._add("import", node, f"imports from {module}: {FORBIDDEN_MODULES[_root(module)]}")

    def visit_Global(self, node: ast.Global) -> None:
        self._add(
            "global", node, f"`global {', '.join(node.names)}`: state that outlives a call leaks between episodes"
        )

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self._add(
            "global", node, f"`nonlocal {', '.join(node.names)}`: state that outlives a call leaks between episodes"
        )

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in FORBIDDEN_CALLS:
            self._add("call", node, f"calls {func.id}(): {FORBIDDEN_CALLS[func.id]}")
        elif isinstance(func, ast.Attribute) and func.attr in WALL_CLOCK_METHODS:
            self._add("call", node, f"calls .{func.attr}(): the wall clock (use db.now)")
        self.generic_visit(node)


def check_handlers(source: str, filename: str = "handlers.py") -> list[StaticFinding]:
    """Every forbidden construct in `source`, in line order. A syntax error is itself a finding."""
    try:
        tree = parse(source, filename)
    except SyntaxError as exc:
        return [
            StaticFinding(
                kind="syntax",
                function=None,
                line=exc.lineno or 0,
                code=(exc.text or "").strip(),
                reason=f"does not parse: {exc.msg}",
            )
        ]
    visitor = _Visitor(source)
    visitor.visit(tree)
    # The sandbox's allow-list: imports off it (those not already refused above) and introspection escapes.
    allow_list = check_untrusted(
        source, denied=lambda module: _root(module) in FORBIDDEN_MODULES, called=frozenset(FORBIDDEN_CALLS)
    )
    visitor.findings += [StaticFinding.model_validate(f.model_dump()) for f in allow_list]
    return sorted(visitor.findings, key=lambda f: f.line)
