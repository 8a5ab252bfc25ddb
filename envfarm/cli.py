"""`envfarm`: one console script, one subcommand per job."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from envfarm.servers.runtime.cli import add_serving_arguments, add_source_argument
from envfarm.servers.runtime.farm import stdio_args
from envfarm.servers.runtime.registry import (
    REGISTRY_FILE,
    Registry,
    default_farm_root,
    load_registry,
    registry_file,
)

if TYPE_CHECKING:
    from envfarm.factory.importers.openapi import ImportResult

CLIENTS = ("claude", "cursor", "vscode")


def _farm(args: argparse.Namespace) -> Path:
    return (args.farm or default_farm_root()).resolve()


def _registry(args: argparse.Namespace) -> Registry:
    return load_registry(_farm(args))


def cmd_list(args: argparse.Namespace) -> int:
    registry = _registry(args)
    if args.update:
        from envfarm.farm_table import update_readme

        changed = update_readme(args.update, registry)
        print(f"{args.update}: {'updated' if changed else 'already up to date'}")
        return 0
    if args.markdown:
        from envfarm.farm_table import render_farm_table

        print(render_farm_table(registry))
        return 0
    if not registry.servers:
        print(f"no servers in {registry_file(_farm(args))}; build some with `envfarm build`")
        return 0
    header = f"{'server':<22} {'domain':<16} {'tools':>5} {'writes':>6} {'rows':>6}  {'verified':<10} tags"
    print(header)
    print("-" * len(header))
    for s in registry.servers:
        print(
            f"{s.name:<22} {s.domain:<16} {s.tool_count:>5} {s.write_tool_count:>6} {s.seed_rows:>6}  {s.verification:<10} {','.join(s.tags)}"
        )
    domains = {s.domain for s in registry.servers}
    print(
        f"\n{len(registry.servers)} servers, {len(domains)} domains, {sum(s.tool_count for s in registry.servers)} tools"
    )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from envfarm.servers.runtime.cli import ServingOptions, enable_crash_stacks

    enable_crash_stacks()
    from envfarm.servers.runtime.farm import load_server, load_servers
    from envfarm.servers.runtime.http import serve_http

    options = ServingOptions(args)
    problem = options.problem
    if args.all and args.db:
        problem = "--db keeps one server's state; it cannot be combined with --all"
    elif not args.all and not args.name:
        problem = "name a server or pass --all"
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    registry = _registry(args)
    if args.all:
        try:
            names = registry.select(None, args.source) or registry.names()
        except LookupError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if not names:
            print("error: the registry lists no servers", file=sys.stderr)
            return 2
        url = f"http://{args.host}:{options.port}/<name>/mcp"
        serve_http(
            load_servers(_farm(args), names, budget=options.budget),
            host=args.host,
            port=options.port,
            budget=options.budget,
            access=options.access,
            on_ready=lambda: print(f"serving {len(names)} servers at {url}", file=sys.stderr, flush=True),
        )
        return 0
    try:
        server = load_server(_farm(args), args.name, budget=options.budget, **({"db_file": args.db} if args.db else {}))
    except (LookupError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.http:
        url = f"http://{args.host}:{options.port}/{args.name}/mcp"
        serve_http(
            {args.name: server},
            host=args.host,
            port=options.port,
            budget=options.budget,
            access=options.access,
            on_ready=lambda: print(f"serving {args.name} at {url}", file=sys.stderr, flush=True),
        )
    else:
        from envfarm.servers.runtime.stdio import run_stdio

        run_stdio(server)
    return 0


def client_config(registry: Registry, farm_root: Path, client: str, names: Sequence[str]) -> dict:
    """The mcpServers block `client` expects, launching each server over stdio from this farm (no PYTHONPATH)."""
    chosen = [s for s in registry.servers if not names or s.name in names]
    missing = sorted(set(names) - {s.name for s in chosen})
    if missing:
        raise LookupError(f"not in the registry: {', '.join(missing)}")
    entries = {}
    for s in chosen:
        entry = {"command": sys.executable, "args": stdio_args(farm_root, s.name)}
        entries[s.name] = {"type": "stdio", **entry} if client == "vscode" else entry
    return {"servers": entries} if client == "vscode" else {"mcpServers": entries}


def cmd_config(args: argparse.Namespace) -> int:
    try:
        config = client_config(_registry(args), _farm(args), args.client, args.names)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(config, indent=2))
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from envfarm.factory.build import build_all
    from envfarm.factory.verify import VerifyOptions
    from envfarm.render import ProgressTable, render

    farm_root = _writable_farm(args)
    if farm_root is None:
        return 2
    run = partial(
        build_all,
        args.specs,
        farm_root,
        verify=not args.no_verify,
        jobs=args.jobs,
        options=VerifyOptions(call_timeout=args.timeout),
        on_result=ProgressTable(sys.stdout),
    )
    result = anyio.run(run)
    print(f"\n{render(result)}")
    return 0 if result.ok else 1


def cmd_mutate(args: argparse.Namespace) -> int:
    """`envfarm verify --mutate`: the verifier's kill rate on seeded bugs, per server."""
    import time

    from envfarm.factory.mutation import MutantResult, MutationReport, mutate_servers, render_markdown, summarize
    from envfarm.factory.progress import default_jobs
    from envfarm.factory.verify import VerifyOptions
    from envfarm.factory.warm import warm_launcher

    farm = _farm(args)
    registry = _registry(args)
    names = [s.name for s in registry.servers] if args.all or not args.names else args.names
    missing = sorted(set(names) - {s.name for s in registry.servers})
    if missing:
        print(f"error: not in {registry_file(farm)}: {', '.join(missing)}", file=sys.stderr)
        return 2
    jobs = args.jobs or default_jobs()
    earlier = None
    if args.survivors_of is not None:
        try:
            earlier = MutationReport.model_validate_json(args.survivors_of.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            print(
                f"error: --survivors-of {args.survivors_of}: not a readable mutation report ({error})", file=sys.stderr
            )
            return 2

    def progress(server: str, result: MutantResult) -> None:
        mark = "killed  " if result.killed else "SURVIVED"
        print(f"  {mark} {server} {result.file}:{result.line} {result.kind}: {result.change[:100]}", file=sys.stderr)

    started = time.perf_counter()
    with warm_launcher() as socket_path:  # one warm interpreter forks every mutant's server
        options = VerifyOptions(call_timeout=args.timeout, warm_socket=socket_path, fail_fast=True)
        run = partial(
            mutate_servers,
            [farm / "servers" / name for name in names],
            max_mutants=args.max_mutants,
            seed=args.seed,
            jobs=jobs,
            options=options,
            progress=progress,
            survivors_of=earlier,
        )
        servers = anyio.run(run)
    report = summarize(servers, args.seed, args.max_mutants, seconds=time.perf_counter() - started, jobs=jobs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    page = args.out.with_suffix(".md")
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
        f"report: {args.out} and {page}"
    )
    return 1 if report.unexplained or any(s.equivalent_problems for s in report.servers) else 0


def cmd_verify(args: argparse.Namespace) -> int:
    if args.mutate:
        return cmd_mutate(args)
    from envfarm.factory.build import verify_published
    from envfarm.factory.verify import VerifyOptions
    from envfarm.factory.world.invariants import farm_violations
    from envfarm.render import ProgressTable, render

    if not args.all and not args.names:
        print("error: name servers to verify or pass --all", file=sys.stderr)
        return 2
    names = None if args.all else args.names
    options = VerifyOptions(call_timeout=args.timeout)
    run = partial(
        verify_published, _farm(args), names, jobs=args.jobs, options=options, on_result=ProgressTable(sys.stdout)
    )
    try:
        result = anyio.run(run)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"\n{render(result)}")
    violations = farm_violations(_farm(args) / "servers") if args.all else []  # the one world, across servers
    for violation in violations:
        print(f"world: {violation}")
    if args.all:
        print(f"{len(violations)} world invariant violations")
    return 0 if result.ok and not violations else 1


def cmd_import_openapi(args: argparse.Namespace) -> int:
    """`envfarm import openapi FILE`: a spec folder from an OpenAPI document (deterministic, no model)."""
    from envfarm.factory.importers.openapi import OpenAPIError, import_openapi, write_spec_folder
    from envfarm.factory.spec import SpecError

    if args.file.is_dir():
        return _import_openapi_folder(args)
    try:
        result = import_openapi(args.file, name=args.name, seed_number=args.seed)
    except (OpenAPIError, SpecError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = args.out or Path(result.spec["name"])
    write_spec_folder(result, out)
    report = result.report
    print(f"{args.file}: {len(report.tools)} tools over {len(report.entities)} entities -> {out}/spec.yaml")
    if args.model:
        return _enrich_import(args, result, out)
    for skipped in report.skipped:
        print(f"  skipped {skipped.method.upper()} {skipped.path}: {skipped.reason}")
    print(f"what was mapped and what was not: {out}/IMPORT.md; publish with: envfarm build {out} --out FARM")
    return 0


def _import_openapi_folder(args: argparse.Namespace) -> int:
    """`envfarm import openapi DIR --out SPECS`: every document of DIR, going on past the ones that fail."""
    from envfarm.factory.import_folder import SUMMARY_NAME, DocumentOutcome, find_documents, import_folder

    if args.out is None or args.name or args.model:
        print("error: a folder of documents takes --out SPECS, and neither --name nor --model", file=sys.stderr)
        return 2
    total = len(find_documents(args.file))
    done = [0]

    def show(outcome: DocumentOutcome) -> None:
        done[0] += 1
        what = f"{outcome.name} ({outcome.tools} tools)" if outcome.outcome == "imported" else outcome.reason
        print(f"[{done[0]}/{total}] {outcome.document}: {outcome.outcome}: {what}", flush=True)

    summary = import_folder(args.file, args.out, seed_number=args.seed, on_document=show)
    print(
        f"{len(summary.documents)} documents: {summary.count('imported')} imported, {summary.count('refused')} "
        f"refused, {summary.count('crashed')} crashed -> {args.out}/{SUMMARY_NAME}.md; "
        f"publish with: envfarm build {args.out} --out FARM"
    )
    return 0 if summary.count("imported") and not summary.count("crashed") else 1


def _enrich_import(args: argparse.Namespace, result: ImportResult, out: Path) -> int:
    """`--model`: the model enriches the deterministic import (descriptions, seed, rules, handlers for
    what was skipped); its rounds verify in the build folder, and only a converged draft replaces it."""
    from envfarm.factory.generate import Scenario, write_draft, write_with_model
    from envfarm.factory.verify import VerifyOptions
    from envfarm.llm import ChatModel, Transcript, close_after, parse_model

    try:
        config = parse_model(args.model, args.base_url)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if config is None:
        print(f"error: --model {args.model!r}: name a model as openai:MODEL", file=sys.stderr)
        return 2
    spec = result.spec
    build_dir = (args.build_dir or Path("builds") / spec["name"]).resolve()
    model = ChatModel(config, Transcript(build_dir / "llm"))
    scenario = Scenario(name=spec["name"], domain=spec["domain"], title=spec["title"], description=spec["description"])
    context = (
        "Enrich this environment, imported deterministically from a real OpenAPI document: clearer tool "
        "descriptions, realistic seed rows, business rules (with example calls that break them) the API "
        "describes, and custom tools with handlers for skipped operations whose effect the document states. "
        "Keep every tool's name and params.\n\nImport report:\n"
        f"{result.report.markdown()}\n\nSpec:\n{json.dumps(spec, indent=1, default=str)[:30000]}\n\n"
        f"policy.md (drafted from the document; keep what it says the API requires):\n{result.policy}"
    )
    call = partial(
        write_with_model,
        scenario,
        context,
        model,
        build_dir,
        args.rounds,
        2,
        VerifyOptions(call_timeout=5.0),
        args.mutants,
    )
    outcome, draft = anyio.run(close_after, model, call)
    usage = model.usage
    print(
        f"  model: {outcome.status} after {len(outcome.rounds)} round(s) ({usage.requests} requests, "
        f"{usage.total_tokens} tokens); build folder {build_dir}"
    )
    if draft is None:
        print(f"  kept the deterministic import: {outcome.message}", file=sys.stderr)
        return 1
    write_draft(draft, out)
    print(f"  enriched and verified spec -> {out}/spec.yaml")
    return 0


def cmd_import_metadata(args: argparse.Namespace) -> int:
    """`envfarm import metadata FILE`: EnvFactory metadata -> spec folder(s); offline infers what it can."""
    from envfarm.factory.generate import write_draft
    from envfarm.factory.importers.openapi import OpenAPIError, safe_name, write_spec_folder
    from envfarm.factory.metadata import import_metadata_offline, import_metadata_with_model, load_metadata
    from envfarm.factory.spec import SpecError
    from envfarm.factory.verify import VerifyOptions
    from envfarm.llm import ChatModel, Transcript, close_after, parse_model

    try:
        environments = load_metadata(args.file)
        config = parse_model(args.model, args.base_url) if args.model else None
    except (OpenAPIError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    for meta in environments:
        name = args.name if args.name and len(environments) == 1 else safe_name(meta.class_name)
        out = (args.out if len(environments) == 1 else (args.out or Path(".")) / name) if args.out else Path(name)
        if config is None:
            try:
                result = import_metadata_offline(meta, args.file, name)
            except (OpenAPIError, SpecError) as exc:
                print(f"error: {exc}", file=sys.stderr)
                failed += 1
                continue
            write_spec_folder(result, out)
            print(f"{meta.class_name}: {len(result.report.tools)} tools inferred -> {out}/spec.yaml")
            for skipped in result.report.skipped:
                print(f"  not inferred: {skipped.path}: {skipped.reason}")
            continue
        build_dir = (args.build_dir or Path("builds") / name).resolve()
        model = ChatModel(config, Transcript(build_dir / "llm"))

        call = partial(
            import_metadata_with_model,
            meta,
            args.file,
            model,
            build_dir,
            name=name,
            max_rounds=args.rounds,
            options=VerifyOptions(call_timeout=args.timeout),
            mutants=args.mutants,
        )
        outcome, draft = anyio.run(close_after, model, call)
        usage = model.usage
        print(
            f"{meta.class_name}: {outcome.status} after {len(outcome.rounds)} round(s) "
            f"({usage.requests} requests, {usage.total_tokens} tokens); build folder {build_dir}"
        )
        if draft is None:
            print(f"  {outcome.message}", file=sys.stderr)
            failed += 1
            continue
        write_draft(draft, out)
        print(f"  verified spec folder -> {out}; publish with: envfarm build {out} --out FARM")
    return 1 if failed else 0


def cmd_import_mcp(args: argparse.Namespace) -> int:
    """`envfarm import mcp CONFIG NAME`: a stateful twin of a live MCP server (its listing and reads)."""
    from envfarm.clients.connect import Connections, load_server_configs
    from envfarm.factory.importers.openapi import OpenAPIError, write_spec_folder
    from envfarm.factory.mcp_twin import observe, twin_spec
    from envfarm.factory.spec import SpecError
    from envfarm.servers.runtime.control import ControlError

    async def observe_live() -> tuple[Any, dict[str, list[dict[str, Any]]]]:
        configs = load_server_configs(args.config)
        if args.name not in configs:
            raise LookupError(f"{args.config}: no server {args.name!r}; it has {', '.join(sorted(configs))}")
        async with Connections({args.name: configs[args.name]}, timeout=args.timeout) as connections:
            return await observe(connections, args.name)

    try:
        meta, observed = anyio.run(observe_live)
        result = twin_spec(meta, observed, args.config, args.as_name)
    except (LookupError, ValueError, ControlError, OpenAPIError, SpecError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = args.out or Path(result.spec["name"])
    write_spec_folder(result, out)
    rows = sum(len(r) for r in observed.values())
    print(f"{args.name}: {len(result.report.tools)} tools, {rows} records observed -> {out}/spec.yaml")
    for skipped in result.report.skipped:
        print(f"  not inferred: {skipped.path}: {skipped.reason}")
    print(f"publish with: envfarm build {out} --out FARM")
    return 0


def _writable_farm(args: argparse.Namespace) -> Path | None:
    """The farm `build`-like commands publish into (--out, else --farm), or None (and a message) if it is
    the read-only installed farm."""
    farm_root = (args.out or _farm(args)).resolve()
    if registry_file(farm_root) != farm_root / REGISTRY_FILE:
        print(
            f"error: the installed farm {farm_root} is read-only; build into a folder with --out DIR", file=sys.stderr
        )
        return None
    return farm_root


def cmd_propose(args: argparse.Namespace) -> int:
    """`envfarm propose THEME --n N`: scenarios, specs, verification, revision; publishes what converges."""
    from envfarm.factory.generate import propose, render_summary
    from envfarm.factory.verify import VerifyOptions
    from envfarm.llm import ChatModel, Transcript, close_after, parse_model

    farm_root = _writable_farm(args)
    if farm_root is None:
        return 2
    try:
        config = parse_model(args.model, args.base_url) if args.model else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    build_dir = (args.build_dir or Path("builds") / args.theme.strip().lower().replace(" ", "_")).resolve()
    model = ChatModel(config, Transcript(build_dir / "llm")) if config else None

    call = partial(
        propose,
        args.theme,
        args.n,
        farm_root,
        build_dir,
        model,
        max_rounds=args.rounds,
        options=VerifyOptions(call_timeout=args.timeout),
        mutants=args.mutants,
    )
    summary = anyio.run(close_after, model, call) if model else anyio.run(call)
    print(render_summary(summary))
    return 0 if summary.ok else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from envfarm.bench import run_bench
    from envfarm.bench.peer import peer_command

    if args.peer is not None:
        try:
            peer_command(args.peer)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return run_bench(_farm(args), args.out, quick=args.quick, peer=args.peer)


def cmd_fuzz(args: argparse.Namespace) -> int:
    if args.replies is not None:
        return _fuzz_replies(args)
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        print('error: envfarm fuzz needs hypothesis: pip install -e ".[fuzz]"', file=sys.stderr)
        return 2
    from envfarm.fuzz import ServerFuzz, fuzz_farm

    registry = _registry(args)
    names = args.names or [s.name for s in registry.servers]
    missing = sorted(set(names) - {s.name for s in registry.servers})
    if missing:
        print(f"error: not in {registry_file(_farm(args))}: {', '.join(missing)}", file=sys.stderr)
        return 2

    def progress(result: ServerFuzz) -> None:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(result.outcomes.items()))
        bad = sum(result.violations.values())
        print(f"  {result.server:<22} {result.calls:>6} calls  {outcomes}  violations {bad}", flush=True)

    print(f"fuzzing {len(names)} servers, {args.calls} calls, seed {args.seed}", flush=True)
    report = fuzz_farm(_farm(args), names, args.calls, seed=args.seed, progress=progress)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    print(f"\n{report.calls} calls: " + ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())))
    print("violations: " + ", ".join(f"{k} {v}" for k, v in report.violations.items()))
    for violation in report.evidence:
        print(
            f"  {violation.server}.{violation.tool} {violation.invariant}: {violation.detail} <- {violation.arguments}"
        )
    return 0 if report.ok else 1


def _fuzz_replies(args: argparse.Namespace) -> int:
    """`envfarm fuzz --replies N`: generated model replies through every LLM-driven path (envfarm/model_fuzz.py)."""
    from envfarm.model_fuzz import PATHS, ReplyFuzzReport, fuzz_replies

    paths = args.names or list(PATHS)
    if not set(paths) <= set(PATHS):
        print(f"error: with --replies, name paths ({', '.join(PATHS)}), not {', '.join(paths)}", file=sys.stderr)
        return 2

    def progress(report: ReplyFuzzReport) -> None:
        print(f"  {report.replies} replies, {report.violations} violations", flush=True)

    print(f"fuzzing {', '.join(paths)} with {args.replies} generated replies, seed {args.seed}", flush=True)
    report = anyio.run(lambda: fuzz_replies(_farm(args), args.replies, seed=args.seed, paths=paths, progress=progress))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
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

    command = shlex.join(["envfarm", *sys.argv[1:]])
    if args.http is not None:
        from envfarm.bench.http_soak import http_soak, render_http_markdown

        if args.http < 1 or args.tokens < 1:
            print("error: --http CALLS and --tokens must be positive", file=sys.stderr)
            return 2
        found = http_soak(_farm(args), args.http, tokens=args.tokens, seed=args.seed, command=command)
        document, page, ok = found.model_dump_json(indent=2), render_http_markdown(found), found.ok
    else:
        from envfarm.soak import parse_seeds, soak, summary_line
        from envfarm.soak import render_markdown as render_soak

        try:
            seeds = parse_seeds(args.seeds)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if args.n < 1 or args.timeout <= 0:
            print("error: --n and --timeout must be positive", file=sys.stderr)
            return 2
        if "tasks" not in args.steps and {"oracle", "heuristic"} & set(args.steps):
            print("error: --steps oracle/heuristic roll out what the tasks step writes; add tasks", file=sys.stderr)
            return 2
        print(f"soak: {len(seeds)} seeds x {', '.join(args.steps)}, n={args.n}, {args.jobs} at a time", flush=True)
        report = soak(
            seeds,
            n=args.n,
            steps=args.steps,
            timeout=args.timeout,
            jobs=args.jobs,
            farm=args.farm.resolve() if args.farm else None,
            command=command,
            progress=lambda r: print(summary_line(r), flush=True),
        )
        document, page, ok = report.model_dump_json(indent=2), render_soak(report), report.ok
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(document + "\n", encoding="utf-8")
        args.out.with_suffix(".md").write_text(page, encoding="utf-8")
    print(page)
    return 0 if ok else 1


def cmd_driver(args: argparse.Namespace) -> int:
    from envfarm.clients.commands import run

    return run(args.command, args, _farm(args))


def add_driver_parsers(sub: argparse._SubParsersAction) -> None:
    """`envfarm tasks` and `envfarm graph` (the driver: clients/commands.py)."""
    t = sub.add_parser("tasks", help="synthesize grounded, calibrated tasks from live servers (JSONL)")
    t.add_argument("--n", type=int, default=50, help="tasks to write (default: 50)")
    t.add_argument("--sampler", choices=("topology", "random"), default="topology")
    t.add_argument("--max-servers", type=int, default=2, help="servers one task may span (default: 2)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--writer", help="openai:MODEL to write requests with an LLM (default: the offline writer)")
    t.add_argument("--base-url", help="the writer's OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    t.add_argument("--out", type=Path, default=Path("tasks.jsonl"))
    t.add_argument(
        "--difficulty",
        metavar="LO:HI",
        help="grade each task by the sampled heuristic's solve rate (k attempts) and keep those in [LO, HI]",
    )
    t.add_argument("--k", type=int, default=4, help="attempts per task for --difficulty (default: 4)")
    t.add_argument(
        "--audit", type=Path, metavar="FILE", help="audit a task file instead: every check, per task and in total"
    )
    g = sub.add_parser("graph", help="the tool dependency graph as JSON and a readable SVG")
    g.add_argument("--out", type=Path, default=Path("graph"), help="folder for graph.json, graph.svg, summary.json")
    for command in (t, g):
        command.add_argument("--servers", nargs="+", help="servers to use (default: all)")
        add_source_argument(command)
        command.add_argument("--config", type=Path, help="an mcpServers JSON file instead of the farm's registry")
        command.add_argument("--timeout", type=float, default=30.0, help="seconds any MCP request may take")
        command.set_defaults(func=cmd_driver)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="envfarm", description="An MCP server farm for training tool-use agents.")
    p.add_argument(
        "--farm",
        type=Path,
        help="farm root holding servers/ and registry.json (default: $ENVFARM_HOME, else the installed farm)",
    )
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="the published servers, from registry.json")
    ls.add_argument("--markdown", action="store_true", help="print the README's farm table")
    ls.add_argument("--update", type=Path, metavar="README", help="rewrite the farm table inside this file")
    ls.set_defaults(func=cmd_list)

    s = sub.add_parser("serve", help="run one server (stdio or HTTP) or the whole farm on one HTTP port")
    s.add_argument("name", nargs="?", help="server name")
    s.add_argument("--all", action="store_true", help="serve every registered server at /<name>/mcp (HTTP)")
    add_source_argument(s)
    add_serving_arguments(s)
    s.set_defaults(func=cmd_serve)

    c = sub.add_parser("config", help="print the mcpServers JSON a desktop client expects")
    c.add_argument("names", nargs="*", help="servers to include (default: all)")
    c.add_argument("--client", choices=CLIENTS, default="claude")
    c.set_defaults(func=cmd_config)

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

    im = sub.add_parser("import", help="a spec folder from a real API description (then `envfarm build` it)")
    isub = im.add_subparsers(dest="source", required=True)
    oa = isub.add_parser(
        "openapi",
        help="an OpenAPI 3.x or Swagger 2.0 document -> spec folder, or a folder of them -> spec folders (no model)",
    )
    oa.add_argument("file", type=Path, help="a document, or a folder of documents (then --out names the specs folder)")
    oa.add_argument("--name", help="server name (default: from the document's title)")
    oa.add_argument("--out", type=Path, help="spec folder to write (default: ./<name>)")
    oa.add_argument("--seed", type=int, default=0, help="seed number for the generated seed rows")
    oa.add_argument("--model", help="openai:MODEL to enrich descriptions, seed rows, rules and handlers (verified)")
    oa.add_argument("--base-url", help="the model's OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    oa.add_argument("--rounds", type=int, default=3, help="verify-and-revise rounds (with --model; default: 3)")
    oa.add_argument("--build-dir", type=Path, help="rounds, prompts and answers (with --model; default: builds/<name>)")
    oa.add_argument(
        "--mutants",
        type=int,
        default=8,
        help="seeded bugs sampled from each verified round; survivors go back to the model (default: 8)",
    )
    oa.set_defaults(func=cmd_import_openapi)
    md = isub.add_parser("metadata", help="EnvFactory metadata (class_name, description, tools) -> spec folder")
    md.add_argument("file", type=Path)
    md.add_argument("--name", help="server name (default: from class_name)")
    md.add_argument("--out", type=Path, help="spec folder to write (default: ./<name>)")
    md.add_argument("--model", help="openai:MODEL to infer the state model and write handlers (default: offline)")
    md.add_argument("--base-url", help="the model's OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    md.add_argument("--rounds", type=int, default=3, help="verify-and-revise rounds (with --model; default: 3)")
    md.add_argument("--build-dir", type=Path, help="rounds, prompts and answers (with --model; default: builds/<name>)")
    md.add_argument("--timeout", type=float, default=5.0, help="seconds a tool call may take before it counts as hung")
    md.add_argument(
        "--mutants",
        type=int,
        default=8,
        help="seeded bugs sampled from each verified round; survivors go back to the model (default: 8)",
    )
    md.set_defaults(func=cmd_import_metadata)
    mc = isub.add_parser("mcp", help="a stateful twin of a live MCP server, from its listing and its reads")
    mc.add_argument("config", type=Path, help="an mcpServers JSON file")
    mc.add_argument("name", help="the server in it to twin")
    mc.add_argument("--as", dest="as_name", help="the twin's server name (default: NAME)")
    mc.add_argument("--out", type=Path, help="spec folder to write (default: ./<name>)")
    mc.add_argument("--timeout", type=float, default=30.0, help="seconds any MCP request may take")
    mc.set_defaults(func=cmd_import_mcp)

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

    add_driver_parsers(sub)

    from envfarm.driver_cli import add_driver_commands

    add_driver_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader went away (`envfarm config | head`): not an error of ours. Point stdout at
        # the null device so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
