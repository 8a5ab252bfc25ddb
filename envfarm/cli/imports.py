"""`envfarm import openapi|metadata|mcp`: a spec folder from a real API description (then `envfarm build` it)."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from envfarm.cli.options import CommandOptions, fail

if TYPE_CHECKING:
    from envfarm.factory.importers.openapi import ImportResult


class ModelOptions(CommandOptions):
    """What an import with `--model` enriches with, and how hard it tries."""

    model: str | None = None
    base_url: str | None = None
    rounds: int = 3
    build_dir: Path | None = None
    mutants: int = 8


class OpenAPIImportOptions(ModelOptions):
    file: Path
    name: str | None = None
    out: Path | None = None
    seed: int = 0
    combine: bool = True


class MetadataImportOptions(ModelOptions):
    file: Path
    name: str | None = None
    out: Path | None = None
    timeout: float = 5.0


class MCPImportOptions(CommandOptions):
    config: Path
    name: str
    as_name: str | None = None
    out: Path | None = None
    timeout: float = 30.0


def cmd_import_openapi(args: argparse.Namespace) -> int:
    """`envfarm import openapi FILE`: a spec folder from an OpenAPI document (deterministic, no model)."""
    from envfarm.factory.importers.openapi import OpenAPIError, import_openapi, write_spec_folder
    from envfarm.factory.spec import SpecError

    options = OpenAPIImportOptions.parse(args)
    if options.file.is_dir():
        return _import_openapi_folder(options)
    try:
        result = import_openapi(options.file, name=options.name, seed_number=options.seed)
    except (OpenAPIError, SpecError) as exc:
        return fail(str(exc))
    out = options.out or Path(result.spec["name"])
    write_spec_folder(result, out)
    report = result.report
    print(f"{options.file}: {len(report.tools)} tools over {len(report.entities)} entities -> {out}/spec.yaml")
    if options.model:
        return _enrich_import(options, result, out)
    for skipped in report.skipped:
        print(f"  skipped {skipped.method.upper()} {skipped.path}: {skipped.reason}")
    print(f"what was mapped and what was not: {out}/IMPORT.md; publish with: envfarm build {out} --out FARM")
    return 0


def _import_openapi_folder(options: OpenAPIImportOptions) -> int:
    """`envfarm import openapi DIR --out SPECS`: every document of DIR, going on past the ones that fail."""
    from envfarm.factory.importers.folder import SUMMARY_NAME, DocumentOutcome, find_documents, import_folder
    from envfarm.factory.importers.openapi.readers import FEW_TOOLS

    if options.out is None or options.name or options.model:
        return fail("a folder of documents takes --out SPECS, and neither --name nor --model")
    total = len(find_documents(options.file))
    done = [0]

    def show(outcome: DocumentOutcome) -> None:
        done[0] += 1
        what = f"{outcome.name} ({outcome.tools} tools)" if outcome.outcome == "imported" else outcome.reason
        print(f"[{done[0]}/{total}] {outcome.document}: {outcome.outcome}: {what}", flush=True)

    summary = import_folder(
        options.file, options.out, seed_number=options.seed, on_document=show, combine=options.combine
    )
    print(
        f"{len(summary.documents)} documents: {summary.count('imported')} imported "
        f"({summary.count_served(FEW_TOOLS)} served with {FEW_TOOLS}+ tools, "
        f"{sum(d.combined for d in summary.documents)} combined by provider), {summary.count('refused')} "
        f"refused, {summary.count('crashed')} crashed -> {options.out}/{SUMMARY_NAME}.md; "
        f"publish with: envfarm build {options.out} --out FARM"
    )
    return 0 if summary.count("imported") and not summary.count("crashed") else 1


def _enrich_import(options: OpenAPIImportOptions, result: ImportResult, out: Path) -> int:
    """`--model`: the model enriches the deterministic import (descriptions, seed, rules, handlers for
    what was skipped); its rounds verify in the build folder, and only a converged draft replaces it."""
    from envfarm.factory.generate.growth import Scenario, write_draft, write_with_model
    from envfarm.factory.prompts import enrich_import_context
    from envfarm.factory.verify.report import VerifyOptions
    from envfarm.llm import ChatModel, Transcript, close_after, parse_model

    try:
        config = parse_model(options.model or "", options.base_url)
    except ValueError as exc:
        return fail(str(exc))
    if config is None:
        return fail(f"--model {options.model!r}: name a model as openai:MODEL")
    spec = result.spec
    build_dir = (options.build_dir or Path("builds") / spec["name"]).resolve()
    model = ChatModel(config, Transcript(build_dir / "llm"))
    scenario = Scenario(name=spec["name"], domain=spec["domain"], title=spec["title"], description=spec["description"])
    context = enrich_import_context(result.report.markdown(), spec, result.policy)
    call = partial(
        write_with_model,
        scenario,
        context,
        model,
        build_dir,
        options.rounds,
        2,
        VerifyOptions(call_timeout=5.0),
        options.mutants,
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
    from envfarm.factory.generate.growth import import_metadata_with_model, write_draft
    from envfarm.factory.importers.metadata import import_metadata_offline, load_metadata
    from envfarm.factory.importers.openapi import OpenAPIError, safe_name, write_spec_folder
    from envfarm.factory.spec import SpecError
    from envfarm.factory.verify.report import VerifyOptions
    from envfarm.llm import ChatModel, Transcript, close_after, parse_model

    options = MetadataImportOptions.parse(args)
    try:
        environments = load_metadata(options.file)
        config = parse_model(options.model, options.base_url) if options.model else None
    except (OpenAPIError, ValueError) as exc:
        return fail(str(exc))
    failed = 0
    for meta in environments:
        name = options.name if options.name and len(environments) == 1 else safe_name(meta.class_name)
        if options.out:
            out = options.out if len(environments) == 1 else options.out / name
        else:
            out = Path(name)
        if config is None:
            try:
                result = import_metadata_offline(meta, options.file, name)
            except (OpenAPIError, SpecError) as exc:
                fail(str(exc))
                failed += 1
                continue
            write_spec_folder(result, out)
            print(f"{meta.class_name}: {len(result.report.tools)} tools inferred -> {out}/spec.yaml")
            for skipped in result.report.skipped:
                print(f"  not inferred: {skipped.path}: {skipped.reason}")
            continue
        build_dir = (options.build_dir or Path("builds") / name).resolve()
        model = ChatModel(config, Transcript(build_dir / "llm"))

        call = partial(
            import_metadata_with_model,
            meta,
            options.file,
            model,
            build_dir,
            name=name,
            max_rounds=options.rounds,
            options=VerifyOptions(call_timeout=options.timeout),
            mutants=options.mutants,
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
    from envfarm.factory.importers.mcp_twin import observe, twin_spec
    from envfarm.factory.importers.openapi import OpenAPIError, write_spec_folder
    from envfarm.factory.spec import SpecError
    from envfarm.servers.runtime.control import ControlError

    options = MCPImportOptions.parse(args)

    async def observe_live() -> tuple[Any, dict[str, list[dict[str, Any]]]]:
        configs = load_server_configs(options.config)
        if options.name not in configs:
            raise LookupError(f"{options.config}: no server {options.name!r}; it has {', '.join(sorted(configs))}")
        async with Connections({options.name: configs[options.name]}, timeout=options.timeout) as connections:
            return await observe(connections, options.name)

    try:
        meta, observed = anyio.run(observe_live)
        result = twin_spec(meta, observed, options.config, options.as_name)
    except (LookupError, ValueError, ControlError, OpenAPIError, SpecError) as exc:
        return fail(str(exc))
    out = options.out or Path(result.spec["name"])
    write_spec_folder(result, out)
    rows = sum(len(r) for r in observed.values())
    print(f"{options.name}: {len(result.report.tools)} tools, {rows} records observed -> {out}/spec.yaml")
    for skipped in result.report.skipped:
        print(f"  not inferred: {skipped.path}: {skipped.reason}")
    print(f"publish with: envfarm build {out} --out FARM")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`import openapi`, `import metadata`, `import mcp`."""
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
    oa.add_argument(
        "--no-combine",
        dest="combine",
        action="store_false",
        help="a folder's small documents (under 3 tools) stay one server each, not one per provider",
    )
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
