"""The driver's subcommands: `rollout`, `eval`, `export` and `run` (the main job)."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from envfarm.servers.runtime.cli import add_source_argument
from envfarm.servers.runtime.registry import default_farm_root


def _farm(args: argparse.Namespace) -> Path:
    return (args.farm or default_farm_root()).resolve()


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _targets(args: argparse.Namespace, servers: list[str]) -> dict[str, Any]:
    """An `mcpServers` config or the farm in-process (as `envfarm tasks` finds them), or the farm over stdio."""
    from envfarm.clients.commands import targets
    from envfarm.clients.connect import farm_targets

    if args.config or args.transport == "memory":
        return targets(_farm(args), args.config, servers)
    return farm_targets(_farm(args), servers, "stdio")


def _known(args: argparse.Namespace, servers: list[str]) -> dict[str, None]:
    """The servers, each checked to exist in the `mcpServers` config or the farm's registry, none built."""
    from envfarm.clients.connect import load_server_configs
    from envfarm.servers.runtime.registry import load_registry

    if args.config:
        where, known = str(args.config), set(load_server_configs(args.config))
    else:
        where, known = str(_farm(args) / "registry.json"), {s.name for s in load_registry(_farm(args)).servers}
    missing = sorted(set(servers) - known)
    if missing:
        raise LookupError(f"not in {where}: {', '.join(missing)}")
    return dict.fromkeys(servers)


def _ray_options(args: argparse.Namespace) -> Any:
    """`--backend ray` -> RayOptions; the local backend -> None."""
    if args.backend != "ray":
        return None
    from envfarm.clients.ray_backend import RayOptions, import_ray

    try:
        import_ray()
    except RuntimeError as exc:
        raise ValueError(f"--backend ray: {exc}") from exc
    return RayOptions(address=args.address, workers=args.workers or 2, cpus_per_worker=args.cpus_per_worker)


def _local_workers(args: argparse.Namespace) -> int:
    """`--workers` of the local backend: 1 (this process) unless asked; more runs worker processes."""
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, not {args.workers}")
    return args.workers or 1


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
        help="local: rollout processes on this machine (default 1: in this process); "
        "ray: farm hosts (default 2). --concurrency is per worker",
    )
    parser.add_argument("--cpus-per-worker", type=float, default=1.0, help="CPUs Ray reserves per farm host")


def cmd_rollout(args: argparse.Namespace) -> int:
    if args.backend == "local" and (args.workers or 1) > 1 and args.transport == "memory":
        from envfarm.clients.fork_server import fork_server

        fork_server()  # its imports run beside the ones below
    from envfarm.clients.connect import Connections
    from envfarm.clients.policies import make_policy
    from envfarm.clients.rollout import Backend, Limits, LocalBackend, ProgressBar, RolloutOptions, failed_endpoint
    from envfarm.clients.run import summary_lines
    from envfarm.clients.scoring import Scorer, summarize
    from envfarm.clients.tasks import load_tasks, write_jsonl
    from envfarm.clients.users import make_user

    try:
        ray = _ray_options(args)
        workers = _local_workers(args) if ray is None else 1
        tasks = load_tasks(args.tasks)
        policy = make_policy(args.policy, args.base_url)
        user = make_user(args.user, args.base_url)
        from envfarm.clients.rollout import task_servers

        servers = sorted({s for t in tasks for s in task_servers(t)})  # distractor tools' servers too
        # Worker processes build their own servers: here only check that each one exists.
        targets = _targets(args, servers) if workers == 1 else _known(args, servers)
    except (OSError, ValueError, LookupError) as exc:
        return _fail(str(exc))
    if ray is not None and args.transport != "memory":
        return _fail("--backend ray runs each farm host's servers in-process (or from --config); drop --transport")
    if workers > 1 and args.transport != "memory":
        return _fail("--workers runs each worker's servers in-process (or from --config); drop --transport")
    limits = Limits(
        max_turns=args.max_turns,
        max_tool_calls=args.max_tool_calls,
        max_tokens=args.max_tokens,
        wall_time_s=args.wall_time,
        call_timeout_s=args.timeout,
    )
    options = RolloutOptions(k=args.k, concurrency=args.concurrency, calibrated=not args.uncalibrated, limits=limits)

    stats: dict[str, Any] = {}

    async def main() -> list[Any]:
        async with AsyncExitStack() as stack:
            backend: Backend
            if ray is None and workers > 1:
                from envfarm.clients.connect import load_server_configs
                from envfarm.clients.ray_backend import HostSpec
                from envfarm.clients.workers import ProcessBackend

                config = load_server_configs(args.config) if args.config else None
                spec = HostSpec(servers=sorted(targets), farm=_farm(args), config=config, timeout=args.timeout)
                backend = pool = await stack.enter_async_context(ProcessBackend(spec, workers))
                stack.callback(lambda: stats.update(local=_workers_line(pool.stats)))
            elif ray is None:
                backend = LocalBackend(await stack.enter_async_context(Connections(targets, timeout=args.timeout)))
            else:
                from envfarm.clients.connect import load_server_configs
                from envfarm.clients.ray_backend import HostSpec, RayBackend

                config = load_server_configs(args.config) if args.config else None
                spec = HostSpec(servers=sorted(targets), farm=_farm(args), config=config, timeout=args.timeout)
                backend = on_ray = await stack.enter_async_context(RayBackend(spec, ray))
                stack.callback(lambda: stats.update(on_ray.stats.model_dump()))
            try:
                return await backend(
                    tasks, policy, user, options, scorer=Scorer(), progress=ProgressBar(f"rollouts {policy.name}")
                )
            finally:
                await policy.aclose()
                await user.aclose()

    try:
        trajectories = anyio.run(main)
    except RuntimeError as exc:  # WorkerError: a worker could not start, or the rollout code raised in one
        return _fail(str(exc))
    out = args.out or args.tasks.with_name(f"{args.tasks.stem}.trajectories.jsonl")
    write_jsonl(out, trajectories)
    print("\n".join(summary_lines(summarize(trajectories))))
    if "local" in stats:
        print(stats["local"])
    elif stats:
        print(
            f"ray: {stats['workers']} farm hosts, {stats['episodes']} episodes, {stats['retried_episodes']} retried "
            f"from their seed, {stats['lost_workers']} hosts lost, {stats['replaced_workers']} replaced"
        )
    print(f"wrote {len(trajectories)} trajectories to {out}")
    failed = failed_endpoint(trajectories)
    if failed:
        print(f"error: the policy's endpoint failed; {failed}", file=sys.stderr)
        return 1
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from envfarm.clients.export import load_trajectories
    from envfarm.clients.run import scores_document, summary_lines
    from envfarm.clients.scoring import Scorer, oracle_failures, summarize
    from envfarm.clients.tasks import write_jsonl
    from envfarm.llm import ChatModel, parse_model

    try:
        trajectories = load_trajectories(args.trajectories)
        judge_config = parse_model(args.judge, args.base_url) if args.judge else None
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    if args.judge and judge_config is None:
        return _fail(f"--judge {args.judge!r}: name a model as openai:MODEL")

    async def main() -> list[Any]:
        judge = ChatModel(judge_config) if judge_config else None
        scorer = Scorer(judge=judge)
        try:
            return [await scorer(t) for t in trajectories]
        finally:
            if judge is not None:
                await judge.aclose()

    rescored = anyio.run(main)
    summaries = summarize(rescored)
    print("\n".join(summary_lines(summaries)))
    if args.out:
        write_jsonl(args.out, rescored)
        args.out.with_suffix(".scores.json").write_text(
            json.dumps(scores_document(summaries, oracle_failures(rescored), {}), indent=2) + "\n"
        )
        print(f"wrote {args.out} and {args.out.with_suffix('.scores.json')}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from envfarm.clients.export import export, load_trajectories

    out = args.out or args.trajectories.with_name(f"{args.trajectories.stem}_{args.format}")
    try:
        trajectories = load_trajectories(args.trajectories)
        written = export(
            trajectories,
            args.format,
            out,
            include_failed=args.include_failed,
            eval_ratio=args.eval_ratio,
            force=args.force,
            inputs=[args.trajectories],
            farm=args.farm,
        )
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    print(f"wrote {written.rows} {args.format} rows to {written.path}")
    for path in written.files:
        print(f"wrote {path}")
    for note in written.notes:
        print(note)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from envfarm.clients.rollout import Limits
    from envfarm.clients.run import RunOptions, run
    from envfarm.llm import parse_model
    from envfarm.servers.runtime.registry import load_registry

    try:
        options = RunOptions(
            farm=_farm(args),
            servers=load_registry(_farm(args)).select(args.servers, args.source),
            tasks=args.tasks,
            seed=args.seed,
            k=args.k,
            concurrency=args.concurrency,
            out=args.out,
            limits=Limits(call_timeout_s=args.timeout),
            writer=parse_model(args.writer, args.base_url) if args.writer else None,
            judge=parse_model(args.judge, args.base_url) if args.judge else None,
            ray=_ray_options(args),
            workers=_local_workers(args),
        )
        result = anyio.run(run, options, sys.stdout)
    except (LookupError, ValueError) as exc:
        return _fail(str(exc))
    return 1 if result.oracle_failures else 0


def add_driver_commands(sub: Any) -> None:
    """Register `rollout`, `eval`, `export` and `run` on the main parser's subcommands."""
    from envfarm.clients.formats import FORMATS

    r = sub.add_parser("rollout", help="roll a policy out on tasks (JSONL), scored; writes trajectories JSONL")
    r.add_argument("tasks", type=Path, help="tasks JSONL (from the task synthesizer)")
    r.add_argument("--policy", default="heuristic", help="heuristic | oracle | openai:MODEL")
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
