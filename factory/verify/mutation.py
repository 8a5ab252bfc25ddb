"""Mutation testing of the verifier: seed one bug at a time into a published server and count how
many the verifier refuses to publish (the kill rate). The figure says what "verified" is worth.

Mutants are made from the server's Python (custom `handlers.py` and generated `tools.py`) by AST
rewriting, one change each, of these kinds:

- `drop_write`: a database write (`db.execute`, `db.insert`, ...) removed: money not moved;
- `drop_reject`: a `db.reject(...)` (or `raise Rejected`) removed: a business rule silently gone;
- `flip_compare`: `<` <-> `<=`, `>` <-> `>=`, `==` <-> `!=`, `in` <-> `not in`;
- `shift_constant`: a number shifted by one (limits, fees, windows);
- `swap_boolop`: `and` <-> `or`;
- `drop_field`: a key dropped from a returned dict literal;
- `weaken_sql`: inside an SQL string, a comparison flipped or `AND` turned into `OR`.

Each mutant is verified like a fresh build (its own import root, its own stdio subprocess); a mutant
whose verification fails is killed, one that passes survived and is listed with file, line and change.
"""

from __future__ import annotations
import __future__

import ast
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

import anyio
from pydantic import BaseModel, Field

from envfarm.factory.spec import CustomTool, EnvironmentSpec, EquivalentMutant
from envfarm.factory.verify.report import VerifyOptions
from envfarm.factory.verify.sites import WRITE_METHODS, functions, is_db_call, is_reject
from envfarm.factory.verify.verifier import load_server_spec, verify_server
from envfarm.servers.runtime.python_ast import parse_module

MutationKind = Literal[
    "drop_write", "drop_reject", "flip_compare", "shift_constant", "swap_boolop", "drop_field", "weaken_sql"
]
MUTATED_FILES = ("handlers.py", "tools.py")
TIMEOUT_RETRY_FACTOR = 6  # a mutant killed only by timeouts is verified again with this much longer a call timeout
_SQL = re.compile(r"\b(SELECT|UPDATE|INSERT|DELETE|WHERE)\b")
_SQL_COMPARE = re.compile(r"(?<![<>!=])(<=|>=|<>|!=|=|<|>)(?![<>=])")
_SQL_SWAPS = {"<=": "<", "<": "<=", ">=": ">", ">": ">=", "=": "!=", "!=": "=", "<>": "="}
_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


class Mutant(BaseModel):
    file: str
    line: int
    function: str = Field(description="the top-level function the change is in")
    kind: MutationKind
    change: str = Field(description="what was changed, in words")
    source: str = Field(exclude=True, description="the whole mutated file")

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


class MutantResult(BaseModel):
    file: str
    line: int
    function: str
    kind: MutationKind
    change: str
    killed: bool
    equivalent: str | None = Field(default=None, description="for a survivor the spec explains: why it cannot differ")
    killed_by: list[str] = Field(default_factory=list, description="the failed checks that caught it")
    seconds: float


class ServerMutation(BaseModel):
    server: str
    mutants: int
    killed: int
    kill_rate: float
    explained: int = Field(description="survivors the spec explains as equivalent")
    unexplained: int = Field(description="survivors neither killed nor explained: each needs an expectation")
    equivalent_problems: list[str] = Field(
        default_factory=list, description="spec entries that explain nothing: stale, or naming several mutants"
    )
    by_kind: dict[str, dict[str, int]] = Field(description="kind -> {mutants, killed}")
    survivors: list[MutantResult]
    results: list[MutantResult]
    seconds: float


class MutationReport(BaseModel):
    servers: list[ServerMutation]
    mutants: int
    killed: int
    kill_rate: float
    explained: int
    unexplained: int
    seed: int
    max_mutants: int | None
    seconds: float | None = Field(default=None, description="wall time of the whole run")
    jobs: int | None = Field(default=None, description="mutants verified at once")


# ---------------------------------------------------------------- making mutants


Undo = Callable[[], None]


@dataclass
class _Site:
    """One place a mutation applies: `apply` changes the tree in place and returns how to undo it, so
    making every mutant of a file needs one tree, not a deep copy per mutant."""

    kind: MutationKind
    line: int
    change: str
    apply: Callable[[], Undo]


def _replace_statement(statements: list[ast.stmt], i: int) -> Undo:
    """Drop `statements[i]`: a bare call becomes `pass`, an assignment keeps its targets (`x = 1`)."""
    original = statements[i]
    dropped = (
        ast.Assign(targets=original.targets, value=ast.Constant(1)) if isinstance(original, ast.Assign) else ast.Pass()
    )
    statements[i] = ast.fix_missing_locations(ast.copy_location(dropped, original))

    def undo() -> None:
        statements[i] = original

    return undo


def _set(node: ast.AST, field: str, value: object) -> Undo:
    """Set one field of a node; the undo puts the old value back."""
    old = getattr(node, field)
    setattr(node, field, value)
    return lambda: setattr(node, field, old)


def _drop_key(literal: ast.Dict, k: int) -> Undo:
    key, value = literal.keys.pop(k), literal.values.pop(k)

    def undo() -> None:
        literal.keys.insert(k, key)
        literal.values.insert(k, value)

    return undo


def _sites(tree: ast.Module) -> Iterator[_Site]:
    """Every mutation site, in `ast.walk` order. A site's change must be undone before the walk goes on."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if not isinstance(statements, list):
                continue
            for i, stmt in enumerate(statements):
                if not isinstance(stmt, ast.stmt):
                    continue
                write = (isinstance(stmt, ast.Expr) and is_db_call(stmt.value, WRITE_METHODS)) or (
                    isinstance(stmt, ast.Assign) and is_db_call(stmt.value, WRITE_METHODS)
                )
                kind: MutationKind | None = "drop_write" if write else "drop_reject" if is_reject(stmt) else None
                if kind is None:
                    continue
                yield _Site(
                    kind,
                    stmt.lineno,
                    f"removed `{ast.unparse(stmt)[:80]}`",
                    partial(_replace_statement, statements, i),
                )
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in _COMPARE_SWAPS:
                    new = _COMPARE_SWAPS[type(op)]
                    ops = node.ops

                    def flip(ops: list[ast.cmpop] = ops, k: int = k, new: type[ast.cmpop] = new) -> Undo:
                        old = ops[k]
                        ops[k] = new()
                        return lambda: ops.__setitem__(k, old)

                    yield _Site(
                        "flip_compare",
                        node.lineno,
                        f"`{ast.unparse(node)[:60]}`: {type(op).__name__} -> {new.__name__}",
                        flip,
                    )
        if isinstance(node, ast.BoolOp):
            swapped = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            yield _Site(
                "swap_boolop",
                node.lineno,
                f"`{ast.unparse(node)[:60]}`: and/or swapped",
                partial(_set, node, "op", swapped),
            )
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            yield _Site(
                "shift_constant",
                node.lineno,
                f"{node.value!r} -> {node.value + 1!r}",
                partial(_set, node, "value", node.value + 1),
            )
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
            yield from _sql_sites(node)
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            for k, key in enumerate(node.value.keys):
                if isinstance(key, ast.Constant):
                    yield _Site(
                        "drop_field",
                        node.lineno,
                        f"returned dict without {key.value!r}",
                        partial(_drop_key, node.value, k),
                    )


def _sql_sites(node: ast.Constant) -> Iterator[_Site]:
    sql = str(node.value)
    # Only the WHERE/ON/AND conditions: flipping `=` in a SET or VALUES list is a different (write) bug.
    for match in _SQL_COMPARE.finditer(sql):
        before = sql[: match.start()].upper()
        if not re.search(r"\b(WHERE|AND|OR|ON|WHEN|HAVING)\b[^,]*$", before):
            continue
        replacement = _SQL_SWAPS[match.group(1)]
        mutated = sql[: match.start()] + replacement + sql[match.end() :]
        context = sql[max(0, match.start() - 30) : match.end() + 20].replace("\n", " ")
        yield _Site(
            "weaken_sql",
            node.lineno,
            f"SQL `...{context}...`: {match.group(1)} -> {replacement}",
            partial(_set, node, "value", mutated),
        )
    for match in re.finditer(r"\bAND\b", sql):
        mutated = sql[: match.start()] + "OR" + sql[match.end() :]
        context = sql[max(0, match.start() - 30) : match.end() + 30].replace("\n", " ")
        yield _Site(
            "weaken_sql", node.lineno, f"SQL `...{context}...`: AND -> OR", partial(_set, node, "value", mutated)
        )


def _top_level_text(statement: ast.stmt, first: bool) -> str:
    """One top-level statement as `ast.unparse` writes it inside its module (a def after a blank line)."""
    text = ast.unparse(ast.Module(body=[statement], type_ignores=[]))
    if first:
        return text
    return ("\n\n" if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else "\n") + text


def _future_flags(tree: ast.Module) -> int:
    """The compiler flags of the module's `from __future__ import ...` lines, to compile a piece of it alone."""
    names = [a.name for s in tree.body if isinstance(s, ast.ImportFrom) and s.module == "__future__" for a in s.names]
    return sum(getattr(__future__, name).compiler_flag for name in names if hasattr(__future__, name))


def make_mutants(source: str, file: str) -> list[Mutant]:
    """Every single-change mutant of a Python file (that still compiles).

    A mutant's text is the module's unparsed text with only its changed top-level statement unparsed
    again (and compiled), where that provably writes what `ast.unparse` of the whole tree writes."""
    tree = parse_module(source)
    owner = functions(tree)
    pieces = [_top_level_text(s, i == 0) for i, s in enumerate(tree.body)]
    piecewise = "".join(pieces) == ast.unparse(tree)
    spans = [(s.lineno, s.end_lineno or s.lineno) for s in tree.body]
    flags = _future_flags(tree)
    mutants = []
    for site in _sites(tree):
        top = next((i for i, (first, last) in enumerate(spans) if first <= site.line <= last), None)
        if top is not None and (not piecewise or (top > 0 and _is_string_statement(tree.body[top]))):
            top = None  # a string statement alone would read as a docstring: unparse the whole tree
        undo = site.apply()
        try:
            if top is None:
                text = checked = ast.unparse(tree)
            else:
                checked = _top_level_text(tree.body[top], top == 0)
                text = "".join(pieces[:top]) + checked + "".join(pieces[top + 1 :])
        finally:
            undo()
        try:
            compile(checked, file, "exec", flags=flags)
        except SyntaxError:
            continue
        function = owner.get(site.line, "<module>")
        mutants.append(
            Mutant(file=file, line=site.line, function=function, kind=site.kind, change=site.change, source=text)
        )
    return mutants


def _is_string_statement(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def server_mutants(server_dir: Path) -> list[Mutant]:
    found = []
    for name in MUTATED_FILES:
        path = server_dir / name
        if path.is_file():
            found += make_mutants(path.read_text(encoding="utf-8"), name)
    return found


def sample(mutants: list[Mutant], limit: int | None, seed: int) -> list[Mutant]:
    """At most `limit` mutants, spread over the kinds (round-robin), chosen with `seed`."""
    if limit is None or len(mutants) <= limit:
        return mutants
    rng = random.Random(seed)
    by_kind: dict[str, list[Mutant]] = {}
    for mutant in mutants:
        by_kind.setdefault(mutant.kind, []).append(mutant)
    for group in by_kind.values():
        rng.shuffle(group)
    chosen: list[Mutant] = []
    while len(chosen) < limit:
        for group in by_kind.values():
            if group and len(chosen) < limit:
                chosen.append(group.pop())
    return sorted(chosen, key=lambda m: (m.file, m.line, m.change))


# ---------------------------------------------------------------- running them


def tool_focus(server_dir: Path, spec: EnvironmentSpec) -> dict[tuple[str, str], list[str]]:
    """(file, function) -> the tools that run it: a tool's own function in tools.py, and in handlers.py a
    custom tool's handler and every helper it reaches. A mutant there is checked through those first."""
    focus: dict[tuple[str, str], list[str]] = {("tools.py", t.name): [t.name] for t in spec.tools}
    path = server_dir / "handlers.py"
    if not path.is_file():
        return focus
    tree = parse_module(path.read_text(encoding="utf-8"))
    calls = {
        node.name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    for tool in spec.tools:
        if isinstance(tool, CustomTool):
            reached, todo = set(), [tool.handler]
            while todo:
                name = todo.pop()
                if name in calls and name not in reached:
                    reached.add(name)
                    todo += calls[name]
            for name in reached:
                focus.setdefault(("handlers.py", name), []).append(tool.name)
    return focus


async def verify_mutant(
    server_dir: Path, mutant: Mutant, options: VerifyOptions, focus: list[str] | None = None
) -> MutantResult:
    """Verify one mutant in a copy of the server; `focus` (the tools running the changed function) is
    checked first, so a fail-fast run stops sooner. Killed means verification refused it."""
    started = time.perf_counter()
    if focus:
        options = options.model_copy(update={"focus": focus})
    with tempfile.TemporaryDirectory(prefix="envfarm-mutant-") as tmp:
        root = Path(tmp)
        copy_dir = root / "servers" / server_dir.name
        shutil.copytree(server_dir, copy_dir, ignore=shutil.ignore_patterns("__pycache__", "verification.json"))
        (copy_dir / mutant.file).write_text(mutant.source, encoding="utf-8")
        report = await verify_server(copy_dir, root, options)
        if not report.passed and all(f.check == "timeout" for f in report.failures):
            # A call that only ran out of time may be a loaded machine, not the mutant: ask once more,
            # with more patience, so a hang counts as a kill only when it is one.
            patient = options.model_copy(update={"call_timeout": options.call_timeout * TIMEOUT_RETRY_FACTOR})
            report = await verify_server(copy_dir, root, patient)
    killed_by = sorted({f"{f.tool}:{f.check}" for f in report.failures})
    return MutantResult(
        file=mutant.file,
        line=mutant.line,
        function=mutant.function,
        kind=mutant.kind,
        change=mutant.change,
        killed=not report.passed,
        killed_by=killed_by[:10],
        seconds=round(time.perf_counter() - started, 2),
    )


def _names(equivalent: EquivalentMutant, mutant: Mutant | MutantResult) -> bool:
    return (equivalent.file, equivalent.function, equivalent.change) == (
        mutant.file,
        mutant.function,
        mutant.change,
    ) and (equivalent.line is None or equivalent.line == mutant.line)


def explain(result: MutantResult, equivalents: list[EquivalentMutant]) -> str | None:
    """The spec's reason a surviving mutant cannot change behaviour, if it gives one."""
    for equivalent in equivalents:
        if _names(equivalent, result):
            return equivalent.reason
    return None


def usable_equivalents(
    equivalents: list[EquivalentMutant], mutants: list[Mutant]
) -> tuple[list[EquivalentMutant], list[str]]:
    """The entries that name exactly one of the server's mutants, and a problem for each other entry.

    An entry explains one mutant, never a family: one that names several (the same change twice in a
    function) must add `line`, and one that names none is stale (the code changed under it)."""
    usable, problems = [], []
    for equivalent in equivalents:
        where = f"{equivalent.file} {equivalent.function}: {equivalent.change}"
        named = [m for m in mutants if _names(equivalent, m)]
        if len(named) == 1:
            usable.append(equivalent)
        elif named:
            lines = ", ".join(str(m.line) for m in named)
            problems.append(f"{where} names {len(named)} mutants (lines {lines}); add `line` to say which")
        else:
            problems.append(f"{where} names no mutant of the current code (stale)")
    return usable, problems


@dataclass
class _Plan:
    """One server's share of a mutation run: the mutants chosen, the spec entries that may explain
    survivors, and which tools run each function."""

    server_dir: Path
    mutants: list[Mutant]
    equivalents: list[EquivalentMutant]
    equivalent_problems: list[str]
    focus: dict[tuple[str, str], list[str]]


def _plan(
    server_dir: Path,
    max_mutants: int | None,
    seed: int,
    mutants: list[Mutant] | None = None,
    only: Callable[[Mutant], bool] | None = None,
) -> _Plan:
    every = server_mutants(server_dir)
    spec = load_server_spec(server_dir)
    equivalents, problems = usable_equivalents(spec.equivalent_mutants, every)
    if mutants is None and only is not None:
        mutants = [m for m in every if only(m)]
    chosen = mutants if mutants is not None else sample(every, max_mutants, seed)
    return _Plan(server_dir, chosen, equivalents, problems, tool_focus(server_dir, spec))


async def _run(
    plans: list[_Plan], jobs: int, options: VerifyOptions, on_result: Callable[[str, MutantResult], None] | None
) -> list[ServerMutation]:
    """Every planned mutant of every server through one pool of `jobs`, in plan order (so no server's
    last slow survivor leaves a core idle while the next server waits)."""
    limiter = anyio.CapacityLimiter(jobs)
    results: list[list[MutantResult]] = [[] for _ in plans]
    spans: list[list[float]] = [[] for _ in plans]

    async def run(k: int, mutant: Mutant) -> None:
        plan = plans[k]
        async with limiter:
            spans[k].append(time.perf_counter())
            result = await verify_mutant(
                plan.server_dir, mutant, options, plan.focus.get((mutant.file, mutant.function))
            )
            spans[k].append(time.perf_counter())
        if not result.killed:
            result.equivalent = explain(result, plan.equivalents)
        results[k].append(result)
        if on_result:
            on_result(plan.server_dir.name, result)

    async with anyio.create_task_group() as group:
        for k, plan in enumerate(plans):
            for mutant in plan.mutants:
                group.start_soon(run, k, mutant)
    return [
        _server_report(plan, found, round(max(span) - min(span), 2) if span else 0.0)
        for plan, found, span in zip(plans, results, spans, strict=True)
    ]


def _server_report(plan: _Plan, results: list[MutantResult], seconds: float) -> ServerMutation:
    results.sort(key=lambda r: (r.file, r.line, r.change))
    by_kind: dict[str, dict[str, int]] = {}
    for r in results:
        counts = by_kind.setdefault(r.kind, {"mutants": 0, "killed": 0})
        counts["mutants"] += 1
        counts["killed"] += r.killed
    killed = sum(r.killed for r in results)
    survivors = [r for r in results if not r.killed]
    explained = sum(r.equivalent is not None for r in survivors)
    return ServerMutation(
        server=plan.server_dir.name,
        mutants=len(results),
        killed=killed,
        kill_rate=round(killed / len(results), 4) if results else 1.0,
        explained=explained,
        unexplained=len(survivors) - explained,
        equivalent_problems=plan.equivalent_problems,
        by_kind=by_kind,
        survivors=survivors,
        results=results,
        seconds=seconds,
    )


async def mutate_server(
    server_dir: Path,
    *,
    max_mutants: int | None = None,
    seed: int = 0,
    jobs: int = 2,
    options: VerifyOptions | None = None,
    progress: Callable[[MutantResult], None] | None = None,
    mutants: list[Mutant] | None = None,
) -> ServerMutation:
    """Verify every (or a sample of) mutant(s) of one published server, `jobs` at a time (or exactly
    `mutants`, chosen by the caller); survivors the spec's `equivalent_mutants` explain are marked with
    the reason."""
    plan = _plan(server_dir, max_mutants, seed, mutants)
    on_result = (lambda _, result: progress(result)) if progress else None
    (report,) = await _run([plan], jobs, options or VerifyOptions(fail_fast=True), on_result)
    return report


async def mutate_servers(
    server_dirs: list[Path],
    *,
    max_mutants: int | None = None,
    seed: int = 0,
    jobs: int = 2,
    options: VerifyOptions | None = None,
    progress: Callable[[str, MutantResult], None] | None = None,
    survivors_of: MutationReport | None = None,
) -> list[ServerMutation]:
    """`mutate_server` for several servers through one pool of `jobs` (progress gets the server's name).
    With `survivors_of`, only the mutants that survived that earlier run: the quick re-check after
    writing expectations for them."""
    plans = [_plan(d, max_mutants, seed, only=_survived_in(survivors_of, d.name)) for d in server_dirs]
    return await _run(plans, jobs, options or VerifyOptions(fail_fast=True), progress)


def _survived_in(report: MutationReport | None, server: str) -> Callable[[Mutant], bool] | None:
    """Whether a mutant is one that survived in `report` (same file, function and change: lines may have
    moved since); None without a report."""
    if report is None:
        return None
    survived = {(r.file, r.function, r.change) for s in report.servers if s.server == server for r in s.survivors}
    return lambda mutant: (mutant.file, mutant.function, mutant.change) in survived


def summarize(
    servers: list[ServerMutation],
    seed: int,
    max_mutants: int | None,
    *,
    seconds: float | None = None,
    jobs: int | None = None,
) -> MutationReport:
    mutants = sum(s.mutants for s in servers)
    killed = sum(s.killed for s in servers)
    return MutationReport(
        servers=servers,
        mutants=mutants,
        killed=killed,
        kill_rate=round(killed / mutants, 4) if mutants else 1.0,
        explained=sum(s.explained for s in servers),
        unexplained=sum(s.unexplained for s in servers),
        seed=seed,
        max_mutants=max_mutants,
        seconds=round(seconds, 1) if seconds is not None else None,
        jobs=jobs,
    )


def render_markdown(report: MutationReport, command: str) -> str:
    """The report as a page: the kill rate per server, then every survivor with where, what and why."""
    sampled = (
        f"at most {report.max_mutants} mutants per server (seed {report.seed})"
        if report.max_mutants
        else "every mutant"
    )
    lines = [
        "# Mutation testing of the verifier",
        "",
        f"`{command}`: {sampled}. A mutant is killed when verification refuses it; a survivor is explained",
        "only by a spec `equivalent_mutants` entry naming it, with the reason no call can tell it apart.",
        "",
        *(
            [f"The run took {report.seconds / 60:.1f} min, {report.jobs} mutants at a time.", ""]
            if report.seconds is not None and report.jobs
            else []
        ),
        "| server | mutants | killed | kill rate | explained | unexplained |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    rows = [(s.server, s.mutants, s.killed, s.kill_rate, s.explained, s.unexplained) for s in report.servers]
    rows.append(("**all**", report.mutants, report.killed, report.kill_rate, report.explained, report.unexplained))
    lines += [
        f"| {name} | {mutants} | {killed} | {rate:.1%} | {explained} | {unexplained} |"
        for name, mutants, killed, rate, explained, unexplained in rows
    ]
    survivors = [(s.server, r) for s in report.servers for r in s.survivors]
    lines += ["", f"## Survivors ({len(survivors)})", ""]
    if survivors:
        lines += ["| server | where | function | kind | change | explained |", "|---|---|---|---|---|---|"]
    for server, r in survivors:
        why = f"equivalent: {r.equivalent}" if r.equivalent else "**no**: needs an expectation"
        change = r.change.replace("|", "\\|").replace("`", "")
        lines.append(f"| {server} | {r.file}:{r.line} | {r.function} | {r.kind} | `{change}` | {why} |")
    problems = [(s.server, p) for s in report.servers for p in s.equivalent_problems]
    if problems:
        lines += ["", "## Spec entries that explain nothing", ""]
        lines += [f"- {server}: {problem}" for server, problem in problems]
    return "\n".join(lines) + "\n"
