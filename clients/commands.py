"""`envfarm tasks` and `envfarm graph`: the driver's commands (registered in `envfarm/cli.py`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from envfarm.clients.audit import audit_tasks, build_auditor, render_audit
from envfarm.clients.connect import Connections, farm_targets, load_server_configs
from envfarm.clients.difficulty import POLICY, grade, in_band, parse_band
from envfarm.clients.graph import build_graph, dump, link_quality, load_specs, render_svg, summarize
from envfarm.clients.synthesize import SynthesisOptions, SynthesisSummary, synthesize
from envfarm.clients.tasks import load_tasks, write_jsonl
from envfarm.llm import LLMError, parse_model
from envfarm.servers.runtime.control import ControlError
from envfarm.servers.runtime.registry import load_registry


def targets(farm_root: Path, config: Path | None, servers: list[str] | None) -> dict[str, Any]:
    """Where the named servers are: an `mcpServers` config, else the farm's registry (in-process)."""
    if config is not None:
        known: dict[str, Any] = dict(load_server_configs(config))
    else:
        names = [s.name for s in load_registry(farm_root).servers]
        missing = sorted(set(servers or []) - set(names))
        if missing:
            raise LookupError(f"not in {farm_root / 'registry.json'}: {', '.join(missing)}")
        known = farm_targets(farm_root, servers or names, "memory")
    missing = sorted(set(servers or []) - set(known))
    if missing:
        raise LookupError(f"not in {config}: {', '.join(missing)}")
    return {name: known[name] for name in (servers or sorted(known))}


class ProgressBar:
    """`[#####.....] 57/200` on one line of stderr (the stream of the moment, not of import time)."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream
        self.width = width

    def __call__(self, done: int, total: int) -> None:
        stream = self.stream or sys.stderr
        filled = self.width * done // max(1, total)
        stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} tasks")
        if done >= total:
            stream.write("\n")
        stream.flush()


def render_summary(summary: SynthesisSummary) -> str:
    before, after = summary.over_specification["before"], summary.over_specification["after"]
    lines = [
        (
            f"{summary.produced}/{summary.requested} tasks ({summary.sampler} sampler, seed {summary.seed}, writer {summary.writer}) "
            f"in {summary.seconds:.1f} s ({summary.cpu_seconds:.1f} s CPU); {summary.attempts} chains sampled"
        ),
        f"chain length (calls: tasks): {', '.join(f'{k}: {v}' for k, v in summary.chain_lengths.items())}; mean {summary.mean_chain_length}",
        f">= 3 calls linked by data: {summary.data_dependency_share:.0%}; span 2+ servers: {summary.cross_server_share:.0%}",
        f"dropped: {', '.join(f'{k}: {v}' for k, v in summary.dropped.items()) or 'none'}",
        (
            f"over-specification per message (tool names, ids, literal values, step words): "
            f"before {before.tool_names:g}/{before.internal_ids:g}/{before.literal_arguments:g}/{before.step_words:g}, "
            f"after {after.tool_names:g}/{after.internal_ids:g}/{after.literal_arguments:g}/{after.step_words:g}"
        ),
        f"calibrated openings leaking a tool name: {summary.leaks['tool_names']}, an internal id: {summary.leaks['internal_ids']}",
        (
            f"acting for a principal: {summary.principal_share:.1%}; with policy checks: {summary.policy_check_share:.1%} "
            f"({', '.join(f'{k} {v}' for k, v in summary.policy_checks.items()) or 'none'}); refusals: {summary.refusals}"
        ),
        "per domain: " + ", ".join(f"{k} {v}" for k, v in summary.tasks_per_domain.items()),
        "per server: " + ", ".join(f"{k} {v}" for k, v in summary.tasks_per_server.items()),
    ]
    if summary.writer_fallbacks:
        lines.append(f"LLM writer answers replaced by the offline writer: {summary.writer_fallbacks}")
    return "\n".join(lines)


async def _audit(args: argparse.Namespace, farm_root: Path) -> int:
    """Audit a task file (any writer's) against the live servers; non-zero when any task fails a check."""
    tasks = load_tasks(args.audit)
    servers = sorted({s for t in tasks for s in t.servers})
    async with Connections(targets(farm_root, args.config, servers), timeout=args.timeout) as connections:
        auditor = await build_auditor(connections, servers)
    report = audit_tasks(auditor, tasks)
    print(render_audit(report, tasks))
    return 1 if report.failed else 0


async def _tasks(args: argparse.Namespace, farm_root: Path) -> int:
    if getattr(args, "audit", None) is not None:
        return await _audit(args, farm_root)
    writer = parse_model(args.writer, args.base_url) if args.writer else None
    if args.writer and writer is None:
        raise ValueError(f"--writer {args.writer!r}: expected openai:MODEL (the offline writer needs no flag)")
    options = SynthesisOptions(
        n=args.n,
        servers=args.servers,
        sampler=args.sampler,
        max_servers=args.max_servers,
        seed=args.seed,
        writer=writer,
        farm=None if args.config is not None else farm_root,
    )
    band = parse_band(args.difficulty) if getattr(args, "difficulty", None) else None
    async with Connections(targets(farm_root, args.config, args.servers), timeout=args.timeout) as connections:
        synthesis = await synthesize(options, connections, ProgressBar())
        if band is not None:
            graded = await grade(synthesis.tasks, connections, k=args.k)
            synthesis.tasks = in_band(graded, *band)
            rates = sorted(t.difficulty.solve_rate[POLICY] for t in graded if t.difficulty)
            spread = Counter(rates)
            print(
                f"difficulty ({POLICY}, k={args.k}): solve rates "
                + ", ".join(f"{r:g}: {n}" for r, n in sorted(spread.items()))
                + f"; {len(synthesis.tasks)} of {len(graded)} in [{band[0]:g}, {band[1]:g}]"
            )
    write_jsonl(args.out, synthesis.tasks)
    summary_path = args.out.with_name(args.out.stem + ".summary.json")
    summary_path.write_text(synthesis.summary.model_dump_json(indent=2) + "\n")
    print(render_summary(synthesis.summary))
    print(f"wrote {len(synthesis.tasks)} tasks to {args.out} and the summary to {summary_path}")
    return 0 if synthesis.tasks else 1


async def _graph(args: argparse.Namespace, farm_root: Path) -> int:
    async with Connections(targets(farm_root, args.config, args.servers), timeout=args.timeout) as connections:
        specs = await load_specs(connections, list(connections.targets))
    graph = build_graph(specs)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "graph.json").write_text(dump(graph) + "\n")
    (args.out / "graph.svg").write_text(render_svg(graph) + "\n")
    facts: dict[str, Any] = summarize(graph)
    if any(s.annotated for s in specs):
        facts["similarity_vs_exact"] = link_quality(specs).model_dump()
    (args.out / "summary.json").write_text(json.dumps(facts, indent=2) + "\n")
    print(json.dumps(facts, indent=2))
    print(f"wrote graph.json, graph.svg and summary.json to {args.out}")
    return 0


def run(command: str, args: argparse.Namespace, farm_root: Path) -> int:
    """Run a driver command; a bad input or an unreachable server is one clear line on stderr, exit 2."""
    try:
        if getattr(args, "source", None):
            if args.config is not None:
                raise ValueError("--source picks servers of the farm's registry; it cannot be used with --config")
            args.servers = load_registry(farm_root).select(args.servers, args.source)
        return asyncio.run(_tasks(args, farm_root) if command == "tasks" else _graph(args, farm_root))
    except (ValueError, LookupError, ControlError, LLMError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BaseExceptionGroup as group:  # raised inside a client's task group
        known, rest = group.split((ValueError, LookupError, ControlError, LLMError))
        if known is None or rest is not None:
            raise
        for leaf in leaves(known):
            print(f"error: {leaf}", file=sys.stderr)
        return 2


def leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        found += leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return found
