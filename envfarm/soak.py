"""`envfarm soak`: the driver's commands over many seeds, each seed in its own child process.

A crash that depends on the seed (or on memory layout) hides from tests that exercise two seeds:
the SQLite dangling schema pointer of issue 25 killed `envfarm tasks` on about half of all seeds.
The soak runs `envfarm tasks` and `envfarm rollout` (oracle and heuristic policies), optionally
`envfarm run`, for every seed over every server, each seed in a child started as `python -X
faulthandler`, so that a native crash prints the child's Python stack before it dies. A seed that
outlives its timeout gets SIGABRT, which faulthandler also answers with the stack of every thread:
the stack of a hang. Each seed ends as one of

- ok: every step exited 0;
- error: a step exited non-zero with its own message (e.g. no task could be synthesized);
- traceback: a step raised an exception nobody caught (a bug: users must never see a traceback);
- crash: the child died by a signal (SIGSEGV, SIGABRT, ...), with faulthandler's stack;
- hang: the child outlived its timeout, with the stack it was stuck in.

The report is JSON (`--out`) plus a markdown page beside it; the exit status is 1 when any seed
crashed, hung or showed a traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

STEPS = ("tasks", "oracle", "heuristic", "run")
DEFAULT_STEPS = ("tasks", "oracle", "heuristic")
ROLLOUTS = ("oracle", "heuristic")  # read what the `tasks` step wrote
Outcome = Literal["ok", "error", "traceback", "crash", "hang"]
FAILING: tuple[Outcome, ...] = ("crash", "hang", "traceback")
# After SIGABRT, faulthandler needs a moment to write every thread's stack before the group is killed.
ABORT_GRACE_S = 5.0
STACK_CHARS = 12_000
TAIL_CHARS = 2_000
STEP_LOG = "steps.jsonl"
# What each child runs: `run_child` with the command line's `main` (named, not imported: the command line imports
# this module for `envfarm soak`, and this module must not import it back).
CHILD_MODULE = "envfarm.cli.soak_child"


class StepResult(BaseModel):
    step: str
    exit_code: int | None = Field(description="the command's exit status; None: it raised, or never finished")
    seconds: float
    traceback: str | None = Field(default=None, description="an exception the command did not catch")


class SeedResult(BaseModel):
    seed: int
    outcome: Outcome
    seconds: float
    steps: list[StepResult] = Field(description="the steps that finished, in order")
    failed_step: str | None = Field(default=None, description="the step that errored, raised, crashed or hung")
    signal: str | None = Field(default=None, description="the signal that ended the child (crash), e.g. SIGSEGV")
    stack: str | None = Field(default=None, description="faulthandler's dump: the Python stack at the crash or hang")
    detail: str | None = Field(default=None, description="the end of the child's stderr, for an error")


class SoakReport(BaseModel):
    command: str
    seeds: list[SeedResult]
    steps: list[str]
    n: int = Field(description="tasks per seed (`envfarm tasks --n`)")
    timeout_s: float = Field(description="per seed")
    jobs: int
    seconds: float
    outcomes: dict[str, int] = Field(description="seeds per outcome")

    @property
    def ok(self) -> bool:
        return not any(self.outcomes.get(o, 0) for o in FAILING)


def parse_seeds(text: str) -> list[int]:
    """`0:100` (start:stop, stop excluded), `3,7,9`, or `5` -> seeds; ValueError naming what is wrong."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            if ":" in part:
                start, _, stop = part.partition(":")
                if int(stop) <= int(start):
                    raise ValueError(f"{part!r} is empty (stop must exceed start)")
                seeds.extend(range(int(start), int(stop)))
            else:
                seeds.append(int(part))
        except ValueError as exc:
            detail = str(exc) if "empty" in str(exc) else "expected START:STOP, a comma-separated list, or one seed"
            raise ValueError(f"--seeds {text!r}: {detail}") from None
    return list(dict.fromkeys(seeds))


def step_argv(step: str, seed: int, n: int, workdir: Path, farm: Path | None) -> list[str]:
    """The `envfarm` arguments of one step of one seed; rollouts read what `tasks` wrote."""
    prefix = ["--farm", str(farm)] if farm is not None else []
    tasks = workdir / "tasks.jsonl"
    if step == "tasks":
        return [*prefix, "tasks", "--n", str(n), "--seed", str(seed), "--out", str(tasks)]
    if step in ROLLOUTS:
        out = workdir / f"{step}.trajectories.jsonl"
        return [*prefix, "rollout", str(tasks), "--policy", step, "--out", str(out)]
    if step == "run":  # the main job with its own defaults, as a user runs it
        return [*prefix, "run", "--seed", str(seed), "--out", str(workdir / "runs")]
    raise ValueError(f"unknown soak step {step!r}; known: {', '.join(STEPS)}")


def child_command(seed: int, n: int, steps: Sequence[str], workdir: Path, farm: Path | None) -> list[str]:
    """The child that runs one seed's steps in one interpreter, faulthandler on from its first line."""
    command = [sys.executable, "-X", "faulthandler", "-m", CHILD_MODULE, str(seed), str(n), ",".join(steps)]
    return [*command, str(workdir), *([str(farm)] if farm is not None else [])]


def _stack(stderr: str) -> str | None:
    """faulthandler's dump at the end of a child's stderr (from its last 'Fatal Python error')."""
    start = stderr.rfind("Fatal Python error")
    return stderr[start:][:STACK_CHARS] if start >= 0 else None


def _read_steps(workdir: Path) -> list[StepResult]:
    path = workdir / STEP_LOG
    if not path.exists():
        return []
    return [StepResult.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def run_seed(seed: int, command: Sequence[str], workdir: Path, timeout: float, steps: Sequence[str] = ()) -> SeedResult:
    """Run one seed's child (in its own process group) and classify how it ended."""
    started = time.perf_counter()
    stderr_path = workdir / "stderr.txt"
    hung = False
    with open(stderr_path, "wb") as stderr, open(workdir / "stdout.txt", "wb") as stdout:
        child = subprocess.Popen(
            command, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            hung = True
            child.send_signal(signal.SIGABRT)  # faulthandler dumps every thread's stack, then the child dies
            try:
                child.wait(timeout=ABORT_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        finally:
            try:
                os.killpg(child.pid, signal.SIGKILL)  # anything the child started (stdio servers) goes with it
            except ProcessLookupError:
                pass
            child.wait()
    seconds = round(time.perf_counter() - started, 2)
    text = stderr_path.read_text(encoding="utf-8", errors="replace")
    done = _read_steps(workdir)
    pending = next((s for s in steps if s not in {d.step for d in done}), None)
    result = SeedResult(seed=seed, outcome="ok", seconds=seconds, steps=done)
    code = child.returncode
    if hung:
        return result.model_copy(update={"outcome": "hang", "failed_step": pending, "stack": _stack(text)})
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
        update = {"outcome": "crash", "failed_step": pending, "signal": name, "stack": _stack(text)}
        return result.model_copy(update=update)
    raised = next((d for d in done if d.traceback), None)
    if raised is not None:
        return result.model_copy(update={"outcome": "traceback", "failed_step": raised.step})
    failed = next((d for d in done if d.exit_code != 0), None)
    if failed is not None or code != 0:
        update = {"outcome": "error", "failed_step": failed.step if failed else pending, "detail": text[-TAIL_CHARS:]}
        return result.model_copy(update=update)
    return result


def soak(
    seeds: Sequence[int],
    *,
    n: int,
    steps: Sequence[str] = DEFAULT_STEPS,
    timeout: float,
    jobs: int,
    farm: Path | None = None,
    command: str = "",
    progress: Callable[[SeedResult], None] | None = None,
) -> SoakReport:
    """Every seed in its own child, `jobs` at a time, each in a temporary folder removed afterwards."""
    started = time.perf_counter()

    def one(seed: int) -> SeedResult:
        with tempfile.TemporaryDirectory(prefix=f"envfarm-soak-{seed}-") as folder:
            workdir = Path(folder)
            result = run_seed(seed, child_command(seed, n, steps, workdir, farm), workdir, timeout, steps)
        if progress is not None:
            progress(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, seeds))
    return SoakReport(
        command=command,
        seeds=results,
        steps=list(steps),
        n=n,
        timeout_s=timeout,
        jobs=jobs,
        seconds=round(time.perf_counter() - started, 2),
        outcomes=dict(Counter(r.outcome for r in results)),
    )


def render_markdown(report: SoakReport) -> str:
    """A short page: the counts, then each seed that did not end ok with its stack or message."""
    counts = ", ".join(f"{o} {report.outcomes.get(o, 0)}" for o in ("ok", "error", "traceback", "crash", "hang"))
    lines = [
        "# envfarm soak",
        "",
        f"`{report.command}`" if report.command else "",
        "",
        (
            f"{len(report.seeds)} seeds x steps {', '.join(report.steps)} (n={report.n}, timeout "
            f"{report.timeout_s:g} s per seed, {report.jobs} at a time) in {report.seconds:.0f} s: {counts}"
        ),
    ]
    for r in report.seeds:
        if r.outcome == "ok":
            continue
        lines += [
            "",
            f"## seed {r.seed}: {r.outcome} in {r.failed_step or '?'}" + (f" ({r.signal})" if r.signal else ""),
        ]
        text = r.stack or next((s.traceback for s in r.steps if s.traceback), None) or r.detail or "(no output)"
        lines += ["", "```", text.strip(), "```"]
    return "\n".join(lines) + "\n"


def summary_line(result: SeedResult) -> str:
    steps = " ".join(f"{s.step} {s.seconds:.1f}s" for s in result.steps)
    what = f" in {result.failed_step}" if result.outcome != "ok" and result.failed_step else ""
    signal_name = f" ({result.signal})" if result.signal else ""
    return f"seed {result.seed}: {result.outcome}{what}{signal_name} after {result.seconds:.1f} s [{steps}]"


def _leaf_tracebacks(exc: BaseException) -> str:
    """The traceback of each exception inside (nested) groups, not the groups' scaffolding: the
    innermost frames and the `LookupError: ...` line are what a reader needs."""
    if isinstance(exc, BaseExceptionGroup):
        return "\n".join(_leaf_tracebacks(inner) for inner in exc.exceptions)
    return "".join(traceback.format_exception(exc))[-STACK_CHARS:]


def run_child(argv: Sequence[str], main: Callable[[Sequence[str]], int]) -> int:
    """The child: SEED N STEPS WORKDIR [FARM]. Each step is `main` (the command line's, `envfarm.cli.main`) in
    this interpreter; each one that finishes is appended to WORKDIR/steps.jsonl at once, so a crash leaves the
    earlier ones."""
    seed, n, steps, workdir = int(argv[0]), int(argv[1]), argv[2].split(","), Path(argv[3])
    farm = Path(argv[4]) if len(argv) > 4 else None
    worst = 0
    no_tasks = False
    for step in steps:
        if no_tasks and step in ROLLOUTS:
            continue  # the rollouts have no tasks to read; `run` synthesizes its own
        started = time.perf_counter()
        code: int | None
        raised = None
        try:
            code = main(step_argv(step, seed, n, workdir, farm))
        except SystemExit as exc:  # argparse and friends
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001 - the soak records what escaped the command
            code, raised = None, _leaf_tracebacks(exc)
            print(raised, file=sys.stderr, flush=True)
        result = StepResult(
            step=step, exit_code=code, seconds=round(time.perf_counter() - started, 2), traceback=raised
        )
        with open(workdir / STEP_LOG, "a", encoding="utf-8") as log:
            log.write(result.model_dump_json() + "\n")
        worst = worst or (1 if code != 0 else 0)
        no_tasks = no_tasks or (step == "tasks" and code != 0)
    return worst
