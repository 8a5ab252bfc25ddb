"""The farm under load and abuse: `envfarm bench`, `envfarm fuzz`, `envfarm soak`."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

import anyio
from pydantic import Field

from envfarm.cli.options import CommandOptions, fail
from envfarm.servers.runtime.registry import registry_file


class BenchOptions(CommandOptions):
    out: Path = Path("reports/bench.json")
    quick: bool = False
    peer: str | None = None


class FuzzOptions(CommandOptions):
    names: list[str] = Field(default_factory=list)
    replies: int | None = None
    calls: int = 2400
    seed: int = 0
    out: Path | None = None


class SoakOptions(CommandOptions):
    seeds: str = "0:10"
    n: int = 200
    steps: list[str] = Field(default_factory=lambda: ["tasks", "oracle", "heuristic"])
    jobs: int = 1
    timeout: float = 900.0
    out: Path | None = None
    http: int | None = None
    tokens: int = 3
    seed: int = 0


def cmd_bench(args: argparse.Namespace) -> int:
    from envfarm.bench import failure_cause, leaked, render_markdown, run_bench
    from envfarm.bench.peer import peer_command

    options = BenchOptions.parse(args)
    if options.peer is not None:
        try:
            peer_command(options.peer)
        except ValueError as exc:
            return fail(str(exc))
    steps: list[str] = []

    def progress(step: str) -> None:
        steps.append(step)
        print(f"bench: {step}", file=sys.stderr, flush=True)

    try:
        report = run_bench(options.farm_root(), options.out, quick=options.quick, peer=options.peer, progress=progress)
    except LookupError as exc:
        return fail(str(exc))
    except Exception as exc:  # a section broke: its traceback, then the cause as the last line (what a log tail shows)
        traceback.print_exc()
        print(f"error: bench stopped in '{steps[-1] if steps else 'setup'}': {failure_cause(exc)}", file=sys.stderr)
        return 1
    print(render_markdown(report))
    if leaked(report):
        print(f"error: episodes leaked under load (report written to {options.out}): {leaked(report)}", file=sys.stderr)
        return 1
    return 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    options = FuzzOptions.parse(args)
    if options.replies is not None:
        return _fuzz_replies(options, options.replies)
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        return fail('envfarm fuzz needs hypothesis: pip install -e ".[fuzz]"')
    from envfarm.fuzz import ServerFuzz, fuzz_farm

    registry = options.registry()
    names = options.names or [s.name for s in registry.servers]
    missing = sorted(set(names) - {s.name for s in registry.servers})
    if missing:
        return fail(f"not in {registry_file(options.farm_root())}: {', '.join(missing)}")

    def progress(result: ServerFuzz) -> None:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(result.outcomes.items()))
        bad = sum(result.violations.values())
        print(f"  {result.server:<22} {result.calls:>6} calls  {outcomes}  violations {bad}", flush=True)

    print(f"fuzzing {len(names)} servers, {options.calls} calls, seed {options.seed}", flush=True)
    report = fuzz_farm(options.farm_root(), names, options.calls, seed=options.seed, progress=progress)
    if options.out:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    print(f"\n{report.calls} calls: " + ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())))
    print("violations: " + ", ".join(f"{k} {v}" for k, v in report.violations.items()))
    for violation in report.evidence:
        print(
            f"  {violation.server}.{violation.tool} {violation.invariant}: {violation.detail} <- {violation.arguments}"
        )
    return 0 if report.ok else 1


def _fuzz_replies(options: FuzzOptions, replies: int) -> int:
    """`envfarm fuzz --replies N`: generated model replies through every LLM-driven path (envfarm/model_fuzz.py)."""
    from envfarm.model_fuzz import PATHS, ReplyFuzzReport, fuzz_replies

    paths = options.names or list(PATHS)
    if not set(paths) <= set(PATHS):
        return fail(f"with --replies, name paths ({', '.join(PATHS)}), not {', '.join(paths)}")

    def progress(report: ReplyFuzzReport) -> None:
        print(f"  {report.replies} replies, {report.violations} violations", flush=True)

    print(f"fuzzing {', '.join(paths)} with {replies} generated replies, seed {options.seed}", flush=True)
    farm = options.farm_root()
    report = anyio.run(lambda: fuzz_replies(farm, replies, seed=options.seed, paths=paths, progress=progress))
    if options.out:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    for path, outcomes in report.outcomes.items():
        print(f"  {path:<11} {report.runs[path]:>6} runs  " + ", ".join(f"{k} {v}" for k, v in outcomes.items()))
    print(f"{report.replies} replies in {report.seconds:.1f} s: {report.violations} violations (tracebacks)")
    for violation in report.evidence:
        print(f"  {violation.path}: {violation.error} <- {violation.body[:120]!r}\n{violation.traceback}")
    return 0 if report.violations == 0 else 1


def cmd_soak(args: argparse.Namespace) -> int:
    """`envfarm soak`: the driver's commands over many seeds, each in a faulthandler child (envfarm/soak.py);
    with `--http CALLS`, varied tool calls against one `serve --all` host instead (envfarm/bench/http_soak.py)."""
    import shlex

    options = SoakOptions.parse(args)
    command = shlex.join(["envfarm", *sys.argv[1:]])
    if options.http is not None:
        from envfarm.bench.http_soak import http_soak, render_http_markdown

        if options.http < 1 or options.tokens < 1:
            return fail("--http CALLS and --tokens must be positive")
        found = http_soak(options.farm_root(), options.http, tokens=options.tokens, seed=options.seed, command=command)
        document, page, ok = found.model_dump_json(indent=2), render_http_markdown(found), found.ok
    else:
        from envfarm.soak import parse_seeds, soak, summary_line
        from envfarm.soak import render_markdown as render_soak

        try:
            seeds = parse_seeds(options.seeds)
        except ValueError as exc:
            return fail(str(exc))
        if options.n < 1 or options.timeout <= 0:
            return fail("--n and --timeout must be positive")
        if "tasks" not in options.steps and {"oracle", "heuristic"} & set(options.steps):
            return fail("--steps oracle/heuristic roll out what the tasks step writes; add tasks")
        print(
            f"soak: {len(seeds)} seeds x {', '.join(options.steps)}, n={options.n}, {options.jobs} at a time",
            flush=True,
        )
        report = soak(
            seeds,
            n=options.n,
            steps=options.steps,
            timeout=options.timeout,
            jobs=options.jobs,
            farm=options.farm.resolve() if options.farm else None,
            command=command,
            progress=lambda r: print(summary_line(r), flush=True),
        )
        document, page, ok = report.model_dump_json(indent=2), render_soak(report), report.ok
    if options.out:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(document + "\n", encoding="utf-8")
        options.out.with_suffix(".md").write_text(page, encoding="utf-8")
    print(page)
    return 0 if ok else 1


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`bench`, `fuzz`, `soak`."""
    be = sub.add_parser("bench", help="measure the performance targets and write a JSON + markdown report")
    be.add_argument("--out", type=Path, default=Path("reports/bench.json"))
    be.add_argument("--quick", action="store_true", help="fewer iterations (for smoke tests)")
    be.add_argument(
        "--peer",
        help="a foreign stdio MCP server to measure beside ours: a command line with its own interpreter "
        "('/venv/bin/python server.py'), a .py file (run on this Python) or an executable; its stderr goes to "
        "<out>.peer.log",
    )
    be.set_defaults(func=cmd_bench)

    fz = sub.add_parser("fuzz", help="schema-driven property testing of every tool, in-memory (needs .[fuzz])")
    fz.add_argument("names", nargs="*", help="servers to fuzz (default: all); with --replies, paths")
    fz.add_argument(
        "--replies",
        type=int,
        help="instead: N generated model replies through the policy, user, writer, judge, factory and rollout paths",
    )
    fz.add_argument("--calls", type=int, default=2400, help="tool calls in all, split evenly (default: 2400)")
    fz.add_argument("--seed", type=int, default=0)
    fz.add_argument("--out", type=Path, help="write the JSON report here")
    fz.set_defaults(func=cmd_fuzz)

    so = sub.add_parser(
        "soak",
        help="the driver over many seeds, each seed in a faulthandler child: crashes, hangs and errors (exit 1 on any "
        "crash, hang or traceback); with --http, varied tool calls against one `serve --all` host",
    )
    so.add_argument(
        "--seeds",
        default="0:10",
        help="START:STOP (stop excluded), a comma-separated list, or one seed (default: 0:10)",
    )
    so.add_argument("--n", type=int, default=200, help="tasks per seed (envfarm tasks --n; default: 200)")
    so.add_argument(
        "--steps",
        nargs="+",
        choices=("tasks", "oracle", "heuristic", "run"),
        default=["tasks", "oracle", "heuristic"],
        metavar="STEP",
        help="per seed, in order: tasks, oracle and heuristic (rollouts of those policies on the tasks), run "
        "(`envfarm run --seed S` with its defaults); default: tasks oracle heuristic",
    )
    so.add_argument(
        "--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2), help="seeds at once (default: half the cores)"
    )
    so.add_argument(
        "--timeout", type=float, default=900.0, help="seconds per seed before it counts as hung (default: 900)"
    )
    so.add_argument("--out", type=Path, help="write the JSON report here (and the markdown page beside it, .md)")
    so.add_argument(
        "--http",
        type=int,
        metavar="CALLS",
        help="instead: CALLS varied tool calls (from each tool's input schema, many shapes, after resets) to every "
        "server of one `envfarm serve --all` host over several tokens; exit 1 unless the host still answers",
    )
    so.add_argument(
        "--tokens", type=int, default=3, help="with --http: bearer tokens (clients) the calls spread over (default: 3)"
    )
    so.add_argument("--seed", type=int, default=0, help="with --http: which calls are drawn (default: 0)")
    so.set_defaults(func=cmd_soak)
