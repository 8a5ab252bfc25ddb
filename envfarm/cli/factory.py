"""The factory's commands: `envfarm build`, `envfarm verify` (and `--mutate`), `envfarm propose`."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import anyio
from pydantic import Field

from envfarm.cli.options import CommandOptions, fail, writable_farm
from envfarm.servers.runtime.registry import registry_file


class BuildOptions(CommandOptions):
    specs: list[Path]
    out: Path | None = None
    no_verify: bool = False
    jobs: int | None = None
    timeout: float = 5.0


class VerifyCommandOptions(CommandOptions):
    names: list[str] = Field(default_factory=list)
    all: bool = False
    mutate: bool = False
    max_mutants: int | None = None
    seed: int = 0
    out: Path = Path("reports/mutation.json")
    survivors_of: Path | None = None
    jobs: int | None = None
    timeout: float = 5.0


class ProposeOptions(CommandOptions):
    theme: str
    n: int = 1
    model: str | None = None
    base_url: str | None = None
    rounds: int = 3
    build_dir: Path | None = None
    out: Path | None = None
    timeout: float = 5.0
    mutants: int = 8


def cmd_build(args: argparse.Namespace) -> int:
    from envfarm.factory.build import build_all
    from envfarm.factory.verify.report import VerifyOptions
    from envfarm.render import ProgressTable, render

    options = BuildOptions.parse(args)
    farm_root = writable_farm(options.out, options)
    if farm_root is None:
        return 2
    run = partial(
        build_all,
        options.specs,
        farm_root,
        verify=not options.no_verify,
        jobs=options.jobs,
        options=VerifyOptions(call_timeout=options.timeout),
        on_result=ProgressTable(sys.stdout),
    )
    result = anyio.run(run)
    print(f"\n{render(result)}")
    return 0 if result.ok else 1


def cmd_mutate(options: VerifyCommandOptions) -> int:
    """`envfarm verify --mutate`: the verifier's kill rate on seeded bugs, per server."""
    import time

    from envfarm.factory.progress import default_jobs
    from envfarm.factory.sandbox.warm import warm_launcher
    from envfarm.factory.verify.mutation import MutantResult, MutationReport, mutate_servers, render_markdown, summarize
    from envfarm.factory.verify.report import VerifyOptions

    farm = options.farm_root()
    registry = options.registry()
    names = [s.name for s in registry.servers] if options.all or not options.names else options.names
    missing = sorted(set(names) - {s.name for s in registry.servers})
    if missing:
        return fail(f"not in {registry_file(farm)}: {', '.join(missing)}")
    jobs = options.jobs or default_jobs()
    earlier = None
    if options.survivors_of is not None:
        try:
            earlier = MutationReport.model_validate_json(options.survivors_of.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            return fail(f"--survivors-of {options.survivors_of}: not a readable mutation report ({error})")

    def progress(server: str, result: MutantResult) -> None:
        mark = "killed  " if result.killed else "SURVIVED"
        print(f"  {mark} {server} {result.file}:{result.line} {result.kind}: {result.change[:100]}", file=sys.stderr)

    started = time.perf_counter()
    with warm_launcher() as socket_path:  # one warm interpreter forks every mutant's server
        verify = VerifyOptions(call_timeout=options.timeout, warm_socket=socket_path, fail_fast=True)
        run = partial(
            mutate_servers,
            [farm / "servers" / name for name in names],
            max_mutants=options.max_mutants,
            seed=options.seed,
            jobs=jobs,
            options=verify,
            progress=progress,
            survivors_of=earlier,
        )
        servers = anyio.run(run)
    report = summarize(servers, options.seed, options.max_mutants, seconds=time.perf_counter() - started, jobs=jobs)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    page = options.out.with_suffix(".md")
    page.write_text(render_markdown(report, "envfarm " + " ".join(sys.argv[1:])), encoding="utf-8")
    print(f"\n{'server':<22} {'mutants':>7} {'killed':>6} {'kill rate':>9} {'explained':>9} {'unexplained':>11}")
    for s in report.servers:
        print(f"{s.server:<22} {s.mutants:>7} {s.killed:>6} {s.kill_rate:>9.0%} {s.explained:>9} {s.unexplained:>11}")
    for s in report.servers:
        for r in s.survivors:
            if r.equivalent is None:
                print(f"survivor: {s.server} {r.file}:{r.line} ({r.function}) {r.kind}: {r.change}")
        for problem in s.equivalent_problems:
            print(f"equivalent_mutants: {s.server} {problem}")
    print(
        f"\nall: {report.killed} of {report.mutants} mutants killed ({report.kill_rate:.0%}), "
        f"{report.explained} survivors explained as equivalent, {report.unexplained} unexplained; "
        f"report: {options.out} and {page}"
    )
    return 1 if report.unexplained or any(s.equivalent_problems for s in report.servers) else 0


def cmd_verify(args: argparse.Namespace) -> int:
    options = VerifyCommandOptions.parse(args)
    if options.mutate:
        return cmd_mutate(options)
    from envfarm.factory.build import verify_published
    from envfarm.factory.verify.report import VerifyOptions
    from envfarm.factory.world.invariants import farm_violations
    from envfarm.render import ProgressTable, render

    if not options.all and not options.names:
        return fail("name servers to verify or pass --all")
    names = None if options.all else options.names
    verify = VerifyOptions(call_timeout=options.timeout)
    farm = options.farm_root()
    run = partial(verify_published, farm, names, jobs=options.jobs, options=verify, on_result=ProgressTable(sys.stdout))
    try:
        result = anyio.run(run)
    except LookupError as exc:
        return fail(str(exc))
    print(f"\n{render(result)}")
    violations = farm_violations(farm / "servers") if options.all else []  # the one world, across servers
    for violation in violations:
        print(f"world: {violation}")
    if options.all:
        print(f"{len(violations)} world invariant violations")
    return 0 if result.ok and not violations else 1


def cmd_propose(args: argparse.Namespace) -> int:
    """`envfarm propose THEME --n N`: scenarios, specs, verification, revision; publishes what converges."""
    from envfarm.factory.generate.growth import propose, render_summary
    from envfarm.factory.verify.report import VerifyOptions
    from envfarm.llm import ChatModel, Transcript, close_after, parse_model

    options = ProposeOptions.parse(args)
    farm_root = writable_farm(options.out, options)
    if farm_root is None:
        return 2
    try:
        config = parse_model(options.model, options.base_url) if options.model else None
    except ValueError as exc:
        return fail(str(exc))
    build_dir = (options.build_dir or Path("builds") / options.theme.strip().lower().replace(" ", "_")).resolve()
    model = ChatModel(config, Transcript(build_dir / "llm")) if config else None

    call = partial(
        propose,
        options.theme,
        options.n,
        farm_root,
        build_dir,
        model,
        max_rounds=options.rounds,
        options=VerifyOptions(call_timeout=options.timeout),
        mutants=options.mutants,
    )
    summary = anyio.run(close_after, model, call) if model else anyio.run(call)
    print(render_summary(summary))
    return 0 if summary.ok else 1


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`build`, `verify`, `propose`."""
    b = sub.add_parser("build", help="spec -> generated server -> verification -> published")
    b.add_argument(
        "specs", nargs="+", type=Path, help="spec files or folders (a folder of spec folders builds them all)"
    )
    b.add_argument("--out", type=Path, help="farm root to publish into (default: --farm)")
    b.add_argument("--no-verify", action="store_true", help="publish without verification (marked 'unverified')")
    b.set_defaults(func=cmd_build)

    v = sub.add_parser("verify", help="re-verify published servers and report drift (exit 0 iff all hold)")
    v.add_argument("names", nargs="*", help="servers to verify")
    v.add_argument("--all", action="store_true", help="every server in the registry")
    v.add_argument(
        "--mutate", action="store_true", help="seed bugs into each server and report the verifier's kill rate"
    )
    v.add_argument("--max-mutants", type=int, help="with --mutate: at most this many mutants per server (a sample)")
    v.add_argument("--seed", type=int, default=0, help="with --mutate: which sample of mutants")
    v.add_argument(
        "--out",
        type=Path,
        default=Path("reports/mutation.json"),
        help="with --mutate: the JSON report; the markdown page goes beside it (.md)",
    )
    v.add_argument(
        "--survivors-of",
        type=Path,
        help="with --mutate: only the mutants that survived in this earlier report (re-check new expectations)",
    )
    v.set_defaults(func=cmd_verify)
    for command in (b, v):
        command.add_argument(
            "--jobs", type=int, help="servers (with --mutate: mutants) verified at once (default: one per core)"
        )
        command.add_argument(
            "--timeout", type=float, default=5.0, help="seconds a tool call may take before it counts as hung"
        )

    pr = sub.add_parser("propose", help="N environments for a theme: propose, write, verify, revise, publish")
    pr.add_argument("theme", help='what the environments are about, e.g. "dog grooming salon"')
    pr.add_argument("--n", type=int, default=1, help="how many distinct environments (default: 1)")
    pr.add_argument("--model", help="openai:MODEL to write them with an LLM (default: the offline template)")
    pr.add_argument("--base-url", help="the model's OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    pr.add_argument("--rounds", type=int, default=3, help="verify-and-revise rounds per environment (default: 3)")
    pr.add_argument(
        "--build-dir", type=Path, help="where every round, prompt and answer is kept (default: builds/<theme>)"
    )
    pr.add_argument("--out", type=Path, help="farm root to publish into (default: --farm)")
    pr.add_argument("--timeout", type=float, default=5.0, help="seconds a tool call may take before it counts as hung")
    pr.add_argument(
        "--mutants",
        type=int,
        default=8,
        help="seeded bugs sampled from each verified round; survivors go back to the model (default: 8)",
    )
    pr.set_defaults(func=cmd_propose)
