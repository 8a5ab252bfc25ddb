"""The bench report: its model, the machine it ran on, verdicts against DESIGN.md's targets, markdown."""

from __future__ import annotations

import os
import platform
import shlex
from importlib.metadata import version
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from envfarm.bench.workers import WorkersBench
from envfarm.clients.run import EpisodeRate

REFERENCE = "clinic"


class Machine(BaseModel):
    platform: str
    python: str
    cpu_count: int
    cpu_model: str
    memory_mb: int
    mcp: str


class Verdict(BaseModel):
    """One row of the markdown table."""

    metric: str
    target: str
    measured: str
    verdict: Literal["pass", "fail", "n/a"]
    how: str


class SessionRun(BaseModel):
    """Concurrent write-then-read episodes over HTTP in one protocol era."""

    era: str
    sessions: int
    completed: int
    leaks: int = Field(
        description="episodes whose write was refused, or whose read did not show exactly their own write"
    )
    errors: int = Field(description="episodes that failed or did not finish within the time budget")
    error_samples: list[str]
    seconds: float
    server_cpu_ms_per_episode: float = Field(description="the farm process's CPU time; the rest is the clients'")
    server_rss_mb_after: float


class IsolatedEras(BaseModel):
    """The same episode as the concurrent runs ("book + list + close", each its own MCP client), one at a time,
    in blocks alternating the eras: what one episode costs the farm in each era, without the load of others."""

    episodes_per_block: int
    rounds: int = Field(description="blocks of each era; the era that goes first alternates by round")
    server_cpu_ms_per_episode: dict[str, float] = Field(description="era -> the farm process's CPU over its blocks")
    failed: dict[str, int] = Field(description="era -> episodes that errored or saw a booking not their own")
    error_samples: list[str] = Field(default_factory=list)
    seconds: float


class ColdStart(BaseModel):
    """p50 seconds from spawn to the first tools/list answer, ours and the bare SDK echo server's."""

    command: list[str]
    ours_s_p50: float
    floor_s_p50: float
    ratio: float = Field(description="ours / floor, from the same alternating rounds")
    rounds: int
    baseline_s_p50: float | None = Field(None, description="an older checkout's server, in the same rounds")
    cpu_s_p50: dict[str, float] = Field(description="CPU seconds of each process (start, listing, exit), p50")
    cpu_ratio: float = Field(description="ours / floor in CPU seconds: steadier than wall time on a shared machine")
    answer_cpu_s_p50: dict[str, float] | None = Field(
        None,
        description="CPU seconds of each process until it answered tools/list (the start alone, without the exit), "
        "p50; Linux (/proc/PID/task/*/schedstat), None elsewhere",
    )
    answer_cpu_ratio: float | None = Field(None, description="ours / floor in CPU seconds until the answer")


class FarmStart(BaseModel):
    """`envfarm serve --all` from spawn until every server answered tools/list, for farms of growing size."""

    servers: list[int]
    seconds: list[float]
    cpu_seconds: list[float] = Field(description="CPU seconds of the farm process until it was ready")
    ms_per_added_server: float = Field(description="slope between the smallest and the largest farm")
    baseline_seconds: list[float] | None = Field(None, description="an older checkout's farm host, same sizes")
    baseline_cpu_seconds: list[float] | None = None


class FarmListing(BaseModel):
    """`envfarm serve --all` on one farm as it is (e.g. hundreds of imported servers): start-up, and whether
    every server answers tools/list over HTTP with every tool the registry says it has."""

    farm: str
    servers: int
    tools_registered: int = Field(description="the sum of registry.json's tool_count")
    tools_listed: int = Field(description="tools every server listed over HTTP, in all")
    mismatched: dict[str, list[int]] = Field(description="server -> [registered, listed], where they differ")
    ready_s: float = Field(description="spawn until the farm's index answered")
    listed_s: float = Field(description="spawn until every server had listed its tools")
    cpu_s: float = Field(description="CPU seconds of the farm process until every server had listed")
    rss_mb_ready: float
    rss_mb_listed: float
    ms_per_server: float = Field(description="listed_s / servers")
    kb_per_server: float = Field(description="rss_mb_listed / servers (the runtime and the SDK included)")


class PeerComparison(BaseModel):
    """`--peer`: a foreign stdio server beside ours, same client, same kinds of requests, one run."""

    peer: list[str]
    log: str | None = Field(default=None, description="where both servers' stderr went during the comparison")
    read_tool: dict[str, str] = Field(description="the no-argument read each side is timed with")
    cold_start_s_p50: dict[str, float]
    read_call_ms_p50: dict[str, float]
    isolated_reset_ms_p50: dict[str, float] = Field(
        description="ours: the control-plane reset over stdio; the peer's: a fresh process to its first tools/list"
    )
    isolated_episodes_per_s: dict[str, float] = Field(
        description="reset + 5 reads: ours on one stdio process; the peer's a fresh process per episode"
    )
    ratios: dict[str, float] = Field(description="ours / peer: below 1 is faster for times, above 1 more for rates")


class BenchReport(BaseModel):
    command: str
    quick: bool
    farm: str
    servers: list[str]
    machine: Machine
    reset_ms_p50: float
    reset_backup_api_ms_p50: float
    reset_stdio_ms_p50: float = Field(description="`envfarm/episode/reset` to the seed over stdio, end to end")
    call_ms_p50: dict[str, float]
    sdk_floor_ms_p50: dict[str, float]
    overhead_ms_p50: dict[str, float] = Field(description="call p50 minus the SDK floor's, same transport, same run")
    isolated_episodes_per_s: dict[str, float] = Field(
        description="'reset + 5 calls + close' episodes per second through envfarm.clients.connect, per transport"
    )
    episodes_per_s: float = Field(
        description="scored rollouts per second: offline heuristic policy, scripted user, in-process"
    )
    episodes_detail: EpisodeRate
    farm_start_s: float
    farm_rss_mb: float
    peer: PeerComparison | None = None
    cold_start: ColdStart = Field(
        description="one stdio server from spawn to its first tools/list, beside the bare SDK"
    )
    farm_growth: FarmStart
    concurrent_sessions: int
    concurrent_sessions_detail: list[SessionRun]
    isolated_eras: IsolatedEras | None = Field(None, description="the eras' CPU per episode, one episode at a time")
    build_all_s: float | None
    build_all_detail: str
    workers: WorkersBench | None = Field(None, description="`envfarm rollout --workers 1|2`, and its projection")
    targets: list[Verdict]


def machine() -> Machine:
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")
    meminfo = Path("/proc/meminfo")
    memory_kb = int(meminfo.read_text().split()[1]) if meminfo.exists() else 0
    return Machine(
        platform=platform.platform(),
        python=platform.python_version(),
        cpu_count=os.cpu_count() or 0,
        cpu_model=model or platform.processor(),
        memory_mb=memory_kb // 1024,
        mcp=version("mcp"),
    )


ERA_COST_TARGET = 1.3


ERA_COST_METRIC = "2025-era session: server CPU per episode"


def era_cost(isolated: IsolatedEras | None, runs: list[SessionRun]) -> list[Verdict]:
    """The farm's CPU per episode of a 2025-era session (initialize, Mcp-Session-Id, DELETE) against the same episode
    in the 2026 era (per-episode URL, close). Judged on the isolated episodes (issue 31's acceptance: one episode at a
    time): the handshake era may cost more (its session is a task and streams in the SDK), but not more than
    `ERA_COST_TARGET` times. The concurrent runs' ratio is reported beside it, not judged: under load it also
    carries what many open sessions cost the SDK (a task and a standing connection each)."""
    target = f"<= {ERA_COST_TARGET}x the 2026 era"
    legacy, modern = _by_era(isolated.server_cpu_ms_per_episode if isolated else {})
    failed = sum(isolated.failed.values()) if isolated else 0
    if legacy is None or not modern or isolated is None:
        judged = Verdict(
            metric=f"{ERA_COST_METRIC}, isolated",
            target=target,
            measured="not measured",
            verdict="n/a",
            how="isolated episodes of both eras",
        )
    else:
        ratio = legacy / modern
        judged = Verdict(
            metric=f"{ERA_COST_METRIC}, isolated",
            target=target,
            measured=f"{ratio:.2f}x ({legacy:.2f} vs {modern:.2f} ms)" + (f"; {failed} failed" if failed else ""),
            verdict="pass" if ratio <= ERA_COST_TARGET and not failed else "fail",
            how=f"the farm process's CPU over {isolated.rounds} blocks of {isolated.episodes_per_block} episodes per "
            "era, one at a time, the eras alternating (book + list + close, each its own MCP client), per episode",
        )
    legacy, modern = _by_era({run.era: run.server_cpu_ms_per_episode for run in runs})
    concurrent = Verdict(
        metric=f"{ERA_COST_METRIC}, concurrent",
        target="reported, not judged (issue 31 judges the isolated episode)",
        measured=f"{legacy / modern:.2f}x ({legacy:.2f} vs {modern:.2f} ms)"
        if legacy is not None and modern
        else "not measured",
        verdict="n/a",
        how="the farm process's CPU over the concurrent-sessions runs (the same episode in each era), per episode",
    )
    return [judged, concurrent]


def _by_era(ms: dict[str, float]) -> tuple[float | None, float | None]:
    """(2025 era, 2026 era) from figures keyed by era names ("2025-11-25 (...)", "2026-07-28 (...)")."""
    by_year = {era[:4]: value for era, value in ms.items()}
    return by_year.get("2025"), by_year.get("2026")


def verdicts(report: BenchReport) -> list[Verdict]:
    calls, floor = report.call_ms_p50, report.sdk_floor_ms_p50
    sessions = min(report.concurrent_sessions_detail, key=lambda r: r.completed)
    leaks = sum(r.leaks for r in report.concurrent_sessions_detail)

    def latency(key: str, budget: float, relative: bool = False) -> Verdict:
        """A call's p50 judged by its overhead over the SDK floor: `budget` ms more, or `budget` times."""
        measured, anchor = calls[key], floor[key]
        if relative:
            target, ok = f"<= {budget}x the SDK floor", measured <= budget * anchor
        else:
            target, ok = f"<= {budget} ms over the SDK floor", measured - anchor <= budget
        return Verdict(
            metric=f"tool call p50, {key}",
            target=target,
            measured=(
                f"{measured:.2f} ms: {measured - anchor:+.2f} ms, {measured / anchor:.2f}x over the floor "
                f"{anchor:.2f} ms"
            ),
            verdict="pass" if ok else "fail",
            how=(
                f"{REFERENCE}.get_slot in one episode, timed in blocks alternating with the floor: an echo tool on "
                "the bare SDK"
            ),
        )

    return [
        Verdict(
            metric="episode reset (fork the seed state)",
            target="<= 0.1 ms",
            measured=f"{report.reset_ms_p50:.4f} ms (backup API: {report.reset_backup_api_ms_p50:.4f} ms)",
            verdict="pass" if report.reset_ms_p50 <= 0.1 else "fail",
            how=f"EpisodeStore.fork() of {REFERENCE}, p50",
        ),
        Verdict(
            metric="episode reset to the seed, over stdio",
            target="<= 2 ms",
            measured=f"{report.reset_stdio_ms_p50:.2f} ms",
            verdict="pass" if report.reset_stdio_ms_p50 <= 2 else "fail",
            how=f"`envfarm/episode/reset` on a {REFERENCE} episode over stdio, p50, interleaved with the calls",
        ),
        latency("inprocess", 0.2),
        latency("stdio", 0.8, relative=True),
        latency("http", 0.3),
        latency("http_legacy", 0.3),
        Verdict(
            metric="isolated episodes per second, in-process",
            target=">= 200 /s",
            measured=", ".join(f"{k}: {v:.0f}/s" for k, v in report.isolated_episodes_per_s.items()),
            verdict="pass" if report.isolated_episodes_per_s.get("memory", 0) >= 200 else "fail",
            how=f"reset + 5 calls (3 reads, a booking, a list) + close on its own {REFERENCE} episode, 16 at a time; "
            "floor_memory: the same seven requests on the bare SDK (an echo tool, a control plane doing nothing)",
        ),
        Verdict(
            metric="scored rollouts per second (offline policy), in-process",
            target=">= 200 /s",
            measured=f"{report.episodes_per_s:.0f}/s ({report.episodes_detail.calls_per_episode} calls per episode)",
            verdict="pass" if report.episodes_per_s >= 200 else "fail",
            how=(
                f"{report.episodes_detail.episodes} rollouts of the heuristic policy and the scripted user over "
                f"{report.episodes_detail.tasks} synthesized {REFERENCE} tasks, each scored, "
                f"{report.episodes_detail.concurrency} at a time"
            ),
        ),
        Verdict(
            metric="farm start (every server answers tools/list)",
            target="<= 1.5 s",
            measured=f"{report.farm_start_s:.2f} s ({len(report.servers)} servers)",
            verdict="pass" if report.farm_start_s <= 1.5 else "fail",
            how="`envfarm serve --all` subprocess, from spawn to the last tools/list",
        ),
        Verdict(
            metric="cold start of one stdio server (spawn to first tools/list)",
            target="<= 1.1x the bare SDK echo server",
            measured=(
                f"{report.cold_start.ours_s_p50 * 1000:.0f} ms, {report.cold_start.ratio:.2f}x the floor "
                f"{report.cold_start.floor_s_p50 * 1000:.0f} ms (CPU: {report.cold_start.cpu_ratio:.2f}x)"
            ),
            verdict="pass" if report.cold_start.ratio <= 1.1 else "fail",
            how=f"`{' '.join(report.cold_start.command[1:])}` and an echo server on the bare SDK, "
            f"{report.cold_start.rounds} alternating rounds, p50",
        ),
        Verdict(
            metric="farm start growth per added server",
            target="sub-linear (less per server than the smallest farm's average)",
            measured=", ".join(
                f"{n} servers: {s:.2f} s ({c:.2f} s CPU)"
                for n, s, c in zip(
                    report.farm_growth.servers, report.farm_growth.seconds, report.farm_growth.cpu_seconds
                )
            )
            + f"; {report.farm_growth.ms_per_added_server:.1f} ms per added server",
            verdict="pass"
            if report.farm_growth.ms_per_added_server
            < report.farm_growth.seconds[0] * 1000 / report.farm_growth.servers[0]
            else "fail",
            how="`envfarm serve --all` on the farm and on a synthetic farm of the same servers copied under new names",
        ),
        Verdict(
            metric="farm memory (RSS, ready)",
            target="<= 300 MB",
            measured=f"{report.farm_rss_mb:.0f} MB",
            verdict="pass" if report.farm_rss_mb <= 300 else "fail",
            how="VmRSS of the serve process from /proc",
        ),
        Verdict(
            metric="concurrent isolated HTTP sessions, zero leaks",
            target=">= 1000, 0 leaks",
            measured=f"{report.concurrent_sessions} of {sessions.sessions}, {leaks} leaks (worst era: {sessions.era})",
            verdict="n/a" if report.quick else "pass" if report.concurrent_sessions >= 1000 and leaks == 0 else "fail",
            how="book the same slot in every episode, wait for all, read back; both protocol eras",
        ),
        *era_cost(report.isolated_eras, report.concurrent_sessions_detail),
        Verdict(
            metric="build + verify the whole built-in farm",
            target="<= 60 s",
            measured=f"{report.build_all_s:.1f} s" if report.build_all_s is not None else "not measured",
            verdict="n/a"
            if report.build_all_s is None or report.quick
            else "pass"
            if report.build_all_s <= 60
            else "fail",
            how=report.build_all_detail,
        ),
        *_workers_verdict(report),
    ]


def _workers_verdict(report: BenchReport) -> list[Verdict]:
    """`rollout --workers 2` keeps two cores busy, scores unchanged (judged where the machine has 2 cores)."""
    bench = report.workers
    if bench is None:
        return []
    judged = not report.quick and report.machine.cpu_count >= 2
    ok = bench.cores["2"] >= 1.6 and bench.same_scores
    return [
        Verdict(
            metric=(
                f"rollout --workers 2, {bench.runs[0].tasks} tasks x {bench.runs[0].episodes // bench.runs[0].tasks}"
            ),
            target=">= 1.6 cores used, the one-worker scores",
            measured=f"{bench.cores['2']:.2f} cores ({bench.cores['1']:.2f} with 1 worker), {bench.speedup:.2f}x "
            f"faster ({bench.wall_s['1']:.2f} s / {bench.wall_s['2']:.2f} s), scores "
            + ("identical" if bench.same_scores else "DIFFER")
            + f"; load {bench.load_average[0]:.1f}",
            verdict=("pass" if ok else "fail") if judged else "n/a",
            how=f"CPU of every process of the run (the command, its fork server, the workers) over wall, median of "
            f"{bench.rounds} interleaved rounds",
        )
    ]


def render_markdown(report: BenchReport) -> str:
    m = report.machine
    lines = [
        "# envfarm benchmark",
        "",
        f"Command: `{report.command}`{' (quick smoke run: small sizes, counts not judged)' if report.quick else ''}",
        "",
        (
            f"Machine: {m.platform}, Python {m.python}, {m.cpu_count} CPUs ({m.cpu_model}), {m.memory_mb} MB RAM, "
            f"mcp {m.mcp}."
        ),
        f"Farm: {report.farm} ({len(report.servers)} servers: {', '.join(report.servers)}).",
        "",
        "| metric | target | measured | verdict | how |",
        "|---|---|---|---|---|",
        *(f"| {v.metric} | {v.target} | {v.measured} | {v.verdict} | {v.how} |" for v in report.targets),
        "",
        "## Concurrent sessions",
        "",
        "| era | sessions | completed | leaks | errors | seconds | server CPU per episode | server RSS after |",
        "|---|---|---|---|---|---|---|---|",
        *(
            f"| {r.era} | {r.sessions} | {r.completed} | {r.leaks} | {r.errors} | {r.seconds} "
            f"| {r.server_cpu_ms_per_episode} ms | {r.server_rss_mb_after} MB |"
            for r in report.concurrent_sessions_detail
        ),
        *(f"\nError sample ({r.era}): `{e}`" for r in report.concurrent_sessions_detail for e in r.error_samples[:1]),
        "",
        *(_isolated_eras_section(report.isolated_eras) if report.isolated_eras else []),
        *(_peer_section(report.peer) if report.peer else []),
        *(_workers_section(report.workers) if report.workers else []),
    ]
    return "\n".join(lines)


def _isolated_eras_section(isolated: IsolatedEras) -> list[str]:
    return [
        "## Isolated episodes by era",
        "",
        f"{isolated.rounds} blocks of {isolated.episodes_per_block} episodes per era, one at a time, the eras "
        f"alternating, {isolated.seconds} s in all.",
        "",
        "| era | server CPU per episode | failed |",
        "|---|---|---|",
        *(
            f"| {era} | {ms} ms | {isolated.failed.get(era, 0)} |"
            for era, ms in isolated.server_cpu_ms_per_episode.items()
        ),
        "",
    ]


def _workers_section(bench: WorkersBench) -> list[str]:
    runs = "".join(
        f"| {r.workers} | {r.tasks} | {r.episodes} | {r.wall_s} | {r.cpu_s} | {r.cores:.2f} | {r.command_cpu_s} "
        f"| {r.fork_server_cpu_s:.2f} | {r.workers_cpu_s} ({', '.join(f'{c:.2f}' for c in r.worker_cpu_s)}) "
        f"| {', '.join(f'{p:.0f}' for p in r.worker_pss_mb)} |\n"
        for r in bench.runs
    )
    projected = "".join(
        f"| {p.cores} | {p.workers} | {p.episodes_per_s} | {p.bound} | {p.wall_s} | {p.memory_mb} |\n"
        for p in bench.projection
    )
    return [
        "## Every core of one machine",
        "",
        *(f"`{c}`" + ("  " if i < len(bench.commands) - 1 else "") for i, c in enumerate(bench.commands)),
        "",
        (
            f"Load average {bench.load_average[0]:.1f} before, {bench.load_average[1]:.1f} after. Per added episode: "
            f"{bench.in_process_ms_per_episode} ms of CPU in-process, {bench.worker_ms_per_episode} ms in a worker, "
            f"{bench.command_ms_per_episode} ms in the command beside 2 workers. A worker's start-up: "
            f"{bench.worker_startup_cpu_s} s of CPU (fork, build its servers, first calls); "
            "the fork server's one import "
            f"{bench.fork_server_cpu_s} s; a worker's PSS {bench.worker_pss_mb} MB at its largest. Two workers "
            + (
                f"finish first from {bench.break_even_episodes:g} episodes."
                if bench.break_even_episodes is not None
                else "never finished first here."
            )
        ),
        "",
        (
            "| workers | tasks | episodes | wall s | CPU s | cores | command CPU s | fork server CPU s | workers CPU s "
            "| worker PSS MB |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
        runs,
        "| cores | workers | episodes/s | bound by | wall s (these episodes) | memory MB |",
        "|---|---|---|---|---|---|",
        projected,
        "Assumptions: " + "; ".join(bench.assumptions) + ".",
        "",
    ]


def _peer_section(peer: PeerComparison) -> list[str]:
    rows = [
        ("cold start to first tools/list (s)", peer.cold_start_s_p50, "cold_start"),
        (
            f"read call p50 (ms): {peer.read_tool['ours']} / {peer.read_tool['peer']}",
            peer.read_call_ms_p50,
            "read_call",
        ),
        ("isolated reset p50 (ms)", peer.isolated_reset_ms_p50, "isolated_reset"),
        ("isolated episodes per second (reset + 5 reads)", peer.isolated_episodes_per_s, "isolated_episodes_per_s"),
    ]
    log = f" Both servers' stderr: `{peer.log}`." if peer.log else ""
    how = "over stdio through the same client, in alternating blocks (cold starts: who goes first alternates by round)"
    return [
        "## Side by side with the peer",
        "",
        f"Peer: `{shlex.join(peer.peer)}`, {how}.{log}",
        "",
        "| figure | ours | peer | ours / peer |",
        "|---|---|---|---|",
        *(f"| {name} | {values['ours']} | {values['peer']} | {peer.ratios[key]} |" for name, values, key in rows),
        "",
    ]
