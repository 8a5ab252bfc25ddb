"""Tool chains sampled from the dependency graph: topology-aware, and a random-walk baseline.

Every sampler takes a `random.Random` and nothing else random, so a seed names its chains. A chain
is a plan, not a run: each step names a tool and which earlier step's output fills which input;
`envfarm.clients.grounding` executes it and picks the actual values.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import networkx as nx
from pydantic import BaseModel, Field

from envfarm.clients.flow import CARRY_SHARE, FLOW_TRIES, FLOW_WEIGHT, Carry, carries, grain, kind_of, matches
from envfarm.clients.graph import Param, ToolSpec, consumers, is_id_like, producers, tool_node, words
from envfarm.servers.runtime.intents import Intent, ServerIntents

# "required": a read the policy puts before a write (the fee before a cancellation), added after grounding
Role = Literal["lookup", "goal", "follow", "walk", "required"]
MAX_DEPTH = 4
PLAN_BEAM = 8  # choices of producers `Catalog.reach` keeps per step: the largest plans, by their size
DEEP_STEPS = 4  # a plan of fewer linked steps is shallow: the rubric's real multi-step work starts at four calls
EXACT_READS = 40  # reads of one server up to which `Catalog.reach` walks every chain exactly
WRITE_WEIGHT = 3.0
SHALLOW_WEIGHT = 0.15
PERSON_FIRST = 0.9  # searches with a filter on the person's key: how often it is filled from a people search
# How strongly a goal (and a producer) is favoured by the longest chain of lookups it can end: reach ** DEPTH_POWER.
# "Find me, list my stays, read the one I mean, act on it" is the work an agent is trained for; a goal one lookup
# away teaches little, so it is drawn, not excluded, less often.
DEPTH_POWER = 2.0
PERSONAL_PRICE = re.compile(r"\b(discount|loyalty)", re.IGNORECASE)  # an optional id a price depends on


class Bind(BaseModel):
    """An input filled from an earlier step's output: any of `fields` (leaf names) of step `step`."""

    step: int
    fields: list[str]
    own: bool = Field(default=False, description="only the persona's own value will do (it identifies them)")


class Step(BaseModel):
    server: str
    tool: str
    binds: dict[str, Bind] = Field(default_factory=dict)
    identify: bool = Field(default=False, description="a search with no required input: fill one filter the user knows")
    turn: int = 0
    role: Role = "lookup"


class Chain(BaseModel):
    steps: list[Step]
    sampler: str

    @property
    def servers(self) -> list[str]:
        return list(dict.fromkeys(s.server for s in self.steps))

    def planned_depth(self) -> int:
        """Steps in the largest group the plan links by binds (one step's output filling another's input): what
        the grounded gold's chain depth (`envfarm.clients.audit.chain_depth`) will be at most, give or take an
        identification lookup, read before grounding costs a call."""
        group = list(range(len(self.steps)))

        def root(i: int) -> int:
            while group[i] != i:
                i = group[i]
            return i

        for index, step in enumerate(self.steps):
            for bind in step.binds.values():
                group[root(index)] = root(bind.step)
        return max(Counter(root(i) for i in range(len(self.steps))).values(), default=0)


def linked_steps(steps: Sequence[Step], index: int) -> int:
    """Steps of the plan linked to step `index` by binds, itself included (`Chain.planned_depth` of its group)."""
    group = {index}
    grew = True
    while grew:
        grew = False
        for i, step in enumerate(steps):
            if i in group:
                linked = {b.step for b in step.binds.values()} - group
            else:
                linked = {i} if any(b.step in group for b in step.binds.values()) else set()
            if linked:
                group |= linked
                grew = True
    return len(group)


class Unresolvable(Exception):
    """No producer within the caps for an input a user would not know."""


class Catalog:
    """The graph plus the specs behind it, indexed for the samplers, and each server's intents (how people
    ask for its tools and name its rows; servers without them are absent)."""

    def __init__(
        self, specs: Sequence[ToolSpec], graph: nx.DiGraph, intents: dict[str, ServerIntents] | None = None
    ) -> None:
        self.graph = graph
        self.specs = {s.key: s for s in specs}
        self.intents = {s: i for s, i in (intents or {}).items() if i.tools or i.refer}
        self.by_server: dict[str, list[ToolSpec]] = {}
        self._reach: dict[str, int] = {}
        self._bounded: dict[tuple[str, int], int] = {}
        self._people: dict[str, frozenset[str]] = {}
        self._feeders: dict[str, tuple[ToolSpec, ...]] = {}
        for spec in specs:
            self.by_server.setdefault(spec.server, []).append(spec)
        self._reads = Counter(spec.server for spec in specs if spec.read_only)

    def spec(self, server: str, tool: str) -> ToolSpec:
        return self.specs[tool_node(server, tool)]

    def intent(self, server: str, tool: str) -> Intent | None:
        """The tool's intent where its server has intents and it is something a person asks for (has `say`)."""
        intents = self.intents.get(server)
        intent = intents.tools.get(tool) if intents is not None else None
        return intent if intent is not None and intent.asks != "internal" and intent.say else None

    def not_asked(self, server: str, kind: str | None) -> set[str]:
        """Tool keys of a server with intents that no person asks for of its principal: a `staff` principal
        serves customers (`asks: customer`), a signed-in `user` asks for themselves (`asks: user`); a tool
        without an intent, or `internal`, is never a goal. Empty for a server without intents."""
        if server not in self.intents:
            return set()
        fits = {"staff": {"customer"}, "user": {"user"}}.get(kind or "", {"customer", "user"})
        return {
            t.key
            for t in self.by_server.get(server, [])
            if (intent := self.intent(server, t.name)) is None or intent.asks not in fits
        }

    def lookups(self, spec: ToolSpec) -> list[Param]:
        """Inputs a user would not know that must be filled: required ones, or for a tool with no
        required input, one optional id filter when it has no user-known filter to search by."""
        required = [p for p in spec.params if p.required]
        if required:
            # and the person a price depends on (a guest id for their loyalty discount): a quote made without
            # it is another price than the one the policy gives them
            personal = [
                p
                for p in spec.params
                if not p.required
                and PERSONAL_PRICE.search(p.description)
                and producers(self.graph, spec.server, spec.name, p.name)
            ]
            return [p for p in required if not p.user_known] + personal
        if any(p.user_known for p in spec.params):
            return []
        optional = [
            p for p in spec.params if not p.user_known and producers(self.graph, spec.server, spec.name, p.name)
        ]
        return optional[:1]

    def finds_people(self, spec: ToolSpec) -> bool:
        """A read that finds a person by what they say of themselves (a search by email)."""
        return spec.read_only and any(p.user_known and "email" in words(p.name) for p in spec.params)

    def people_keys(self, server: str) -> frozenset[str]:
        """The keys that name a person on `server`: each row's own id (its first) of what a people search finds
        (`member_id` of find_member; never the `plan_id` the member row also holds). Read once per server: the
        sampler asks for every pair of tools it matches."""
        if server in self._people:
            return self._people[server]
        keys: set[str] = set()
        for spec in self.by_server.get(server, []):
            if not self.finds_people(spec):
                continue
            for entity in dict.fromkeys(f.entity for f in spec.outputs):
                own = next((f.name for f in spec.outputs if f.entity == entity and is_id_like(f.name)), None)
                keys |= {own} if own else set()
        self._people[server] = frozenset(keys)
        return self._people[server]

    def person_filter(self, spec: ToolSpec) -> tuple[Param, list[tuple[ToolSpec, list[str]]]] | None:
        """For a search with nothing required (find a reservation by code, guest or date): an optional filter
        on a person's key that a people search produces (`guest_id` from find_guest), with those producers.
        Searching by it starts the chain from the person, not from a code they would have to be asked for."""
        if any(p.required for p in spec.params):
            return None
        for param in spec.params:
            if param.user_known:
                continue
            found = [
                (self.specs[src], fields)
                for src, fields in producers(self.graph, spec.server, spec.name, param.name)
                if src != spec.key and self.specs[src].server == spec.server and self.finds_people(self.specs[src])
            ]
            if found:
                return param, found
        return None

    def lists(self, spec: ToolSpec, fields: Sequence[str]) -> bool:
        """Whether `spec` lists the rows `fields` key (search_hotels for a hotel id), not rows pointing at them
        (find_reservation's hotel id)."""
        return any(
            f.name in fields
            and f.ref
            and [w.lower() for w in words(f.ref.split(".", 1)[0])] == [w.lower() for w in words(f.entity)]
            for f in spec.outputs
        )

    def producer_options(
        self, spec: ToolSpec, param: Param, stack: frozenset[str] | set[str] = frozenset()
    ) -> list[tuple[ToolSpec, list[str]]]:
        """The reads the topology sampler may pull in to fill `param` of `spec` (with the output fields that fill
        it): reads of the same server, none already on the way to `spec`. Where the server has intents, only a
        search of the row's own table where there is one (search hotels for the hotel the user names), never a
        row that merely points at it (the hotel of an old booking found by its code). One rule for the sampler
        and for `reach`, so the depth a goal is weighted by is the depth its plans can have."""
        options = [
            (self.specs[src], fields)
            for src, fields in producers(self.graph, spec.server, spec.name, param.name)
            if src not in stack and self.specs[src].server == spec.server and self.specs[src].read_only
        ]
        if spec.server in self.intents:
            options = [o for o in options if self.lists(*o)] or options
        return options

    def reach(self, spec: ToolSpec) -> int:
        """How many calls the largest plan the topology sampler can build ending in `spec` has: 1 for a tool
        that needs nothing looked up; 3 for "find the guest, list their stays, cancel one"; 4 for "find the
        member, find the book, list its copies, borrow one" (two lookups feeding one, each counted once). A
        lookup more than `MAX_DEPTH` steps below the goal is no plan (the sampler gives up there).

        On a server with few reads the plans are walked exactly (no tool twice on one path). The walk grows with
        the number of reads to the power `MAX_DEPTH` (one imported API of 600 tools took minutes for one task),
        so beyond `EXACT_READS` reads it is bounded by depth alone, memoized per (tool, depth): a chain may then
        come back to a tool it passed, which can only overrate a tool's reach, never hide one."""
        if spec.key not in self._reach:
            if self._reads.get(spec.server, 0) > EXACT_READS:
                self._reach[spec.key] = self._bounded_reach(spec, MAX_DEPTH)
            else:
                self._reach[spec.key] = len(self._plan(spec, 0, frozenset(), {}) or {spec.key})
        return self._reach[spec.key]

    def _plan(
        self,
        spec: ToolSpec,
        depth: int,
        stack: frozenset[str],
        memo: dict[tuple[str, int, frozenset[str]], frozenset[str] | None],
    ) -> frozenset[str] | None:
        """The tools of the largest plan ending in `spec` at `depth` below the goal, as `TopologySampler._need`
        builds one (a producer per lookup, the person first for a search with nothing required); None where an
        input has no producer within the depth cap (the sampler's `Unresolvable`)."""
        if depth > MAX_DEPTH:
            return None
        memo_key = (spec.key, depth, stack)
        if memo_key in memo:
            return memo[memo_key]
        memo[memo_key] = None  # a cycle back to here is no plan
        tools = frozenset({spec.key})
        below = stack | {spec.key}
        wanted = [self.producer_options(spec, param, below) for param in self.lookups(spec)]
        person = self.person_filter(spec) if spec.server in self.intents and not wanted else None
        if person is not None:
            wanted.append([(p, f) for p, f in person[1] if p.key not in below])
        unions = {tools}  # the plans so far, one per choice of producers (the largest few kept)
        for options in wanted:
            plans = {p for producer, _ in options if (p := self._plan(producer, depth + 1, below, memo)) is not None}
            if not plans:
                if person is not None and options is wanted[-1]:
                    continue  # the person filter is optional: the search runs without it
                return None
            # a producer already in the plan adds nothing (the sampler reuses it, or pruning drops the repeat)
            unions = set(sorted({u | p for u in unions for p in plans}, key=_plan_order)[:PLAN_BEAM])
        memo[memo_key] = min(unions, key=_plan_order)
        return memo[memo_key]

    def feeders(self, spec: ToolSpec) -> tuple[ToolSpec, ...]:
        """The reads of the same server that produce a value `spec` must look up (found once per tool: the
        samplers ask for them for every tool of a server at every draw)."""
        if spec.key not in self._feeders:
            self._feeders[spec.key] = tuple(
                producer
                for param in self.lookups(spec)
                for src, _ in producers(self.graph, spec.server, spec.name, param.name)
                if (producer := self.specs[src]).server == spec.server and producer.read_only
            )
        return self._feeders[spec.key]

    def _bounded_reach(self, spec: ToolSpec, depth: int) -> int:
        """The longest chain of at most `depth` lookups ending in `spec`, where a chain may pass a tool twice."""
        if (spec.key, depth) not in self._bounded:
            longest = 0
            if depth > 0:
                feeders = {p.key: p for p in self.feeders(spec) if p.key != spec.key}
                for producer in feeders.values():
                    longest = max(longest, self._bounded_reach(producer, depth - 1))
                    if longest == depth:
                        break  # no chain is longer
            self._bounded[spec.key, depth] = 1 + longest
        return self._bounded[spec.key, depth]


def _plan_order(plan: frozenset[str]) -> tuple[int, list[str]]:
    """Larger plans first, then by their tools (a plan is a set: this keeps the choice the same run to run)."""
    return -len(plan), sorted(plan)


def _weighted(rng: random.Random, items: Sequence[ToolSpec], weight: dict[str, float]) -> ToolSpec:
    weights = [weight.get(i.key, 1.0) for i in items]
    return rng.choices(list(items), weights=weights, k=1)[0]


def _same_name_field(steps: list[Step], catalog: Catalog, param: Param, server: str) -> tuple[int, list[str]] | None:
    """The latest earlier step whose output has a field named like `param` (or its column): a user-known
    value that should come from what was found (an amount due, a date), not be made up."""
    names = {param.name, *([param.column.split(".", 1)[1]] if param.column else [])}
    for index in range(len(steps) - 1, -1, -1):
        if steps[index].server != server:
            continue
        spec = catalog.spec(steps[index].server, steps[index].tool)
        fields = sorted({f.name for f in spec.outputs if f.name in names and f.type == param.type})
        if fields:
            return index, fields
    return None


class Outcomes:
    """How often chains with each goal grounded: goals that keep failing are drawn less often
    (within one run, which is sequential, so a seed still names its tasks)."""

    def __init__(self) -> None:
        self.tally: dict[str, list[int]] = {}

    def record(self, chain: Chain, grounded: bool) -> None:
        for step in chain.steps:
            if step.role == "goal":
                self.tally.setdefault(tool_node(step.server, step.tool), [0, 0])[0 if grounded else 1] += 1

    def odds(self, key: str) -> float:
        ok, failed = self.tally.get(key, [0, 0])
        return (ok + 1) / (ok + failed + 1)

    def variety(self, key: str) -> float:
        """Less weight for a goal already grounded many times (in proportion), so the goal that always grounds
        (a contact update) does not crowd out the rest of a server's intents."""
        return 1.0 / (1 + self.tally.get(key, [0, 0])[0])


class TopologySampler:
    """Choose a goal tool (writes favoured) and pull in a producer for every input the user would not
    know, recursively (depth cap `max_depth`); sometimes continue to a successor of the goal."""

    name = "topology"

    def __init__(
        self,
        catalog: Catalog,
        *,
        max_depth: int = MAX_DEPTH,
        follow_share: float = 0.35,
        deep_follow_share: float = 0.5,
        never_goals: frozenset[str] = frozenset(),
    ) -> None:
        self.catalog = catalog
        self.outcomes = Outcomes()
        self.max_depth = max_depth
        self.follow_share = follow_share
        # the follow odds of a plan shorter than DEEP_STEPS: 0.8 made more follow-ups than the audits let through
        # (calendar + mail gave 2 tasks of 10 in 600 attempts, 10 in 460 at 0.5)
        self.deep_follow_share = deep_follow_share
        self.never_goals = never_goals  # tool keys no user asks for (staff-internal work)
        # What can carry a value into what (`envfarm.clients.flow`), read from the schemas once per pair of tools.
        self._matched: dict[tuple[str, str], list[tuple[list[str], list[Carry]]]] = {}
        self._feeding: dict[tuple[str, str, int], bool] = {}
        # `_carried` answers for the earlier turns' steps it was last asked about: a draw asks the same question
        # of every tool of a server, and of its lookups two levels down (a 271-tool import asked it millions of
        # times for a few hundred tasks).
        self._carrying: dict[tuple[str, int, int], bool] = {}
        self._carrying_after: tuple[tuple[str, str, int], ...] = ()

    def _match(self, source: ToolSpec, target: ToolSpec) -> list[tuple[list[str], list[Carry]]]:
        key = (source.key, target.key)
        if key not in self._matched:
            self._matched[key] = matches(source, target, self.catalog.people_keys(source.server))
        return self._matched[key]

    def _carries(self, steps: list[Step], spec: ToolSpec, turn: int) -> list[Carry]:
        return carries(self.catalog.spec, steps, spec, turn, self._match)

    def _need(
        self,
        rng: random.Random,
        steps: list[Step],
        spec: ToolSpec,
        depth: int,
        stack: set[str],
        turn: int,
        flow: bool = False,
    ) -> int:
        if depth > self.max_depth:
            raise Unresolvable(f"deeper than {self.max_depth} steps")
        binds: dict[str, Bind] = {}
        if flow:  # a value an earlier turn found on another server (`envfarm.clients.flow`): the dates of a rental
            for carry in self._carries(steps, spec, turn):
                binds[carry.param] = Bind(step=carry.step, fields=carry.fields)
        for param in self.catalog.lookups(spec):
            reusable = [
                (i, fields)
                for i, step in enumerate(steps)
                if step.turn == turn
                for src, fields in producers(self.catalog.graph, spec.server, spec.name, param.name)
                if src == tool_node(step.server, step.tool) and step.server == spec.server
            ]
            reusable = [
                (i, fields) for i, fields in reusable if self.catalog.spec(steps[i].server, steps[i].tool).read_only
            ]
            if reusable and rng.random() < 0.8:
                index, fields = reusable[-1]
                binds[param.name] = Bind(step=index, fields=fields)
                continue
            # Only reads look things up: a write pulled in as a producer would change what nobody asked for.
            options = self.catalog.producer_options(spec, param, stack)
            if not options:
                raise Unresolvable(f"no read produces {spec.name}.{param.name}")
            if spec.server in self.catalog.intents:
                # A producer that is itself found from the person (list their stays, found from them) over a
                # search by a code: the chain an agent runs from what the user says.
                weights = [
                    self.catalog.reach(o[0]) ** DEPTH_POWER
                    * (FLOW_WEIGHT if flow and self._carried(steps, o[0], turn) else 1)
                    for o in options
                ]
                producer, fields = rng.choices(options, weights=weights, k=1)[0]
            else:
                producer, fields = rng.choice(options)
            index = self._need(rng, steps, producer, depth + 1, stack | {spec.key}, turn, flow)
            binds[param.name] = Bind(step=index, fields=fields)
        person = self.catalog.person_filter(spec) if spec.server in self.catalog.intents and not binds else None
        if person is not None and rng.random() < PERSON_FIRST:
            # "Find me, then my bookings": the search is keyed on the person found from what they say.
            param, options = person
            producer, fields = rng.choice(options)
            binds[param.name] = Bind(
                step=self._need(rng, steps, producer, depth + 1, stack | {spec.key}, turn), fields=fields
            )
        for param in spec.params:
            if not (param.required and param.user_known) or param.name in binds:
                continue
            found = _same_name_field(steps, self.catalog, param, spec.server)
            if found:
                binds[param.name] = Bind(step=found[0], fields=found[1])
                continue
            # A later turn may use what an earlier turn found on another server (a person's email). Never one time
            # alone: a training session at the hour of the meeting just put on the calendar is a clash (a range is
            # carried whole, above).
            across = [
                (i, fields)
                for i, step in enumerate(steps)
                if step.turn < turn and step.server != spec.server and not grain(param.name)
                for src, fields in producers(self.catalog.graph, spec.server, spec.name, param.name)
                if src == tool_node(step.server, step.tool)
            ]
            if across and rng.random() < 0.9:
                # only as who the person is (`own`) where the writer tells a story (a server with intents): a
                # payee named after a car branch, a report titled after a book, is a name carried into a story it
                # does not belong to; a foreign server's tasks are tool chains, where any shown value may flow
                index, fields = across[-1]
                binds[param.name] = Bind(step=index, fields=fields, own=spec.server in self.catalog.intents)
        identify = not any(p.required for p in spec.params) and not binds
        if identify and turn > 0:
            # A later turn finds the person by what an earlier turn showed about them (their email).
            known = [
                (p.name, i, fields)
                for p in spec.params
                if p.user_known
                for i, step in enumerate(steps)
                if step.turn < turn and step.server != spec.server
                for src, fields in producers(self.catalog.graph, spec.server, spec.name, p.name)
                if src == tool_node(step.server, step.tool)
            ]
            if known:
                name, index, fields = known[-1]
                binds[name] = Bind(step=index, fields=fields, own=True)
        steps.append(Step(server=spec.server, tool=spec.name, binds=binds, identify=identify, turn=turn))
        return len(steps) - 1

    def _carried(self, steps: list[Step], spec: ToolSpec, turn: int, hops: int = 2) -> bool:
        """Whether a value of an earlier turn on another server can fill an input of `spec`, or of a read that
        looks up what it needs (`hops` levels down)."""
        earlier = tuple((step.server, step.tool, step.turn) for step in steps if step.turn < turn)
        if earlier != self._carrying_after:
            self._carrying, self._carrying_after = {}, earlier
        key = (spec.key, turn, hops)
        if key not in self._carrying:
            self._carrying[key] = bool(self._carries(steps, spec, turn)) or (
                hops > 0 and any(self._carried(steps, f, turn, hops - 1) for f in self.catalog.feeders(spec))
            )
        return self._carrying[key]

    def _feeds(self, spec: ToolSpec, server: str, hops: int = 2) -> bool:
        """Whether the output of `spec`, or of a read that looks up what it needs (`hops` levels down), can fill an
        input of a tool of `server` (`envfarm.clients.flow`)."""
        key = (spec.key, server, hops)
        if key not in self._feeding:
            others = self.catalog.by_server.get(server, [])
            self._feeding[key] = any(o.server != spec.server and self._match(spec, o) for o in others) or (
                hops > 0 and any(self._feeds(f, server, hops - 1) for f in self.catalog.feeders(spec))
            )
        return self._feeding[key]

    def _goal(
        self,
        rng: random.Random,
        steps: list[Step],
        server: str,
        turn: int,
        flow: bool = False,
        then: str | None = None,
    ) -> None:
        """A goal of `server` for turn `turn`, with its lookups. With `flow`, goals a value flows through are
        favoured: into them from an earlier turn, or out of them to a tool of the next turn's server `then`."""
        tools = self.catalog.by_server[server]
        # Writes are favoured, and so are tools that need something looked up first (real data flow).
        weight = {
            t.key: (WRITE_WEIGHT if not t.read_only else 1.0)
            * (1.0 if self.catalog.lookups(t) else SHALLOW_WEIGHT)
            * self.outcomes.odds(t.key)
            * (
                self.outcomes.variety(t.key) * self.catalog.reach(t) ** DEPTH_POWER
                if t.server in self.catalog.intents
                else 1.0
            )
            * (t.key not in self.never_goals)
            * (
                FLOW_WEIGHT
                if flow and (self._carried(steps, t, turn) or (then is not None and self._feeds(t, then)))
                else 1.0
            )
            for t in tools
        }
        if not any(weight.values()):
            raise Unresolvable(f"no tool of {server} is a user's goal")
        for _ in range(12):
            goal = _weighted(rng, tools, weight)
            trial = list(steps)
            try:
                index = self._need(rng, trial, goal, 0, set(), turn, flow)
            except Unresolvable:
                weight[goal.key] = 0.0
                if not any(weight.values()):
                    break
                continue
            trial[index].role = "goal"
            # A plan too short to be real multi-step work is more often carried on by a successor that takes the
            # goal's output (the refund a cancellation made, the line added to the invoice just opened).
            shallow = linked_steps(trial, index) < DEEP_STEPS
            if rng.random() < (self.deep_follow_share if shallow else self.follow_share):
                self._follow(rng, trial, index, turn)
            steps[:] = trial
            return
        raise Unresolvable(f"no tool of {server} can be grounded within the caps")

    def _follow(self, rng: random.Random, steps: list[Step], goal: int, turn: int) -> None:
        """Append a successor that consumes the goal's output and needs nothing new to be looked up."""
        source = steps[goal]
        # A successor keyed on what the goal itself took works on the very row the goal named: a read of it (the
        # rental's extras after the cancel) is never asked by the writer (two requests on one row read as templates
        # glued), and a second write on it tells no story ("join #sales; also archive #sales"). Only who the person
        # is (the member a hold was placed for) may key a second write ("also, my email has changed").
        taken = {p.name for p in self.catalog.spec(source.server, source.tool).params}
        person = {
            name
            for name, bind in source.binds.items()
            if self.catalog.finds_people(self.catalog.spec(steps[bind.step].server, steps[bind.step].tool))
        }
        options = []
        for key, param, fields in consumers(self.catalog.graph, tool_node(source.server, source.tool)):
            spec = self.catalog.specs[key]
            if spec.server != source.server or spec.name == source.tool or key in self.never_goals:
                continue
            same = {param, *fields} & taken
            if same and (spec.read_only or not same <= person):
                continue
            others = [p for p in self.catalog.lookups(spec) if p.name != param]
            if not others:
                options.append((spec, param, fields))
        if options:
            spec, param, fields = rng.choice(options)
            steps.append(
                Step(
                    server=spec.server,
                    tool=spec.name,
                    binds={param: Bind(step=goal, fields=fields)},
                    turn=turn,
                    role="follow",
                )
            )

    def sample(self, rng: random.Random, servers: Sequence[str]) -> Chain:
        """One sub-goal per server, in order; each server's sub-goal is its own user turn."""
        steps: list[Step] = []
        # A cross-server chain mostly carries a value from one turn into the next (`envfarm.clients.flow`).
        flow = len(servers) > 1 and rng.random() < CARRY_SHARE
        for turn, server in enumerate(servers):
            then = servers[turn + 1] if turn + 1 < len(servers) else None
            # A turn is drawn again (plans cost no call) until a value flows through it: out of it to the next
            # server, into it from an earlier one; the last draw stands if none does.
            for attempt in range(FLOW_TRIES if flow else 1):
                trial = list(steps)
                try:
                    self._goal(rng, trial, server, turn, flow, then)
                except Unresolvable:
                    if attempt == 0:
                        raise
                    break
                kept = trial
                if self._flowing(trial, turn, then):
                    break
            steps[:] = kept
        return Chain(steps=steps, sampler=self.name)

    def _flowing(self, steps: list[Step], turn: int, then: str | None) -> bool:
        """Whether a step of `turn` takes a range or a city an earlier turn found on another server, or, with a next
        server `then`, returns one a tool of it can take."""
        mine = [s for s in steps if s.turn == turn]
        if turn > 0 and any(
            steps[b.step].turn < turn
            and steps[b.step].server != s.server
            and kind_of(name, self.catalog.spec(s.server, s.tool).param(name).type) is not None
            for s in mine
            for name, b in s.binds.items()
        ):
            return True
        return then is not None and any(self._feeds(self.catalog.spec(s.server, s.tool), then, 0) for s in mine)


class RandomWalkSampler:
    """The baseline: start at a random tool and walk along output -> input edges, 2 to 5 steps.
    Inputs the walk does not reach are filled from the seed by grounding (ids included)."""

    name = "random"

    def __init__(self, catalog: Catalog, *, max_len: int = 5) -> None:
        self.catalog = catalog
        self.outcomes = Outcomes()  # recorded, not used: the baseline stays a plain random walk
        self.max_len = max_len

    def sample(self, rng: random.Random, servers: Sequence[str]) -> Chain:
        allowed = set(servers)
        steps: list[Step] = []
        for turn, server in enumerate(servers):
            current = rng.choice(self.catalog.by_server[server])
            steps.append(
                Step(
                    server=server,
                    tool=current.name,
                    turn=turn,
                    role="walk",
                    identify=not any(p.required for p in current.params),
                )
            )
            length = rng.randint(2, self.max_len)
            while sum(1 for s in steps if s.turn == turn) < length:
                options = [
                    (key, param, fields)
                    for key, param, fields in consumers(self.catalog.graph, current.key)
                    if self.catalog.specs[key].server in allowed and key != current.key
                ]
                if not options:
                    break
                key, param, fields = rng.choice(options)
                current = self.catalog.specs[key]
                steps.append(
                    Step(
                        server=current.server,
                        tool=current.name,
                        binds={param: Bind(step=len(steps) - 1, fields=fields)},
                        turn=turn,
                        role="walk",
                    )
                )
            steps[-1].role = "goal"
        return Chain(steps=steps, sampler=self.name)
