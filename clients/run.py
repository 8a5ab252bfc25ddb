"""`envfarm run`: the main job, end to end, with no model and no network by default.

On the built-in farm: synthesize tasks, roll out the oracle and the heuristic baseline (and the
heuristic again on the uncalibrated openings, to measure what calibration costs it), score every
rollout, fill each task's measured difficulty, export SFT and RL data, and write everything to
`runs/<timestamp>/` with a self-contained `report.html`. The oracle is the pipeline's self-check:
every kept task where it does not score 1.0 is counted and listed as a bug.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.export import FORMATS, export
from envfarm.clients.policies import HeuristicPolicy, OraclePolicy, Policy
from envfarm.clients.ray_backend import HostSpec, RayBackend, RayOptions
from envfarm.clients.report import render_report
from envfarm.clients.rollout import Backend, Limits, LocalBackend, ProgressBar, RolloutOptions, rollout_tasks
from envfarm.clients.scoring import PolicySummary, RewardConfig, Scorer, fill_difficulty, oracle_failures, summarize
from envfarm.clients.tasks import Task, write_jsonl
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import ScriptedUser
from envfarm.clients.workers import ProcessBackend
from envfarm.llm import ChatModel, ModelConfig


class RunOptions(BaseModel):
    farm: Path
    servers: list[str] | None = Field(default=None, description="default: every server in the registry")
    tasks: int = Field(default=60, ge=1, description="tasks to synthesize")
    max_servers: int = Field(default=2, ge=1, description="servers one task may span")
    seed: int = 0
    k: int = Field(default=1, ge=1)
    concurrency: int = Field(default=16, ge=1)
    out: Path = Path("runs")
    limits: Limits = Field(default_factory=Limits)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    writer: ModelConfig | None = None
    judge: ModelConfig | None = None
    ray: RayOptions | None = Field(default=None, description="roll out on Ray farm hosts (synthesis stays here)")
    workers: int = Field(default=1, ge=1, description="rollout processes on this machine (1: in this process)")


class RunResult(BaseModel):
    directory: Path
    tasks: int
    summaries: list[PolicySummary]
    oracle_failures: list[str]
    files: dict[str, str]
    seconds: dict[str, float]


def policy_label(summary: PolicySummary) -> str:
    return summary.policy if summary.calibrated else f"{summary.policy} (uncalibrated)"


def scores_document(
    summaries: Sequence[PolicySummary], failures: Sequence[str], extra: dict[str, Any]
) -> dict[str, Any]:
    """What `scores.json` holds: per policy (and opening) the rates and the error taxonomy."""
    return {
        "policies": {policy_label(s): s.model_dump(mode="json") for s in summaries},
        "oracle_failures": {"count": len(failures), "tasks": list(failures)},
        **extra,
    }


def policy_checks_per_task(trajectories: Sequence[Trajectory]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Task -> policy (and opening) -> each policy check's grade, for tasks that have checks."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for t in trajectories:
        if t.score is not None and t.score.policy:
            label = t.policy if t.calibrated else f"{t.policy} (uncalibrated)"
            key = label if t.attempt == 0 else f"{label} #{t.attempt}"
            found.setdefault(t.task_id, {})[key] = [
                g.model_dump(mode="json", include={"kind", "rule_id", "tool", "passed", "detail"})
                for g in t.score.policy
            ]
    return found


def summary_lines(summaries: Sequence[PolicySummary]) -> list[str]:
    header = (
        f"{'policy':<28} {'episodes':>8} {'success':>8} {'state':>8} {'claims':>8} {'policy':>8} {'pass@k':>8}  errors"
    )
    lines = [header, "-" * len(header)]
    for s in summaries:
        at_k = s.pass_at_k.get(str(max(map(int, s.pass_at_k), default=1)), 0.0)
        errors = ", ".join(f"{k} {v}" for k, v in sorted(s.errors.items(), key=lambda kv: -kv[1])) or "-"
        lines.append(
            f"{policy_label(s):<28} {s.episodes:>8} {s.success_rate:>8.1%} {s.state_match_rate:>8.1%} "
            f"{s.claims_pass_rate:>8.1%} {s.policy_pass_rate:>8.1%} {at_k:>8.1%}  {errors}"
        )
    for s in summaries:
        if s.solve_rates and len(s.pass_at_k) > 1:  # k > 1 attempts per task: how their solve rates spread
            rates = ", ".join(f"{rate}: {n}" for rate, n in s.solve_rates.items())
            lines.append(f"{policy_label(s)}: tasks per solve rate over {len(s.pass_at_k)} attempts: {rates}")
    return lines


async def evaluate(
    tasks: Sequence[Task],
    connections: Connections,
    *,
    k: int = 1,
    concurrency: int = 16,
    limits: Limits | None = None,
    scorer: Scorer | None = None,
    policies: Sequence[Policy] | None = None,
    show_progress: bool = True,
    backend: Backend | None = None,
) -> list[Trajectory]:
    """Oracle and heuristic on calibrated openings, and the heuristic on uncalibrated ones, all scored
    (on `connections` in this process, unless a `backend` runs them elsewhere)."""
    scorer = scorer or Scorer()
    backend = backend or LocalBackend(connections)
    user = ScriptedUser()
    plan: list[tuple[Policy, bool]] = [(p, True) for p in policies or (OraclePolicy(), HeuristicPolicy())]
    plan += [(p, False) for p, _ in plan if p.name == "heuristic"]
    trajectories: list[Trajectory] = []
    for policy, calibrated in plan:
        options = RolloutOptions(k=k, concurrency=concurrency, calibrated=calibrated, limits=limits or Limits())
        label = f"{policy.name}{'' if calibrated else ' (uncalibrated)'}"
        progress = ProgressBar(f"rollouts {label:<26}") if show_progress else None
        trajectories += await backend(tasks, policy, user, options, scorer=scorer, progress=progress)
    return trajectories


def write_outputs(
    directory: Path,
    tasks: Sequence[Task],
    trajectories: Sequence[Trajectory],
    *,
    domains: dict[str, str],
    facts: dict[str, Any],
) -> tuple[list[PolicySummary], list[str], dict[str, str]]:
    """tasks.jsonl, trajectories.jsonl, scores.json, exports/ and report.html under `directory`."""
    fill_difficulty(tasks, trajectories)
    summaries = summarize(trajectories)
    failures = oracle_failures(trajectories)
    files: dict[str, str] = {}
    write_jsonl(directory / "tasks.jsonl", tasks)
    files["tasks"] = "tasks.jsonl"
    write_jsonl(directory / "trajectories.jsonl", trajectories)
    files["trajectories"] = "trajectories.jsonl"
    names = {"openai": "sft_openai", "sharegpt": "sft_sharegpt", "verl": "rl_verl"}
    for fmt in FORMATS:
        path = export(trajectories, fmt, directory / "exports" / names[fmt]).path
        files[fmt] = str(path.relative_to(directory))
    scores = scores_document(
        summaries,
        failures,
        {**facts, "tasks": len(tasks), "policy_checks_per_task": policy_checks_per_task(trajectories)},
    )
    (directory / "scores.json").write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    files["scores"] = "scores.json"
    html = render_report(
        trajectories, title=f"envfarm run · {directory.name}", domains=domains, facts=facts, oracle_failures=failures
    )
    (directory / "report.html").write_text(html, encoding="utf-8")
    files["report"] = "report.html"
    return summaries, failures, files


async def run(options: RunOptions) -> RunResult:
    """The main job. Synthesis comes from `envfarm.clients.synthesize` (the task synthesizer). Prints nothing
    (progress bars on a terminal's stderr aside): `envfarm run` prints the result."""
    from envfarm.clients.synthesize import SynthesisOptions, synthesize
    from envfarm.servers.runtime.registry import load_registry

    registry = load_registry(options.farm)
    domains = {s.name: s.domain for s in registry.servers}
    names = options.servers or [s.name for s in registry.servers]
    unknown = sorted(set(names) - set(domains))
    if unknown:
        raise LookupError(f"not in {options.farm / 'registry.json'}: {', '.join(unknown)}")
    directory = options.out / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    seconds: dict[str, float] = {}
    judge = ChatModel(options.judge) if options.judge else None
    facts: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        connections = await stack.enter_async_context(
            Connections(farm_targets(options.farm, names, "memory"), timeout=options.limits.call_timeout_s)
        )
        backend: Backend = LocalBackend(connections)
        on_ray: RayBackend | None = None
        pool: ProcessBackend | None = None
        if options.ray is None and options.workers > 1:  # the workers start while synthesis runs here
            spec = HostSpec(farm=options.farm, servers=names, timeout=options.limits.call_timeout_s)
            backend = pool = await stack.enter_async_context(ProcessBackend(spec, options.workers))
        if options.ray is not None:
            spec = HostSpec(farm=options.farm, servers=names, timeout=options.limits.call_timeout_s)
            backend = on_ray = await stack.enter_async_context(RayBackend(spec, options.ray))
        started = time.perf_counter()
        synthesis = await synthesize(
            SynthesisOptions(
                n=options.tasks,
                servers=names,
                max_servers=options.max_servers,
                seed=options.seed,
                writer=options.writer,
                farm=options.farm,
            ),
            connections,
            ProgressBar(f"{'synthesize':<35}"),
        )
        seconds["synthesize"] = round(time.perf_counter() - started, 2)
        tasks = list(synthesis.tasks)
        started = time.perf_counter()
        trajectories = await evaluate(
            tasks,
            connections,
            k=options.k,
            concurrency=options.concurrency,
            limits=options.limits,
            scorer=Scorer(options.reward, judge),
            backend=backend,
        )
        seconds["rollouts"] = round(time.perf_counter() - started, 2)
        if on_ray is not None:
            facts["ray"] = on_ray.stats.model_dump()
        if pool is not None:
            facts["workers"] = pool.stats.model_dump(exclude={"hosts"})
    if judge is not None:
        await judge.aclose()
    summary = synthesis.summary
    facts = {
        **facts,
        "servers": len(names),
        "tasks": f"{summary.produced} of {summary.requested} requested ({summary.sampler} sampler, "
        f"seed {summary.seed}, writer {summary.writer}); mean chain {summary.mean_chain_length} calls; "
        f"{summary.cross_server_share:.0%} span two servers",
        "rollouts per task and policy": options.k,
        "seconds": seconds,
    }
    started = time.perf_counter()
    summaries, failures, files = write_outputs(directory, tasks, trajectories, domains=domains, facts=facts)
    (directory / "synthesis.json").write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    files["synthesis"] = "synthesis.json"
    seconds["write"] = round(time.perf_counter() - started, 2)
    return RunResult(
        directory=directory,
        tasks=len(tasks),
        summaries=summaries,
        oracle_failures=failures,
        files=files,
        seconds=seconds,
    )


class EpisodeRate(BaseModel):
    """Scored offline rollouts per second, in-process: what `envfarm bench` reports as `episodes_per_s`."""

    episodes_per_s: float
    episodes: int
    tasks: int
    policy: str
    concurrency: int
    calls_per_episode: float
    success_rate: float


async def measure_episode_rate(
    farm: Path,
    server: str,
    *,
    tasks: int = 20,
    episodes: int = 1000,
    concurrency: int = 16,
    policy: Policy | None = None,
) -> EpisodeRate:
    """Synthesize `tasks` on `server`, then time `episodes` scored rollouts of an offline policy over them."""
    from envfarm.clients.synthesize import SynthesisOptions, synthesize

    policy = policy or HeuristicPolicy()
    async with Connections(farm_targets(farm, [server], "memory")) as connections:
        synthesis = await synthesize(SynthesisOptions(n=tasks, servers=[server], max_servers=1), connections)
        chosen = list(synthesis.tasks)
        if not chosen:
            raise RuntimeError(f"the synthesizer made no task on {server}")
        options = RolloutOptions(k=-(-episodes // len(chosen)), concurrency=concurrency)  # at least `episodes`
        await rollout_tasks(chosen[:1], policy, ScriptedUser(), connections, scorer=Scorer())  # warm up
        started = time.perf_counter()
        done = await rollout_tasks(chosen, policy, ScriptedUser(), connections, options, scorer=Scorer())
        elapsed = time.perf_counter() - started
    return EpisodeRate(
        episodes_per_s=round(len(done) / elapsed, 1),
        episodes=len(done),
        tasks=len(chosen),
        policy=policy.name,
        concurrency=concurrency,
        calls_per_episode=round(sum(len(t.calls) for t in done) / len(done), 2),
        success_rate=round(sum(bool(t.score and t.score.success) for t in done) / len(done), 3),
    )
