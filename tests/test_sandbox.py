"""Untrusted handlers: each escape (a socket, reading /etc/passwd, a process, `__subclasses__`) is
rejected for its own reason, by the static allow-list and, independently, by the sandboxed process the
verifier launches (resource limits and a PEP 578 audit hook)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import anyio
import pytest
from conftest import REPO
from corpus import GOOD

from envfarm.factory.build import BuildResult, build_all
from envfarm.factory.sandbox.guard import check_untrusted
from envfarm.factory.source import load_environment
from envfarm.factory.spec import SpecError
from envfarm.factory.verify.report import VerifyOptions
from envfarm.factory.verify.static_checks import check_handlers
from envfarm.render import render

HEAD = "from datetime import date, timedelta\n\nfrom envfarm.servers.runtime.database import Database\n{imports}\n\n"
OVERDUE = """
def overdue_loans(db: Database) -> dict:
    rows = db.all("SELECT * FROM loans WHERE returned = 0 AND due_on < substr(?, 1, 10) ORDER BY due_on", (db.now,))
    return {"count": len(rows), "loans": rows}
"""
EXTEND = """
def extend_loan(db: Database, loan_id: str, days: int) -> dict:
    {escape}
    loan = db.require("loans", loan_id)
    due = date.fromisoformat(loan["due_on"]) + timedelta(days=days)
    db.execute("UPDATE loans SET due_on = ? WHERE loan_id = ?", (due.isoformat(), loan_id))
    return db.require("loans", loan_id)
"""
# Each escape, and what the static check and the sandboxed process each say about it.
ESCAPES = {
    "socket": (
        "import socket",
        "socket.create_connection(('127.0.0.1', 9), timeout=1)",
        ("import", "network access"),
        "network access (socket.",
    ),
    "passwd": ("", "open('/etc/passwd').read()", ("call", "file access"), "reading the file /etc/passwd"),
    "process": ("import subprocess", "subprocess.run(['true'])", ("import", "running processes"), "starting a process"),
    "subclasses": (
        "",
        "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen'][0](['true'])",
        ("introspection", "__subclasses__"),
        "starting a process (subprocess.Popen)",
    ),
    # The escape that once got through: an aliased import of the C module that starts processes with no
    # audit event; the sandbox disarms its fork_exec before any server code runs.
    "posixsubprocess": (
        "",
        (
            "imp = __import__; imp('_posixsubprocess').fork_exec([b'/bin/sh'], [b'/bin/sh'], True, (), None, None, "
            "-1, -1, -1, -1, -1, -1, -1, -1, False, False, -1, None, None, None, -1, None, False)"
        ),
        ("introspection", "__import__"),
        "starting a process (_posixsubprocess.fork_exec)",
    ),
    "native": (
        "",
        "__import__('ctypes').CDLL(None).system(b'true')",
        ("call", "dynamic imports"),
        "native code or raw memory (",
    ),
}


def handlers(name: str) -> str:
    imports, escape, _, _ = ESCAPES[name]
    return HEAD.format(imports=imports) + OVERDUE + EXTEND.format(escape=escape)


@pytest.mark.parametrize("name", ESCAPES)
def test_the_static_check_names_each_escape(name: str) -> None:
    kind, reason = ESCAPES[name][2]
    findings = check_handlers(handlers(name))
    where = {"extend_loan", None} if kind == "import" else {"extend_loan"}  # imports sit at module level
    assert any(f.kind == kind and reason in f.reason and f.function in where for f in findings), findings


def test_the_allow_list_refuses_what_the_deny_list_does_not_know() -> None:
    source = (
        "import ctypes.util\nimport xml.etree.ElementTree\nfrom . import x\nimport math\n\n"
        "def f(db):\n    return getattr(db, 'connection')\n"
    )
    found = [(f.kind, f.line) for f in check_untrusted(source)]
    assert found == [("import", 1), ("import", 2), ("import", 3), ("introspection", 7)]
    assert [f.reason for f in check_handlers(source) if f.line == 2] == [
        "imports xml.etree.ElementTree: not on the handler allow-list"
    ]


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    """Each escape built with the static checks off, so only the sandboxed process stands in the way."""
    specs = tmp_path_factory.mktemp("escapes")
    for name in ESCAPES:
        folder = specs / f"shed_{name}"
        shutil.copytree(GOOD, folder)
        spec = folder / "spec.yaml"
        spec.write_text(spec.read_text().replace("name: shed\n", f"name: shed_{name}\n", 1))
        (folder / "handlers.py").write_text(handlers(name), encoding="utf-8")
    farm = tmp_path_factory.mktemp("farm")
    options = VerifyOptions(static=False, call_timeout=10)
    return anyio.run(partial(build_all, [specs], farm, options=options, jobs=2))


@pytest.mark.parametrize("name", ESCAPES)
def test_the_sandboxed_server_refuses_each_escape(dynamic: BuildResult, name: str) -> None:
    outcome = next(r for r in dynamic.servers if r.name == f"shed_{name}")
    assert outcome.status == "rejected", render(dynamic)
    said = [f for f in outcome.problems if f.tool == "extend_loan" and "envfarm sandbox" in f.actual]
    assert said and ESCAPES[name][3] in said[0].actual, [f.model_dump() for f in outcome.problems]
    assert not (dynamic.farm_root / "servers" / f"shed_{name}").exists()


def test_the_audit_hook_is_in_place_before_any_server_code_runs(tmp_path: Path) -> None:
    """The sandbox entry point refuses a read outside its folders even for envfarm's own start-up."""
    secret = tmp_path / "secret.txt"
    secret.write_text("x", encoding="utf-8")
    code = (
        "import sys; from envfarm.factory.sandbox.guard import audit_hook; sys.addaudithook(audit_hook(None, print)); "
        f"open({str(secret)!r})"
    )
    run = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and f"reading the file {secret}" in run.stdout
    assert "PermissionError" in run.stderr


def test_a_sandboxed_server_still_trims_its_heap() -> None:
    """Closing the last episode hands memory back with glibc's malloc_trim, resolved before the audit hook
    refuses native loading: inside the sandbox the trim runs and no violation is reported."""
    code = (
        "import sys\n"
        "from envfarm.factory.sandbox import guard\n"
        "guard.enter([])\n"
        "from envfarm.servers.runtime.episodes import _trim_heap\n"
        "_trim_heap()\n"
        "print('trimmed')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    assert "trimmed" in result.stdout
    assert "not allowed" not in result.stderr


@pytest.mark.parametrize("name", ESCAPES)
def test_a_proposed_handler_that_escapes_is_refused_before_anything_is_built(name: str) -> None:
    """`envfarm propose` and `import --model`: a model's handlers.py is checked as its draft is read, so
    the escape goes back to the model for repair (then, if ever built, it runs sandboxed like any build)."""
    from test_generate import draft

    from envfarm.factory.generate.growth import SpecDraft

    answer = json.loads(draft(handlers(name)))
    with pytest.raises(ValueError, match=ESCAPES[name][2][1]):
        SpecDraft.model_validate(answer)


SEED_ESCAPE = """
import socket
import subprocess


def build(rng, now):
    {escape}
    return {{}}
"""


@pytest.mark.parametrize("name", ESCAPES)
def test_a_seed_py_that_escapes_is_refused_by_its_sandbox(tmp_path: Path, name: str) -> None:
    """A spec folder's seed.py is code too: `envfarm build` runs it in a sandboxed process, never in its own."""
    folder = tmp_path / "shed"
    shutil.copytree(GOOD, folder)
    (folder / "seed.py").write_text(SEED_ESCAPE.format(escape=ESCAPES[name][1]), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_environment(folder)
    [(where, what)] = caught.value.problems
    assert where == "build" and what.startswith("envfarm sandbox") and ESCAPES[name][3] in what, what


def test_a_folder_whose_seed_escapes_is_not_published(tmp_path: Path) -> None:
    folder, farm = tmp_path / "shed", tmp_path / "farm"
    shutil.copytree(GOOD, folder)
    (folder / "seed.py").write_text(SEED_ESCAPE.format(escape=ESCAPES["passwd"][1]), encoding="utf-8")
    result = anyio.run(partial(build_all, [folder], farm))
    [outcome] = result.servers
    assert outcome.status != "published" and "reading the file /etc/passwd" in render(result)
    assert not (farm / "servers" / "shed").exists()
