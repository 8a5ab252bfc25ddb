"""Rollouts on every core of one machine: `envfarm rollout|run --workers N` (Ray stays the multi-machine engine).

`ProcessBackend` is a `envfarm.clients.rollout.Backend` that runs N worker processes, each holding its own copy of
every server the tasks touch (their distractor tools' servers included, `task_servers`), so any worker can
run any episode and a tool call never leaves its process. Episodes are handed out one at a time, up to
`concurrency` in flight per worker, so a worker that draws long episodes does not hold the others back;
each worker runs the same `Rollout` loop and scorer as the local backend, and the parent puts the scored
trajectories back in task order, then attempt: the output is the one-worker output. `ProcessBackend.lines`
is the same run for a caller that only writes and summarizes (`envfarm rollout`): each worker also writes
its episodes' JSONL lines, and the parent files them in order instead of unpickling whole trajectories.

Workers come from the standard library's `forkserver`: a fresh interpreter imports the driver and the
server runtime once, then forks each worker from that warm copy. Forking this process instead would
copy a running event loop, open MCP sessions and SQLite handles, and any thread's held locks.

Failures: a worker that dies (killed, crashed, out of memory) is noticed when its result pipe closes; its
episodes in flight come back as `server_error` trajectories naming the worker, the rest of the run goes on
on the live workers, and when none is left every episode still queued fails the same way: never a hang.
An exception raised by the rollout code itself is a bug, raised here as in the local backend.
"""

from __future__ import annotations

import asyncio
import gc
import os
import pickle
import signal
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Self

import anyio
from pydantic import BaseModel, Field

from envfarm.clients.connect import Connections, proc_rss_kb
from envfarm.clients.fork_server import fork_server
from envfarm.clients.policies import Policy
from envfarm.clients.procfs import pss_kb
from envfarm.clients.ray_backend import HostSpec
from envfarm.clients.rollout import Progress, Rollout, RolloutOptions, Scorer, trajectory_id
from envfarm.clients.tasks import Task, jsonl_line
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import UserSimulator

STOP_TIMEOUT_S = 10.0


class WorkerError(RuntimeError):
    """A worker could not start, or the rollout code raised in one (a bug, as it would be in-process)."""


class WorkerInfo(BaseModel):
    pid: int
    startup_s: float = Field(description="from starting the process to its servers answering")
    startup_cpu_s: float = Field(description="CPU time the worker spent to get there (building its servers)")
    rss_mb: float = Field(description="resident memory once ready")
    pss_mb: float = Field(description="proportional share: pages shared with the fork server counted once")


class WorkerStats(BaseModel):
    """What the report says about the worker side of a run."""

    workers: int
    episodes: int = 0
    failed_episodes: int = Field(default=0, description="episodes lost with a dead worker, as server_error")
    lost_workers: int = 0
    hosts: list[WorkerInfo] = Field(default_factory=list)


# ---------------------------------------------------------------- the worker process


@dataclass
class _Plan:
    """What every episode of one backend call shares, the tasks included; sent once per worker per call,
    so a job is three numbers."""

    tasks: list[Task]
    policy: Policy
    user: UserSimulator
    options: RolloutOptions
    scorer: Scorer | None
    lines: bool = False


@dataclass(frozen=True)
class Written:
    """One episode as a worker wrote it (`ProcessBackend.lines`): its scored trajectory's JSONL line, as
    `write_jsonl` writes it, and the trajectory less what no summary reads (`summary_only`)."""

    line: str
    trajectory: Trajectory


def summary_only(trajectory: Trajectory) -> Trajectory:
    """The trajectory less its messages, tools, final state and task (a twentieth of its bytes): enough for
    `summarize`, `failed_endpoint` and the stop reasons, not for export. Not validated: `task` is None until
    the parent puts its own task object back."""
    return trajectory.model_copy(
        update={"messages": [], "tools": [], "tool_map": {}, "write_tools": [], "final_state": {}, "task": None}
    )


def serve(jobs: Connection, results: Connection, spec: HostSpec) -> None:
    """A worker's entry point (in the forked process): connect the servers, then run episodes until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops us
    # What the fork server imported is never garbage: keep the collector off it, so that it neither walks
    # those objects nor writes to their pages (each write copies a shared page into this worker). Measured
    # on 1,000 episodes at load 10-16: the workers' CPU 11.2-12.1 -> 10.5-10.9 s, PSS 135-140 -> 120 MB.
    gc.freeze()
    try:
        anyio.run(_host, jobs, results, spec)
    except Exception as exc:  # noqa: BLE001 - any start-up failure: one line for the parent to say
        with suppress(OSError):
            results.send(("fatal", f"{type(exc).__name__}: {exc}"))
        raise SystemExit(1) from None


async def _host(jobs: Connection, results: Connection, spec: HostSpec) -> None:
    lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        with lock:
            results.send(message)

    async with Connections(spec.targets(), timeout=spec.timeout) as connections:
        for server in spec.servers:
            await connections.tools(server)
        pid = os.getpid()
        send(("ready", pid, proc_rss_kb(pid), pss_kb(pid), time.process_time()))
        plans: dict[str, _Plan] = {}

        async def one(plan_id: str, index: int, number: int, attempt: int) -> None:
            plan = plans[plan_id]
            try:
                trajectory = await Rollout(
                    plan.tasks[number], plan.policy, plan.user, connections, attempt=attempt, options=plan.options
                ).run()
                if plan.scorer is not None:
                    trajectory = await plan.scorer(trajectory)
                message: tuple[Any, ...]
                if plan.lines:
                    # The JSONL line here, on this worker's core; the parent only files it in its place.
                    message = ("line", plan_id, index, jsonl_line(trajectory), summary_only(trajectory))
                else:
                    # Without its task: the parent puts its own back (a fifth of the bytes it would unpickle).
                    message = ("done", plan_id, index, trajectory.model_copy(update={"task": None}))
            except Exception:  # noqa: BLE001 - a bug in the rollout code: the parent raises it
                message = ("error", plan_id, index, traceback.format_exc())
            send(message)

        async with anyio.create_task_group() as group:
            while True:
                try:
                    message = await anyio.to_thread.run_sync(jobs.recv)
                except EOFError:
                    break  # the parent is gone
                if message[0] == "plan":
                    plans[message[1]] = pickle.loads(message[2])
                elif message[0] == "job":
                    _, plan_id, index, number, attempt = message
                    group.start_soon(one, plan_id, index, number, attempt)
                elif message[0] == "forget":
                    plans.pop(message[1], None)
                else:
                    break
            group.cancel_scope.cancel()


# ---------------------------------------------------------------- the parent


@dataclass
class _Worker:
    number: int
    process: BaseProcess
    jobs: Connection
    results: Connection
    started: float
    heard: float = 0.0  # when it last answered, or was handed an episode while idle
    stalled_s: float | None = None  # set when killed for saying nothing that long
    ready: bool = False
    alive: bool = True
    in_flight: dict[int, tuple[Task, int]] = field(default_factory=dict)
    # Episodes of the tasks it took, not yet handed to it: (result index, (task number, attempt)).
    backlog: deque[tuple[int, tuple[int, int]]] = field(default_factory=deque)
    plans: set[str] = field(default_factory=set)

    def why_gone(self) -> str:
        self.process.join(timeout=2)
        code = self.process.exitcode
        if self.stalled_s is not None:
            return f"said nothing for {self.stalled_s:g} s with episodes in flight and was killed"
        if code is None:
            return "stopped answering"
        if code < 0:
            return f"was killed by {signal.Signals(-code).name}"
        return f"exited with status {code}"


class ProcessBackend:
    """`envfarm.clients.rollout.Backend` on worker processes of this machine. `async with ProcessBackend(spec, n)`
    starts the workers (they connect their servers while the caller does other work: the first call waits
    for them) and stops them on exit; no worker outlives the block."""

    def __init__(self, spec: HostSpec, workers: int, *, stall_s: float | None = None) -> None:
        """`stall_s`: a worker with episodes in flight that says nothing for this long is stuck (its event
        loop blocked, which no episode limit can end) and is killed, its episodes failed. Default: an
        episode's wall time, two request timeouts (final state) and two minutes for scoring."""
        if workers < 1:
            raise ValueError(f"--workers must be at least 1, not {workers}")
        self.spec = spec
        self.stats = WorkerStats(workers=workers)
        self._n = workers
        self._stall_s = stall_s
        self._workers: list[_Worker] = []
        self._events: asyncio.Queue[tuple[_Worker, tuple[Any, ...], float]] | None = None

    async def __aenter__(self) -> Self:
        context = fork_server()
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[_Worker, tuple[Any, ...], float]] = asyncio.Queue()
        self._events = events
        try:
            for number in range(self._n):
                jobs_out, jobs_in = context.Pipe(duplex=False)
                results_out, results_in = context.Pipe(duplex=False)
                process = context.Process(
                    target=serve, args=(jobs_out, results_in, self.spec), name=f"envfarm-worker-{number}", daemon=True
                )
                started = time.perf_counter()
                process.start()
                jobs_out.close()
                results_in.close()
                worker = _Worker(number, process, jobs_in, results_out, started)
                self._workers.append(worker)
                threading.Thread(
                    target=self._read, args=(worker, loop, events), name=f"envfarm-worker-{number}-reader", daemon=True
                ).start()
        except BaseException:
            await self.__aexit__()
            raise
        return self

    @staticmethod
    def _read(worker: _Worker, loop: asyncio.AbstractEventLoop, events: asyncio.Queue[Any]) -> None:
        """A worker's results, as events on the loop; an end-of-file (the worker died or stopped) last."""
        while True:
            try:
                message = worker.results.recv()
            except (EOFError, OSError):
                message = ("gone",)
            with suppress(RuntimeError):  # the loop closed: nobody is listening
                loop.call_soon_threadsafe(events.put_nowait, (worker, message, time.perf_counter()))
            if message[0] in ("gone", "fatal"):
                return

    async def __aexit__(self, *exc: object) -> None:
        for worker in self._workers:
            with suppress(OSError):
                worker.jobs.send(("stop",))

        def reap() -> None:
            deadline = time.monotonic() + STOP_TIMEOUT_S
            for worker in self._workers:
                worker.process.join(timeout=max(deadline - time.monotonic(), 0.1))
                if worker.process.is_alive():
                    worker.process.kill()
                    worker.process.join(timeout=5)

        await anyio.to_thread.run_sync(reap)
        for worker in self._workers:
            worker.jobs.close()
            worker.results.close()
        self._workers = []

    async def _next(self) -> tuple[_Worker, tuple[Any, ...], float]:
        assert self._events is not None, "use `async with ProcessBackend(...)`"
        return await self._events.get()

    async def _wait_ready(self) -> None:
        """Until every worker is up (its servers connected): a worker that cannot start is an error."""
        while any(w.alive and not w.ready for w in self._workers):
            worker, message, at = await self._next()
            if message[0] == "ready":
                _, pid, rss, pss, cpu = message
                worker.ready = True
                self.stats.hosts.append(
                    WorkerInfo(
                        pid=pid,
                        startup_s=round(at - worker.started, 3),
                        startup_cpu_s=round(cpu, 3),
                        rss_mb=round(rss / 1024, 1),
                        pss_mb=round(pss / 1024, 1),
                    )
                )
            else:
                worker.alive = False
                detail = message[1] if message[0] == "fatal" else f"worker {worker.number} {worker.why_gone()}"
                raise WorkerError(f"a rollout worker could not start: {detail.strip()}")

    def _kill_stuck(self, stall: float) -> None:
        now = time.monotonic()
        for worker in self._workers:
            if worker.alive and worker.in_flight and now - worker.heard > stall:
                worker.stalled_s = stall
                worker.process.kill()

    async def __call__(
        self,
        tasks: Sequence[Task],
        policy: Policy,
        user: UserSimulator,
        options: RolloutOptions,
        *,
        scorer: Scorer | None = None,
        progress: Progress | None = None,
    ) -> list[Trajectory]:
        """k rollouts of every task on the workers, `options.concurrency` at a time per worker; in task order."""
        return await self._roll(tasks, policy, user, options, scorer, progress, lines=False)

    async def lines(
        self,
        tasks: Sequence[Task],
        policy: Policy,
        user: UserSimulator,
        options: RolloutOptions,
        *,
        scorer: Scorer | None = None,
        progress: Progress | None = None,
    ) -> list[Written]:
        """As calling the backend, but each worker writes its episodes' JSONL lines (and their summaries) itself:
        this process only files them in task order. For a caller that writes the trajectories and summarizes
        them (`envfarm rollout`): with many workers, unpickling every trajectory here would make this process
        the bottleneck (~1.6 ms of its CPU per episode against ~10 ms of a worker's)."""
        return await self._roll(tasks, policy, user, options, scorer, progress, lines=True)

    async def _roll(
        self,
        tasks: Sequence[Task],
        policy: Policy,
        user: UserSimulator,
        options: RolloutOptions,
        scorer: Scorer | None,
        progress: Progress | None,
        *,
        lines: bool,
    ) -> list[Any]:
        await self._wait_ready()
        pending = deque(enumerate((number, attempt) for number in range(len(tasks)) for attempt in range(options.k)))
        results: list[Any] = [None] * len(pending)
        plan_id = uuid.uuid4().hex
        plan = pickle.dumps(_Plan(list(tasks), policy, user, options, scorer, lines))
        done = 0

        async def finish(index: int, trajectory: Trajectory | Written) -> None:
            nonlocal done
            if lines and isinstance(trajectory, Trajectory):  # failed here, not on a worker
                summary = summary_only(trajectory)
                summary.task = trajectory.task
                trajectory = Written(jsonl_line(trajectory), summary)
            results[index] = trajectory
            done += 1
            self.stats.episodes += 1
            if progress is not None:
                progress(done, len(results))

        async def fail(index: int, task: Task, attempt: int, detail: str) -> None:
            self.stats.failed_episodes += 1
            trajectory = Trajectory(
                id=trajectory_id(task, policy.name, options.calibrated, attempt),
                task_id=task.id,
                policy=policy.name,
                user=user.name,
                attempt=attempt,
                calibrated=options.calibrated,
                messages=[],
                tools=[],
                stop_reason="server_error",
                stop_detail=detail,
                task=task,
            )
            await finish(index, await scorer(trajectory) if scorer is not None else trajectory)

        async def lose(worker: _Worker) -> None:
            if not worker.alive:
                return
            worker.alive = False
            self.stats.lost_workers += 1
            pending.extendleft(reversed(worker.backlog))  # not started: the live workers take them
            worker.backlog.clear()
            detail = f"rollout worker {worker.number} (pid {worker.process.pid}) {worker.why_gone()}"
            for index, (task, attempt) in sorted(worker.in_flight.items()):
                await fail(index, task, attempt, f"{detail} with this episode in flight")
            worker.in_flight.clear()

        def take(worker: _Worker) -> tuple[int, tuple[int, int]] | None:
            """The worker's next episode: of a task it already took, else every attempt of the next task (a
            task's first episode in a process pays for its cold paths: run its attempts where those are warm),
            else, at the tail, one from the worker with the longest backlog."""
            if not worker.backlog:
                if pending:
                    number = pending[0][1][0]
                    while pending and pending[0][1][0] == number:
                        worker.backlog.append(pending.popleft())
                else:
                    donor = max((w for w in self._workers if w.alive), key=lambda w: len(w.backlog))
                    if not donor.backlog:
                        return None
                    worker.backlog.append(donor.backlog.pop())
            return worker.backlog.popleft()

        async def dispatch() -> None:
            """One episode per worker with room, round after round: the first worker does not take them all."""
            while True:
                room = [w for w in self._workers if w.alive and len(w.in_flight) < options.concurrency]
                handed = False
                for worker in room:
                    if not worker.alive:  # lost during this round
                        continue
                    episode = take(worker)
                    if episode is None:
                        break
                    handed = True
                    index, (number, attempt) = episode
                    if not worker.in_flight:
                        worker.heard = time.monotonic()
                    worker.in_flight[index] = (tasks[number], attempt)
                    try:
                        if plan_id not in worker.plans:
                            worker.jobs.send(("plan", plan_id, plan))
                            worker.plans.add(plan_id)
                        worker.jobs.send(("job", plan_id, index, number, attempt))
                    except OSError:
                        await lose(worker)
                if not handed:
                    break
            if pending and not any(w.alive for w in self._workers):
                while pending:
                    index, (number, attempt) = pending.popleft()
                    await fail(index, tasks[number], attempt, "every rollout worker died before this episode started")

        try:
            await dispatch()
            stall = self._stall_s or options.limits.wall_time_s + 2 * options.limits.call_timeout_s + 120
            while done < len(results):
                try:
                    worker, message, _ = await asyncio.wait_for(self._next(), timeout=min(stall / 4, 5.0))
                except TimeoutError:
                    self._kill_stuck(stall)  # its reader then reports it gone
                    continue
                worker.heard = time.monotonic()
                if message[0] in ("done", "line", "error") and message[1] != plan_id:
                    continue  # an episode of an earlier call that raised
                if message[0] == "line":
                    _, _, index, line, summary = message
                    summary.task = worker.in_flight.pop(index)[0]
                    await finish(index, Written(line, summary))
                elif message[0] == "done":
                    trajectory = message[3]
                    # The caller's own task object, as in-process: what it later fills in (the measured
                    # difficulty, in `envfarm run`) shows in the trajectory too, byte for byte.
                    trajectory.task = worker.in_flight.pop(message[2])[0]
                    await finish(message[2], trajectory)
                elif message[0] == "error":
                    task, attempt = worker.in_flight.pop(message[2])
                    raise WorkerError(f"the rollout of task {task.id} (attempt {attempt}) raised:\n{message[3]}")
                else:  # "gone" or "fatal": the worker is dead
                    await lose(worker)
                await dispatch()
        finally:
            for worker in self._workers:
                worker.in_flight.clear()  # empty unless this call raised: its stragglers are ignored
                worker.backlog.clear()
                if worker.alive and plan_id in worker.plans:
                    with suppress(OSError):
                        worker.jobs.send(("forget", plan_id))
                    worker.plans.discard(plan_id)
        return [t for t in results if t is not None]
