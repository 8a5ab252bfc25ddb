"""`envfarm fuzz --replies N`: every model-driven step, fed replies no endpoint should send.

A seeded generator writes chat-completion bodies: well-formed ones (text, JSON answers, grades, tool calls)
with fields deleted, nulled or given the wrong type (choices, message, content, tool_calls, a call's id /
function / name / arguments, finish_reason, usage), whole bodies that are not JSON or not an object, and HTTP
errors. They are served in-process to the real `openai` client (an httpx mock transport: no sockets; about 500
replies per CPU second, rollouts included) and go through each LLM-driven path as the driver runs it:

- policy: `ChatAgent.act` (what a rollout's agent does with the reply);
- user: `LLMSession.reply` (the simulated user);
- writer: `written_request` (the task writer, with its offline fallback);
- judge: `Scorer` with a judge, on a scored oracle trajectory (claims and refusals);
- structured: `ChatModel.structured` for a factory schema (spec proposals, handler drafts);
- rollout: a whole `Rollout` on the clinic server, the same model as policy and user, then scored.

Each path may end only in its recorded outcome (a result, a fallback, or the `LLMError` its caller
records as policy_error / user_error / judge_error / model_error); any other exception is a violation,
kept with its traceback and the body that caused it. Outputs must also serialize as UTF-8 JSON (a lone
surrogate escaped in a reply cannot be, so `read_reply` replaces it). The same generator serves the
end-to-end test over real HTTP on loopback.
"""

from __future__ import annotations

import json
import random
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from pydantic import BaseModel, Field

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import AgentTool, ChatAgent, OraclePolicy, agent_tools
from envfarm.clients.rollout import Limits, Rollout, RolloutOptions
from envfarm.clients.scoring import Scorer
from envfarm.clients.synthesize import SynthesisOptions, synthesize
from envfarm.clients.tasks import Task
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import STOP_TOKEN, LLMSession, ScriptedUser
from envfarm.clients.writing import Request, Vocabulary, written_request
from envfarm.factory.generate.growth import ScenarioList
from envfarm.llm import ChatModel, LLMError, ModelConfig

PATHS = ("policy", "user", "writer", "judge", "structured", "rollout")
# Share of the reply budget each path gets: most go through the fast paths, a tenth through whole rollouts.
WEIGHTS = {"policy": 3, "user": 2, "writer": 2, "judge": 1, "structured": 1, "rollout": 1}
EVIDENCE_KEPT = 20
SERVER = "clinic"

HOSTILE: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    3.5,
    10**30,
    "",
    " ",
    "x",
    "null",
    "{",
    "\ud800",
    "é🙂\x00",
    "x" * 5000,
    [],
    [None],
    [1, "a"],
    {},
    {"a": 1},
    {"text": 5},
    [{"type": "text", "text": "hello"}, {"type": "image_url"}],
    [[[[[]]]]],
]
TEXTS = [
    "Sure, I can help with that.",
    "",
    "   ",
    "1",
    "0.5",
    "0",
    "NaN",
    "inf",
    "1e309",
    "-0",
    "I'm sorry, I can't do that: the policy forbids it.",
    f"Thanks, that's all! {STOP_TOKEN}",
    '{"message": "Hi, can you help me sort out my appointment?", "hidden_facts": {"email": "a@example.com"}}',
    '{"message": "please call get_invoice", "hidden_facts": {}}',
    '{"message": 5, "hidden_facts": []}',
    '{"message": "Hi", "hidden_facts": {"x": {"deep": [1, 2]}}}',
    # A valid proposal, four times: the structured path must meet its good outcome too, not once in a hundred.
    *['```json\n{"scenarios": [{"name": "x", "title": "X", "description": "d", "domain": "y"}]}\n```'] * 4,
    '{"scenarios": "many"}',
    '{"left": [' * 50,
    "[" * 3000 + "]" * 3000,
    "9" * 5000,
    "lo\ud800pez",
    "\x00\x01\x02",
    "💥" * 200,
]
ARGUMENTS: list[Any] = [
    "{}",
    '{"full_name": "Lucas Yilmaz"}',
    '{"patient_id": "pat_dc63z3"}',
    "{not json",
    "[1, 2]",
    '"a string"',
    "42",
    "null",
    "",
    '{"a": ' * 200,
    {"full_name": "Priya Lopez"},
    ["x"],
    7,
    None,
]
FINISH = ["stop", "length", "tool_calls", "content_filter", "function_call", "", "weird", None, 3, ["stop"]]
GARBAGE_BODIES = [
    b"",
    b"<html><body>502 Bad Gateway</body></html>",
    b"null",
    b"[]",
    b'"ok"',
    b"42",
    b"true",
    b"{",
    b'{"choices": [{"message": {"content": "trunc',
    b"\xff\xfe\x00garbage",
    b"[" * 5000 + b"]" * 5000,
    b'{"choices": [' + b"[" * 3000 + b"]" * 3000 + b"]}",
    b"1" * 6000,
    b'{"error": {"message": "model overloaded"}}',
    b'{"error": "quota"}',
    b'{"choices": null}',
    b'{"choices": {}}',
    b'{"choices": [null]}',
    b'{"choices": [{"message": null}]}',
    b'{"choices": [{}]}',
    b"NaN",
    b'{"choices": [{"message": {"content": NaN}}]}',
]


def garbage_reply(rng: random.Random, names: Sequence[str]) -> tuple[int, bytes]:
    """One HTTP answer (status, body) of a chat-completions endpoint, from plausible to absurd."""
    roll = rng.random()
    if roll < 0.05:
        status = rng.choice([400, 401, 404, 413, 422, 429, 500, 502, 503])
        return status, rng.choice([b'{"error": {"message": "scripted"}}', b"<html>oops</html>", b""])
    if roll < 0.15:
        return 200, rng.choice(GARBAGE_BODIES)
    body = _completion(rng, names)
    for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
        body = _mutate(rng, body)
    try:
        return 200, json.dumps(body).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return 200, b"{}"


def _completion(rng: random.Random, names: Sequence[str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": rng.choice(TEXTS)}
    if rng.random() < 0.4:
        calls = []
        for n in range(rng.choice([1, 1, 1, 2, 3])):
            name = rng.choice([*names, *names, "no_such_tool", "", "clinic__find_patient", "a" * 300])
            calls.append(
                {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": rng.choice(ARGUMENTS)}}
            )
        message["tool_calls"] = calls
        if rng.random() < 0.6:
            message["content"] = None
    usage = {"prompt_tokens": rng.choice([10, 0, 10**6]), "completion_tokens": rng.choice([5, 1])}
    return {
        "id": "chatcmpl-fuzz",
        "object": "chat.completion",
        "created": 0,
        "model": "fuzz",
        "choices": [{"index": 0, "message": message, "finish_reason": rng.choice(FINISH)}],
        "usage": usage,
    }


def _nodes(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every node under `value` (not `value` itself)."""
    found: list[tuple[Any, ...]] = []
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in children:
        found += [(*at, key), *_nodes(child, (*at, key))]
    return found


def _mutate(rng: random.Random, body: dict[str, Any]) -> dict[str, Any]:
    """`body` with one node (any field, at any depth, equally likely) deleted, replaced by a hostile value,
    or wrapped in a list or an object."""
    nodes = _nodes(body)
    if not nodes:
        return body
    path = rng.choice(nodes)
    copy = json.loads(json.dumps(body))
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    action = rng.random()
    if action < 0.3:
        del parent[key]
    elif action < 0.85:
        parent[key] = rng.choice(HOSTILE)
    else:
        parent[key] = rng.choice([[parent[key]], {"value": parent[key]}])
    return copy


class Violation(BaseModel):
    path: str
    error: str
    body: str = Field(description="the last body served before it broke (first 300 characters)")
    traceback: str = ""


class ReplyFuzzReport(BaseModel):
    seed: int
    replies: int = Field(default=0, description="replies served, over all paths")
    runs: dict[str, int] = Field(default_factory=dict, description="path -> times it ran")
    outcomes: dict[str, dict[str, int]] = Field(default_factory=dict, description="path -> outcome -> count")
    violations: int = 0
    evidence: list[Violation] = Field(default_factory=list)
    seconds: float = 0.0


@dataclass
class World:
    """What the paths act on: clinic tasks (one a refusal), their tools, and scored oracle trajectories."""

    connections: Connections
    tasks: list[Task]
    tools: dict[str, list[AgentTool]]
    trajectories: list[Trajectory]

    @property
    def names(self) -> list[str]:
        return sorted({t.name for tools in self.tools.values() for t in tools})


async def make_world(connections: Connections, seed: int = 3) -> World:
    options = SynthesisOptions(n=4, servers=[SERVER], max_servers=1, seed=seed, refusal_share=0.5)
    tasks = (await synthesize(options, connections)).tasks
    listed = {SERVER: await connections.tools(SERVER)}
    tools = {
        t.id: agent_tools(listed, [(r.server, r.tool) for r in t.tools] or [(SERVER, x.name) for x in listed[SERVER]])
        for t in tasks
    }
    scorer = Scorer()
    trajectories = [await scorer(await Rollout(t, OraclePolicy(), ScriptedUser(), connections).run()) for t in tasks]
    return World(connections, tasks, tools, trajectories)


@dataclass
class _Policy:
    """The chat policy on a given model (the fuzz serves it in-process), acting exactly as `ChatPolicy`."""

    model: ChatModel
    name: str = "openai:fuzz"

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> ChatAgent:
        return ChatAgent(self.model, [tool.openai() for tool in tools])

    async def aclose(self) -> None:
        return None


@dataclass
class _User:
    model: ChatModel
    name: str = "openai:fuzz"

    def session(self, task: Task, calibrated: bool = True) -> LLMSession:
        return LLMSession(self.model, task, calibrated)

    async def aclose(self) -> None:
        return None


def _encodable(value: Any) -> None:
    """Raises when `value` cannot be written as UTF-8 JSON (what every file the driver writes needs)."""
    json.dumps(value, ensure_ascii=False).encode("utf-8")


def well_formed(trajectory: Trajectory) -> None:
    """Every tool call of an assistant message is answered by a tool message with its id, and it all serializes."""
    asked = [c["id"] for m in trajectory.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in trajectory.messages if m["role"] == "tool"]
    if asked != answered:
        raise AssertionError(f"tool calls {asked} answered by {answered}")
    trajectory.model_dump_json().encode("utf-8")
    score = trajectory.score
    if score is None:
        raise AssertionError("not scored")
    if trajectory.stop_reason == "policy_error" and not (score.policy_error and not score.success):
        raise AssertionError("a policy_error episode was scored as the model's")


Runner = Callable[[ChatModel, World, random.Random], Awaitable[str]]


async def _policy(model: ChatModel, world: World, rng: random.Random) -> str:
    task = rng.choice(world.tasks)
    agent = ChatAgent(model, [t.openai() for t in world.tools[task.id]])
    try:
        action = await agent.act(rng.choice(world.trajectories).messages)
    except LLMError:
        return "policy_error"
    _encodable(action.message())
    return "tool_calls" if action.tool_calls else "text" if action.content else "empty"


async def _user(model: ChatModel, world: World, rng: random.Random) -> str:
    session = LLMSession(model, rng.choice(world.tasks), calibrated=True)
    try:
        said = await session.reply(rng.choice(world.trajectories).messages, [])
    except LLMError:
        return "user_error"
    _encodable(said)
    return "stop" if said is None else "reply"


async def _writer(model: ChatModel, world: World, rng: random.Random) -> str:
    task = rng.choice(world.tasks)
    offline = Request(turns=[turn.message for turn in task.turns] or [task.opening_message], claims=task.claims)
    vocab = Vocabulary(tool_names=world.names, internal_ids=["pat_dc63z3"], literals=[])
    try:
        request, fell_back = await written_request(model, "Write the opening message.", offline, vocab)
    except LLMError:
        return "writer_error"
    request.model_dump_json().encode("utf-8")
    return "fallback" if fell_back else "written"


async def _judge(model: ChatModel, world: World, rng: random.Random) -> str:
    graded = await Scorer(judge=model)(rng.choice(world.trajectories).model_copy(deep=True))
    well_formed(graded)
    assert graded.score is not None
    if any(g.judge and g.score not in (0.0, 0.5, 1.0) for g in graded.score.claims):
        raise AssertionError("a judge's reply became a grade it may not give")
    errors = [g.judge_error for g in graded.score.claims] + [g.judge_error for g in graded.score.policy]
    return "judge_error" if any(errors) else "graded"


async def _structured(model: ChatModel, world: World, rng: random.Random) -> str:
    try:
        await model.structured([{"role": "user", "content": "Propose scenarios."}], ScenarioList, repairs=1)
    except LLMError:
        return "model_error"
    return "valid"


async def _rollout(model: ChatModel, world: World, rng: random.Random) -> str:
    task = rng.choice(world.tasks)
    limits = Limits(max_turns=3, max_tool_calls=3, wall_time_s=30, call_timeout_s=10)
    rollout = Rollout(task, _Policy(model), _User(model), world.connections, options=RolloutOptions(limits=limits))
    trajectory = await Scorer()(await rollout.run())
    well_formed(trajectory)
    return trajectory.stop_reason


RUNNERS: dict[str, Runner] = {
    "policy": _policy,
    "user": _user,
    "writer": _writer,
    "judge": _judge,
    "structured": _structured,
    "rollout": _rollout,
}


def fuzz_model(base_url: str, http_client: httpx2.AsyncClient | None = None) -> ChatModel:
    """A model on the fuzzing endpoint: no retries, short timeouts (a failure is an outcome, not a wait)."""
    config = ModelConfig(model="fuzz", base_url=base_url, timeout_s=10, max_retries=0, max_tokens=64)
    return ChatModel(config, http_client=http_client)


async def fuzz_paths(
    world: World,
    model: ChatModel,
    served: Callable[[], tuple[int, bytes | None]],
    replies: int,
    seed: int,
    paths: Sequence[str] = PATHS,
    progress: Callable[[ReplyFuzzReport], None] | None = None,
) -> ReplyFuzzReport:
    """Run the paths (weighted by `WEIGHTS`) on `model` until `served()` counts `replies` answers.
    `served()` is (answers so far, the last body)."""
    rng = random.Random(f"{seed}:paths")
    report = ReplyFuzzReport(seed=seed)
    started = time.perf_counter()
    weights = [WEIGHTS[p] for p in paths]
    outcomes: dict[str, Counter[str]] = {p: Counter() for p in paths}
    while served()[0] < replies:
        path = rng.choices(list(paths), weights)[0]
        try:
            outcome = await RUNNERS[path](model, world, rng)
        except Exception as exc:  # noqa: BLE001 - any exception here is the finding
            outcome = "violation"
            report.violations += 1
            if len(report.evidence) < EVIDENCE_KEPT:
                body = served()[1] or b""
                report.evidence.append(
                    Violation(
                        path=path,
                        error=f"{type(exc).__name__}: {exc}"[:500],
                        body=body[:300].decode("utf-8", "replace"),
                        traceback="".join(traceback.format_exception(exc))[-3000:],
                    )
                )
        outcomes[path][outcome] += 1
        report.runs[path] = report.runs.get(path, 0) + 1
        if progress is not None and sum(report.runs.values()) % 500 == 0:
            report.replies = served()[0]
            progress(report)
    report.replies = served()[0]
    report.outcomes = {p: dict(sorted(c.items())) for p, c in outcomes.items() if c}
    report.seconds = round(time.perf_counter() - started, 2)
    return report


class _Endpoint:
    """The generator behind an in-process transport: each request gets the next garbage answer."""

    def __init__(self, seed: int, names: Sequence[str]) -> None:
        self.rng = random.Random(f"{seed}:replies")
        self.names = list(names)
        self.count = 0
        self.last: bytes | None = None

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        status, body = garbage_reply(self.rng, self.names)
        self.count += 1
        self.last = body
        return httpx2.Response(status, content=body, headers={"content-type": "application/json"})

    def served(self) -> tuple[int, bytes | None]:
        return self.count, self.last


async def fuzz_replies(
    farm_root: Path,
    replies: int,
    *,
    seed: int = 0,
    paths: Sequence[str] = PATHS,
    progress: Callable[[ReplyFuzzReport], None] | None = None,
) -> ReplyFuzzReport:
    """`replies` generated answers through every path, served in-process (see the module's docstring)."""
    unknown = sorted(set(paths) - set(PATHS))
    if unknown:
        raise ValueError(f"unknown paths {unknown}: choose from {', '.join(PATHS)}")
    async with Connections(farm_targets(farm_root, [SERVER]), timeout=10) as connections:
        world = await make_world(connections)
        endpoint = _Endpoint(seed, world.names)
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(endpoint)) as client:
            model = fuzz_model("http://fuzz.invalid/v1", client)
            return await fuzz_paths(world, model, endpoint.served, replies, seed, paths, progress)
