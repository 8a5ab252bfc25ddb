"""Every parse of Python source goes through `servers/runtime/python_ast.py`: CPython 3.11's AST constructor is
not thread-safe (python/cpython#106905), and a `build --jobs 2` of 198 imported servers failed one with
`SystemError: AST constructor recursion depth mismatch` while a worker thread generated code."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

from envfarm.servers.runtime.python_ast import literal, parse, parse_module, parsing

ROOT = Path(__file__).resolve().parent.parent
UNLOCKED = re.compile(r"\bast\.(parse|literal_eval)\(")


def test_no_module_parses_python_outside_the_lock() -> None:
    sources = [p for folder in ("factory", "servers", "clients") for p in (ROOT / folder).rglob("*.py")]
    assert len(sources) > 50
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sources
        if path.name != "python_ast.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if UNLOCKED.search(line)
    ]
    assert found == []


def test_the_locked_parsers_answer_as_ast_does() -> None:
    source = "def f(x):\n    return x + 1\n"
    assert ast.dump(parse_module(source)) == ast.dump(ast.parse(source))
    assert ast.dump(parse("1 + 2", mode="eval")) == ast.dump(ast.parse("1 + 2", mode="eval"))
    assert literal("  {'a': [1, 2.5, 'x']}") == {"a": [1, 2.5, "x"]}


def test_a_parse_inside_parsing_does_not_wait_for_itself() -> None:
    """`parsing()` is held around a library's own parse (coverage's analysis) that our parse may run inside."""
    done = threading.Event()

    def nested() -> None:
        with parsing():
            parse_module("x = 1")
        done.set()

    worker = threading.Thread(target=nested)
    worker.start()
    worker.join(timeout=10)
    assert done.is_set()
