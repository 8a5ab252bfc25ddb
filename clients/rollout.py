"""The rollout loop: a policy and a simulated user converse while tool calls run on live MCP servers.

Each rollout opens its own episode (a unique id) on every server it calls (on first use), so
concurrent rollouts and the k attempts of one task never see each other's writes. Everything is bounded:
user turns, tool calls, tokens and wall time per rollout, and a timeout on every MCP request. A
malformed call from the policy (not JSON, an unknown tool, wrong arguments) goes back to the policy
as an error message; a server that hangs or breaks ends the rollout as a server error, which
scoring keeps apart from the agent's own errors.
"""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

import anyio
import mcp_types as types
from pydantic import BaseModel, Field

from envfarm.clients.connect import Connections, Episode
from envfarm.clients.policies import AgentTool, Policy, agent_tools, system_prompt
from envfarm.clients.tasks import Task
from envfarm.clients.trajectory import CallError, CallRecord, ServerState, StopReason, Trajectory, Usage
from envfarm.clients.users import UserSimulator
from envfarm.llm import LLMError
from envfarm.servers.runtime.control import ControlError, ErrorKind, error_kind

SAFE = re.compile(r"[^A-Za-z0-9_.:-]")


def task_servers(task: Task) -> list[str]:
    """Every server the rollout opens an episode on: the task's, and those of its distractor tools."""
    return list(dict.fromkeys([*task.servers, *(ref.server for ref in task.tools)]))


def trajectory_id(task: Task, policy: str, calibrated: bool, attempt: int) -> str:
    """A rollout's id: the same wherever it ran (in this process, a worker process, a Ray host)."""
    return f"{task.id}:{policy}:{'cal' if calibrated else 'uncal'}:{attempt}"


class EndEpisode(Exception):
    """Raised by an agent to end its rollout now, as finished (a trainer driving the episode step by step)."""


class Limits(BaseModel):
    max_turns: int = Field(default=8, ge=1, description="user messages per rollout")
    max_tool_calls: int = Field(default=30, ge=0)
    max_tokens: int | None = Field(default=None, description="prompt + completion tokens of the policy")
    wall_time_s: float = Field(default=300.0, gt=0)
    call_timeout_s: float = Field(default=30.0, gt=0, description="every MCP request")


class RolloutOptions(BaseModel):
    k: int = Field(default=1, ge=1, description="rollouts per task")
    concurrency: int = Field(default=8, ge=1)
    calibrated: bool = Field(default=True, description="open with the calibrated message (False: the uncalibrated one)")
    limits: Limits = Field(default_factory=Limits)


def render_result(result: types.CallToolResult) -> str:
    """A tool result as the policy reads it: JSON for structured output, `Error: ...` for a failure."""
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    if result.is_error:
        return f"Error: {text or 'the tool failed'}"
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return text


@dataclass
class _Episodes:
    """The rollout's episodes, opened on first use: a server the policy never calls costs nothing."""

    connections: Connections
    stack: AsyncExitStack
    ids: dict[str, str]
    principal: str | None = None  # the task's principal, where a server knows them
    opened: dict[str, Episode] = field(default_factory=dict)

    async def get(self, server: str) -> Episode:
        if server not in self.opened:
            self.opened[server] = await self.stack.enter_async_context(
                self.connections.episode(server, self.ids[server], principal=self.principal)
            )
        return self.opened[server]


@dataclass
class _Run:
    """The mutable record of one rollout, kept whole even when a limit cancels the loop."""

    messages: list[dict[str, Any]]
    calls: list[CallRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    user_turns: int = 1
    stop: StopReason = "done"
    detail: str = ""
    deadline: float = float("inf")

    def left(self) -> float:
        """Seconds of wall time left. The limit is a deadline checked around each step, not one cancel
        scope over the loop: an episode client opened inside a scope could not be closed outside it."""
        return self.deadline - time.perf_counter()

    def out_of_time(self, limit: float) -> bool:
        if self.left() > 0:
            return False
        self.stop, self.detail = "wall_time", f"over {limit:g} s"
        return True


class Rollout:
    """One rollout of one task; `await Rollout(...).run()` returns the unscored trajectory."""

    def __init__(
        self,
        task: Task,
        policy: Policy,
        user: UserSimulator,
        connections: Connections,
        *,
        attempt: int = 0,
        options: RolloutOptions | None = None,
    ) -> None:
        self.task = task
        self.policy = policy
        self.user = user
        self.connections = connections
        self.attempt = attempt
        self.options = options or RolloutOptions()
        self.limits = self.options.limits

    async def run(self) -> Trajectory:
        started = time.perf_counter()
        tag = uuid.uuid4().hex[:10]
        servers = task_servers(self.task)
        ids = {s: SAFE.sub("_", f"{self.task.id}:{self.policy.name}:{self.attempt}:{s}:{tag}") for s in servers}
        async with AsyncExitStack() as stack:
            episodes = _Episodes(self.connections, stack, ids, self.task.principal)
            try:
                listed = {s: await self.connections.tools(s) for s in servers}
                # A task acting for someone reads each server's instructions for that principal (its episode's).
                instructions = {
                    s: (await episodes.get(s)).instructions
                    if self.task.principal
                    else await self.connections.instructions(s)
                    for s in servers
                }
            except ControlError as exc:
                return self._trajectory(_Run([], stop="server_error", detail=str(exc)), [], started, ids)
            tools, missing = self._tools(listed)
            session = self.user.session(self.task, self.options.calibrated)
            run = _Run(
                [
                    {"role": "system", "content": system_prompt(instructions)},
                    {"role": "user", "content": session.opening()},
                ]
            )
            agent = self.policy.agent(self.task, tools, attempt=self.attempt)
            run.deadline = time.perf_counter() + self.limits.wall_time_s
            by_name = {tool.name: tool for tool in tools}
            await self._converse(run, agent, session, by_name, episodes)
            final = await self._final_state(run, episodes, by_name) if run.stop != "server_error" else {}
            trajectory = self._trajectory(run, tools, started, {s: ids[s] for s in episodes.opened})
            trajectory.final_state = final
            if missing:
                trajectory.metadata["unlisted_tools"] = missing
            return trajectory

    async def _final_state(self, run: _Run, episodes: _Episodes, tools: dict[str, AgentTool]) -> dict[str, ServerState]:
        """Each written episode's state. A server the rollout never called is at its seed, and so is one
        that only answered calls its tools declare read-only or that failed (both verified to change
        nothing): no diff, and no state request spent on it."""
        written = {c.server for c in run.calls if c.ok and not tools[c.name].declared_read_only}
        final = {server: ServerState(hash=None) for server in self.task.expected_state if server not in written}
        for server, episode in episodes.opened.items():
            if server not in written:
                continue
            try:
                with anyio.fail_after(self.limits.call_timeout_s):
                    state = await episode.state()
            except (ControlError, TimeoutError) as exc:
                run.stop, run.detail = "server_error", f"{server}: final state: {exc or 'timed out'}"
                return {}
            if state is not None:
                final[server] = ServerState(hash=state.hash, diff=state.diff)
        return final

    def _tools(self, listed: dict[str, list[types.Tool]]) -> tuple[list[AgentTool], list[str]]:
        """The enabled tools the servers list, and those they do not (a stale task: recorded, skipped)."""
        enabled = [(ref.server, ref.tool) for ref in self.task.tools] or [
            (server, tool.name) for server, tools in listed.items() for tool in tools
        ]
        names = {server: {tool.name for tool in tools} for server, tools in listed.items()}
        missing = [f"{server}.{tool}" for server, tool in enabled if tool not in names.get(server, set())]
        return agent_tools(listed, [(s, t) for s, t in enabled if t in names.get(s, set())]), missing

    def _trajectory(self, run: _Run, tools: list[AgentTool], started: float, episodes: dict[str, str]) -> Trajectory:
        return Trajectory(
            id=trajectory_id(self.task, self.policy.name, self.options.calibrated, self.attempt),
            task_id=self.task.id,
            policy=self.policy.name,
            user=self.user.name,
            attempt=self.attempt,
            calibrated=self.options.calibrated,
            messages=run.messages,
            tools=[tool.openai() for tool in tools],
            tool_map={tool.name: (tool.server, tool.tool) for tool in tools},
            write_tools=[tool.name for tool in tools if not tool.read_only],
            calls=run.calls,
            stop_reason=run.stop,
            stop_detail=run.detail,
            user_turns=run.user_turns,
            usage=run.usage,
            seconds=round(time.perf_counter() - started, 4),
            episodes=episodes,
            task=self.task,
        )

    async def _converse(
        self, run: _Run, agent: Any, session: Any, tools: dict[str, AgentTool], episodes: _Episodes
    ) -> None:
        wall = self.limits.wall_time_s
        while not run.out_of_time(wall):
            try:
                with anyio.fail_after(run.left()):
                    action = await agent.act(run.messages)
            except EndEpisode:
                return
            except LLMError as exc:
                run.stop, run.detail = "policy_error", str(exc)
                return
            except TimeoutError:
                run.out_of_time(wall)
                return
            run.usage.prompt_tokens += action.usage.prompt_tokens
            run.usage.completion_tokens += action.usage.completion_tokens
            run.messages.append(action.message())
            if self.limits.max_tokens is not None and run.usage.total > self.limits.max_tokens:
                run.stop, run.detail = "max_tokens", f"{run.usage.total} > {self.limits.max_tokens}"
                self._answer_pending(run, action.tool_calls, "the token budget is spent")
                return
            if action.tool_calls:
                for n, call in enumerate(action.tool_calls):
                    if len(run.calls) >= self.limits.max_tool_calls:
                        run.stop, run.detail = "max_tool_calls", f"more than {self.limits.max_tool_calls} tool calls"
                        self._answer_pending(run, action.tool_calls[n:], "the tool call limit is reached")
                        return
                    record, content = await self._call(
                        call.id, call.name, call.arguments, tools, episodes, run.user_turns - 1, run.left()
                    )
                    run.calls.append(record)
                    run.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
                    if record.error == "timeout" and run.out_of_time(wall):
                        self._answer_pending(run, action.tool_calls[n + 1 :], "the time limit is reached")
                        return
                    if record.error in ("server_error", "timeout"):
                        run.stop, run.detail = "server_error", content
                        self._answer_pending(run, action.tool_calls[n + 1 :], "the service failed")
                        return
                continue
            try:
                with anyio.fail_after(run.left()):
                    reply = await session.reply(run.messages, run.calls)
            except LLMError as exc:
                run.stop, run.detail = "user_error", str(exc)
                return
            except TimeoutError:
                run.out_of_time(wall)
                return
            if reply is None:
                return
            if run.user_turns >= self.limits.max_turns:
                run.stop, run.detail = "max_turns", f"more than {self.limits.max_turns} user turns"
                return
            run.user_turns += 1
            run.messages.append({"role": "user", "content": reply})

    @staticmethod
    def _answer_pending(run: _Run, calls: Sequence[Any], why: str) -> None:
        """Every tool call gets a tool message, even unexecuted ones, so the chat stays well-formed."""
        for call in calls:
            run.messages.append({"role": "tool", "tool_call_id": call.id, "content": f"Error: not executed: {why}."})

    async def _call(
        self,
        call_id: str,
        name: str,
        raw: str,
        tools: dict[str, AgentTool],
        episodes: _Episodes,
        turn: int,
        time_left: float,
    ) -> tuple[CallRecord, str]:
        record = CallRecord(call_id=call_id, name=name, arguments=raw, turn=turn)
        tool = tools.get(name)
        if tool is None:
            record.error = "unknown_tool"
            return record, f"Error: there is no tool named {name!r}. Available: {', '.join(sorted(tools))}."
        record.server, record.tool = tool.server, tool.tool
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            record.error = "malformed"
            return (
                record,
                f"Error: the arguments of {name} are not valid JSON ({exc.msg} at position {exc.pos}); "
                "send a JSON object.",
            )
        if not isinstance(arguments, dict):
            record.error = "malformed"
            return record, f"Error: the arguments of {name} must be a JSON object, not {type(arguments).__name__}."
        record.arguments = arguments
        started = time.perf_counter()
        try:
            episode = await episodes.get(tool.server)  # opened outside the call's cancel scope, on purpose
            with anyio.fail_after(min(self.limits.call_timeout_s, max(time_left, 0.0))):
                result = await episode.call_tool(tool.tool, arguments)
        except TimeoutError:
            record.error = "timeout"
            return record, f"Error: {tool.server} did not answer within {self.limits.call_timeout_s:g} s."
        except ControlError as exc:
            record.error = "timeout" if exc.reason == "timeout" else "server_error"
            return record, f"Error: {tool.server} failed: {exc}"
        finally:
            record.seconds = round(time.perf_counter() - started, 5)
        content = render_result(result)
        if result.is_error:
            kind = error_kind(result)
            record.error = _CALL_ERRORS.get(kind, "rejected") if kind else "rejected"
            record.output = content
        else:
            record.ok = True
            record.output = result.structured_content if result.structured_content is not None else content
        return record, content


_CALL_ERRORS: dict[ErrorKind, CallError] = {
    ErrorKind.REJECTED: "rejected",
    ErrorKind.INVALID_ARGUMENTS: "invalid_arguments",
    ErrorKind.SERVER_ERROR: "server_error",
    # The episode is gone or not this caller's: the environment failed the rollout, not the policy.
    ErrorKind.EPISODE_EXPIRED: "server_error",
    ErrorKind.FORBIDDEN: "server_error",
}

Progress = Callable[[int, int], None]
Scorer = Callable[[Trajectory], Awaitable[Trajectory]]


async def rollout_tasks(
    tasks: Sequence[Task],
    policy: Policy,
    user: UserSimulator,
    connections: Connections,
    options: RolloutOptions | None = None,
    *,
    scorer: Scorer | None = None,
    progress: Progress | None = None,
) -> list[Trajectory]:
    """k rollouts of every task, at most `concurrency` at a time; results in task order, then attempt."""
    options = options or RolloutOptions()
    jobs = [(task, attempt) for task in tasks for attempt in range(options.k)]
    results: list[Trajectory | None] = [None] * len(jobs)
    limiter = anyio.CapacityLimiter(options.concurrency)
    done = 0
    # Connect every server from this task first: a connection entered inside a worker task could not be
    # closed by the task that owns `connections`.
    for server in sorted({s for task in tasks for s in task_servers(task)}):
        await connections.tools(server)

    async def one(index: int, task: Task, attempt: int) -> None:
        nonlocal done
        async with limiter:
            trajectory = await Rollout(task, policy, user, connections, attempt=attempt, options=options).run()
            if scorer is not None:
                trajectory = await scorer(trajectory)
            results[index] = trajectory
            done += 1
            if progress is not None:
                progress(done, len(jobs))

    async with anyio.create_task_group() as group:
        for index, (task, attempt) in enumerate(jobs):
            group.start_soon(one, index, task, attempt)
    return [t for t in results if t is not None]


def failed_endpoint(trajectories: Sequence[Trajectory]) -> str | None:
    """Why the run measured nothing, when most episodes ended in `policy_error` (the policy's endpoint was
    unreachable, erroring or answering garbage), naming the endpoint from the first failure; else None.
    Such a run must not pass for a result: its rates cover the few episodes that got through."""
    failed = [t for t in trajectories if t.stop_reason == "policy_error"]
    if 2 * len(failed) <= len(trajectories):
        return None
    return f"{len(failed)} of {len(trajectories)} episodes ended in policy_error: {failed[0].stop_detail}"


class Backend(Protocol):
    """Where `rollout_tasks` runs: in this process (`LocalBackend`), in worker processes on this machine
    (`envfarm.clients.workers.ProcessBackend`) or across a cluster (`envfarm.clients.ray_backend.RayBackend`).
    Same inputs, same trajectories, in task order, then attempt."""

    async def __call__(
        self,
        tasks: Sequence[Task],
        policy: Policy,
        user: UserSimulator,
        options: RolloutOptions,
        *,
        scorer: Scorer | None = None,
        progress: Progress | None = None,
    ) -> list[Trajectory]: ...


@dataclass
class LocalBackend:
    """Rollouts in this process, on open connections."""

    connections: Connections

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
        return await rollout_tasks(tasks, policy, user, self.connections, options, scorer=scorer, progress=progress)


@dataclass
class ProgressBar:
    """`LABEL [#####.....] 57/200 UNIT` on one line of `stream` (default: stderr, the stream of the moment, not of
    construction time). Only on a terminal unless `terminal_only` is off, so logs stay clean."""

    label: str = ""
    unit: str = ""
    stream: TextIO | None = None
    width: int = 30
    terminal_only: bool = True

    def __call__(self, done: int, total: int) -> None:
        stream = self.stream or sys.stderr
        if self.terminal_only and not stream.isatty():
            return
        filled = self.width * done // max(total, 1)
        head, tail = f"{self.label} " if self.label else "", f" {self.unit}" if self.unit else ""
        stream.write(f"\r{head}[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total}{tail}")
        if done >= total:
            stream.write("\n")
        stream.flush()
