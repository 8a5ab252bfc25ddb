"""Where the behaviour is in a server's Python: rejections, database writes, and the function each
line belongs to. Mutation testing seeds bugs at these sites; the coverage gate requires that an
expectation runs each of them."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

from envfarm.servers.runtime.python_ast import parse_module

WRITE_METHODS = {"execute", "executemany", "insert", "returning", "update", "delete", "upsert"}
SiteKind = Literal["reject", "write"]


def is_db_call(node: ast.AST, methods: set[str]) -> bool:
    """`db.<method>(...)` for one of `methods`."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in methods
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "db"
    )


def is_reject(node: ast.stmt) -> bool:
    """`db.reject(...)` or `raise Rejected(...)`: a business rule refusing the call."""
    if isinstance(node, ast.Expr) and is_db_call(node.value, {"reject"}):
        return True
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name):
        return node.exc.func.id == "Rejected"
    return False


def is_write(node: ast.stmt) -> bool:
    """A statement whose value is a database write (`db.execute(...)`, `row = db.insert(...)`, ...)."""
    value = node.value if isinstance(node, ast.Expr | ast.Assign | ast.AnnAssign | ast.Return) else None
    return value is not None and is_db_call(value, WRITE_METHODS)


@dataclass(frozen=True)
class Site:
    kind: SiteKind
    line: int
    function: str
    code: str


def functions(tree: ast.Module) -> dict[int, str]:
    """Line -> the top-level function it is in."""
    owner: dict[int, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                owner[line] = node.name
    return owner


def behaviour_sites(source: str) -> list[Site]:
    """Every reject and write statement of a module, in line order."""
    tree = parse_module(source)
    owner = functions(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            kind: SiteKind | None = "reject" if is_reject(node) else "write" if is_write(node) else None
            if kind is not None:
                found.append(Site(kind, node.lineno, owner.get(node.lineno, "<module>"), ast.unparse(node)[:80]))
    return sorted(found, key=lambda s: s.line)
