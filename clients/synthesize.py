"""Task synthesis: graph -> sampled chain -> grounded run -> calibrated request -> `Task`.

`synthesize` is the one entry point (`envfarm tasks` and `envfarm run` call it). Task `i` of a run
draws from `random.Random(f"{seed}:{sampler}:{i}")` alone and runs sequentially on fresh episodes,
so the same seed and servers give the same tasks byte for byte.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Literal

import networkx as nx
from pydantic import BaseModel, Field

from clients.connect import Connections
from clients.graph import build_graph, load_specs, summarize
from clients.grounding import Drop, Grounded, Grounder, PersonaRecord, ServerWorld, observe, people
from clients.sampling import Catalog, RandomWalkSampler, TopologySampler, Unresolvable
from clients.tasks import Persona, Provenance, Task, ToolRef, Turn
from clients.writing import STYLES, LLMWriter, OfflineWriter, Request, over_specification, scrub, vocabulary
from envfarm.llm import ChatModel, LLMError, ModelConfig
from servers.runtime.registry import default_farm_root, load_registry

MULTI_SERVER_SHARE = 0.5
DISTRACTORS = 5
ATTEMPTS_PER_TASK = 8
FALLBACK_PERSONA = PersonaRecord(name="Alex Morgan", email="")


class SynthesisOptions(BaseModel):
    n: int = Field(ge=1)
    servers: list[str] | None = None
    sampler: Literal["topology", "random"] = "topology"
    max_servers: int = Field(2, ge=1)
    seed: int = 0
    writer: ModelConfig | None = None
    calibrate: bool = True


class OverSpecSummary(BaseModel):
    tool_names: float = 0.0
    internal_ids: float = 0.0
    literal_arguments: float = 0.0
    step_words: float = 0.0
    total: float = 0.0


class SynthesisSummary(BaseModel):
    requested: int
    produced: int
    attempts: int
    sampler: str
    seed: int
    writer: str
    chain_lengths: dict[int, int] = Field(description="calls per task -> tasks")
    mean_chain_length: float
    tasks_per_server: dict[str, int]
    tasks_per_domain: dict[str, int]
    cross_server_share: float = Field(description="share of tasks that span two or more servers")
    data_dependency_share: float = Field(description="share of tasks with >= 3 calls linked by outputs used as inputs")
    dropped: dict[str, int] = Field(description="chains that failed, by reason")
    over_specification: dict[str, OverSpecSummary] = Field(
        description="'before' (the chain as instructions) and 'after' (calibrated), mean per task"
    )
    leaks: dict[str, int] = Field(
        description="calibrated opening messages with a tool name or an internal id (must be 0)"
    )
    writer_fallbacks: int = 0
    graph: dict[str, int] = Field(default_factory=dict)
    seconds: float
    cpu_seconds: float = Field(
        description="CPU time of this process (in-process servers included): wall time on a loaded machine overstates the cost"
    )


class Synthesis(BaseModel):
    tasks: list[Task]
    summary: SynthesisSummary


def dependency_depth(task: Task) -> int:
    """Calls in the largest group linked by outputs used as later inputs."""
    graph = nx.Graph()
    graph.add_nodes_from(range(len(task.gold_calls)))
    graph.add_edges_from((i, u) for i, call in enumerate(task.gold_calls) for u in call.uses)
    linked = [c for c in nx.connected_components(graph) if len(c) > 1]
    return max((len(c) for c in linked), default=0)


def _versions(servers: Sequence[str]) -> dict[str, str]:
    try:
        versions = {"envfarm": version("envfarm")}
    except PackageNotFoundError:
        versions = {"envfarm": "unknown"}
    try:
        registry = load_registry(default_farm_root())
    except (OSError, ValueError):
        return versions
    for server in servers:
        entry = registry.get(server)
        if entry is not None:
            versions[server] = f"{entry.version}+{entry.code_hash[:12]}"
    return versions


def _domains(servers: Sequence[str]) -> dict[str, str]:
    try:
        registry = load_registry(default_farm_root())
    except (OSError, ValueError):
        return {}
    return {s: e.domain for s in servers if (e := registry.get(s)) is not None}


class _Run:
    def __init__(
        self, options: SynthesisOptions, connections: Connections, catalog: Catalog, worlds: dict[str, ServerWorld]
    ) -> None:
        self.options = options
        self.catalog = catalog
        self.grounder = Grounder(connections, catalog, worlds)
        self.sampler = TopologySampler(catalog) if options.sampler == "topology" else RandomWalkSampler(catalog)
        self.offline = OfflineWriter(catalog)
        self.people = {s: people(w) for s, w in worlds.items()}
        self.servers = sorted(worlds)
        self.pairs = [
            (a, b) for a in self.servers for b in self.servers if a < b and set(self.people[a]) & set(self.people[b])
        ]

    def _servers_and_persona(self, rng: random.Random) -> tuple[list[str], PersonaRecord]:
        if self.options.max_servers >= 2 and self.pairs and rng.random() < MULTI_SERVER_SHARE:
            pair = list(rng.choice(self.pairs))
            rng.shuffle(pair)
            emails = sorted(set(self.people[pair[0]]) & set(self.people[pair[1]]))
            email = rng.choice(emails)
            record = self.people[pair[0]][email].model_copy(deep=True)
            for key, value in self.people[pair[1]][email].facts.items():
                record.facts.setdefault(key, value)
            return pair, record
        server = rng.choice(self.servers)
        candidates = sorted(self.people[server])
        return [server], (self.people[server][rng.choice(candidates)] if candidates else FALLBACK_PERSONA)

    def task(self, index: int, grounded: Grounded, request: Request, style: str, rng: random.Random) -> Task:
        chain, calls = grounded.chain, grounded.calls
        vocab = vocabulary(grounded, self.catalog)
        if self.options.calibrate:
            turns = [scrub(m, vocab) for m in request.turns]
            hidden = request.hidden_facts
        else:
            turns, hidden = [request.uncalibrated, *request.turns[1:]], []
        enabled = [ToolRef(server=s, tool=t.name) for s in chain.servers for t in self.catalog.by_server[s]]
        others = [s for s in self.servers if s not in chain.servers]
        if others:
            extra = self.catalog.by_server[rng.choice(others)]
            enabled += [ToolRef(server=t.server, tool=t.name) for t in rng.sample(extra, min(DISTRACTORS, len(extra)))]
        persona = grounded.persona
        return Task(
            id=f"{chain.sampler}-s{self.options.seed}-{index:04d}",
            servers=chain.servers,
            tools=enabled,
            principal=grounded.principal,
            persona=Persona(name=persona.name, email=persona.email or None, style=style, known_facts=persona.facts),
            opening_message=turns[0],
            uncalibrated_message=request.uncalibrated,
            hidden_facts=hidden,
            turns=[
                Turn(message=m, gold_calls=[i for i, c in enumerate(calls) if c.turn == t]) for t, m in enumerate(turns)
            ],
            gold_calls=calls,
            expected_state=grounded.expected,
            claims=request.claims,
            policy_checks=[],
            over_specification={
                "uncalibrated": over_specification(request.uncalibrated, vocab),
                "calibrated": over_specification(turns[0], vocab),
            },
            provenance=Provenance(
                sampler=chain.sampler,
                seed=self.options.seed,
                chain=[f"{s.server}.{s.tool}" for s in chain.steps],
                versions=_versions(chain.servers),
                writer=request.writer,
            ),
        )


async def synthesize(
    options: SynthesisOptions, connections: Connections, progress: Callable[[int, int], None] | None = None
) -> Synthesis:
    """`options.n` grounded, calibrated tasks on the connected servers (or fewer, if too many chains fail)."""
    started, cpu = time.perf_counter(), time.process_time()
    servers = options.servers or sorted(connections.targets)
    unknown = sorted(set(servers) - set(connections.targets))
    if unknown:
        raise ValueError(f"not connected: {', '.join(unknown)}; known: {', '.join(sorted(connections.targets))}")
    specs = await load_specs(connections, servers)
    catalog = Catalog(specs, build_graph(specs))
    worlds = {s: await observe(connections, s, catalog.by_server[s]) for s in servers}
    run = _Run(options, connections, catalog, worlds)
    model = ChatModel(options.writer) if options.writer else None
    llm = LLMWriter(model, run.offline) if model else None
    tasks: list[Task] = []
    dropped: Counter[str] = Counter()
    fallbacks = attempts = 0
    try:
        while len(tasks) < options.n and attempts < options.n * ATTEMPTS_PER_TASK:
            rng = random.Random(f"{options.seed}:{options.sampler}:{attempts}")
            attempts += 1
            chosen, persona = run._servers_and_persona(rng)
            try:
                chain = run.sampler.sample(rng, chosen[: options.max_servers])
                grounded = await run.grounder.ground(rng, chain, persona)
            except Unresolvable:
                dropped["no chain within the caps"] += 1
                continue
            except Drop as drop:
                dropped[drop.reason] += 1
                run.sampler.outcomes.record(chain, False)
                continue
            run.sampler.outcomes.record(chain, True)
            style = rng.choice(STYLES)
            if llm is not None:
                try:
                    request, fell_back = await llm.write(rng, grounded, style, vocabulary(grounded, catalog))
                except LLMError as exc:
                    raise LLMError(f"task writer: {exc}") from exc
                fallbacks += fell_back
            else:
                request = run.offline.write(rng, grounded, style)
            tasks.append(run.task(len(tasks), grounded, request, style, rng))
            if progress:
                progress(len(tasks), options.n)
    finally:
        await run.grounder.aclose()
        if model is not None:
            await model.aclose()
    summary = _summary(options, tasks, attempts, dropped, fallbacks, catalog, llm)
    summary.seconds, summary.cpu_seconds = round(time.perf_counter() - started, 2), round(time.process_time() - cpu, 2)
    return Synthesis(tasks=tasks, summary=summary)


def _mean(measures: list[dict[str, int]]) -> OverSpecSummary:
    if not measures:
        return OverSpecSummary()
    keys = ("tool_names", "internal_ids", "literal_arguments", "step_words")
    means = {k: round(sum(m[k] for m in measures) / len(measures), 3) for k in keys}
    return OverSpecSummary(**means, total=round(sum(means.values()), 3))


def _summary(
    options: SynthesisOptions,
    tasks: list[Task],
    attempts: int,
    dropped: Counter[str],
    fallbacks: int,
    catalog: Catalog,
    llm: LLMWriter | None,
) -> SynthesisSummary:
    lengths = Counter(len(t.gold_calls) for t in tasks)
    domains = _domains(sorted(catalog.by_server))
    per_server = Counter(s for t in tasks for s in t.servers)
    per_domain = Counter(domains.get(s, "unknown") for t in tasks for s in t.servers)
    share = lambda hits: round(hits / len(tasks), 3) if tasks else 0.0
    before = [t.over_specification["uncalibrated"].model_dump() for t in tasks]
    after = [t.over_specification["calibrated"].model_dump() for t in tasks]
    graph = summarize(catalog.graph)
    return SynthesisSummary(
        requested=options.n,
        produced=len(tasks),
        attempts=attempts,
        sampler=options.sampler,
        seed=options.seed,
        writer=llm.name if llm else "offline",
        chain_lengths=dict(sorted(lengths.items())),
        mean_chain_length=round(sum(k * v for k, v in lengths.items()) / len(tasks), 2) if tasks else 0.0,
        tasks_per_server=dict(sorted(per_server.items())),
        tasks_per_domain=dict(sorted(per_domain.items())),
        cross_server_share=share(sum(1 for t in tasks if len(t.servers) > 1)),
        data_dependency_share=share(sum(1 for t in tasks if dependency_depth(t) >= 3)),
        dropped=dict(sorted(dropped.items())),
        over_specification={"before": _mean(before), "after": _mean(after)},
        leaks={
            "tool_names": sum(1 for t in tasks if t.over_specification["calibrated"].tool_names),
            "internal_ids": sum(1 for t in tasks if t.over_specification["calibrated"].internal_ids),
        },
        writer_fallbacks=fallbacks,
        graph={k: int(v) for k, v in graph.items()},
        seconds=0.0,
        cpu_seconds=0.0,
    )
