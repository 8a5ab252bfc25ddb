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

import ast
import copy
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
from pydantic import BaseModel, Field

from factory.sites import WRITE_METHODS, functions, is_db_call, is_reject
from factory.spec import EquivalentMutant
from factory.verify import VerifyOptions, load_server_spec, verify_server

MutationKind = Literal[
    "drop_write", "drop_reject", "flip_compare", "shift_constant", "swap_boolop", "drop_field", "weaken_sql"
]
MUTATED_FILES = ("handlers.py", "tools.py")
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


# ---------------------------------------------------------------- making mutants


@dataclass
class _Site:
    """One place a mutation applies: found by walking the tree, applied to a deep copy."""

    kind: MutationKind
    line: int
    change: str
    apply: Callable[[ast.AST], None]


def _path_to(tree: ast.AST, target: ast.AST) -> list[tuple[str, int | None]]:
    """The (field, index) steps from `tree` to `target`, to find the same node in a copy."""

    def walk(node: ast.AST, path: list[tuple[str, int | None]]) -> list[tuple[str, int | None]] | None:
        if node is target:
            return path
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST) and (found := walk(item, [*path, (name, i)])) is not None:
                        return found
            elif isinstance(value, ast.AST) and (found := walk(value, [*path, (name, None)])) is not None:
                return found
        return None

    found = walk(tree, [])
    if found is None:
        raise LookupError("node not in tree")
    return found


def _follow(tree: ast.AST, path: list[tuple[str, int | None]]) -> ast.AST:
    node = tree
    for name, index in path:
        value = getattr(node, name)
        node = value[index] if index is not None else value
    return node


def _sites(tree: ast.Module) -> Iterator[_Site]:
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
                path = _path_to(tree, node)

                def drop(copy_tree: ast.AST, path: list = path, field: str = field, i: int = i) -> None:  # type: ignore[type-arg]
                    owner = _follow(copy_tree, path)
                    body = getattr(owner, field)
                    original = body[i]
                    body[i] = (
                        ast.Assign(targets=original.targets, value=ast.Constant(1))
                        if isinstance(original, ast.Assign)
                        else ast.Pass()
                    )

                yield _Site(kind, stmt.lineno, f"removed `{ast.unparse(stmt)[:80]}`", drop)
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in _COMPARE_SWAPS:
                    path = _path_to(tree, node)
                    new = _COMPARE_SWAPS[type(op)]

                    def flip(copy_tree: ast.AST, path: list = path, k: int = k, new: type = new) -> None:  # type: ignore[type-arg]
                        _follow(copy_tree, path).ops[k] = new()  # type: ignore[attr-defined]

                    yield _Site(
                        "flip_compare",
                        node.lineno,
                        f"`{ast.unparse(node)[:60]}`: {type(op).__name__} -> {new.__name__}",
                        flip,
                    )
        if isinstance(node, ast.BoolOp):
            path = _path_to(tree, node)

            def swap(copy_tree: ast.AST, path: list = path) -> None:  # type: ignore[type-arg]
                target = _follow(copy_tree, path)
                target.op = ast.Or() if isinstance(target.op, ast.And) else ast.And()  # type: ignore[attr-defined]

            yield _Site("swap_boolop", node.lineno, f"`{ast.unparse(node)[:60]}`: and/or swapped", swap)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            path = _path_to(tree, node)

            def shift(copy_tree: ast.AST, path: list = path) -> None:  # type: ignore[type-arg]
                target = _follow(copy_tree, path)
                target.value = target.value + 1  # type: ignore[attr-defined]

            yield _Site("shift_constant", node.lineno, f"{node.value!r} -> {node.value + 1!r}", shift)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
            yield from _sql_sites(tree, node)
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            for k, key in enumerate(node.value.keys):
                if isinstance(key, ast.Constant):
                    path = _path_to(tree, node)

                    def drop_key(copy_tree: ast.AST, path: list = path, k: int = k) -> None:  # type: ignore[type-arg]
                        literal = _follow(copy_tree, path).value  # type: ignore[attr-defined]
                        del literal.keys[k]
                        del literal.values[k]

                    yield _Site("drop_field", node.lineno, f"returned dict without {key.value!r}", drop_key)


def _sql_sites(tree: ast.Module, node: ast.Constant) -> Iterator[_Site]:
    sql = str(node.value)
    path = _path_to(tree, node)
    # Only the WHERE/ON/AND conditions: flipping `=` in a SET or VALUES list is a different (write) bug.
    for match in _SQL_COMPARE.finditer(sql):
        before = sql[: match.start()].upper()
        if not re.search(r"\b(WHERE|AND|OR|ON|WHEN|HAVING)\b[^,]*$", before):
            continue
        replacement = _SQL_SWAPS[match.group(1)]
        mutated = sql[: match.start()] + replacement + sql[match.end() :]

        def replace(copy_tree: ast.AST, path: list = path, mutated: str = mutated) -> None:  # type: ignore[type-arg]
            _follow(copy_tree, path).value = mutated  # type: ignore[attr-defined]

        context = sql[max(0, match.start() - 30) : match.end() + 20].replace("\n", " ")
        yield _Site("weaken_sql", node.lineno, f"SQL `...{context}...`: {match.group(1)} -> {replacement}", replace)
    for match in re.finditer(r"\bAND\b", sql):
        mutated = sql[: match.start()] + "OR" + sql[match.end() :]

        def to_or(copy_tree: ast.AST, path: list = path, mutated: str = mutated) -> None:  # type: ignore[type-arg]
            _follow(copy_tree, path).value = mutated  # type: ignore[attr-defined]

        context = sql[max(0, match.start() - 30) : match.end() + 30].replace("\n", " ")
        yield _Site("weaken_sql", node.lineno, f"SQL `...{context}...`: AND -> OR", to_or)


def make_mutants(source: str, file: str) -> list[Mutant]:
    """Every single-change mutant of a Python file (that still compiles)."""
    tree = ast.parse(source)
    owner = functions(tree)
    mutants = []
    for site in _sites(tree):
        mutated = copy.deepcopy(tree)
        site.apply(mutated)
        text = ast.unparse(ast.fix_missing_locations(mutated))
        try:
            compile(text, file, "exec")
        except SyntaxError:
            continue
        function = owner.get(site.line, "<module>")
        mutants.append(
            Mutant(file=file, line=site.line, function=function, kind=site.kind, change=site.change, source=text)
        )
    return mutants


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


async def verify_mutant(server_dir: Path, mutant: Mutant, options: VerifyOptions) -> MutantResult:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="envfarm-mutant-") as tmp:
        root = Path(tmp)
        copy_dir = root / "servers" / server_dir.name
        shutil.copytree(server_dir, copy_dir, ignore=shutil.ignore_patterns("__pycache__", "verification.json"))
        (copy_dir / mutant.file).write_text(mutant.source, encoding="utf-8")
        report = await verify_server(copy_dir, root, options)
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
    options = options or VerifyOptions(fail_fast=True)
    started = time.perf_counter()
    every = server_mutants(server_dir)
    equivalents, equivalent_problems = usable_equivalents(load_server_spec(server_dir).equivalent_mutants, every)
    chosen = mutants if mutants is not None else sample(every, max_mutants, seed)
    results: list[MutantResult] = []
    limiter = anyio.CapacityLimiter(jobs)

    async def run(mutant: Mutant) -> None:
        async with limiter:
            result = await verify_mutant(server_dir, mutant, options)
        if not result.killed:
            result.equivalent = explain(result, equivalents)
        results.append(result)
        if progress:
            progress(result)

    async with anyio.create_task_group() as group:
        for mutant in chosen:
            group.start_soon(run, mutant)
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
        server=server_dir.name,
        mutants=len(results),
        killed=killed,
        kill_rate=round(killed / len(results), 4) if results else 1.0,
        explained=explained,
        unexplained=len(survivors) - explained,
        equivalent_problems=equivalent_problems,
        by_kind=by_kind,
        survivors=survivors,
        results=results,
        seconds=round(time.perf_counter() - started, 2),
    )


def summarize(servers: list[ServerMutation], seed: int, max_mutants: int | None) -> MutationReport:
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
        "| server | mutants | killed | kill rate | explained | unexplained |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for s in report.servers:
        lines.append(f"| {s.server} | {s.mutants} | {s.killed} | {s.kill_rate:.1%} | {s.explained} | {s.unexplained} |")
    lines.append(
        f"| **all** | {report.mutants} | {report.killed} | {report.kill_rate:.1%} | {report.explained} | {report.unexplained} |"
    )
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
