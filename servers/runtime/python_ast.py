"""`ast.parse` behind one lock.

CPython 3.11 keeps the AST constructor's recursion depth per interpreter, not per thread, so two threads that
turn source into `ast` nodes at once can fail with `SystemError: AST constructor recursion depth mismatch`
(python/cpython#106905). A build stages servers in worker threads (code generation reads literals with
`ast.literal_eval`) while the event loop's thread reads coverage and handlers with `ast.parse`: every parse
of Python source in envfarm goes through here, and a library that parses (coverage's analysis) runs inside
`parsing()`.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_PARSING = threading.RLock()  # re-entrant: `parse` inside `parsing()`


def parsing() -> Any:
    """The lock every parse holds: hold it around a library call that parses Python source."""
    return _PARSING


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse(source, filename, mode)`, one thread at a time."""
    with _PARSING:
        return ast.parse(source, filename=filename, mode=mode)


def parse_module(source: str, filename: str = "<unknown>") -> ast.Module:
    """A whole module's tree (`ast.parse` in its default mode), one thread at a time."""
    tree = parse(source, filename)
    assert isinstance(tree, ast.Module)
    return tree


def literal(text: str) -> Any:
    """`ast.literal_eval(text)`, parsed one thread at a time (evaluating the tree takes no lock)."""
    return ast.literal_eval(parse(text.lstrip(" \t"), mode="eval"))
