"""The driver's commands: `envfarm tasks`, `graph`, `rollout`, `eval`, `export` and `run` (the main job). Each
parses its options, calls the driver (`envfarm.clients`), and prints what came back."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio

from envfarm.cli.options import CommandOptions, fail
from envfarm.clients.formats import FORMATS, Format
from envfarm.servers.runtime.cli import add_source_argument

T = TypeVar("T")


class BackendOptions(CommandOptions):
    """`--backend`, `--address`, `--workers`, `--cpus-per-worker`: where rollouts run."""

    backend: Literal["local", "ray"] = "local"
    address: str | None = None
    workers: int | None = None
    cpus_per_worker: float = 1.0

    def ray_options(self) -> Any:
        """`--backend ray` -> RayOptions; the local backend -> None."""
        if self.backend != "ray":
            return None
        from envfarm.clients.ray_backend import RayOptions, import_ray

        try:
            import_ray()
        except RuntimeError as exc:
            raise ValueError(f"--backend ray: {exc}") from exc
        return RayOptions(address=self.address, workers=self.workers or 2, cpus_per_worker=self.cpus_per_worker)

    def local_workers(self, auto: int = 1) -> int:
        """`--workers` of the local backend, `auto` when left out (1: this process); more runs worker processes."""
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"--workers must be at least 1, not {self.workers}")
        return self.workers or auto


class RolloutCommandOptions(BackendOptions):
    tasks: Path
    policy: str = "heuristic"
    base_url: str | None = None
    user: str = "scripted"
    k: int = 1
    concurrency: int = 8
    uncalibrated: bool = False
    transport: Literal["memory", "stdio"] = "memory"
    config: Path | None = None
    max_turns: int = 8
    max_tool_calls: int = 30
    max_tokens: int | None = None
    wall_time: float = 300.0
    timeout: float = 30.0
    out: Path | None = None


class EvalOptions(CommandOptions):
    trajectories: Path
    judge: str | None = None
    base_url: str | None = None
    out: Path | None = None


class ExportOptions(CommandOptions):
    trajectories: Path
    format: Format
    out: Path | None = None
    include_failed: bool = False
    eval_ratio: float = 0.1
    force: bool = False


class RunCommandOptions(BackendOptions):
    servers: list[str] | None = None
    source: list[str] | None = None
    tasks: int = 60
    seed: int = 0
    k: int = 1
    concurrency: int = 16
    out: Path = Path("runs")
    timeout: float = 30.0
    writer: str | None = None
    judge: str | None = None
    base_url: str | None = None


def run_async(call: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """`anyio.run(call)`, the result handed out past the main task. On Python 3.11, asyncio's runner formats
    the main task into an error message twice on exit (restoring the SIGINT handler), its result included:
    0.5 s of CPU each time for 1,000 trajectories, after the work is done."""
    box: list[T] = []

    async def main() -> None:
        box.append(await call())

    anyio.run(main)
    return box[0]


def _driver(call: Callable[[], Coroutine[Any, Any, T]]) -> T | int:
    """Run a driver coroutine; a bad input or an unreachable server is one clear line on stderr per error, exit 2
    (also from inside a client's task group)."""
    from envfarm.llm import LLMError
    from envfarm.servers.runtime.control import ControlError

    known_errors = (ValueError, LookupError, ControlError, LLMError)
    try:
        return run_async(call)
    except known_errors as exc:
        return fail(str(exc))
    except BaseExceptionGroup as group:  # raised inside a client's task group
        known, rest = group.split(known_errors)
        if known is None or rest is not None:
            raise
        for leaf in leaves(known):
            fail(str(leaf))
        return 2


def leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        found += leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return found


def cmd_tasks(args: argparse.Namespace) -> int:
    """`envfarm tasks`: synthesize tasks, or with `--audit FILE` audit a task file."""
    from envfarm.clients.audit import render_audit
    from envfarm.clients.commands import (
        AuditOptions,
        AuditResult,
        TasksOptions,
        TasksResult,
        audit_file,
        render_summary,
        synthesize_tasks,
    )
    from envfarm.clients.rollout import ProgressBar

    farm = CommandOptions.parse(args).farm_root()
    if args.audit is not None:
        audit = AuditOptions.model_validate({**vars(args), "farm": farm})
        audited = _driver(lambda: audit_file(audit))
        if not isinstance(audited, AuditResult):
            return audited
        print(render_audit(audited.report, audited.tasks))
        return 1 if audited.report.failed else 0
    options = TasksOptions.model_validate({**vars(args), "farm": farm})
    made = _driver(lambda: synthesize_tasks(options, ProgressBar(unit="tasks", terminal_only=False)))
    if not isinstance(made, TasksResult):
        return made
    if (graded := made.difficulty) is not None:
        print(
            f"difficulty ({graded.policy}, k={graded.k}): solve rates "
            + ", ".join(f"{r:g}: {n}" for r, n in graded.solve_rates.items())
            + f"; {graded.kept} of {graded.graded} in [{graded.band[0]:g}, {graded.band[1]:g}]"
        )
    print(render_summary(made.summary))
    print(f"wrote {len(made.tasks)} tasks to {made.out} and the summary to {made.summary_path}")
    return 0 if made.tasks else 1


def cmd_graph(args: argparse.Namespace) -> int:
    """`envfarm graph`: the tool dependency graph as JSON and a readable SVG."""
    from envfarm.clients.commands import GraphOptions, GraphResult, tool_graph

    options = GraphOptions.model_validate({**vars(args), "farm": CommandOptions.parse(args).farm_root()})
    made = _driver(lambda: tool_graph(options))
    if not isinstance(made, GraphResult):
        return made
    print(json.dumps(made.facts, indent=2))
    print(f"wrote graph.json, graph.svg and summary.json to {made.out}")
    return 0


def _targets(options: RolloutCommandOptions, servers: list[str]) -> dict[str, Any]:
    """An `mcpServers` config or the farm in-process (as `envfarm tasks` finds them), or the farm over stdio."""
    from envfarm.clients.commands import targets
    from envfarm.clients.connect import farm_targets

    if options.config or options.transport == "memory":
        return targets(options.farm_root(), options.config, servers)
    return farm_targets(options.farm_root(), servers, "stdio")


def _known(options: RolloutCommandOptions, servers: list[str]) -> dict[str, None]:
    """The servers, each checked to exist in the `mcpServers` config or the farm's registry, none built."""
    from envfarm.clients.connect import load_server_configs

    if options.config:
        where, known = str(options.config), set(load_server_configs(options.config))
    else:
        where, known = str(options.farm_root() / "registry.json"), {s.name for s in options.registry().servers}
    missing = sorted(set(servers) - known)
    if missing:
        raise LookupError(f"not in {where}: {', '.join(missing)}")
    return dict.fromkeys(servers)


def _workers_line(stats: Any) -> str:
    hosts = stats.hosts
    each = (
        f"; start-up {max(h.startup_s for h in hosts):.2f} s ({max(h.startup_cpu_s for h in hosts):.2f} s CPU), "
        f"{sum(h.pss_mb for h in hosts) / len(hosts):.0f} MB each (PSS)"
        if hosts
        else ""
    )
    return (
        f"workers: {stats.workers} processes, {stats.episodes} episodes, {stats.failed_episodes} failed with "
        f"{stats.lost_workers} lost workers{each}"
    )


def _auto_workers(options: RolloutCommandOptions) -> int:
    """Workers when `--workers` is left out: by the job's size and kind (`fork_server.auto_workers`); 1 where
    workers cannot run (stdio transport, Ray). Counts the task file's lines, no more: nothing is imported yet."""
    from envfarm.clients.fork_server import auto_workers

    if options.backend != "local" or options.transport != "memory" or options.workers is not None:
        return 1
    try:
        with options.tasks.open("rb") as handle:
            lines = sum(1 for line in handle if line.strip())
    except OSError:
        return 1  # load_tasks says what is wrong with it
    return auto_workers(lines * max(options.k, 1), policy=options.policy, user=options.user)


def cmd_rollout(args: argparse.Namespace) -> int:
    options = RolloutCommandOptions.parse(args)
    auto = _auto_workers(options)
    if options.backend == "local" and (options.workers or auto) > 1 and options.transport == "memory":
        from envfarm.clients.fork_server import fork_server

        fork_server()  # its imports run beside the ones below
    from envfarm.clients.commands import RolloutPlan, roll_out
    from envfarm.clients.policies import make_policy
    from envfarm.clients.rollout import Limits, ProgressBar, RolloutOptions, failed_endpoint, task_servers
    from envfarm.clients.run import summary_lines
    from envfarm.clients.scoring import summarize
    from envfarm.clients.tasks import load_tasks, write_jsonl, write_lines
    from envfarm.clients.users import make_user

    try:
        ray = options.ray_options()
        workers = options.local_workers(auto) if ray is None else 1
        tasks = load_tasks(options.tasks)
        policy = make_policy(options.policy, options.base_url)
        user = make_user(options.user, options.base_url)
        servers = sorted({s for t in tasks for s in task_servers(t)})  # distractor tools' servers too
        # Worker processes build their own servers: here only check that each one exists.
        targets = _targets(options, servers) if workers == 1 else _known(options, servers)
    except (OSError, ValueError, LookupError) as exc:
        return fail(str(exc))
    if ray is not None and options.transport != "memory":
        return fail("--backend ray runs each farm host's servers in-process (or from --config); drop --transport")
    if workers > 1 and options.transport != "memory":
        return fail("--workers runs each worker's servers in-process (or from --config); drop --transport")
    limits = Limits(
        max_turns=options.max_turns,
        max_tool_calls=options.max_tool_calls,
        max_tokens=options.max_tokens,
        wall_time_s=options.wall_time,
        call_timeout_s=options.timeout,
    )
    rollout = RolloutOptions(
        k=options.k, concurrency=options.concurrency, calibrated=not options.uncalibrated, limits=limits
    )
    plan = RolloutPlan(
        farm=options.farm_root(),
        config=options.config,
        targets=targets,
        timeout=options.timeout,
        workers=workers,
        ray=ray,
    )
    progress = ProgressBar(f"rollouts {policy.name}")
    try:
        done = run_async(lambda: roll_out(tasks, policy, user, rollout, plan, progress, lines=workers > 1))
    except RuntimeError as exc:  # WorkerError: a worker could not start, or the rollout code raised in one
        return fail(str(exc))
    trajectories = done.trajectories
    out = options.out or options.tasks.with_name(f"{options.tasks.stem}.trajectories.jsonl")
    if done.lines is not None:  # written by the workers
        write_lines(out, done.lines)
    else:
        write_jsonl(out, trajectories)
    print("\n".join(summary_lines(summarize(trajectories))))
    if done.workers is not None:
        print(_workers_line(done.workers))
    elif done.ray is not None:
        stats = done.ray
        print(
            f"ray: {stats.workers} farm hosts, {stats.episodes} episodes, {stats.retried_episodes} retried "
            f"from their seed, {stats.lost_workers} hosts lost, {stats.replaced_workers} replaced"
        )
    print(f"wrote {len(trajectories)} trajectories to {out}")
    failed = failed_endpoint(trajectories)
    if failed:
        print(f"error: the policy's endpoint failed; {failed}", file=sys.stderr)
        return 1
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from envfarm.clients.commands import rescore
    from envfarm.clients.export import load_trajectories
    from envfarm.clients.run import scores_document, summary_lines
    from envfarm.clients.scoring import oracle_failures, summarize
    from envfarm.clients.tasks import write_jsonl
    from envfarm.llm import parse_model

    options = EvalOptions.parse(args)
    try:
        trajectories = load_trajectories(options.trajectories)
        judge = parse_model(options.judge, options.base_url) if options.judge else None
    except (OSError, ValueError) as exc:
        return fail(str(exc))
    if options.judge and judge is None:
        return fail(f"--judge {options.judge!r}: name a model as openai:MODEL")
    rescored = run_async(lambda: rescore(trajectories, judge))
    summaries = summarize(rescored)
    print("\n".join(summary_lines(summaries)))
    if options.out:
        write_jsonl(options.out, rescored)
        options.out.with_suffix(".scores.json").write_text(
            json.dumps(scores_document(summaries, oracle_failures(rescored), {}), indent=2) + "\n"
        )
        print(f"wrote {options.out} and {options.out.with_suffix('.scores.json')}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from envfarm.clients.export import export, load_trajectories

    options = ExportOptions.parse(args)
    out = options.out or options.trajectories.with_name(f"{options.trajectories.stem}_{options.format}")
    try:
        trajectories = load_trajectories(options.trajectories)
        written = export(
            trajectories,
            options.format,
            out,
            include_failed=options.include_failed,
            eval_ratio=options.eval_ratio,
            force=options.force,
            inputs=[options.trajectories],
            farm=options.farm,
        )
    except (OSError, ValueError) as exc:
        return fail(str(exc))
    print(f"wrote {written.rows} {options.format} rows to {written.path}")
    for path in written.files:
        print(f"wrote {path}")
    for note in written.notes:
        print(note)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from envfarm.clients.rollout import Limits
    from envfarm.clients.run import RunOptions, run, summary_lines
    from envfarm.llm import parse_model

    options = RunCommandOptions.parse(args)
    try:
        run_options = RunOptions(
            farm=options.farm_root(),
            servers=options.registry().select(options.servers, options.source),
            tasks=options.tasks,
            seed=options.seed,
            k=options.k,
            concurrency=options.concurrency,
            out=options.out,
            limits=Limits(call_timeout_s=options.timeout),
            writer=parse_model(options.writer, options.base_url) if options.writer else None,
            judge=parse_model(options.judge, options.base_url) if options.judge else None,
            ray=options.ray_options(),
            workers=options.local_workers(),
        )
        result = run_async(lambda: run(run_options))
    except (LookupError, ValueError) as exc:
        return fail(str(exc))
    print("\n".join(summary_lines(result.summaries)))
    print(
        f"\noracle self-check: {len(result.oracle_failures)} of {result.tasks} tasks failed"
        + (" (pipeline bugs, see report)" if result.oracle_failures else "")
    )
    print(f"wrote {result.directory}/ ({', '.join(result.files.values())})")
    return 1 if result.oracle_failures else 0


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help='where rollouts run (ray: pip install "envfarm[ray]")',
    )
    parser.add_argument("--address", help="Ray cluster to join (e.g. auto); default: start a local one")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local: rollout processes on this machine (rollout's default: one per core for 200+ episodes of an "
        "offline policy and user, else 1: in this process; run's: 1); ray: farm hosts (default 2). "
        "--concurrency is per worker",
    )
    parser.add_argument("--cpus-per-worker", type=float, default=1.0, help="CPUs Ray reserves per farm host")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`tasks`, `graph`, `rollout`, `eval`, `export`, `run`."""
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
        command.set_defaults(func=cmd_tasks if command is t else cmd_graph)

    r = sub.add_parser("rollout", help="roll a policy out on tasks (JSONL), scored; writes trajectories JSONL")
    r.add_argument("tasks", type=Path, help="tasks JSONL (from the task synthesizer)")
    r.add_argument("--policy", default="heuristic", help="heuristic | heuristic-sampled | oracle | openai:MODEL")
    r.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    r.add_argument("--user", default="scripted", help="user simulator: scripted | openai:MODEL")
    r.add_argument("--k", type=int, default=1, help="rollouts per task (pass@k, pass^k)")
    r.add_argument("--concurrency", type=int, default=8)
    r.add_argument("--uncalibrated", action="store_true", help="open with the uncalibrated message instead")
    r.add_argument("--transport", choices=("memory", "stdio"), default="memory", help="how to reach the farm's servers")
    r.add_argument("--config", type=Path, help="an mcpServers JSON file instead of the farm's registry")
    r.add_argument("--max-turns", type=int, default=8)
    r.add_argument("--max-tool-calls", type=int, default=30)
    r.add_argument("--max-tokens", type=int, default=None)
    r.add_argument("--wall-time", type=float, default=300.0, help="seconds per rollout")
    r.add_argument("--timeout", type=float, default=30.0, help="seconds per MCP request")
    r.add_argument("--out", type=Path, help="default: TASKS with .trajectories.jsonl")
    add_backend_arguments(r)
    r.set_defaults(func=cmd_rollout)

    e = sub.add_parser("eval", help="re-score trajectories (deterministic, or with an LLM judge) and print the summary")
    e.add_argument("trajectories", type=Path)
    e.add_argument("--judge", help="openai:MODEL grading claims 1 / 0.5 / 0")
    e.add_argument("--base-url")
    e.add_argument("--out", type=Path, help="write the re-scored trajectories (and .scores.json) here")
    e.set_defaults(func=cmd_eval)

    x = sub.add_parser("export", help="trajectories -> SFT (openai, sharegpt) or RL (verl) rows")
    x.add_argument("trajectories", type=Path)
    x.add_argument("--format", choices=FORMATS, required=True)
    x.add_argument(
        "--out", type=Path, help="output path (suffix set by the format; default: TRAJECTORIES_FORMAT beside the input)"
    )
    x.add_argument("--include-failed", action="store_true", help="SFT: keep unsuccessful rollouts too")
    x.add_argument("--eval-ratio", type=float, default=0.1, help="share of tasks in the eval split (by task id hash)")
    x.add_argument("--force", action="store_true", help="overwrite existing output files (never the input)")
    x.set_defaults(func=cmd_export)

    u = sub.add_parser("run", help="the main job: synthesize, roll out, score, export, report (no model needed)")
    u.add_argument("--servers", nargs="*", help="servers to use (default: the whole farm)")
    add_source_argument(u)
    u.add_argument("--tasks", type=int, default=60, help="tasks to synthesize")
    u.add_argument("--seed", type=int, default=0)
    u.add_argument("--k", type=int, default=1, help="rollouts per task and policy")
    u.add_argument("--concurrency", type=int, default=16)
    u.add_argument("--out", type=Path, default=Path("runs"), help="runs/<timestamp>/ goes here")
    u.add_argument("--timeout", type=float, default=30.0)
    u.add_argument("--writer", help="openai:MODEL to write task requests (default: offline)")
    u.add_argument("--judge", help="openai:MODEL to grade claims (default: deterministic)")
    u.add_argument("--base-url")
    add_backend_arguments(u)
    u.set_defaults(func=cmd_run)
