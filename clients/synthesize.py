"""Task synthesis: graph -> sampled chain -> grounded run -> calibrated request -> `Task`.

`synthesize` is the one entry point (`envfarm tasks` and `envfarm run` call it). Task `i` of a run
draws from `random.Random(f"{seed}:{sampler}:{i}")` alone and runs sequentially on fresh episodes,
so the same seed and servers give the same tasks byte for byte.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, Field

from envfarm.clients.audit import (
    CHECKS,
    Auditor,
    Finding,
    ServerFacts,
    chain_depth,
    depth_histogram,
    has_field,
    mentions,
    rows_of,
    server_facts,
    staff_internal,
    user_text,
    value_of,
)
from envfarm.clients.coherence import (
    addresses_self,
    mixed_rows,
    overlapping_row,
    switches_to_current,
    unsupported_duplicate,
)
from envfarm.clients.connect import Connections
from envfarm.clients.datafit import (
    clock_day,
    expired_record,
    retires_what_was_used,
    row_conflicts,
    value_conflicts,
    written_values,
)
from envfarm.clients.deepen import asker_row, own_rows_reads
from envfarm.clients.effects import Undone, lifecycle_columns, undone
from envfarm.clients.flow import flow_pairs
from envfarm.clients.graph import (
    ToolSpec,
    build_graph,
    is_id_like,
    load_intents,
    load_specs,
    output_of,
    summarize,
    words,
)
from envfarm.clients.grounding import (
    PERSON_NAME,
    Drop,
    Grounded,
    Grounder,
    PersonaRecord,
    Row,
    ServerWorld,
    observe,
    people,
    persona_rows,
)
from envfarm.clients.policy_checks import (
    PolicyRule,
    RequiredRead,
    checks_for,
    governing,
    identifies,
    identify,
    load_rules,
    require_reads,
    required_reads,
    shows,
)
from envfarm.clients.sampling import DEEP_STEPS, Catalog, RandomWalkSampler, TopologySampler, Unresolvable
from envfarm.clients.tasks import GoldCall, HiddenFact, Persona, PolicyCheck, Provenance, Task, ToolRef, Turn
from envfarm.clients.writing import (
    STYLES,
    LLMWriter,
    OfflineWriter,
    Request,
    held,
    over_specification,
    point_at,
    scrub,
    vocabulary,
)
from envfarm.llm import ChatModel, LLMError, ModelConfig
from envfarm.servers.runtime.control import ControlError, TableDiff
from envfarm.servers.runtime.registry import Registry, default_farm_root, load_registry

MULTI_SERVER_SHARE = 0.5
# Kept tasks that span two servers, at least: a pair keeps a task 8 to 20 times less often than one server does
# (seed 8243: 1 in 216 pair draws, 1 in 17 one-server draws), so at odds 0.85 of a pair while behind, the share
# could not pass about 0.3 and ended under it (23% at seed 9151, 25% at 8243). While behind, a pair is drawn with
# MULTI_SERVER_SHARE_BEHIND odds (30% and 27% at seeds 8243 and 9151, n=60, about 1.2x the chains). A farm whose
# pairs rarely pass must still get its one-server tasks: once PAIR_TRIAL pairs have been drawn, pairs that keep
# tasks at under PAIR_YIELD_FLOOR times one server's rate are drawn at MULTI_SERVER_SHARE odds (`pair_odds`).
CROSS_SERVER_SHARE = 0.3
MULTI_SERVER_SHARE_BEHIND = 0.95
PAIR_TRIAL = 300
PAIR_YIELD_FLOOR = 0.02
# Of the pairs drawn: how often one whose first server can carry a value into the second's turn (the dates of a
# rental into a calendar, `envfarm.clients.flow`), so cross-server turns are joined by more than the person.
FLOW_PAIR_SHARE = 0.7
# Kept cross-server tasks where a value beyond the person flows between the turns, at least: while short of it, a
# cross-server task joined by the person alone is set aside with FLOW_SKIP odds (its own random stream).
FLOW_SHARE = 0.5
FLOW_SKIP = 0.6
DISTRACTORS = 5
ATTEMPTS_PER_TASK = 100  # chains sampled per task asked for, at most: strict audits drop most candidates
# Setting a shallow or unjoined task aside trades attempts for depth and flow; past this share of the attempt
# budget, or once the attempts left would not pay SET_ASIDE_MARGIN times for the tasks still owed at the rate
# seen so far, nothing more is set aside, so a farm with few deep or flowing plans still yields the tasks asked
# for. A fixed half of the budget ran out two thirds into a run (seed 1201, n=60: 38% deep for a 60% target);
# with the margin, 100 attempts a task and a 0.75 target: 67% and 70% deep at seeds 1201 and 9907 (~1.8x CPU).
SET_ASIDE_BUDGET = 0.9
SET_ASIDE_MARGIN = 1.2
BARREN_AFTER = 15  # tries after which a server that has yielded no task is not chosen alone again
DEAD_AFTER = 3  # times a server that never answered a whole chain may stop answering before it is left out
MIN_LINKED = 3  # calls linked by data a kept task needs at least (refusals aside): a lookup and its write is short work
MIN_LINKED_FOREIGN = 2  # on a server without intents (a foreign todo list), whose flat tools rarely chain three deep
REPAIRS = 6  # rounds of adding what tells the row the user means apart, before a task is dropped
FALLBACK_PERSONA = PersonaRecord(name="Alex Morgan", email="")
REFUSAL_SHARE = 0.3  # of tasks whose goal a customer-identity rule governs: someone else asks for it
REFUSAL_CAP = 0.1  # of the tasks asked for, at most: a refusal decided from the opening teaches little
# Kept tasks whose gold is DEEP_CALLS or more needed calls linked by values (`chain_depth`), at least: while the
# kept share is below DEEP_SHARE, a shallower plan (before grounding) or task (after the audit) is set aside with
# SHALLOW_SKIP odds (its own random stream), so the farm's easy goals still appear, only less often than the
# multi-step work it exists to teach. Refusals are never set aside, so the share ends a little under DEEP_SHARE
# (0.46 of 80 tasks at seeds 4402 and 4403 with a target of 0.5). Since goals are weighted by their honest reach
# (`Catalog.reach`), fewer plans are shallow and setting them aside costs less: the target went from 0.55 to 0.6,
# and to 0.75 once the set-aside budget followed the run's own rate (blind annotation scored 3-call tasks D 3).
DEEP_CALLS = DEEP_STEPS
DEEP_SHARE = 0.75
SHALLOW_SKIP = 0.9


def pair_odds(drawn: Mapping[str, int], kept: Mapping[str, int]) -> float:
    """The odds the next attempt draws a pair of servers, from the attempts so far and the tasks kept, each
    counted by "pair" or "one": MULTI_SERVER_SHARE while the kept tasks span two servers at CROSS_SERVER_SHARE
    or more; below it MULTI_SERVER_SHARE_BEHIND, unless pairs, tried PAIR_TRIAL times, keep tasks at under
    PAIR_YIELD_FLOOR times one server's rate (then drawing only pairs would starve the one-server tasks)."""
    if kept.get("pair", 0) >= CROSS_SERVER_SHARE * (kept.get("pair", 0) + kept.get("one", 0)):
        return MULTI_SERVER_SHARE
    pairs, ones = drawn.get("pair", 0), drawn.get("one", 0)
    if pairs < PAIR_TRIAL or not ones:
        return MULTI_SERVER_SHARE_BEHIND
    paying = kept.get("pair", 0) / pairs >= PAIR_YIELD_FLOOR * kept.get("one", 0) / ones
    return MULTI_SERVER_SHARE_BEHIND if paying else MULTI_SERVER_SHARE


def goal_signature(persona: PersonaRecord, calls: Sequence[GoldCall], roles: Sequence[str]) -> str:
    """What makes two tasks one: the same goal with the same arguments for the same person, however it was
    reached. Where the calls write, the writes alone are the goal: a read planned beside them may be pruned later
    (seed 9907 kept "move booking HB04429 to room 302" twice, once with a room-type read that did not survive)."""
    goals = [c for c, role in zip(calls, roles) if role != "lookup"]
    writes = [c for c in calls if c.is_write]
    return json.dumps(
        [persona.email or persona.name] + [[c.server, c.tool, c.arguments] for c in writes or goals],
        sort_keys=True,
        default=str,
    )


class SynthesisOptions(BaseModel):
    n: int = Field(ge=1)
    servers: list[str] | None = None
    sampler: Literal["topology", "random"] = "topology"
    max_servers: int = Field(2, ge=1)
    seed: int = 0
    writer: ModelConfig | None = None
    calibrate: bool = True
    refusal_share: float = Field(
        default=REFUSAL_SHARE, ge=0.0, le=1.0, description="of tasks whose goal an identity rule governs: made refusals"
    )
    farm: Path | None = Field(
        default=None,
        description=(
            "the farm whose registry names the servers' versions and domains (default: $ENVFARM_HOME, else the "
            "installed farm)"
        ),
    )

    def registry(self) -> Registry:
        """The farm's registry (empty when it cannot be read: a foreign server has no entry anyway)."""
        try:
            return load_registry(self.farm or default_farm_root())
        except (OSError, ValueError):
            return Registry()


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
    principal_share: float = Field(0.0, description="share of tasks acting for a named principal")
    policy_check_share: float = Field(0.0, description="share of tasks with at least one policy check")
    policy_checks: dict[str, int] = Field(default_factory=dict, description="policy checks by kind, over all tasks")
    refusals: int = Field(0, description="tasks whose right answer is to refuse (the policy forbids the request)")
    data_dependency_share: float = Field(description="share of tasks with >= 3 calls linked by outputs used as inputs")
    deep_dependency_share: float = Field(
        0.0, description="share of tasks with >= 4 calls linked by outputs used as inputs"
    )
    chain_depths: dict[int, int] = Field(
        default_factory=dict,
        description="needed, motivated gold calls linked by values (`envfarm.clients.audit.chain_depth`) -> tasks",
    )
    deep_chain_share: float = Field(
        0.0, description=f"share of tasks whose chain depth is {DEEP_CALLS} or more (the rubric's real multi-step work)"
    )
    cross_server_flow_share: float = Field(
        0.0,
        description="of the tasks spanning two or more servers, the share where a value one server's calls returned "
        "is an argument of another server's call or of a later turn's (data flowing between turns)",
    )
    cross_server_flow_beyond_identity_share: float = Field(
        0.0,
        description="the same, counting only values other than who the persona is (their name, email, known facts): "
        "a second turn joined to the first by the person alone",
    )
    dropped: dict[str, int] = Field(description="chains that failed, by reason")
    kept_apart: dict[str, str] = Field(
        default_factory=dict, description="servers kept out of cross-server tasks, and why (their clock differs)"
    )
    repaired: int = Field(default=0, description="tasks kept after the writer added what tells a row apart")
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
        description=(
            "CPU time of this process (in-process servers included): wall time on a loaded machine overstates the cost"
        )
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


def flowing_values(task: Task) -> list[Any]:
    """The values that flow between turns or servers: an argument of a gold call that an earlier call on another
    server, or of an earlier turn, returned (traced through `uses`)."""
    calls = task.gold_calls
    found = []
    for call in calls:
        for used in call.uses:
            source = calls[used]
            if source.server == call.server and source.turn >= call.turn:
                continue
            found += [
                v
                for v in call.arguments.values()
                if isinstance(v, str | int | float) and not isinstance(v, bool) and _holds(source.output, v)
            ]
    return found


def flows_between_turns(task: Task, beyond_identity: bool = False) -> bool:
    """Whether data flows from one turn or server to another (`flowing_values`); with `beyond_identity`, a value
    other than who the persona is counts only (their own email carried to the second service joins the two
    turns by the person alone)."""
    values = flowing_values(task)
    if not beyond_identity:
        return bool(values)
    persona = task.persona
    who = {persona.name, persona.email, *(v for v in persona.known_facts.values() if isinstance(v, str))}
    return any(not isinstance(v, str) or v not in who for v in values)


def changes_records(grounded: Grounded, server: str, world: ServerWorld) -> bool:
    """Whether the task changes or removes rows of the persona's that were there before it on `server` (their
    stay moved, their hold cancelled), not only adds rows or changes rows that are no one's (a copy lent, a room
    taken). The third-party rule forbids changing one customer's records for another person; booking a room or
    borrowing a book for one's partner changes no record of the partner's, so a refusal task is made only of a
    goal that changes theirs."""
    state = grounded.expected.get(server)
    if state is None:
        return False
    theirs = {
        row.get(world.keys.get(table, ""))
        for table, rows in persona_rows(world, grounded.persona, 2).items()
        for row in rows
    }
    changed = {
        key
        for table, diff in state.diff.items()
        for key in [*(u.get("key") for u in diff.updated), *(r.get(world.keys.get(table, "")) for r in diff.removed)]
    }
    return bool(changed & (theirs - {None}))


def _holds(output: object, value: object, field: str | None = None) -> bool:
    """Whether a row of `output` has `value` (an id, a name) as one of its fields (as `field`, where named)."""
    if field is not None:
        return any(field in r and r[field] == value and not isinstance(r[field], bool) for r in rows_of(output))
    return any(value in r.values() for r in rows_of(output))


def _key_like(value: object) -> bool:
    return isinstance(value, str) and len(value) > 2 or isinstance(value, int) and not isinstance(value, bool)


def _earliest_providers(task: Task) -> list[list[int]]:
    """Per gold call, the calls that fed it, each value traced to the first call whose output showed it: a get
    that read again the row a search already showed ("where my bill stands" read only to find the stay) feeds
    nothing of its own."""
    fed: list[list[int]] = []
    for index, call in enumerate(task.gold_calls):
        providers: set[int] = set()
        for used in call.uses:
            source = task.gold_calls[used]
            # a read keyed by the very value this call takes (`get_domain {domainid: 5}` before `delete_domain
            # {domainid: 5}`) showed it second: whoever fed that read showed it first (a number only under the same
            # name: user 2, team 2 and repo 2 are different rows)
            if fed[used] and not source.is_write:
                taken = [(n, v) for n, v in call.arguments.items() if _key_like(v) and _holds(source.output, v)]
                keyed = [
                    (n, v)
                    for n, v in call.arguments.items()
                    if _key_like(v)
                    and (source.arguments.get(n) == v or isinstance(v, str) and v in source.arguments.values())
                ]
                if keyed and all(item in keyed for item in taken):
                    providers.update(fed[used])
                    continue
            # a text is told apart anywhere; a number (a key 5) only under its own name (`template_id`): a count
            # of 5 elsewhere shows no template
            values = [
                (None, v)
                for v in call.arguments.values()
                if isinstance(v, str) and len(v) > 2 and _holds(task.gold_calls[used].output, v)
            ] + [
                (n, v)
                for n, v in call.arguments.items()
                if isinstance(v, int) and not isinstance(v, bool) and _holds(task.gold_calls[used].output, v, n)
            ]
            if not values:
                providers.add(used)
            for field, value in values:
                providers.add(next(i for i in range(index) if _holds(task.gold_calls[i].output, value, field)))
        fed.append(sorted(providers))
    return fed


def prune(task: Task) -> Task:
    """The task without padding: a gold read whose output feeds no later kept call and no claim (a write
    always stays), where what a call uses is traced to the first call that showed it. Reads change nothing,
    so the expected state is the same."""
    task = task.model_copy(
        update={
            "gold_calls": [
                c.model_copy(update={"uses": fed})
                for c, fed in zip(task.gold_calls, _earliest_providers(task), strict=True)
            ]
        }
    )
    # A claim is answered by the first call whose output shows its value on the row the last such call shows it
    # on (a get after a list that showed that row answers nothing more: the audit calls it padding; a list where
    # another row happens to hold the value answers nothing); a claim without a field, by every call whose output
    # says it.
    answers: set[int] = set()
    for claim in task.claims:
        field = claim.field or ""
        holding = {
            i: rows
            for i, call in enumerate(task.gold_calls)
            if field
            and (
                rows := [
                    r
                    for r in rows_of(call.output)
                    if has_field(r, field)
                    and any(str(value_of(r, field)) == v or _same_text(value_of(r, field), v) for v in claim.values)
                ]
            )
        }
        if holding:
            last = holding[max(holding)]
            answers.add(next(i for i, rows in holding.items() if any(_same_row(r, t) for r in rows for t in last)))
        else:
            answers.update(
                i
                for i, call in enumerate(task.gold_calls)
                if any(json.dumps(v)[1:-1] in json.dumps(call.output, default=str) for v in claim.values)
            )
    if any(c.kind == "must_refuse" for c in task.policy_checks):
        return task  # a refusal's reads are what shows the row is not the asker's: they feed the refusal
    keep: set[int] = identification_lookups(task) | policy_reads(task)
    for index in range(len(task.gold_calls) - 1, -1, -1):
        call = task.gold_calls[index]
        feeds = any(index in task.gold_calls[k].uses for k in keep)
        if call.is_write or feeds or index in answers:
            keep.add(index)
    if len(keep) == len(task.gold_calls):
        return task
    order = sorted(keep)
    new = {old: i for i, old in enumerate(order)}
    calls = [
        task.gold_calls[i].model_copy(update={"uses": [new[u] for u in task.gold_calls[i].uses if u in new]})
        for i in order
    ]
    turns = [t.model_copy(update={"gold_calls": [new[i] for i in t.gold_calls if i in new]}) for t in task.turns]
    provenance = task.provenance.model_copy(update={"chain": [task.provenance.chain[i] for i in order]})
    return task.model_copy(update={"gold_calls": calls, "turns": turns, "provenance": provenance})


def _same_row(one: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether two outputs show the same record: every plain field both carry agrees (a list's summary row and
    the get of that row share an id, a name; another row of the list differs in them)."""
    shared = [k for k in one.keys() & other.keys() if not isinstance(one[k], (dict, list))]
    return bool(shared) and all(one[k] == other[k] for k in shared)


def policy_reads(task: Task) -> set[int]:
    """The gold reads a `must_call` check puts before a write (the address validated before a redirect): the
    policy asks for them even where what they return is no answer the user wants."""
    return {
        next(i for i, c in enumerate(task.gold_calls) if (c.server, c.tool) == (check.server, check.tool))
        for check in task.policy_checks
        if check.kind == "must_call"
        and check.tools
        and any((c.server, c.tool) == (check.server, check.tool) for c in task.gold_calls)
    }


def identification_lookups(task: Task) -> set[int]:
    """The gold reads a `must_identify` check needs: before the first write it governs on a server, the reads
    keyed on what identifies the customer, and those showing an identifying value no earlier one showed (the
    card ending 4242 among theirs). Their outputs feed nothing, yet without them the gold skips identification."""
    needed: set[int] = set()
    for check in (c for c in task.policy_checks if c.kind == "must_identify"):
        governed = [
            i for i, c in enumerate(task.gold_calls) if c.is_write and (c.server, c.tool) == (check.server, check.tool)
        ]
        shown: set[str] = set()
        for index, call in enumerate(task.gold_calls[: governed[0] if governed else 0]):
            if call.is_write or call.server != check.server:
                continue
            fresh = {v for v in check.values if v not in shown and shows(call, v)}
            if identifies(call.arguments, check.values) or fresh:
                needed.add(index)
                shown |= fresh
    return needed


def _same_text(value: object, said: str) -> bool:
    """Whether a claim's value (its text, '57.00') is the output's `value` (57.0); a yes/no's 'true' is `true`."""
    if isinstance(value, bool):
        return json.dumps(value) == said
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return abs(float(said) - float(value)) < 1e-9
        except ValueError:
            return False
    return False


def _versions(servers: Sequence[str], registry: Registry) -> dict[str, str]:
    try:
        versions = {"envfarm": version("envfarm")}
    except PackageNotFoundError:
        versions = {"envfarm": "unknown"}
    for server in servers:
        entry = registry.get(server)
        if entry is not None:
            versions[server] = f"{entry.version}+{entry.code_hash[:12]}"
    return versions


def task_pairs(people: dict[str, dict[str, PersonaRecord]], facts: dict[str, ServerFacts]) -> list[tuple[str, str]]:
    """The pairs of servers (each sorted) one task may join: people in common, and one clock (servers whose
    "now" differs never share a task)."""
    servers = sorted(people)
    clock = {s: facts.get(s, ServerFacts()).clock for s in servers}
    return [
        (a, b)
        for i, a in enumerate(servers)
        for b in servers[i + 1 :]
        if clock[a] == clock[b] and not people[a].keys().isdisjoint(people[b])
    ]


class _Run:
    def __init__(
        self,
        options: SynthesisOptions,
        connections: Connections,
        catalog: Catalog,
        worlds: dict[str, ServerWorld],
        rules: dict[str, list[PolicyRule]],
        facts: dict[str, ServerFacts],
        required: dict[str, list[RequiredRead]] | None = None,
    ) -> None:
        self.options = options
        self.required = required or {}  # per server: the reads its policy puts before a write
        self.registry = options.registry()  # read once: a broad farm's registry lists hundreds of servers
        # A desk whose instructions say how a customer is identified but lists no such rule (an imported server)
        # is held to that sentence over all its writes, as the audit holds it (`Auditor.identify_rule`).
        self.rules = {
            server: [
                *listed,
                *(
                    [
                        PolicyRule(
                            server=server,
                            id="identify",
                            rule=sentence,
                            tools=[t.name for t in catalog.by_server.get(server, []) if not t.read_only],
                            kind="identify",
                        )
                    ]
                    if (sentence := facts.get(server, ServerFacts()).identify_rule)
                    and facts.get(server, ServerFacts()).kind == "staff"
                    and not any(r.kind == "identify" for r in listed)
                    else []
                ),
            ]
            for server, listed in rules.items()
        }
        self.facts = facts
        self.catalog = catalog
        today = {s: day for s, f in facts.items() if f.clock and (day := clock_day(f.clock))}
        self.grounder = Grounder(connections, catalog, worlds, today)
        # Staff-internal work (receiving stock, assigning a guide) is never what the customer asks for.
        never = frozenset(
            t.key
            for server, tools in catalog.by_server.items()
            if facts.get(server, ServerFacts()).kind == "staff"
            for t in tools
            if not t.read_only and staff_internal(t.name)
        ) | frozenset(  # where a server has intents, only what its principal's people ask for is a goal
            key
            for server in catalog.by_server
            for key in catalog.not_asked(server, facts.get(server, ServerFacts()).kind)
        )
        self.sampler = (
            TopologySampler(catalog, never_goals=never) if options.sampler == "topology" else RandomWalkSampler(catalog)
        )
        self.offline = OfflineWriter(catalog, worlds)
        self.auditor = Auditor(catalog.specs.values(), worlds, facts, catalog.intents, rules)
        self.people = {s: people(w) for s, w in worlds.items()}
        self.lifecycle: dict[str, set[str]] = {}  # server -> its status-like columns, read when first needed
        self.servers = sorted(worlds)
        clock = {s: facts.get(s, ServerFacts()).clock for s in self.servers}
        self.pairs = task_pairs(self.people, facts)
        # carried values are said in the writer's words ("for the same dates"): only servers with intents
        self.flow_pairs = flow_pairs(
            {s: t for s, t in catalog.by_server.items() if s in catalog.intents},
            self.pairs,
            {s: catalog.people_keys(s) for s in catalog.by_server},
        )
        self.tried: Counter[str] = Counter()  # attempts per server, and the servers that yielded a task
        self.yielded: set[str] = set()
        self.answered: set[str] = set()  # servers that answered every call of some grounded chain
        self.unanswered: Counter[str] = Counter()  # times a server stopped answering (hung, crashed, never started)
        paired = {s for pair in self.pairs for s in pair}
        self.kept_apart = {
            s: (
                f"no server on its clock ({clock[s] or 'unknown'}) has people in common with it"
                if any(clock[o] == clock[s] for o in self.servers if o != s)
                else f"its clock ({clock[s] or 'unknown'}) is no other server's"
            )
            for s in self.servers
            if s not in paired and len(self.servers) > 1
        }

    def stopped_answering(self, drop: Drop) -> None:
        """Count a server that stopped answering; one that has never answered a whole chain and did so
        DEAD_AFTER times (a hung or crashing server) is left out of the rest of the run, with the reason in
        `kept_apart`, so it no longer spends the attempt budget (and a call timeout each) of the healthy ones."""
        server = drop.server
        if drop.reason != "server unavailable" or server is None or server in self.answered:
            return
        self.unanswered[server] += 1
        if self.unanswered[server] < DEAD_AFTER or server not in self.servers or len(self.servers) == 1:
            return
        self.servers = [s for s in self.servers if s != server]
        self.pairs = [p for p in self.pairs if server not in p]
        self.flow_pairs = [p for p in self.flow_pairs if server not in p]
        self.kept_apart[server] = (
            f"stopped answering {self.unanswered[server]} times, never a whole chain: {drop.detail}"
        )

    def least_linked(self, task: Task, grounded: Grounded | None) -> int:
        """The calls linked by data a task needs: MIN_LINKED, or as many as its goals can be reached by (an
        imported API whose update needs only a list before it); MIN_LINKED_FOREIGN on a server without intents."""
        if grounded is None or not all(s in self.catalog.intents for s in task.servers):
            return MIN_LINKED_FOREIGN
        goals = [self.catalog.spec(s.server, s.tool) for s in grounded.chain.steps if s.role == "goal"]
        return max(MIN_LINKED_FOREIGN, min([MIN_LINKED, *(self.catalog.reach(g) for g in goals)]))

    def keep(self, task: Task, grounded: Grounded | None) -> tuple[Task | None, list[Finding], bool]:
        """The task if it passes the audit, after up to `REPAIRS` rounds of the writer pointing at the row
        the user means; else None and the findings. The flag says whether a repair was needed."""
        task = prune(task)
        # A detail held back for a lookup that pruning dropped answers nothing the agent will ask ("the title is
        # ..." of a task that never searches by title); who the user is ("my email is ...") always stays.
        used = {json.dumps(v, default=str) for c in task.gold_calls for v in c.arguments.values()}
        identity = (
            {(v.column, json.dumps(v.value, default=str)) for v in grounded.identification} if grounded else set()
        )
        task.hidden_facts = [
            h
            for h in task.hidden_facts
            if h.description.startswith("my ")
            or json.dumps(h.value, default=str) in used
            or (h.key, json.dumps(h.value, default=str)) in identity
        ]
        refusal = any(c.kind == "must_refuse" for c in task.policy_checks)
        least = self.least_linked(task, grounded)
        if not refusal and dependency_depth(task) < least:
            return None, [Finding(check="depth", detail=f"fewer than {least} calls linked by data")], False
        findings = self.auditor.check(task)
        repaired = False
        # A task written from intents names its rows as people do; an "I mean the ..." pointer at a lookup's
        # row would only garble it (its lookups do not follow the user's words): dropped instead.
        for _ in range(0 if task.provenance.writer.endswith("(intents)") else REPAIRS):
            pointers = [f for f in findings if f.check == "referents" and f.call is not None]
            if not pointers or len(pointers) != len(findings):
                break
            fixed = point_at(task, pointers[0], self.offline)
            if fixed is None:
                break
            task, repaired = fixed, True
            findings = self.auditor.check(task)
        return (None, findings, repaired) if findings else (task, [], repaired)

    async def undone(self, grounded: Grounded) -> list[Undone]:
        """The gold writes whose effect a later write of the same task takes back, or that change nothing
        (`envfarm.clients.effects`): on each server with two writes or more, the gold is replayed on a fresh
        episode and the server's diff read after each write. A replay that goes otherwise than the grounding
        did counts as undone too."""
        found: list[Undone] = []
        writes = Counter(c.server for c in grounded.calls if c.is_write)
        for server in sorted(writes):
            end = grounded.expected.get(server)
            if end is None:
                continue
            if not end.diff:  # a write on this server, and nothing changed
                found.append(Undone(0, "", None, "changed nothing"))
                continue
            if writes[server] < 2:
                continue
            if server not in self.lifecycle:
                tables = self.grounder.worlds[server].tables
                self.lifecycle[server] = lifecycle_columns(self.catalog.by_server.get(server, []), tables)
            held = await self.grounder.pool.take(server, grounded.persona.email or None)
            diffs: list[dict[str, TableDiff] | None] = []
            try:
                for index, call in enumerate(grounded.calls):
                    if call.server != server:
                        diffs.append(None)
                        continue
                    result = await held[0].call_tool(call.tool, call.arguments)
                    if result.is_error:
                        return [Undone(index, "", None, "the replay was refused")]
                    state = await held[0].state() if call.is_write else None
                    diffs.append(state.diff if state is not None else None)
            except ControlError:
                return [Undone(len(diffs), "", None, "the server stopped answering")]
            finally:
                await self.grounder.pool.give(server, held, clean=False)
            found += undone(diffs, end.diff, self.lifecycle[server])
        return found

    def incoherent(self, grounded: Grounded) -> str | None:
        """Why a gold write's drawn values tell no one story the data supports (`envfarm.clients.coherence`):
        details taken from different rows of one table, or a duplicate the data does not show; else None."""
        for call, sources in zip(grounded.calls, grounded.sources, strict=True):
            if not call.is_write:
                continue
            world = self.grounder.worlds[call.server]
            if mixed_rows(call.arguments, sources, world.tables) is not None:
                return "values drawn from different rows"
            if unsupported_duplicate(call.arguments, world.tables, world.keys) is not None:
                return "a duplicate the data does not show"
            if addresses_self(call.arguments, sources, grounded.persona.name) is not None:
                return "a text the person writes to themselves"
        for server, expected in grounded.expected.items():
            world = self.grounder.worlds[server]
            for table, diff in (expected.diff or {}).items():
                rows = world.tables.get(table, [])
                if any(overlapping_row(added, rows, world.keys.get(table)) for added in diff.added):
                    return "a new row on top of an existing one"
        # What the writes put into the data must fit what is there (`envfarm.clients.datafit`): no copy of another
        # row, nothing over the person's own rows, no date moved into the past, no reason the data belies.
        who = {v for v in (grounded.persona.email, grounded.persona.name) if v}
        for call, step in zip(grounded.calls, grounded.chain.steps, strict=True):
            world = self.grounder.worlds[call.server]
            if call.is_write and (found := value_conflicts(call.arguments, world.tables, world.keys, who)):
                return found[0][0]
            today = self.grounder.today.get(call.server)
            if step.role in ("goal", "follow") and expired_record(
                call.tool, call.arguments, world.tables, world.keys, today
            ):
                return "acts on an expired record"
        for server, expected in grounded.expected.items():
            world = self.grounder.worlds[server]
            today = self.grounder.today.get(server)
            written = written_values(grounded.calls, server)
            if found := row_conflicts(expected.diff, world.tables, world.keys, who, today, written):
                return found[0][0]
        diffs = {s: e.diff for s, e in grounded.expected.items()}
        keys = {s: self.grounder.worlds[s].keys for s in diffs}
        if retires_what_was_used(grounded.calls, diffs, keys) is not None:
            return "a later write retires what an earlier one used"
        return None

    def asks_for_no_change(self, task: Task) -> bool:
        """Whether a gold write of the written task keeps a reference the user asks to switch to as new
        (`envfarm.clients.coherence.switches_to_current`)."""
        said = user_text(task)
        for call in task.gold_calls:
            world = self.grounder.worlds.get(call.server)
            if (
                call.is_write
                and world
                and switches_to_current(call.arguments, call.output, world.tables, world.keys, said)
            ):
                return True
        return False

    def _servers_and_persona(
        self, rng: random.Random, odds: float = MULTI_SERVER_SHARE
    ) -> tuple[list[str], PersonaRecord]:
        """The task's servers and persona: with `odds` (see `pair_odds`) a pair of servers sharing a clock and the
        persona; else one server."""
        if self.options.max_servers >= 2 and self.pairs and rng.random() < odds:
            # A server first, then one it pairs with: a server with people in common with many (a newsletter
            # everyone subscribes to) is not in most tasks.
            if self.flow_pairs and rng.random() < FLOW_PAIR_SHARE:  # in order: the first turn's server feeds the second
                first = rng.choice(sorted({p[0] for p in self.flow_pairs}))
                pair = list(rng.choice([p for p in self.flow_pairs if p[0] == first]))
            else:
                first = rng.choice(sorted({s for p in self.pairs for s in p}))
                pair = list(rng.choice([p for p in self.pairs if first in p]))
                rng.shuffle(pair)
            emails = sorted(set(self.people[pair[0]]) & set(self.people[pair[1]]))
            email = rng.choice(emails)
            record = self.people[pair[0]][email].model_copy(deep=True)
            for key, value in self.people[pair[1]][email].facts.items():
                record.facts.setdefault(key, value)
            return pair, record
        # A server that has yielded nothing in BARREN_AFTER tries is tried no more (an imported farm has many).
        live = [s for s in self.servers if s in self.yielded or self.tried[s] < BARREN_AFTER]
        server = rng.choice(live or self.servers)
        candidates = sorted(self.people[server])
        if candidates:
            return [server], self.people[server][rng.choice(candidates)]
        # No person in the seed: the account holder its policy names, else a name for someone the server never saw.
        holder = self.facts.get(server, ServerFacts()).holder
        return [server], (PersonaRecord(name=holder, email="") if holder else FALLBACK_PERSONA)

    def _enabled(self, servers: list[str], rng: random.Random) -> list[ToolRef]:
        """Every tool of the task's servers, and a few of another server's as distractors."""
        enabled = [ToolRef(server=s, tool=t.name) for s in servers for t in self.catalog.by_server[s]]
        others = [s for s in self.servers if s not in servers]
        if others:
            extra = self.catalog.by_server[rng.choice(others)]
            enabled += [ToolRef(server=t.server, tool=t.name) for t in rng.sample(extra, min(DISTRACTORS, len(extra)))]
        return enabled

    def refusal(self, grounded: Grounded, rng: random.Random) -> tuple[PolicyRule, str] | None:
        """The identity rule governing the first goal, and someone else of the seed to ask for it, when the
        goal acts on the persona's own records (found by what they said, or a row of theirs); else None."""
        goals = [i for i, s in enumerate(grounded.chain.steps) if s.role == "goal"]
        if not goals or not grounded.calls[goals[0]].is_write:
            return None
        goal = grounded.calls[goals[0]]
        identify = governing(self.rules.get(goal.server, []), "identify", goal.tool)
        facts = self.facts.get(goal.server, ServerFacts())
        sentence = facts.third_party_rule
        # Only a desk serving customers hears from a third party; where the owner is signed in (the episodes act
        # for them), nobody calls "for a friend".
        signed_in = grounded.principal is not None and grounded.principal == grounded.persona.email
        if identify is None or sentence is None or facts.kind != "staff" or signed_in:
            return None
        # The refusal cites the policy sentence that forbids it, not the rule that asks for identification.
        rule = PolicyRule(server=goal.server, id="third_party", rule=sentence, tools=identify.tools, kind="forbid")
        theirs = grounded.targets[goals[0]] is not None or any(
            how == "persona" for source in grounded.sources[: goals[0] + 1] for how in source.values()
        )
        if (
            not changes_records(grounded, goal.server, self.grounder.worlds[goal.server])
            or not theirs
            or not PERSON_NAME.match(grounded.persona.name)
        ):
            return None  # "calling for a relative, Billing": the owner must be a person the asker can name
        others = sorted(
            e
            for e, p in self.people[goal.server].items()
            if e != grounded.persona.email and p.name != grounded.persona.name and PERSON_NAME.match(p.name)
        )
        return (rule, others[rng.randrange(len(others))]) if others else None

    async def refusal_task(
        self, index: int, grounded: Grounded, rule: PolicyRule, requester: str, style: str, rng: random.Random
    ) -> Task:
        """Someone else asks for the persona's change: the policy forbids it, so the gold is no call at
        all, the state stays at the seed and the check is that no governed tool ran."""
        server = rule.server
        asker = self.people[server][requester]
        # never "my relative asked me to cancel their booking": refused from the opening alone, no lookup, no work
        request, gold = await self._claimed(grounded, asker, style, rng)
        vocab = vocabulary(grounded, self.catalog)
        message = scrub(request.turns[0], vocab)
        chain = grounded.chain
        return Task(
            id=f"{chain.sampler}-s{self.options.seed}-{index:04d}",
            servers=[server],
            tools=self._enabled([server], rng),
            principal=grounded.principal,
            persona=Persona(name=asker.name, email=asker.email or None, style=style, known_facts=asker.facts),
            opening_message=message,
            uncalibrated_message=request.uncalibrated,
            hidden_facts=request.hidden_facts,
            turns=[Turn(message=message, gold_calls=list(range(len(gold))))],
            gold_calls=gold,
            expected_state={server: await self.grounder.seed_state(server)},
            policy_checks=[
                PolicyCheck(rule=rule.rule, rule_id=rule.id, kind="must_refuse", server=server, tools=rule.tools)
            ],
            over_specification={
                "uncalibrated": over_specification(request.uncalibrated, vocab),
                "calibrated": over_specification(message, vocab),
            },
            provenance=Provenance(
                sampler=chain.sampler,
                seed=self.options.seed,
                chain=[f"{s.server}.{s.tool}" for s in chain.steps if s.server == server and s.turn == 0],
                versions=_versions([server], self.registry),
                writer="offline (refusal)",
            ),
        )

    async def _claimed(
        self, grounded: Grounded, asker: PersonaRecord, style: str, rng: random.Random
    ) -> tuple[Request, list[GoldCall]]:
        """The persona's change asked for by `asker` as their own, naming the row by a value only it has (a booking
        reference), or the row it belongs to (the member card a hold is on) by such a value, and the gold reads
        that show it is not theirs: the asker found by name, the row by that value (its owner is someone else).
        `Drop` where no row has such a value, no phrasing says it, or no read finds the row by it."""
        index = next(i for i, s in enumerate(grounded.chain.steps) if s.role == "goal")
        server, target = grounded.calls[index].server, grounded.targets[index]
        world = self.grounder.worlds[server]
        table = _table_of(world, target)
        if target is None or table is None:
            raise Drop("the goal acts on no row of a table", server)
        # the row itself, then the persona's own record it points at (the member a hold is for), each with the
        # value that names it alone and the key a read of it must show
        rows: list[tuple[str, Row, bool]] = [(table, target, True)]
        for column, value in target.items():
            parent = next((t for t in world.tables if t != table and world.keys.get(t) == column), None)
            row = next((r for r in world.tables.get(parent or "", []) if r.get(column) == value), None)
            if parent is not None and row is not None and is_id_like(column) and grounded.persona.email in row.values():
                rows.append((parent, row, False))
        keyed = [
            (spec, name, value, own, row[world.keys[t]])
            for t, row, own in rows
            for spec, name, value in self._keyed(server, t, row)
            if not any(part in value.lower() for part in grounded.persona.name.lower().split())  # a code, not a name
        ]
        if not keyed:
            raise Drop("no read finds the row by a value only it has", f"{server}.{table}")
        for spec, name, value, own, shown in keyed:
            label = None if own else self.offline.label(server, name, spec.param(name).description, spec)
            if not own and label is None:
                continue
            request = self.offline.as_own(rng, grounded, asker, value, style, None if own else label)
            if request is None:
                continue
            found = await self._read(server, spec.name, {name: value})
            if found is None or json.dumps(shown) not in json.dumps(found.output):
                continue
            # the asker found by their name, else by the email they hold back (a client found by its contact)
            finders = [
                (s, p.name, said)
                for kind, said in (("name", asker.name), ("email", asker.email))
                for s in self.catalog.by_server.get(server, [])
                if self.catalog.finds_people(s)
                for p in s.params
                if p.user_known and p.type == "string" and kind in words(p.name)
            ]
            for finder, param, said in finders:
                who = await self._read(server, finder.name, {param: said})
                if who is not None and asker.email in json.dumps(who.output):
                    return request, [who, *await self._own_rows(server, table, who, asker.email), found]
            return request, [found]
        raise Drop("no phrasing names the row by its own value", f"{server}.{table}")

    def _keyed(self, server: str, table: str, row: Row) -> list[tuple[ToolSpec, str, str]]:
        """The reads of `server` that find `row` of `table` by a value a person knows and only that row has (a
        booking's confirmation code, a member's card number), with the param and the value."""
        rows = self.grounder.worlds[server].tables.get(table, [])
        found = []
        for spec in self.catalog.by_server.get(server, []):
            for param in spec.params if spec.read_only else []:
                where, _, column = (param.column or "").partition(".")
                value = row.get(column)
                if (
                    where == table
                    and param.user_known
                    and isinstance(value, str)
                    and len(value) >= 4
                    and not re.match(r"\d{4}-\d{2}", value)
                    and "@" not in value
                    and sum(r.get(column) == value for r in rows) == 1
                ):
                    found.append((spec, param.name, value))
        return found

    async def _own_rows(self, server: str, table: str, who: GoldCall, email: str) -> list[GoldCall]:
        """The asker's own rows of `table`, listed by the id their lookup `who` returned (`own_rows_reads`): the
        row they claim is not among them, which makes the refusal's check a chain (them, their rows, the row by
        its code) rather than two lookups side by side. Empty where no read lists them."""
        row = asker_row(who.output, email)
        world = self.grounder.worlds[server]
        for spec, args in own_rows_reads(self.catalog.by_server.get(server, []), world, table, row or {}):
            listed = await self._read(server, spec.name, args, empty=True)
            if listed is not None:
                return [listed]
        return []

    async def _read(self, server: str, tool: str, args: dict[str, Any], empty: bool = False) -> GoldCall | None:
        """A read on a fresh episode at the seed, as a gold call; None when it fails or finds nothing (unless
        `empty`: "you have no rentals" is an answer too)."""
        held_ = await self.grounder.pool.take(server, None)
        try:
            result = await held_[0].call_tool(tool, args)
        except ControlError:
            await self.grounder.pool.give(server, held_, clean=False)
            return None
        await self.grounder.pool.give(server, held_, clean=True)
        output = output_of(result)
        if result.is_error or not (empty or any(rows_of(output))):
            return None
        return GoldCall(server=server, tool=tool, arguments=args, output=output, turn=0, is_write=False)

    def task(self, index: int, grounded: Grounded, request: Request, style: str, rng: random.Random) -> Task:
        chain, calls = grounded.chain, grounded.calls
        vocab = vocabulary(grounded, self.catalog)
        if self.options.calibrate:
            turns = [scrub(m, vocab) for m in request.turns]
            hidden = request.hidden_facts
        else:
            turns, hidden = [request.uncalibrated, *request.turns[1:]], []
        enabled = self._enabled(chain.servers, rng)
        persona = grounded.persona
        task = Task(
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
            gold_calls=[
                c.model_copy(update={"asked": scrub(request.asked[i], vocab)}) if i in request.asked else c
                for i, c in enumerate(calls)
            ],
            expected_state=grounded.expected,
            claims=request.claims,
            policy_checks=checks_for(grounded, self.rules, self.required),
            over_specification={
                "uncalibrated": over_specification(request.uncalibrated, vocab),
                "calibrated": over_specification(turns[0], vocab),
            },
            provenance=Provenance(
                sampler=chain.sampler,
                seed=self.options.seed,
                chain=[f"{s.server}.{s.tool}" for s in chain.steps],
                versions=_versions(chain.servers, self.registry),
                writer=request.writer,
            ),
        )
        if self.options.calibrate:
            task.hidden_facts += identity_hidden(task, grounded)
        return task

    @property
    def desks(self) -> list[str]:
        """Servers whose principal is staff serving customers: their policy says how a customer is identified."""
        return [s for s in self.servers if self.facts.get(s, ServerFacts()).kind == "staff"]


def _table_of(world: ServerWorld, row: Row | None) -> str | None:
    """The table `row` is a row of: the one whose key it holds and whose row with that key agrees with it on the
    most fields (an invoice holds its appointment's id too)."""
    best: tuple[int, str] | None = None
    for table, rows in world.tables.items():
        key = world.keys.get(table, "")
        if row is None or row.get(key) is None:
            continue
        same = next((r for r in rows if r.get(key) == row[key]), None)
        if same is not None:
            score = sum(1 for k, v in row.items() if same.get(k) == v)
            best = max(best or (score, table), (score, table))
    return best[1] if best else None


def identity_label(phrase: str) -> str:
    """The words of a rule's part as the user says them of their own thing: 'the last four digits of a card on
    file' -> 'the last four digits of my card on file'; "the order's delivery address" -> "my order's delivery
    address"."""
    words_ = re.sub(r"^(?:their|the|its|a|an)\s+", "", phrase.strip().lower())
    if re.search(r"\b(?:of|on|for) (?:a|an|the|their|its)\b", words_):
        return "the " + re.sub(r"\b(of|on|for) (?:a|an|the|their|its)\b", r"\1 my", words_, count=1)
    return f"my {words_}"


def identity_hidden(task: Task, grounded: Grounded) -> list[HiddenFact]:
    """What the user holds back so the desk can identify them as the server's policy says (full name and date of
    birth; email and the last four digits of a card on file): each value the policy names that no message says."""
    said = "\n".join(
        [task.opening_message, *(t.message for t in task.turns), *(str(h.value) for h in task.hidden_facts)]
    )
    added: list[HiddenFact] = []
    for value in grounded.identification:
        if not value.chosen or mentions(said, value.value) or any(h.value == value.value for h in added):
            continue
        if value.own:  # their own row's column: "my date of birth is 3 June 1989"
            added.append(held(value.column, value.value, " ".join(words(value.column)).lower(), "my"))
        else:
            label = identity_label(value.phrase)
            if re.search(r"\bdetails$", label.split(" of ")[0]):
                # "my reservation's confirmation details are HB1" names no thing: the column says which detail
                label = "my " + " ".join(words(value.column)).lower()
            fact = held(value.column, value.value, label, "")
            said_as = fact.description.strip()
            if re.search(r"\b(?:digits|details)$", label.split(" of ")[0]):  # "the last four digits ... are"
                said_as = said_as.replace(f"{label} is ", f"{label} are ", 1)
            added.append(fact.model_copy(update={"description": said_as}))
    return added


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
    intents = {s: found for s in servers if (found := await load_intents(connections, s)) is not None}
    tools: dict[str, list[ToolSpec]] = {}
    for spec in specs:
        tools.setdefault(spec.server, []).append(spec)
    worlds = {s: await observe(connections, s, tools.get(s, [])) for s in servers}
    rules = {s: await load_rules(connections, s) for s in servers}
    instructions = {s: await connections.instructions(s) for s in servers}
    facts = {s: server_facts(instructions[s]) for s in servers}
    required = {s: required_reads(s, instructions[s] or "", tools.get(s, [])) for s in servers}
    # Cross-server links only where a task may join the two servers (they grow with the farm's size squared).
    together = set(task_pairs({s: people(w) for s, w in worlds.items()}, facts))
    catalog = Catalog(specs, build_graph(specs, together=together), intents)
    run = _Run(options, connections, catalog, worlds, rules, facts, required)
    model = ChatModel(options.writer) if options.writer else None
    llm = LLMWriter(model, run.offline) if model else None
    tasks: list[Task] = []
    dropped: Counter[str] = Counter()
    fallbacks = attempts = repaired = 0
    seen: set[str] = set()  # (persona, goal calls) of the tasks drawn so far

    deep = 0  # kept tasks whose chain depth is DEEP_CALLS or more
    # Only where some tool can end a chain of DEEP_CALLS lookups: a farm of flat servers (a foreign todo list)
    # has no deep task to make room for, and setting its tasks aside would only cost attempts.
    deep_possible = any(catalog.reach(spec) >= DEEP_CALLS for specs in catalog.by_server.values() for spec in specs)

    def may_set_aside() -> bool:
        """Whether a kept-able task may still be set aside for depth or flow: only while the attempts left pay
        for the tasks still owed, at the attempts per kept task seen so far (with SET_ASIDE_MARGIN to spare)."""
        cap = options.n * ATTEMPTS_PER_TASK
        owed = options.n - len(tasks)
        rate = attempts / max(1, len(tasks))
        return attempts < SET_ASIDE_BUDGET * cap and cap - attempts > SET_ASIDE_MARGIN * owed * rate

    drawn: Counter[str] = Counter()  # attempts by how many servers they drew: "pair" or "one"
    kept_by: Counter[str] = Counter()  # kept tasks, the same way

    def short_of_deep() -> bool:
        return deep_possible and deep < DEEP_SHARE * len(tasks) and may_set_aside()

    def skip_shallow(attempt: int) -> bool:
        """One draw per attempt, its own stream: a shallow plan kept before grounding stays kept after it."""
        return random.Random(f"{options.seed}:{options.sampler}:{attempt}:depth").random() < SHALLOW_SKIP

    def unjoined(task: Task, attempt: int) -> bool:
        """Whether to set aside a cross-server task whose turns share only the person (`flows_between_turns`)
        while the kept ones are short of FLOW_SHARE: one draw of the attempt's own stream."""
        crossing = [t for t in tasks if len(t.servers) > 1]
        short = sum(flows_between_turns(t, beyond_identity=True) for t in crossing) < FLOW_SHARE * len(crossing)
        return (
            len(task.servers) > 1
            and may_set_aside()
            and bool(run.flow_pairs)  # a farm where no pair can carry a value keeps its cross-server tasks
            and short
            and not flows_between_turns(task, beyond_identity=True)
            and random.Random(f"{options.seed}:{options.sampler}:{attempt}:flow").random() < FLOW_SKIP
        )

    def may_refuse(attempt: int) -> bool:
        """The first draw of the attempt's policy stream (below): a plan that may become a refusal is never set
        aside for being shallow, since a refusal's depth is the reads that establish it."""
        return random.Random(f"{options.seed}:{options.sampler}:{attempt}:policy").random() < options.refusal_share

    def accept(final: Task, fixed: bool) -> None:
        nonlocal repaired, deep
        repaired += fixed
        deep += chain_depth(final).depth >= DEEP_CALLS
        kept_by["pair" if len(final.servers) > 1 else "one"] += 1
        tasks.append(final)
        run.yielded.update(final.servers)
        if progress:
            progress(len(tasks), options.n)

    def kept(task: Task, grounded: Grounded) -> tuple[Task, bool] | None:
        """The task as it passes the audit (and whether it was repaired), or None, counted by its first finding."""
        final, findings, fixed = run.keep(task, grounded)
        if final is None:
            first = min(findings, key=lambda f: CHECKS.index(f.check))
            dropped[f"audit: {first.check}"] += 1
            return None
        return final, fixed

    try:
        while len(tasks) < options.n and attempts < options.n * ATTEMPTS_PER_TASK:
            rng = random.Random(f"{options.seed}:{options.sampler}:{attempts}")
            attempts += 1
            chosen, persona = run._servers_and_persona(rng, pair_odds(drawn, kept_by))
            run.tried.update(chosen)
            drawn["pair" if len(chosen) > 1 else "one"] += 1
            try:
                chain = run.sampler.sample(rng, chosen[: options.max_servers])
                if (
                    short_of_deep()
                    and chain.planned_depth() < DEEP_CALLS
                    and skip_shallow(attempts - 1)
                    and not may_refuse(attempts - 1)
                ):
                    dropped["shallow plan while deep tasks are short"] += 1  # set aside before it costs a grounding
                    continue
                grounded = await run.grounder.ground(rng, chain, persona)
            except Unresolvable:
                dropped["no chain within the caps"] += 1
                continue
            except Drop as drop:
                dropped[drop.reason] += 1
                run.sampler.outcomes.record(chain, False)
                run.stopped_answering(drop)
                continue
            run.sampler.outcomes.record(chain, True)
            run.answered.update(chain.servers)
            signature = goal_signature(persona, grounded.calls, [s.role for s in chain.steps])
            if signature in seen:
                dropped["same goal as an earlier task"] += 1
                continue
            # A request must not defeat itself, nor tell a story its own details or the data contradict.
            why = run.incoherent(grounded)
            if why is not None:
                dropped[why] += 1
                continue
            taken_back = await run.undone(grounded)
            if taken_back:
                nothing = any(u.how == "changed nothing" for u in taken_back)
                dropped["a write that changes nothing" if nothing else "a later write undoes an earlier one"] += 1
                continue
            style = rng.choice(STYLES)
            # Its own stream: whether a task becomes a refusal never shifts the draws of the others.
            policy_rng = random.Random(f"{options.seed}:{options.sampler}:{attempts - 1}:policy")
            refusal = run.refusal(grounded, policy_rng) if policy_rng.random() < options.refusal_share else None
            refusals = sum(1 for t in tasks if any(c.kind == "must_refuse" for c in t.policy_checks))
            if refusal is not None and refusals >= max(1, int((len(tasks) + 1) * REFUSAL_CAP)):
                refusal = None
            made = None
            if refusal is not None:
                try:
                    made = await run.refusal_task(len(tasks), grounded, *refusal, style, policy_rng)
                except Drop as drop:  # no lookup would show the row is not the asker's: the chain stays a task
                    dropped[f"refusal: {drop.reason}"] += 1
                    run.stopped_answering(drop)
            if made is not None:
                passed = kept(made, grounded)
                if passed is not None:
                    accept(*passed)
                    seen.add(signature)
                continue
            try:  # who the persona is, as each desk's policy identifies a customer, looked up before its writes
                grounded = await identify(run.grounder, grounded, run.rules, run.desks)
                # the reads the policy puts before a write (the fee before a cancellation), where the gold lacks them
                grounded = await require_reads(
                    run.grounder, grounded, [r for s in grounded.chain.servers for r in run.required.get(s, [])]
                )
            except Drop as drop:
                dropped[drop.reason] += 1
                run.stopped_answering(drop)
                continue
            try:
                offline = run.offline.write(rng, grounded, style)
            except Drop as drop:  # a row the user means that no way of naming it tells apart
                dropped[drop.reason] += 1
                continue
            written = run.task(len(tasks), grounded, offline, style, rng)
            if run.asks_for_no_change(written):
                dropped["asks to switch to what is already on file"] += 1
                continue
            passed = kept(written, grounded)
            if passed is None:
                continue
            if short_of_deep() and chain_depth(passed[0]).depth < DEEP_CALLS and skip_shallow(attempts - 1):
                dropped["shallow gold while deep tasks are short"] += 1
                continue
            if unjoined(passed[0], attempts - 1):
                dropped["cross-server turns joined by the person alone while flowing ones are short"] += 1
                continue
            if llm is not None:
                # The model rewords a task the audit already passed: its request replaces the offline one only
                # if it passes too, so a vague or unusable answer costs one fallback, never the task.
                try:
                    request, fell_back = await llm.write(offline, grounded, style, vocabulary(grounded, catalog))
                except LLMError as exc:
                    raise LLMError(f"task writer: {exc}") from exc
                if not fell_back:
                    worded = run.keep(run.task(len(tasks), grounded, request, style, rng), grounded)
                    if worded[0] is not None:
                        passed = worded[0], worded[2]
                    else:
                        fell_back = True
                fallbacks += fell_back
            accept(*passed)
            seen.add(signature)
    finally:
        await run.grounder.aclose()
        if model is not None:
            await model.aclose()
    summary = _summary(options, tasks, attempts, dropped, fallbacks, catalog, llm)
    summary.kept_apart, summary.repaired = run.kept_apart, repaired
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
    registry = options.registry()
    domains = {s: e.domain for s in catalog.by_server if (e := registry.get(s)) is not None}
    per_server = Counter(s for t in tasks for s in t.servers)
    per_domain = Counter(domains.get(s, "unknown") for t in tasks for s in t.servers)

    def share(hits: int) -> float:
        return round(hits / len(tasks), 3) if tasks else 0.0

    crossing = [t for t in tasks if len(t.servers) > 1]

    def of_crossing(holds: Callable[[Task], bool]) -> float:
        return round(sum(map(holds, crossing)) / len(crossing), 3) if crossing else 0.0

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
        principal_share=share(sum(1 for t in tasks if t.principal)),
        policy_check_share=share(sum(1 for t in tasks if t.policy_checks)),
        policy_checks=dict(sorted(Counter(c.kind for t in tasks for c in t.policy_checks).items())),
        refusals=sum(1 for t in tasks if any(c.kind == "must_refuse" for c in t.policy_checks)),
        data_dependency_share=share(sum(1 for t in tasks if dependency_depth(t) >= 3)),
        deep_dependency_share=share(sum(1 for t in tasks if dependency_depth(t) >= 4)),
        chain_depths=depth_histogram(tasks),
        deep_chain_share=share(sum(1 for t in tasks if chain_depth(t).depth >= DEEP_CALLS)),
        cross_server_flow_share=of_crossing(flows_between_turns),
        cross_server_flow_beyond_identity_share=of_crossing(lambda t: flows_between_turns(t, beyond_identity=True)),
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
