"""What the driver's commands `envfarm tasks` (and `--audit`), `graph`, `rollout` and `eval` do; the command line
(`envfarm.cli.driver`) parses their options and prints what comes back. Each takes typed options, prints nothing
and returns what it made; a bad input or an unreachable server raises (ValueError, LookupError, ControlError,
LLMError, possibly inside an exception group). `envfarm run` is `envfarm.clients.run.run`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envfarm.clients.audit import AuditReport, audit_tasks, build_auditor
from envfarm.clients.connect import Connections, farm_targets, load_server_configs
from envfarm.clients.difficulty import POLICY, grade, in_band, parse_band
from envfarm.clients.graph import build_graph, dump, link_quality, load_specs, render_svg, summarize
from envfarm.clients.policies import Policy
from envfarm.clients.rollout import ProgressBar, RolloutOptions
from envfarm.clients.synthesize import SynthesisOptions, SynthesisSummary, synthesize
from envfarm.clients.tasks import Task, load_tasks, write_jsonl
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import UserSimulator
from envfarm.llm import ModelConfig, parse_model
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


def render_summary(summary: SynthesisSummary) -> str:
    before, after = summary.over_specification["before"], summary.over_specification["after"]
    lines = [
        (
            f"{summary.produced}/{summary.requested} tasks ({summary.sampler} sampler, seed {summary.seed}, "
            f"writer {summary.writer}) in {summary.seconds:.1f} s ({summary.cpu_seconds:.1f} s CPU); "
            f"{summary.attempts} chains sampled"
        ),
        (
            f"chain length (calls: tasks): {', '.join(f'{k}: {v}' for k, v in summary.chain_lengths.items())}; "
            f"mean {summary.mean_chain_length}"
        ),
        (
            f">= 3 calls linked by data: {summary.data_dependency_share:.0%}; "
            f">= 4: {summary.deep_dependency_share:.0%}; span 2+ servers: {summary.cross_server_share:.0%}, "
            f"of which data flows between turns in {summary.cross_server_flow_share:.0%} "
            f"({summary.cross_server_flow_beyond_identity_share:.0%} beyond who the persona is)"
        ),
        (
            f"chain depth (needed calls linked by values: tasks): "
            f"{', '.join(f'{k}: {v}' for k, v in summary.chain_depths.items())}; "
            f">= 4: {summary.deep_chain_share:.0%}"
        ),
        f"dropped: {', '.join(f'{k}: {v}' for k, v in summary.dropped.items()) or 'none'}",
        (
            f"over-specification per message (tool names, ids, literal values, step words): "
            f"before {before.tool_names:g}/{before.internal_ids:g}/{before.literal_arguments:g}/{before.step_words:g}, "
            f"after {after.tool_names:g}/{after.internal_ids:g}/{after.literal_arguments:g}/{after.step_words:g}"
        ),
        (
            f"calibrated openings leaking a tool name: {summary.leaks['tool_names']}, "
            f"an internal id: {summary.leaks['internal_ids']}"
        ),
        (
            f"acting for a principal: {summary.principal_share:.1%}; "
            f"with policy checks: {summary.policy_check_share:.1%} "
            f"({', '.join(f'{k} {v}' for k, v in summary.policy_checks.items()) or 'none'}); "
            f"refusals: {summary.refusals}"
        ),
        "per domain: " + ", ".join(f"{k} {v}" for k, v in summary.tasks_per_domain.items()),
        "per server: " + ", ".join(f"{k} {v}" for k, v in summary.tasks_per_server.items()),
    ]
    if summary.writer_fallbacks:
        lines.append(f"LLM writer answers replaced by the offline writer: {summary.writer_fallbacks}")
    return "\n".join(lines)


class ServersOptions(BaseModel):
    """Which servers a driver command works on: the farm's (all, `servers`, or those of `source`) or an
    `mcpServers` config's, and how long any MCP request may take."""

    model_config = ConfigDict(extra="ignore")

    farm: Path
    servers: list[str] | None = None
    source: list[str] | None = None
    config: Path | None = None
    timeout: float = 30.0

    def chosen(self) -> list[str] | None:
        """`servers`, narrowed to the registry's servers of `source` when it is given."""
        if not self.source:
            return self.servers
        if self.config is not None:
            raise ValueError("--source picks servers of the farm's registry; it cannot be used with --config")
        return load_registry(self.farm).select(self.servers, self.source)


class TasksOptions(ServersOptions):
    """`envfarm tasks`: how many tasks, drawn how, written by whom, graded how, and where they go."""

    n: int = 50
    sampler: Literal["topology", "random"] = "topology"
    max_servers: int = 2
    seed: int = 0
    writer: str | None = None
    base_url: str | None = None
    out: Path = Path("tasks.jsonl")
    difficulty: str | None = None
    k: int = 4


class AuditOptions(ServersOptions):
    """`envfarm tasks --audit FILE`: the task file to audit against the live servers."""

    audit: Path


class GraphOptions(ServersOptions):
    out: Path = Path("graph")


class Difficulty(BaseModel):
    """What `--difficulty` graded: the sampled heuristic's solve rates (rate -> tasks) and how many stayed."""

    policy: str
    k: int
    solve_rates: dict[float, int]
    kept: int
    graded: int
    band: tuple[float, float]


class TasksResult(BaseModel):
    tasks: list[Task]
    summary: SynthesisSummary
    out: Path
    summary_path: Path
    difficulty: Difficulty | None = None


class AuditResult(BaseModel):
    report: AuditReport
    tasks: list[Task]


class GraphResult(BaseModel):
    facts: dict[str, Any]
    out: Path


async def audit_file(options: AuditOptions) -> AuditResult:
    """Audit a task file (any writer's) against the live servers; the report says which tasks fail a check."""
    options.chosen()  # `--source` with `--config` is refused here too
    tasks = load_tasks(options.audit)
    servers = sorted({s for t in tasks for s in t.servers})
    async with Connections(targets(options.farm, options.config, servers), timeout=options.timeout) as connections:
        auditor = await build_auditor(connections, servers)
    return AuditResult(report=audit_tasks(auditor, tasks), tasks=tasks)


async def synthesize_tasks(options: TasksOptions, progress: ProgressBar | None = None) -> TasksResult:
    """Synthesize `options.n` tasks (graded into the `--difficulty` band when asked); write them and the
    synthesis summary beside them."""
    writer = parse_model(options.writer, options.base_url) if options.writer else None
    if options.writer and writer is None:
        raise ValueError(f"--writer {options.writer!r}: expected openai:MODEL (the offline writer needs no flag)")
    servers = options.chosen()
    synthesis_options = SynthesisOptions(
        n=options.n,
        servers=servers,
        sampler=options.sampler,
        max_servers=options.max_servers,
        seed=options.seed,
        writer=writer,
        farm=None if options.config is not None else options.farm,
    )
    band = parse_band(options.difficulty) if options.difficulty else None
    difficulty = None
    targets_ = targets(options.farm, options.config, servers)
    async with Connections(targets_, timeout=options.timeout) as connections:
        synthesis = await synthesize(synthesis_options, connections, progress)
        if band is not None:
            graded = await grade(synthesis.tasks, connections, k=options.k)
            synthesis.tasks = in_band(graded, *band)
            rates = Counter(t.difficulty.solve_rate[POLICY] for t in graded if t.difficulty)
            difficulty = Difficulty(
                policy=POLICY,
                k=options.k,
                solve_rates=dict(sorted(rates.items())),
                kept=len(synthesis.tasks),
                graded=len(graded),
                band=band,
            )
    write_jsonl(options.out, synthesis.tasks)
    summary_path = options.out.with_name(options.out.stem + ".summary.json")
    summary_path.write_text(synthesis.summary.model_dump_json(indent=2) + "\n")
    return TasksResult(
        tasks=synthesis.tasks,
        summary=synthesis.summary,
        out=options.out,
        summary_path=summary_path,
        difficulty=difficulty,
    )


async def tool_graph(options: GraphOptions) -> GraphResult:
    """The tool dependency graph of the servers: graph.json, graph.svg and summary.json in `options.out`."""
    targets_ = targets(options.farm, options.config, options.chosen())
    async with Connections(targets_, timeout=options.timeout) as connections:
        specs = await load_specs(connections, list(connections.targets))
    graph = build_graph(specs)
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "graph.json").write_text(dump(graph) + "\n")
    (options.out / "graph.svg").write_text(render_svg(graph) + "\n")
    facts: dict[str, Any] = summarize(graph)
    if any(s.annotated for s in specs):
        facts["similarity_vs_exact"] = link_quality(specs).model_dump()
    (options.out / "summary.json").write_text(json.dumps(facts, indent=2) + "\n")
    return GraphResult(facts=facts, out=options.out)


class RolloutPlan(BaseModel):
    """Where `envfarm rollout` runs its episodes: in this process, in `workers` local processes, or on Ray;
    the servers from `config` (an `mcpServers` file) or the farm."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    farm: Path
    config: Path | None = None
    targets: dict[str, Any]
    timeout: float = 30.0
    workers: int = 1
    ray: Any = None  # envfarm.clients.ray_backend.RayOptions (imported only when asked: ray is optional)


class RolledOut(BaseModel):
    """The scored trajectories, and what the backend says about itself (WorkerStats or RayStats), if anything."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    trajectories: list[Trajectory]
    lines: list[str] | None = Field(
        None, description="with `lines` on worker processes: the JSONL lines, the trajectories being summaries only"
    )
    workers: Any = None
    ray: Any = None


async def roll_out(
    tasks: list[Task],
    policy: Policy,
    user: UserSimulator,
    options: RolloutOptions,
    plan: RolloutPlan,
    progress: ProgressBar | None = None,
    *,
    lines: bool = False,
) -> RolledOut:
    """Roll `policy` out on `tasks` (`options`: a RolloutOptions) on the plan's backend, scored; closes the
    policy and the user. A worker that cannot start, or rollout code that raised in one, is a RuntimeError.
    `lines`, for a caller that only writes and summarizes: worker processes write the JSONL lines themselves
    and the trajectories come back without messages, tools, final state (`envfarm.clients.workers.summary_only`)."""
    from contextlib import AsyncExitStack

    from envfarm.clients.rollout import Backend, LocalBackend
    from envfarm.clients.scoring import Scorer

    stats: dict[str, Any] = {}
    pool: Any = None  # worker processes, when the plan has them
    async with AsyncExitStack() as stack:
        backend: Backend
        if plan.ray is None and plan.workers > 1:
            from envfarm.clients.ray_backend import HostSpec
            from envfarm.clients.workers import ProcessBackend

            config = load_server_configs(plan.config) if plan.config else None
            spec = HostSpec(servers=sorted(plan.targets), farm=plan.farm, config=config, timeout=plan.timeout)
            backend = pool = await stack.enter_async_context(ProcessBackend(spec, plan.workers))
            stack.callback(lambda: stats.update(workers=pool.stats))
        elif plan.ray is None:
            backend = LocalBackend(await stack.enter_async_context(Connections(plan.targets, timeout=plan.timeout)))
        else:
            from envfarm.clients.ray_backend import HostSpec, RayBackend

            config = load_server_configs(plan.config) if plan.config else None
            spec = HostSpec(servers=sorted(plan.targets), farm=plan.farm, config=config, timeout=plan.timeout)
            backend = on_ray = await stack.enter_async_context(RayBackend(spec, plan.ray))
            stack.callback(lambda: stats.update(ray=on_ray.stats))
        written: list[str] | None = None
        try:
            if lines and pool is not None:
                done = await pool.lines(tasks, policy, user, options, scorer=Scorer(), progress=progress)
                trajectories, written = [w.trajectory for w in done], [w.line for w in done]
            else:
                trajectories = await backend(tasks, policy, user, options, scorer=Scorer(), progress=progress)
        finally:
            await policy.aclose()
            await user.aclose()
    return RolledOut(trajectories=trajectories, lines=written, **stats)


async def rescore(trajectories: list[Trajectory], judge: ModelConfig | None = None) -> list[Trajectory]:
    """Score `trajectories` again (`envfarm eval`): deterministically, or with `judge` (a ModelConfig) grading
    claims; the judge's client is closed afterwards."""
    from envfarm.clients.scoring import Scorer
    from envfarm.llm import ChatModel

    model = ChatModel(judge) if judge else None
    scorer = Scorer(judge=model)
    try:
        return [await scorer(t) for t in trajectories]
    finally:
        if model is not None:
            await model.aclose()
