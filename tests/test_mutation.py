"""Mutation testing of the verifier: every kind of seeded bug is generated from real code, mutants
still compile, sampling is deterministic, and a short sample runs end to end (a seeded bug that a
rule example covers is killed)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import anyio
import pytest
from conftest import REPO
from corpus import GOOD, stage_case

from envfarm.factory.publish import staging_root
from envfarm.factory.sandbox.warm import stub_args, warm_launcher
from envfarm.factory.source import load_environment
from envfarm.factory.spec import CustomTool, EquivalentMutant
from envfarm.factory.verify.mutation import (
    TIMEOUT_RETRY_FACTOR,
    Mutant,
    MutantResult,
    ServerMutation,
    _sites,
    _survived_in,
    explain,
    make_mutants,
    mutate_server,
    render_markdown,
    sample,
    server_mutants,
    summarize,
    tool_focus,
    usable_equivalents,
    verify_mutant,
)
from envfarm.factory.verify.report import VerifyOptions
from envfarm.factory.verify.session import serve_args
from envfarm.factory.verify.verifier import verify_server

HANDLER = """
from envfarm.servers.runtime.database import Database


def refund(db: Database, payment_id: str, amount: float) -> dict:
    payment = db.require("payments", payment_id, "payment")
    if amount <= 0 or amount > payment["amount"]:
        db.reject("refund must be positive and at most the payment")
    db.execute(
        "UPDATE payments SET refunded = refunded + ? WHERE payment_id = ? AND status = 'captured'",
        (amount, payment_id),
    )
    return {"payment_id": payment_id, "refunded": amount + 1}
"""


def test_every_kind_of_mutant_is_made_and_compiles() -> None:
    mutants = make_mutants(HANDLER, "handlers.py")
    kinds = {m.kind for m in mutants}
    assert kinds == {
        "drop_write",
        "drop_reject",
        "flip_compare",
        "shift_constant",
        "swap_boolop",
        "drop_field",
        "weaken_sql",
    }
    for mutant in mutants:
        compile(mutant.source, mutant.file, "exec")
        assert mutant.source != HANDLER
    dropped = next(m for m in mutants if m.kind == "drop_reject")
    assert "db.reject" not in dropped.source and dropped.line == 8
    sql = [m.change for m in mutants if m.kind == "weaken_sql"]
    assert any("AND -> OR" in c for c in sql) and any("= -> !=" in c for c in sql)
    # The SET clause is a write, not a condition: `refunded = refunded + ?` is never flipped.
    assert not any("SET refunded" in c and "= -> !=" in c for c in sql)


def test_sampling_is_deterministic_and_spreads_over_kinds() -> None:
    mutants = make_mutants(HANDLER, "handlers.py")
    first, again = sample(mutants, 7, seed=3), sample(mutants, 7, seed=3)
    assert [m.change for m in first] == [m.change for m in again]
    assert len({m.kind for m in first}) == 7


@pytest.mark.slow
async def test_a_short_sample_runs_and_kills_a_dropped_rule(farm_root: Path) -> None:
    server = farm_root / "servers" / "clinic"
    drops = [m for m in server_mutants(server) if m.kind == "drop_reject" and "Late cancellations" in m.change]
    assert drops, "the clinic's 24-hour rule is a db.reject in its generated tools"
    report = await mutate_server(server, max_mutants=2, seed=0, jobs=2)
    assert report.mutants == 2 and len(report.results) == 2
    assert report.kill_rate == report.killed / 2
    result = await verify_mutant(server, drops[0], VerifyOptions())
    assert result.killed and any("cancel_appointment" in k for k in result.killed_by), result


def test_a_short_sample_of_the_good_shed_is_killed_through_the_warm_launcher(tmp_path: Path) -> None:
    """The CI sample: a few seeded bugs in a fully specified environment, each refused, each server
    forked from one warm interpreter (a real stdio subprocess with its own pid)."""
    staged = stage_case(GOOD, tmp_path)
    with warm_launcher() as socket_path:
        options = VerifyOptions(warm_socket=socket_path)
        good = anyio.run(verify_server, staged, staging_root(staged), options)
        assert good.passed, good.failures
        report = anyio.run(partial(mutate_server, staged, max_mutants=4, seed=1, jobs=2, options=options))
    assert report.mutants == 4 and len({r.kind for r in report.results}) == 4
    assert report.killed == 4, report.survivors
    assert all(r.killed_by for r in report.results)


def test_a_survivor_is_explained_only_by_an_entry_naming_its_file_function_and_change() -> None:
    survivor = MutantResult(
        file="handlers.py",
        line=8,
        function="refund",
        kind="flip_compare",
        change="`amount <= 0`: LtE -> Lt",
        killed=False,
        seconds=1.0,
    )
    entry = EquivalentMutant(
        file="handlers.py", function="refund", change=survivor.change, reason="amount has minimum 0.01 in the spec"
    )
    assert explain(survivor, [entry]) == entry.reason
    assert explain(survivor, [entry.model_copy(update={"function": "capture"})]) is None
    mutant = next(m for m in make_mutants(HANDLER, "handlers.py") if m.kind == "drop_reject")
    assert mutant.function == "refund"


def test_an_equivalent_entry_explains_one_mutant_never_a_family() -> None:
    """A survivor is silenced only by an entry naming exactly it: an entry naming the same change at two
    places must say which line, and one naming nothing is reported stale."""
    twice = HANDLER.replace("    return {", "    if amount > 1000:\n        amount = 1000\n    return {")
    mutants = make_mutants(twice, "handlers.py")
    shifts = [m for m in mutants if m.change == "1000 -> 1001"]
    assert len(shifts) == 2
    base = {"file": "handlers.py", "function": "refund", "change": "1000 -> 1001", "reason": "the cap is never reached"}
    family = EquivalentMutant(**base)
    one = EquivalentMutant(**base, line=shifts[0].line)
    stale = EquivalentMutant(**{**base, "change": "7 -> 8"})
    usable, problems = usable_equivalents([family, one, stale], mutants)
    assert usable == [one]
    assert "names 2 mutants" in problems[0] and "stale" in problems[1]
    results = [MutantResult(**m.model_dump(exclude={"source"}), killed=False, seconds=0.1) for m in shifts]
    assert [explain(r, usable) for r in results] == ["the cap is never reached", None]


def test_the_markdown_report_names_every_survivor_and_whether_it_is_explained() -> None:
    mutants = make_mutants(HANDLER, "handlers.py")[:3]
    results = [MutantResult(**m.model_dump(exclude={"source"}), killed=False, seconds=0.1) for m in mutants]
    results[0].equivalent = "no call reaches it"
    server = ServerMutation(
        server="shop",
        mutants=4,
        killed=1,
        kill_rate=0.25,
        explained=1,
        unexplained=2,
        by_kind={},
        survivors=results,
        results=results,
        seconds=1.0,
    )
    page = render_markdown(summarize([server], seed=0, max_mutants=None), "envfarm verify --mutate shop")
    assert "| shop | 4 | 1 | 25.0% | 1 | 2 |" in page
    for r in results:
        assert f"| shop | {r.file}:{r.line} | refund | {r.kind} |" in page
    assert page.count("equivalent: no call reaches it") == 1 and page.count("**no**") == 2


def test_rule_sql_in_generated_tools_is_weakened_and_dropped(tmp_path: Path) -> None:
    """Every operator reaches the generated code too: each spec rule's SQL condition gets a weakened
    mutant, and each rule's rejection can be dropped."""
    staged = stage_case(GOOD, tmp_path)
    mutants = [m for m in server_mutants(staged) if m.file == "tools.py"]
    rules = [(tool.name, rule) for tool in load_environment(GOOD).spec.tools for rule in getattr(tool, "rules", [])]
    assert rules
    for name, rule in rules:
        in_tool = [m for m in mutants if m.function == name]
        assert any(m.kind == "drop_reject" for m in in_tool), name
        sql = [m for m in in_tool if m.kind == "weaken_sql"]
        assert sql, f"{name}: no weakened condition for {rule.reject_if!r}"
    kinds = {m.kind for m in mutants}
    assert {"drop_write", "drop_reject", "weaken_sql", "shift_constant"} <= kinds


def _whole_tree_mutants(source: str, file: str) -> list[str]:
    """Each site applied alone and the whole tree unparsed (kept if it compiles): every mutant's text."""
    tree = ast.parse(source)
    texts = []
    for site in _sites(tree):
        undo = site.apply()
        text = ast.unparse(tree)
        undo()
        try:
            compile(text, file, "exec")
        except SyntaxError:
            continue
        texts.append(text)
    return texts


def test_a_mutant_is_its_whole_file_unparsed_with_one_change(tmp_path: Path) -> None:
    """Mutants are made by unparsing only the changed top-level statement: each text is still exactly the
    whole mutated tree unparsed (module docstrings and string statements included), and making them
    leaves the parsed tree as it was."""
    staged = stage_case(GOOD, tmp_path)
    strings = '"""A module."""\nX = 1\n"""A string statement: SELECT x WHERE a = 1 AND b = 2."""\n' + HANDLER
    cases = [(HANDLER, "handlers.py"), (strings, "handlers.py")]
    cases += [((staged / name).read_text(encoding="utf-8"), name) for name in ("tools.py", "handlers.py")]
    for source, file in cases:
        mutants = make_mutants(source, file)
        assert len(mutants) > 5
        assert [m.source for m in mutants] == _whole_tree_mutants(source, file)
        assert all(m.source != ast.unparse(ast.parse(source)) for m in mutants)


def test_a_mutant_is_checked_first_through_the_tools_that_run_its_function(tmp_path: Path) -> None:
    """A tool's own function focuses on that tool; a handler, and each helper it calls, on its custom tool."""
    staged = stage_case(GOOD, tmp_path)
    spec = load_environment(GOOD).spec
    helper = "\n\ndef _days(n: int) -> int:\n    return n\n"
    handlers = (staged / "handlers.py").read_text(encoding="utf-8")
    custom = [t for t in spec.tools if isinstance(t, CustomTool)]
    assert custom
    caller = custom[0].handler
    handlers = re.sub(rf"(def {caller}\(.*?\).*?:\n)", r"\1    _days(1)\n", handlers, count=1, flags=re.DOTALL)
    (staged / "handlers.py").write_text(handlers + helper, encoding="utf-8")
    focus = tool_focus(staged, spec)
    for tool in spec.tools:
        assert focus[("tools.py", tool.name)] == [tool.name]
    for tool in custom:
        assert tool.name in focus[("handlers.py", tool.handler)]
    assert focus[("handlers.py", "_days")] == [custom[0].name]


def test_survivors_of_an_earlier_report_select_only_those_mutants(tmp_path: Path) -> None:
    """`--survivors-of`: the re-check after writing expectations runs just the earlier survivors, found
    by file, function and change (lines may have moved), and a report that is not one is refused."""
    mutants = make_mutants(HANDLER, "handlers.py")
    survivor = mutants[3]
    result = MutantResult(**survivor.model_dump(exclude={"source"}), killed=False, seconds=1.0)
    server = ServerMutation(
        server="shop", mutants=1, killed=0, kill_rate=0.0, explained=0, unexplained=1, by_kind={},
        survivors=[result.model_copy(update={"line": survivor.line + 7})], results=[result], seconds=1.0,
    )  # fmt: skip
    report = summarize([server], seed=0, max_mutants=None)
    chosen = _survived_in(report, "shop")
    other = _survived_in(report, "elsewhere")
    assert chosen is not None and other is not None
    assert [m for m in mutants if chosen(m)] == [survivor]
    assert not any(other(m) for m in mutants)
    assert _survived_in(None, "shop") is None

    broken = tmp_path / "report.json"
    broken.write_text("{not json", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "envfarm.cli", "verify", "--mutate", "clinic", "--survivors-of", str(broken)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and f"--survivors-of {broken}" in done.stderr, done.stderr


SLOW = """

_calls = []
_overdue_loans = overdue_loans


def overdue_loans(db: Database) -> dict:
    _calls.append(1)
    if len(_calls) == 1 or {always}:
        time.sleep({seconds})
    return _overdue_loans(db)
"""


def test_a_mutant_killed_only_by_timeouts_is_asked_again_with_more_patience(tmp_path: Path) -> None:
    """A hang on a loaded machine is not a kill: a mutant whose only failures are timeouts is verified once
    more with a longer call timeout; one slow first call then survives, a real hang is still killed."""
    staged = stage_case(GOOD, tmp_path)
    source = "import time\n" + (staged / "handlers.py").read_text(encoding="utf-8")
    options = VerifyOptions(call_timeout=0.5, static=False, fail_fast=True, coverage=False)

    def slowed(always: bool, seconds: float) -> Mutant:
        text = source + SLOW.format(always=always, seconds=seconds)
        return Mutant(
            file="handlers.py", line=1, function="overdue_loans", kind="drop_write", change="slow", source=text
        )

    once = anyio.run(verify_mutant, staged, slowed(False, 1.0), options)
    assert not once.killed, once.killed_by
    hang = anyio.run(verify_mutant, staged, slowed(True, 0.5 * TIMEOUT_RETRY_FACTOR + 1), options)
    assert hang.killed and all(k.endswith(":timeout") for k in hang.killed_by), hang.killed_by


def _holders_of_pipe(pipe: int, besides: set[int]) -> set[int]:
    """Pids, other than `besides`, of the processes holding the pipe whose end is our descriptor `pipe`: the stub
    hands its stdin to the server the warm launcher forks (SCM_RIGHTS), so the server is found by that pipe,
    whoever its parent is and however /proc lists command lines while processes come and go."""
    link = f"pipe:[{os.fstat(pipe).st_ino}]"
    found = set()
    for process in Path("/proc").iterdir():
        if not process.name.isdigit() or int(process.name) in besides:
            continue
        try:
            descriptors = list((process / "fd").iterdir())
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(descriptor) == link:
                    found.add(int(process.name))
                    break
            except OSError:
                continue
    return found


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_launched_server_ends_when_its_stub_is_killed(tmp_path: Path) -> None:
    """The verifier kills a stub that times out; the forked server must not outlive it (a hung handler
    would otherwise spin on as an orphan)."""
    with warm_launcher() as socket_path:
        stub = subprocess.Popen(
            [sys.executable, *stub_args(socket_path, "serve", serve_args("clinic", REPO))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        # The forked server answers through the stub's pipes: once it has, it is there to be found.
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        assert stub.stdin is not None and stub.stdout is not None
        stub.stdin.write((json.dumps(initialize) + "\n").encode())
        stub.stdin.flush()
        assert b'"id":1' in stub.stdout.readline().replace(b" ", b""), "the forked server did not answer"
        # the forked server holds the stub's stdin pipe (the stub and this test hold its two ends too)
        besides = {os.getpid(), stub.pid}
        server, found_by = _holders_of_pipe(stub.stdin.fileno(), besides), time.monotonic() + 5
        while not server and time.monotonic() < found_by:
            time.sleep(0.05)
            server = _holders_of_pipe(stub.stdin.fileno(), besides)
        assert server, "no process but the stub holds the stub's pipe: the warm launcher forked no server"
        stub.kill()
        stub.wait()
        deadline = time.monotonic() + 10
        while _holders_of_pipe(stub.stdin.fileno(), besides) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _holders_of_pipe(stub.stdin.fileno(), besides), "the forked server outlived its stub"
