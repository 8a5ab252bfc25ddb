"""`envfarm soak --http CALLS`: does one `envfarm serve --all` host survive many varied tool calls?

One farm host serves every server to every client, so one call that kills it (issue 25: reset an
episode on docs_drive, then `search_documents` with a new `limit` each time) takes every server and
every token's episodes with it. This soak starts the host on loopback with several bearer tokens and
sends CALLS tool calls spread over every server and token, each episode opened by a reset, with
arguments drawn from each tool's own input schema in many shapes:

- valid: required arguments and some optional ones, with values seen in the episode's rows and enums;
- missing: a required argument left out; wrong_type: one argument of another JSON type;
- huge: numbers at the edges (2**63, 1e308, -1) and 60 KB strings; lists: list parameters with no,
  one, many, repeated or ill-typed items; unicode: emoji, right-to-left, combining marks, NUL;
- unknown: an argument the tool does not take; empty: no arguments at all;

plus resets in the middle of episodes, and the issue's reproduction on docs_drive. Episodes are
addressed both ways the host offers (`_meta` and the per-episode URL). Afterwards the host must
still be running, refuse a request without a token, list every server, and answer `tools/list` on each.
If it died, the report carries its exit signal and the Python stack faulthandler printed.
"""

from __future__ import annotations

import math
import random
import signal
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from pydantic import BaseModel, Field

from envfarm.clients.connect import FarmProcess, farm_process, http_client, shared_http_client
from envfarm.fuzz import HOSTILE_NUMBERS, HOSTILE_STRINGS, _harvest
from envfarm.servers.runtime.control import ControlError, EpisodeClient, error_kind
from envfarm.servers.runtime.registry import load_registry

SHAPES = ("valid", "missing", "wrong_type", "huge", "lists", "unicode", "unknown", "empty")
CALLS_PER_EPISODE = 40
RESET_CHANCE = 0.05  # a reset in the middle of an episode, before a call
CONCURRENT_EPISODES = 8
CALL_TIMEOUT_S = 60.0
REPRO_SERVER = "docs_drive"
UNICODE = [
    "🙂🚀",
    "שלום עולם",
    "e\u0301\u0301\u0301",
    "\u202eevil",
    "a\x00b",
    "日本語のテキスト",
    "Ω≈ç√∫",
    "\ufeff",
    "𝔘𝔫𝔦",
]
WRONG_TYPES: list[Any] = [["x"], {"a": 1}, "text", 12, 3.5, True, None, [[1, [2]]], {"nested": {"deep": [None]}}]
HUGE_NUMBERS: list[Any] = [2**63, -(2**63), 10**30, 1e308, -1, 0, 10**9, 2**31, 1.5]
SAMPLES_KEPT = 10


class HttpSoakReport(BaseModel):
    command: str
    seed: int
    requested_calls: int
    calls: int = Field(description="tool calls sent (resets and listings not counted)")
    resets: int
    episodes: int
    tokens: int
    servers: int
    seconds: float
    calls_per_s: float
    outcomes: dict[str, int] = Field(description="ok, error kinds the servers named, protocol, timeout")
    shapes: dict[str, int] = Field(description="calls per argument shape")
    repro_calls: int = Field(description="reset + search_documents(department=[...], limit=N) rounds, issue 25")
    host_alive: bool = Field(description="the host process still ran at the end")
    servers_answering: int = Field(description="servers that answered tools/list after the soak")
    tools_listed: int
    refuses_without_token: bool
    host_exit: str | None = Field(default=None, description="how the host ended, if it died (e.g. SIGSEGV)")
    host_stack: str | None = Field(default=None, description="faulthandler's dump from the host's stderr")
    host_rss_mb_after: float | None = None
    samples: list[str] = Field(default_factory=list, description="the first protocol errors and timeouts")

    @property
    def ok(self) -> bool:
        """The host survived and answers: alive, every server listing its tools, no call left hanging."""
        return (
            self.host_alive
            and self.servers_answering == self.servers
            and self.refuses_without_token
            and not self.outcomes.get("timeout")
        )


def _branch(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """The non-null branch of an `anyOf` (how optional parameters are typed), else the node itself."""
    branches = [b for b in node.get("anyOf", [node]) if b.get("type") != "null"]
    return branches[0] if branches else node


def _plausible(rng: random.Random, name: str, node: Mapping[str, Any], pool: Mapping[str, list[Any]]) -> Any:
    branch = _branch(node)
    kind = branch.get("type")
    if "enum" in branch and rng.random() < 0.7:
        return rng.choice(branch["enum"])
    if pool.get(name) and rng.random() < 0.7:
        return rng.choice(pool[name])
    if kind == "array":
        items = branch.get("items", {})
        return [_plausible(rng, name, items, pool) for _ in range(rng.randint(0, 3))]
    if kind == "integer":
        low, high = branch.get("minimum", 0), branch.get("maximum", 100)
        return rng.randint(int(low), int(min(high, low + 1000)))
    if kind == "number":
        return round(rng.uniform(branch.get("minimum", 0), min(branch.get("maximum", 1000), 1e6)), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "object":
        return {}
    return rng.choice(["a", "engineering", "2026-04-13", "2026-04-13T09:00:00Z", "test", name])


def _hostile(rng: random.Random, shape: str, name: str, node: Mapping[str, Any], pool: Mapping[str, list[Any]]) -> Any:
    kind = _branch(node).get("type")
    if shape == "wrong_type":
        return rng.choice([v for v in WRONG_TYPES if not _fits(v, kind)] or WRONG_TYPES)
    if shape == "huge":
        if kind in ("integer", "number"):
            return rng.choice(HUGE_NUMBERS + HOSTILE_NUMBERS)
        if kind == "array":
            return [_plausible(rng, name, _branch(node).get("items", {}), pool) for _ in range(rng.choice([200, 2000]))]
        return rng.choice(["x" * 60_000, "%" * 30_000, *HOSTILE_STRINGS])
    if shape == "lists":
        items = _branch(node).get("items", {})
        one = _plausible(rng, name, items, pool)
        return rng.choice([[], [one], [one] * 5, [one, None], [one, 7, "x"], [[one]], rng.sample(UNICODE, 3)])
    if shape == "unicode":
        return rng.choice(UNICODE) if kind in (None, "string", "array") else rng.choice(UNICODE + [1])
    return _plausible(rng, name, node, pool)


def _fits(value: Any, kind: str | None) -> bool:
    checks: dict[str | None, tuple[type, ...]] = {
        "string": (str,),
        "integer": (int,),
        "number": (int, float),
        "boolean": (bool,),
        "array": (list,),
        "object": (dict,),
    }
    return isinstance(value, checks.get(kind, ()))


def sendable(value: Any) -> Any:
    """`value` as JSON can carry it over HTTP: a lone surrogate becomes `?` (UTF-8 cannot encode it) and
    a non-finite float its text (JSON has no NaN); the client would fail to build the request otherwise."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list):
        return [sendable(v) for v in value]
    if isinstance(value, dict):
        return {sendable(k): sendable(v) for k, v in value.items()}
    return value


def draw_arguments(rng: random.Random, schema: Mapping[str, Any], pool: Mapping[str, list[Any]]) -> tuple[str, dict]:
    """One call's arguments for a tool with input schema `schema`, in a shape drawn from SHAPES."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = [n for n in schema.get("required", []) if n in properties]
    shape = rng.choice(SHAPES)
    if shape == "empty":
        return shape, {}
    chosen = list(required) + [n for n in properties if n not in required and rng.random() < 0.4]
    arguments = {name: _plausible(rng, name, properties[name], pool) for name in chosen}
    if shape == "missing" and required:
        del arguments[rng.choice(required)]
    elif shape == "unknown":
        arguments[rng.choice(["unexpected", "x" * 300, "limit_", "🙂"])] = rng.choice(WRONG_TYPES)
    elif shape == "lists":
        lists = [n for n, node in properties.items() if _branch(node).get("type") == "array"]
        for name in lists or list(properties)[:1]:
            arguments[name] = _hostile(rng, shape, name, properties[name], pool)
    elif shape != "valid" and properties:
        targets = rng.sample(list(properties), k=min(len(properties), rng.randint(1, 2)))
        for name in targets:
            arguments[name] = _hostile(rng, shape, name, properties[name], pool)
    return shape, sendable(arguments)


class _Soak:
    """Counts shared by every episode of one soak (one event loop: no locks needed)."""

    def __init__(self, farm: FarmProcess, seed: int) -> None:
        self.farm = farm
        self.seed = seed
        self.outcomes: Counter[str] = Counter()
        self.shapes: Counter[str] = Counter()
        self.calls = 0
        self.resets = 0
        self.episodes = 0
        self.repro = 0
        self.samples: list[str] = []

    def dead(self) -> bool:
        return self.farm.process.poll() is not None

    def _sample(self, text: str) -> None:
        if len(self.samples) < SAMPLES_KEPT:
            self.samples.append(text[:300])

    async def call(self, episode: EpisodeClient, server: str, tool: str, arguments: dict, shape: str) -> None:
        self.calls += 1
        self.shapes[shape] += 1
        try:
            result = await episode.call_tool(tool, arguments)
        except ControlError as exc:
            self.outcomes[exc.reason] += 1  # timeout, protocol
            self._sample(f"{server}.{tool} ({shape}): {exc}")
            return
        kind = error_kind(result) if result.is_error else None
        self.outcomes["ok" if not result.is_error else kind.value if kind else "error_unnamed"] += 1

    async def reset(self, episode: EpisodeClient) -> None:
        self.resets += 1
        await episode.reset()

    async def episode(
        self,
        http: httpx2.AsyncClient,
        server: str,
        tools: list[types.Tool],
        pool: Mapping[str, list[Any]],
        name: str,
        calls: int,
    ) -> None:
        """One episode: a reset, then `calls` drawn calls with an occasional reset between them; half of
        the episodes are addressed by the per-episode URL, half by `_meta` on the server's URL."""
        rng = random.Random(f"{self.seed}:{name}")
        by_url = rng.random() < 0.5
        url = self.farm.url(server, name) if by_url else self.farm.url(server)
        self.episodes += 1
        async with http_client(url, http, read_timeout=CALL_TIMEOUT_S) as client:
            episode = EpisodeClient(client, None if by_url else name, timeout=CALL_TIMEOUT_S)
            await self.reset(episode)
            for _ in range(calls):
                if self.dead():
                    return
                if rng.random() < RESET_CHANCE:
                    await self.reset(episode)
                tool = rng.choice(tools)
                shape, arguments = draw_arguments(rng, tool.input_schema, pool)
                await self.call(episode, server, tool.name, arguments, shape)

    async def repro_rounds(self, http: httpx2.AsyncClient, rounds: int) -> None:
        """Issue 25's reproduction: reset an episode on docs_drive, then search_documents with a new limit."""
        async with http_client(self.farm.url(REPRO_SERVER), http, read_timeout=CALL_TIMEOUT_S) as client:
            episode = EpisodeClient(client, f"soak-repro-{self.seed}", timeout=CALL_TIMEOUT_S)
            self.episodes += 1
            for limit in range(1, rounds + 1):
                if self.dead():
                    return
                await self.reset(episode)
                arguments = {"department": ["engineering"], "limit": limit}
                await self.call(episode, REPRO_SERVER, "search_documents", arguments, "repro")
                self.repro += 1


async def _survey(farm: FarmProcess, http: httpx2.AsyncClient, servers: list[str]) -> dict[str, list[types.Tool]]:
    """Every server's tools (tools/list answered); a server that does not answer is left out."""
    found: dict[str, list[types.Tool]] = {}
    for server in servers:
        try:
            async with http_client(farm.url(server), http, read_timeout=CALL_TIMEOUT_S) as client:
                found[server] = (await client.list_tools()).tools
        except Exception as exc:  # noqa: BLE001 - a server that cannot list is what the survey counts
            print(f"soak: {server} did not list its tools: {type(exc).__name__}: {exc}", file=sys.stderr)
    return found


async def _pools(farm: FarmProcess, http: httpx2.AsyncClient, servers: list[str]) -> dict[str, dict[str, list[Any]]]:
    """Values per column name in each server's seed rows: the plausible ids and names arguments use."""
    pools = {}
    for server in servers:
        async with http_client(farm.url(server), http, read_timeout=CALL_TIMEOUT_S) as client:
            episode = EpisodeClient(client, f"soak-pool-{server}", timeout=CALL_TIMEOUT_S)
            await episode.reset()
            pools[server] = _harvest((await episode.state(rows=True)).state or {})
            await episode.close()
    return pools


def _refuses_without_token(farm: FarmProcess) -> bool:
    try:
        with urllib.request.urlopen(f"{farm.base_url}/", timeout=10):
            return False
    except urllib.error.HTTPError as exc:
        return exc.code == 401
    except OSError:
        return False


def http_soak(
    farm_root: Path, calls: int, *, tokens: int = 3, seed: int = 0, command: str = "", repro_rounds: int | None = None
) -> HttpSoakReport:
    """Start `serve --all` with `tokens` bearer tokens, send `calls` varied tool calls (of which
    `repro_rounds`, default 2% of them, are issue 25's reproduction), then check the host still answers."""
    names = [s.name for s in load_registry(farm_root).servers]
    secrets = [f"soak-{seed}-{i}-{random.Random(f'{seed}:{i}').getrandbits(64):x}" for i in range(tokens)]
    rounds = repro_rounds if repro_rounds is not None else (max(1, calls // 50) if REPRO_SERVER in names else 0)
    with tempfile.TemporaryFile() as log, farm_process(farm_root, token=",".join(secrets), log=log) as farm:
        soak = _Soak(farm, seed)

        async def main() -> tuple[int, int]:
            clients = [shared_http_client(connections=CONCURRENT_EPISODES + 2, token=t) for t in secrets]
            try:
                tools = await _survey(farm, clients[0], names)
                pools = await _pools(farm, clients[0], sorted(tools))
                servers = sorted(tools)
                remaining = max(0, calls - rounds)
                # Short episodes when calls are few, so that every server gets at least two.
                size = max(3, min(CALLS_PER_EPISODE, remaining // (2 * len(servers))))
                units = [
                    (servers[i % len(servers)], min(size, remaining - i * size), i)
                    for i in range(-(-remaining // size))
                ]
                limiter = anyio.CapacityLimiter(CONCURRENT_EPISODES)

                async def one(server: str, share: int, i: int) -> None:
                    async with limiter:
                        http = clients[i % len(clients)]
                        name = f"soak-{seed}-{i}"
                        try:
                            await soak.episode(http, server, tools[server], pools[server], name, share)
                        except ControlError as exc:  # a reset the host did not answer: the episode ends
                            soak.outcomes[f"reset_{exc.reason}"] += 1
                            soak._sample(f"{server} reset in {name}: {exc}")

                async with anyio.create_task_group() as group:
                    if rounds:
                        group.start_soon(soak.repro_rounds, clients[1 % len(clients)], rounds)
                    for server, share, i in units:
                        group.start_soon(one, server, share, i)
                if soak.dead():
                    return 0, 0
                after = await _survey(farm, clients[-1], names)
                return len(after), sum(len(t) for t in after.values())
            finally:
                for client in clients:
                    await client.aclose()

        started = time.perf_counter()
        try:
            answering, listed = anyio.run(main)
        except Exception as exc:  # a dead host breaks the clients in many ways
            if not soak.dead():
                raise
            soak._sample(f"the soak stopped: {type(exc).__name__}: {exc}")
            answering, listed = 0, 0
        seconds = time.perf_counter() - started
        alive = not soak.dead()
        refuses = alive and _refuses_without_token(farm)
        rss = round(farm.rss_mb(), 1) if alive else None
        code = farm.process.returncode
        log.seek(0)
        output = log.read().decode("utf-8", "replace")
    exit_text = None
    if not alive:
        exit_text = signal.Signals(-code).name if code is not None and code < 0 else f"exit status {code}"
    stack_at = output.rfind("Fatal Python error")
    return HttpSoakReport(
        command=command,
        seed=seed,
        requested_calls=calls,
        calls=soak.calls,
        resets=soak.resets,
        episodes=soak.episodes,
        tokens=tokens,
        servers=len(names),
        seconds=round(seconds, 2),
        calls_per_s=round(soak.calls / seconds, 1) if seconds else 0.0,
        outcomes=dict(soak.outcomes.most_common()),
        shapes=dict(soak.shapes.most_common()),
        repro_calls=soak.repro,
        host_alive=alive,
        servers_answering=answering,
        tools_listed=listed,
        refuses_without_token=refuses,
        host_exit=exit_text,
        host_stack=output[stack_at:][:12_000] if stack_at >= 0 else None,
        host_rss_mb_after=rss,
        samples=soak.samples,
    )


def render_http_markdown(report: HttpSoakReport) -> str:
    verdict = "survived" if report.ok else "DID NOT SURVIVE"
    lines = [
        "# envfarm soak --http",
        "",
        f"`{report.command}`" if report.command else "",
        "",
        (
            f"The farm host {verdict}: {report.calls} tool calls ({report.repro_calls} of them issue 25's "
            f"reproduction) and {report.resets} resets in {report.episodes} episodes over {report.tokens} tokens "
            f"and {report.servers} servers, in {report.seconds:.0f} s ({report.calls_per_s:g} calls/s)."
        ),
        (
            f"After: host alive {report.host_alive}, {report.servers_answering}/{report.servers} servers listing "
            f"{report.tools_listed} tools, refuses a request without a token {report.refuses_without_token}, "
            f"RSS {report.host_rss_mb_after} MB."
        ),
        "",
        "outcomes: " + ", ".join(f"{k} {v}" for k, v in report.outcomes.items()),
        "shapes: " + ", ".join(f"{k} {v}" for k, v in report.shapes.items()),
    ]
    if report.host_exit:
        lines += ["", f"## the host died ({report.host_exit})", "", "```", (report.host_stack or "(no stack)"), "```"]
    if report.samples:
        lines += ["", "samples:", *(f"- {s}" for s in report.samples)]
    return "\n".join(lines) + "\n"
