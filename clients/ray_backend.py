"""Rollouts on a Ray cluster, the way RL trainers (verl, SkyRL, OpenRLHF) already schedule theirs.

Two things live here, both on one actor class, `FarmHost`: a farm host holds its servers (the built-in
farm in-process, or an `mcpServers` set) and runs rollouts next to them, so a tool call never leaves
its process.

- `RayBackend` is the `envfarm.clients.rollout.Backend` for `envfarm rollout/run --backend ray`: it places
  `workers` farm hosts with Ray (spread over the nodes), shards the episodes across them, streams
  the scored trajectories back as they finish and puts them in task order. A host that dies
  mid-episode is detected (Ray fails its calls); its episodes start again from their seed on another
  host (each attempt is a fresh episode, so a retry cannot see a half-done one), a replacement host is
  started, and both are counted in `RayStats`.
- The trainer-facing handle: `reset(task) -> Observation`, `step(episode, action) -> StepResult`,
  `score(episode) -> Score` on the same actor (and `EnvHandle`, which binds one episode), for a verl or
  SkyRL rollout worker that runs its own model loop. The episode runs the same `Rollout` loop as the
  CLI with the trainer in the policy's seat: same limits, same simulated user, same scoring.

Ray is an optional extra (`pip install "envfarm[ray]"`); this module imports it only when called.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import anyio
from pydantic import BaseModel, Field

from envfarm.clients.connect import DEFAULT_TIMEOUT_S, Connections, ServerConfig, farm_targets, proc_rss_kb
from envfarm.clients.policies import Action, Agent, AgentTool, Policy, ToolCallRequest
from envfarm.clients.rollout import EndEpisode, Limits, Progress, Rollout, RolloutOptions, Scorer, task_servers
from envfarm.clients.scoring import Scorer as DefaultScorer
from envfarm.clients.tasks import Task
from envfarm.clients.trajectory import Score, StopReason, Trajectory
from envfarm.clients.users import ScriptedUser, UserSimulator

INSTALL_HINT = 'the Ray backend needs Ray: pip install "envfarm[ray]"'


def import_ray() -> Any:
    """Ray, or a clear error naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError(INSTALL_HINT) from exc
    return ray


# ---------------------------------------------------------------- contracts


class HostSpec(BaseModel):
    """What one farm host serves: servers of a farm (in-process) or of an `mcpServers` config."""

    servers: list[str] = Field(min_length=1)
    farm: Path | None = Field(default=None, description="a farm root on every node (the installed package's)")
    config: dict[str, ServerConfig] | None = Field(default=None, description="used instead of the farm")
    timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, description="every MCP request")

    def targets(self) -> dict[str, Any]:
        if self.config is not None:
            missing = sorted(set(self.servers) - set(self.config))
            if missing:
                raise LookupError(f"not in the mcpServers config: {', '.join(missing)}")
            return {name: self.config[name] for name in self.servers}
        if self.farm is None:
            raise ValueError("a farm host needs a farm root or an mcpServers config")
        return farm_targets(self.farm, self.servers, "memory")


class RayOptions(BaseModel):
    address: str | None = Field(default=None, description="a running cluster ('auto', 'ray://...'); None: start one")
    workers: int = Field(default=2, ge=1, description="farm hosts (one Ray actor each)")
    cpus_per_worker: float = Field(default=1.0, gt=0)
    replacements: int | None = Field(default=None, ge=0, description="hosts started for lost ones (default: workers)")
    name: str | None = Field(default=None, description="name the hosts, so trainers find them with `named_hosts`")


class RayStats(BaseModel):
    """What the report says about the cluster side of a run."""

    workers: int
    episodes: int = 0
    retried_episodes: int = Field(default=0, description="episode attempts restarted from their seed on another host")
    lost_workers: int = 0
    replaced_workers: int = 0


class HostInfo(BaseModel):
    pid: int
    node: str
    rss_mb: float
    peak_rss_mb: float = Field(description="the process's high-water mark (VmHWM)")
    servers: int


class Observation(BaseModel):
    """What the policy sees when an episode starts: the chat so far (system prompt, the user's opening)
    and the tools, as OpenAI functions."""

    episode: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    done: bool = Field(default=False, description="True when the episode could not start (a server error)")


class StepResult(BaseModel):
    """What follows one action: tool results (`role: tool`) and the user's reply, if any."""

    messages: list[dict[str, Any]]
    done: bool = Field(description="the episode ended (the user is done, or a limit was hit): call score()")
    stop_reason: StopReason | None = None


class ToolCall(BaseModel):
    """One tool call as a trainer parses it from its model's output."""

    name: str
    arguments: str | dict[str, Any] = "{}"
    id: str | None = None

    def request(self, n: int) -> ToolCallRequest:
        raw = self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)
        return ToolCallRequest(id=self.id or f"call_{n}", name=self.name, arguments=raw)


def as_task(task: Task | dict[str, Any] | str) -> Task:
    """A task as a trainer holds it: the model, its dict, or its JSON (a verl row's
    `extra_info.interaction_kwargs.task`)."""
    if isinstance(task, Task):
        return task
    return Task.model_validate_json(task) if isinstance(task, str) else Task.model_validate(task)


def as_action(action: ToolCall | dict[str, Any] | list[Any] | str, n: int) -> Action:
    """A tool call (`{"name", "arguments", "id"}`), several, an OpenAI assistant message, or plain text."""
    if isinstance(action, str):
        return Action(content=action)
    if isinstance(action, ToolCall):
        return Action(tool_calls=[action.request(n)])
    if isinstance(action, list):
        return Action(tool_calls=[ToolCall.model_validate(c).request(n + i) for i, c in enumerate(action)])
    if action.get("role") == "assistant":
        calls = [
            ToolCall(name=c["function"]["name"], arguments=c["function"].get("arguments") or "{}", id=c.get("id"))
            for c in action.get("tool_calls") or []
        ]
        return Action(content=action.get("content"), tool_calls=[c.request(n + i) for i, c in enumerate(calls)])
    return Action(tool_calls=[ToolCall.model_validate(action).request(n)])


# ---------------------------------------------------------------- the trainer in the policy's seat


@dataclass
class _Seat:
    """The agent of a rollout driven from outside: each `act` hands out what is new and waits for the
    trainer's next action (None: the trainer ends the episode)."""

    tools: list[AgentTool] = field(default_factory=list)
    inbox: asyncio.Queue[Action | None] = field(default_factory=asyncio.Queue)
    outbox: asyncio.Queue[list[dict[str, Any]]] = field(default_factory=asyncio.Queue)
    seen: int = 0
    ending: bool = False
    actions: int = 0

    def new(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Messages since the last look, without the trainer's own (it knows what it said)."""
        fresh = [m for m in messages[self.seen :] if m["role"] != "assistant"]
        self.seen = len(messages)
        return fresh

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        fresh = self.new(messages)
        if self.ending:
            raise EndEpisode
        await self.outbox.put(fresh)
        action = await self.inbox.get()
        if action is None:
            raise EndEpisode
        return action


@dataclass
class _TrainerPolicy:
    seat: _Seat
    name: str = "trainer"

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> Agent:
        self.seat.tools = tools
        return self.seat

    async def aclose(self) -> None:
        return None


@dataclass
class _Session:
    seat: _Seat
    run: asyncio.Task[Trajectory]


@dataclass
class _Plan:
    """What every episode of one `RayBackend` call shares; shipped once per host, not per episode."""

    policy: Policy
    user: UserSimulator
    options: RolloutOptions
    scorer: Scorer | None


# ---------------------------------------------------------------- the actor


class FarmHost:
    """A farm host. Made a Ray actor by `start_hosts` (async: its episodes share one event loop); also
    usable as a plain object in-process. Its connections are opened by one long-lived task and closed by
    it on `shutdown` (an MCP client must be closed by the task that entered it)."""

    def __init__(self, spec: HostSpec) -> None:
        self.spec = spec
        self._owner: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[Connections] | None = None
        self._stop: asyncio.Event | None = None
        self._plans: dict[str, _Plan] = {}
        self._sessions: dict[str, _Session] = {}

    async def _connections(self) -> Connections:
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._owner = asyncio.create_task(self._own(self._ready, self._stop))
        return await asyncio.shield(self._ready)

    async def _own(self, ready: asyncio.Future[Connections], stop: asyncio.Event) -> None:
        try:
            async with Connections(self.spec.targets(), timeout=self.spec.timeout) as connections:
                for server in self.spec.servers:
                    await connections.tools(server)
                ready.set_result(connections)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                raise

    async def ready(self) -> HostInfo:
        """Connect every server; where the host runs and what it weighs."""
        await self._connections()
        node = os.uname().nodename
        with suppress(Exception):
            import ray

            node = ray.get_runtime_context().get_node_id()
        pid = os.getpid()
        return HostInfo(
            pid=pid,
            node=node,
            rss_mb=round(proc_rss_kb(pid) / 1024, 1),
            peak_rss_mb=round(proc_rss_kb(pid, "VmHWM") / 1024, 1),
            servers=len(self.spec.servers),
        )

    async def rollout(self, plan_id: str, plan: list[Any], task: Task, attempt: int) -> Trajectory:
        """One scored rollout. `plan` is `[ObjectRef]` (Ray leaves a ref nested in a list unresolved), so
        the plan is fetched once per host and its policy keeps its caches across episodes."""
        connections = await self._connections()
        if plan_id not in self._plans:
            item = plan[0]
            self._plans[plan_id] = item if isinstance(item, _Plan) else await item
        shared = self._plans[plan_id]
        trajectory = await Rollout(
            task, shared.policy, shared.user, connections, attempt=attempt, options=shared.options
        ).run()
        return await shared.scorer(trajectory) if shared.scorer is not None else trajectory

    async def forget(self, plan_id: str) -> None:
        self._plans.pop(plan_id, None)

    async def shutdown(self) -> None:
        """End open episodes and close every connection (then the actor can be killed)."""
        for episode in list(self._sessions):
            await self.close(episode)
        if self._stop is not None and self._owner is not None:
            self._stop.set()
            with suppress(Exception):
                await self._owner

    # ------------------------------------------------------------ the trainer-facing handle

    async def reset(
        self,
        task: Task | dict[str, Any] | str,
        episode: str | None = None,
        *,
        calibrated: bool = True,
        limits: Limits | None = None,
        user: UserSimulator | None = None,
        scorer: Scorer | None = None,
    ) -> Observation:
        """Start an episode of `task` from its seed: the system prompt, the user's opening and the tools.
        `limits` are the CLI's (turns, tool calls, wall time); the wall time includes the trainer's own
        generation between steps, so raise it for slow models."""
        connections = await self._connections()
        task = as_task(task)
        episode = episode or uuid.uuid4().hex
        if episode in self._sessions:
            raise ValueError(f"episode {episode!r} is open on this host; close it or pick another id")
        unknown = sorted(set(task_servers(task)) - set(self.spec.servers))
        if unknown:
            raise LookupError(f"task {task.id} needs {', '.join(unknown)}, which this host does not serve")
        seat = _Seat()
        options = RolloutOptions(calibrated=calibrated, limits=limits or Limits())
        rollout = Rollout(task, _TrainerPolicy(seat), user or ScriptedUser(), connections, options=options)
        score = scorer or DefaultScorer()

        async def play() -> Trajectory:
            return await score(await rollout.run())

        session = _Session(seat, asyncio.create_task(play()))
        self._sessions[episode] = session
        first = await self._next(session)
        return Observation(
            episode=episode, messages=first.messages, tools=[t.openai() for t in seat.tools], done=first.done
        )

    async def step(self, episode: str, action: ToolCall | dict[str, Any] | list[Any] | str) -> StepResult:
        """Run the trainer's action: tool calls come back as tool messages (errors as `Error: ...`), words
        get the simulated user's reply."""
        session = self._session(episode)
        if session.run.done():
            raise ValueError(f"episode {episode!r} has ended ({session.run.result().stop_reason}); call score()")
        await session.seat.inbox.put(as_action(action, session.seat.actions))
        session.seat.actions += 1
        return await self._next(session)

    async def score(self, episode: str, answer: str | None = None) -> Score:
        """End the episode (after `answer`, the assistant's last words, if given) and score it."""
        return (await self.trajectory(episode, answer)).score or Score()

    async def trajectory(self, episode: str, answer: str | None = None) -> Trajectory:
        """The episode's whole scored trajectory, ending it first if it is still open."""
        session = self._session(episode)
        if not session.run.done():
            session.seat.ending = True
            await session.seat.inbox.put(Action(content=answer) if answer else None)
        return await session.run

    async def close(self, episode: str) -> None:
        """Forget the episode (ending it unscored if still open); its server episodes are closed."""
        session = self._sessions.pop(episode, None)
        if session is not None and not session.run.done():
            session.seat.ending = True
            await session.seat.inbox.put(None)
            with suppress(Exception):
                await session.run

    def _session(self, episode: str) -> _Session:
        if episode not in self._sessions:
            raise LookupError(f"no episode {episode!r} on this host: call reset(task, episode) first")
        return self._sessions[episode]

    @staticmethod
    async def _next(session: _Session) -> StepResult:
        """The messages up to the trainer's next turn, or to the end of the episode."""
        waiting = asyncio.ensure_future(session.seat.outbox.get())
        await asyncio.wait({waiting, session.run}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            return StepResult(messages=waiting.result(), done=False)
        waiting.cancel()
        trajectory = session.run.result()
        return StepResult(messages=session.seat.new(trajectory.messages), done=True, stop_reason=trajectory.stop_reason)


@dataclass
class EnvHandle:
    """One episode on a farm-host actor, gym-style: `reset(task)`, `step(tool_call)`, `score()`.
    Each method returns a Ray ObjectRef: `await` it in an async agent loop (verl), `ray.get` it in a
    synchronous one (SkyRL). The handle pickles, so it can be passed to other Ray tasks."""

    host: Any
    episode: str = field(default_factory=lambda: uuid.uuid4().hex)

    def reset(self, task: Task | dict[str, Any] | str, **options: Any) -> Any:
        return self.host.reset.remote(task, self.episode, **options)

    def step(self, action: ToolCall | dict[str, Any] | list[Any] | str) -> Any:
        return self.host.step.remote(self.episode, action)

    def score(self, answer: str | None = None) -> Any:
        return self.host.score.remote(self.episode, answer)

    def close(self) -> Any:
        return self.host.close.remote(self.episode)


def start_hosts(spec: HostSpec, n: int, cpus: float = 1.0, name: str | None = None) -> list[Any]:
    """`n` farm-host actors, spread over the cluster's nodes (Ray must be initialized). Named
    `{name}-{uuid}` when `name` is given, so a trainer's rollout workers can find them (`named_hosts`)."""
    ray = import_ray()
    actor = ray.remote(FarmHost)
    options: dict[str, Any] = {"num_cpus": cpus, "scheduling_strategy": "SPREAD", "max_concurrency": 10_000}
    return [
        actor.options(**options, **({"name": f"{name}-{uuid.uuid4().hex[:8]}"} if name else {})).remote(spec)
        for _ in range(n)
    ]


def named_hosts(name: str) -> list[Any]:
    """The live farm hosts started with `name` in this Ray namespace, in a stable order (pick one per
    episode, e.g. by a hash of the task id)."""
    ray = import_ray()
    names = sorted(n for n in ray.util.list_named_actors() if n.startswith(f"{name}-"))
    return [ray.get_actor(n) for n in names]


# ---------------------------------------------------------------- the backend


@dataclass
class _Worker:
    actor: Any
    load: int = 0
    up: bool = True


class RayBackend:
    """`envfarm.clients.rollout.Backend` on Ray. `async with RayBackend(spec, options) as backend:` starts the
    hosts (and a local cluster when Ray is not initialized and no address is given) and stops them."""

    def __init__(self, spec: HostSpec, options: RayOptions | None = None) -> None:
        self.spec = spec
        self.options = options or RayOptions()
        self.stats = RayStats(workers=self.options.workers)
        self.hosts: list[HostInfo] = []
        self._live: list[_Worker] = []
        self._starting: set[asyncio.Future[None]] = set()
        self._started_ray = False
        self._replacements = self.options.workers if self.options.replacements is None else self.options.replacements

    async def __aenter__(self) -> Self:
        ray = import_ray()
        if not ray.is_initialized():
            ray.init(address=self.options.address, include_dashboard=False, logging_level="WARNING")
            self._started_ray = True
        self._live = [
            _Worker(a)
            for a in start_hosts(self.spec, self.options.workers, self.options.cpus_per_worker, self.options.name)
        ]
        try:
            self.hosts = list(await asyncio.gather(*(w.actor.ready.remote() for w in self._live)))
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        ray = import_ray()
        for starting in self._starting:
            starting.cancel()
        for worker in self._live:
            with suppress(Exception):
                await asyncio.wait_for(worker.actor.shutdown.remote(), timeout=10)
            ray.kill(worker.actor)
        self._live = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    def actors(self) -> list[Any]:
        """The live farm-host actors (for tests and for trainers sharing the hosts)."""
        return [w.actor for w in self._live]

    def _pick(self) -> _Worker:
        if not self._live:
            raise RuntimeError(
                f"every Ray farm host died ({self.stats.lost_workers} lost, {self.stats.replaced_workers} replaced)"
            )
        return min(self._live, key=lambda w: (not w.up, w.load))  # a replacement still starting comes last

    def _lost(self, worker: _Worker) -> None:
        """A host died: drop it, and start a replacement while any are left."""
        if worker not in self._live:
            return  # another of its episodes noticed first
        self._live.remove(worker)
        self.stats.lost_workers += 1
        with suppress(Exception):
            import_ray().kill(worker.actor)
        if self._replacements > 0:
            self._replacements -= 1
            self.stats.replaced_workers += 1
            [actor] = start_hosts(self.spec, 1, self.options.cpus_per_worker, self.options.name)
            replacement = _Worker(actor, up=False)  # calls queue until it is up; until then others go first
            self._live.append(replacement)
            self._starting.add(asyncio.ensure_future(self._up(replacement)))

    async def _up(self, worker: _Worker) -> None:
        with suppress(Exception):
            self.hosts.append(await worker.actor.ready.remote())
            worker.up = True

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
        """k rollouts of every task on the hosts, `options.concurrency` at a time per host; in task order."""
        ray = import_ray()
        from ray.exceptions import RayActorError

        jobs = [(task, attempt) for task in tasks for attempt in range(options.k)]
        results: list[Trajectory | None] = [None] * len(jobs)
        plan_id = uuid.uuid4().hex
        plan = ray.put(_Plan(policy, user, options, scorer))
        limiter = anyio.CapacityLimiter(options.concurrency * max(len(self._live), 1))
        done = 0

        async def one(index: int, task: Task, attempt: int) -> None:
            nonlocal done
            retries = 0
            async with limiter:
                while True:
                    worker = self._pick()
                    worker.load += 1
                    try:
                        trajectory: Trajectory = await worker.actor.rollout.remote(plan_id, [plan], task, attempt)
                        break
                    except RayActorError:
                        retries += 1
                        self.stats.retried_episodes += 1
                        self._lost(worker)
                    finally:
                        worker.load -= 1
            if retries:
                trajectory.metadata["ray_retries"] = retries
            results[index] = trajectory
            done += 1
            self.stats.episodes += 1
            if progress is not None:
                progress(done, len(jobs))

        try:
            async with anyio.create_task_group() as group:
                for index, (task, attempt) in enumerate(jobs):
                    group.start_soon(one, index, task, attempt)
        finally:
            for worker in self._live:
                worker.actor.forget.remote(plan_id)
        return [t for t in results if t is not None]
