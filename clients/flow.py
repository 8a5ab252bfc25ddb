"""Values that flow from one server's turn into another's: the dates of a rental carried to a calendar, the city of
a hotel to a car branch search.

A cross-server task whose second turn is joined to the first by the person alone teaches no carrying of data.
Here a later turn's parameter is matched to a field an earlier turn's call returned on another server, by meaning
read from the names and types of the schemas (never by a server's name): a *range* (a start and an end of the same
grain, date or date-time, both carried from one row, so the second booking spans the first: "for the same dates as
my rental") and a *city* of a search ("in the same city as my hotel", so a car is picked up where the stay is,
never across a continent). A single start time is never carried: a second booking at the same hour as the first is
a clash, not a plan. Nor is an amount: "pay Maple Properties the amount of that tutoring package" carries a number
into a story it does not belong to (the payee, the merchant, the date drawn apart from it). The writer says what is
carried by what it is (`referring`), never the literal, and the audit accepts an unsaid value only where the turn
refers to it so (`refers`). A window searched after/before a carried range is "during that rental" (what is found
inside it does not last as long as it), and a range is said by the row whose own span it is ("that freeze", never
"that membership" of a freeze's dates).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Literal, Protocol

from pydantic import BaseModel

from envfarm.clients.graph import OutField, Param, ToolSpec, is_id_like, words
from envfarm.servers.runtime.vocabulary import ID_WORDS

Kind = Literal["start", "end", "city"]
Grain = Literal["date", "datetime", ""]
START = frozenset({"start", "arrival", "pickup", "begin", "after"})
END = frozenset({"end", "departure", "return", "until", "before"})
PAGING = frozenset({"count", "total", "has_more", "cursor"})
# Words of a start's or an end's name that say no more than where a span begins or ends: any other word of a
# pair (`freeze_starts_on` of a membership) names a sub-period of the row, not the row's own span.
SPAN_WORDS = START | END | {"date", "time", "at", "on", "due", "datetime", "scheduled", "planned"}
CARRY_SHARE = 0.7  # of the later turns of a cross-server chain: how often the sampler prefers a goal a value flows to
FLOW_WEIGHT = 25.0  # the preference, as a factor on a goal's (or a producer's) weight
BOOKING_HOURS = 12  # a carried range books a car or a room only over at least this long
FLOW_TRIES = 6  # draws of a turn's plan, at most, until a value flows through it
# What the user says of a carried value: the writer's words, and the audit's test that the turn refers to one (a
# window searched after/before is "during that rental": a class booked inside a rental is not "for its dates").
REFERS = re.compile(r"\b(?:the same (?:dates(?: and times)?|city) as|during) that \w+", re.IGNORECASE)
# The words a range may follow in a phrasing, and what is said in their place: a booking moved "to" a span keeps
# its "to"; one made "from"/"between"/"for"/"on"/"starting" a span is "for" it. A range after any other word
# ("change it to arrive {a} and leave {b}") is not one span the user can point at.
RANGE_PREPOSITIONS = {"from": "for", "between": "for", "for": "for", "on": "for", "starting": "for", "to": "to"}
# What may stand between a range's slots: a joining word, a dash, a comma, an hour's "at".
RANGE_JOINS = re.compile(r"^(?:\s|,|-|–|\bto\b|\buntil\b|\bthrough\b|\bfrom\b|\band\b|\bat\b|\bon\b|\{[^}]*\})*$")


class Carry(BaseModel):
    """A parameter filled from an earlier turn's call on another server: the step, the output fields, the kind."""

    param: str
    step: int
    fields: list[str]
    kind: Kind
    entity: str = ""


class _Step(Protocol):
    server: str
    tool: str
    turn: int


def grain(name: str) -> Grain:
    """Date or date-time, read from a name (`arrival_date`, `ends_on`: a date; `pickup_at`, `starts_after`: a
    date-time); '' when the name does not say."""
    tokens = words(name)
    if not tokens:
        return ""
    if tokens[-1] == "at" or tokens[-1] in {"after", "before"}:
        return "datetime"
    if "date" in tokens or tokens[-1] == "on":
        return "date"
    return ""


def kind_of(name: str, type_: str) -> Kind | None:
    """What a field or parameter means for carrying, from its name and type; None for anything else."""
    tokens = words(name)
    if not tokens:
        return None
    if type_ == "string" and grain(name):
        if "before" in tokens:
            return "end"
        if "after" in tokens:
            return "start"
        if set(tokens) & START and not set(tokens) & END:
            return "start"
        if set(tokens) & END and not set(tokens) & START:
            return "end"
        return None
    if type_ == "string" and tokens == ["city"]:
        return "city"
    return None


def _sources(spec: ToolSpec, people: frozenset[str] = frozenset()) -> dict[str, list[OutField]]:
    """The output fields of `spec` worth carrying, per entity (row kind) a person can name: never a page's count,
    nor a start or an end of a sub-period of the row (a membership's `freeze_starts_on`: "the same dates as that
    membership" would say the membership's dates were a stay), nor the span of a row about the person alone.

    `people` are the keys that name a person on `spec`'s server (`member_id`): a row whose references, besides its
    own id, are only such keys (a membership freeze: `freeze_id`, `member_id`) puts the person nowhere and with
    nothing, so its dates are no stay another service books ("move my hotel stay to the same dates as that freeze"
    after a freeze for parental leave). A rental (a vehicle, branches), a stay (a hotel, a room), an event (a
    calendar, a room) are carried."""
    found: dict[str, list[OutField]] = {}
    for field in spec.outputs:
        if field.name in PAGING and field.entity.endswith("Result"):
            continue
        if not field.user_known or not (kind := kind_of(field.name, field.type)):
            continue
        noun = _noun(spec, field.entity)
        if not noun or (kind != "city" and not set(words(field.name)) - SPAN_WORDS <= set(noun.split())):
            continue
        if kind != "city" and not _places(spec, field.entity, people):
            continue
        found.setdefault(field.entity, []).append(field)
    return found


def _places(spec: ToolSpec, entity: str, people: frozenset[str]) -> bool:
    """Whether a row of `entity` is more than the person's own: False only where it refers, besides its own id,
    to people alone (see `_sources`); a row that shows no references says nothing either way."""
    references = {f.name for f in spec.outputs if f.entity == entity and is_id_like(f.name)}
    own = next((f.name for f in spec.outputs if f.entity == entity and is_id_like(f.name)), None)
    references.discard(own)
    return not references or bool(references - people)


def _noun(spec: ToolSpec, entity: str) -> str:
    """How a person names the row kind `entity` of `spec`'s output: a row model's own name ('Rentals' -> 'rental');
    a tool's answer (`FreezeMembershipResult`) by the row its first id names, in the tool's words (`freeze_id` of
    `freeze_membership`: 'freeze', never the membership frozen; `res_id` of `change_reservation_dates`:
    'reservation', never 'date')."""
    if entity.endswith("Result"):
        named = words(spec.name)
        for field in spec.outputs:
            if field.entity != entity or not is_id_like(field.name):
                continue
            stem = [t for t in words(field.name) if t not in ID_WORDS]
            found = next((w for w in named if stem and w.startswith(stem[-1])), None)
            if found:
                return found
    return _entity_word(entity)


def _entity_word(entity: str) -> str:
    """How a person names a row kind: 'Rentals' -> 'rental', 'Branches' -> 'branch', 'Upcoming Pt Sessions' ->
    'session'."""
    tokens = [t.lower() for t in re.findall(r"[A-Z]?[a-z]+", entity) if t.lower() not in {"upcoming", "open", "result"}]
    if not tokens or tokens[-1] in {"get", "list", "find"}:
        return ""
    word = tokens[-1]
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


def targets(spec: ToolSpec) -> dict[Kind, list[Param]]:
    """The parameters of `spec` a carried value may fill, by kind: user-known and of a kind; a city only of a
    search (it narrows where to look: a listing is not put up in another service's city)."""
    found: dict[Kind, list[Param]] = {}
    for param in spec.params:
        kind = kind_of(param.name, param.type)
        if not param.user_known or param.enum or kind is None or (kind == "city" and not spec.read_only):
            continue
        found.setdefault(kind, []).append(param)
    return found


def matches(
    source: ToolSpec, target: ToolSpec, people: frozenset[str] = frozenset()
) -> list[tuple[list[str], list[Carry]]]:
    """Ways `source`'s output can fill `target`'s parameters, each a list of carries (step left 0): a range is
    both ends of one grain from one row kind; a city, one field named so. `people`: the keys that name a person
    on `source`'s server (`_sources`)."""
    wanted = targets(target)
    options: list[tuple[list[str], list[Carry]]] = []
    for entity, fields in _sources(source, people).items():
        noun = _noun(source, entity)
        by_kind: dict[str, list[OutField]] = {}
        for field in fields:
            kind = kind_of(field.name, field.type)
            if kind is not None:
                by_kind.setdefault(kind, []).append(field)
        for start in wanted.get("start", []):
            end = next((e for e in wanted.get("end", []) if grain(e.name) == grain(start.name)), None)
            if end is None or start.required != end.required:
                continue
            starts = [f.name for f in by_kind.get("start", []) if grain(f.name) == grain(start.name)]
            ends = [f.name for f in by_kind.get("end", []) if grain(f.name) == grain(end.name)]
            if len(starts) == 1 and len(ends) == 1:
                options.append(
                    (
                        [start.name, end.name],
                        [
                            Carry(param=start.name, step=0, fields=starts, kind="start", entity=noun),
                            Carry(param=end.name, step=0, fields=ends, kind="end", entity=noun),
                        ],
                    )
                )
        for param in wanted.get("city", []):
            if len(by_kind.get("city", [])) == 1:
                carry = Carry(param=param.name, step=0, fields=[by_kind["city"][0].name], kind="city", entity=noun)
                options.append(([param.name], [carry]))
    return options


Matcher = Callable[[ToolSpec, ToolSpec], list[tuple[list[str], list[Carry]]]]


def carries(
    spec_of: Callable[[str, str], ToolSpec],
    steps: Sequence[_Step],
    target: ToolSpec,
    turn: int,
    match: Matcher | None = None,
) -> list[Carry]:
    """The carries into `target` (a step of turn `turn`) from the latest earlier-turn step on another server that
    can fill one: each range or city once, a range's ends from the same step."""
    if turn == 0:
        return []
    chosen: list[Carry] = []
    taken: set[str] = set()
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if step.turn >= turn or step.server == target.server:
            continue
        for params, group in (match or matches)(spec_of(step.server, step.tool), target):
            if taken & set(params):
                continue
            taken |= set(params)
            chosen += [c.model_copy(update={"step": index}) for c in group]
    return chosen


def is_window(param: str) -> bool:
    """Whether a parameter bounds a search (`starts_after`, `posted_before`) rather than sets a booking's own start
    or end (`pickup_at`): what is found inside a rental is "during that rental", never "for its dates"."""
    return any(w in words(param) for w in ("after", "before"))


def referring(kinds: Sequence[Kind], entity: str, grain_: Grain, window: bool = False) -> str:
    """The user's words for a carried value (matched by `REFERS`): 'the same dates as that rental'; a window
    searched after/before, 'during that rental'."""
    if "start" in kinds and window:
        return f"during that {entity}"
    if "start" in kinds:
        return f"the same {'dates' if grain_ == 'date' else 'dates and times'} as that {entity}"
    return f"the same city as that {entity}"


def aside(carry: Carry) -> str:
    """The sentence a turn adds for a value carried into one of its lookups (a branch search's city, the dates of
    a room search): 'It's in the same city as that hotel.', 'It's for the same dates as that freeze.', and a window
    searched after/before, 'It's during that rental.' (never "It's for the same dates and times as that rental":
    a class found inside a rental does not last as long as it)."""
    window = is_window(carry.param)
    words_ = referring([carry.kind], carry.entity, grain(carry.param), window=window)
    if carry.kind == "city":
        return f"It's in {words_}."
    return f"It's {words_}." if window else f"It's for {words_}."


def inside(value: object, after: object, before: object) -> bool:
    """Whether `value` is a date or a date-time within the window `after`..`before` (ISO 8601, a date read as its
    midnight, UTC where no zone is given)."""

    def when(text: object) -> datetime | None:
        if not isinstance(text, str) or not re.match(r"\d{4}-\d{2}-\d{2}", text):
            return None
        try:
            found = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return found if found.tzinfo else found.replace(tzinfo=UTC)

    at, lo, hi = when(value), when(after), when(before)
    return at is not None and lo is not None and hi is not None and lo <= at <= hi


def refer_in(phrasing: str, slot_texts: dict[str, list[str]], carried: Sequence[Carry]) -> str | None:
    """`phrasing` with its carried slots said as what they are ("from {pickup_at} to {return_due_at}" -> "for the
    same times as that event"; "move it to {a} - {b}" -> "move it to the same dates as that rental"); None when a
    carried range's slots are not one span of the phrasing with nothing else between them, or the span follows a
    word no "the same dates" can follow ("to arrive {a} and leave {b}")."""
    text = phrasing
    kinds = {c.kind: c for c in carried}
    if "start" in kinds and "end" in kinds:
        start, end = kinds["start"], kinds["end"]
        first = [m.start() for s in slot_texts.get(start.param, []) for m in re.finditer(re.escape(s), text)]
        last = [m.end() for s in slot_texts.get(end.param, []) for m in re.finditer(re.escape(s), text)]
        if not first or not last or min(first) > max(last):
            return None
        left, right = min(first), max(last)
        between = text[left:right]
        others = re.findall(r"\{([^}:.]+)", between)
        if any(name not in {start.param, end.param} for name in others):
            return None
        if not RANGE_JOINS.match(between):
            return None  # "to arrive {a} and leave {b}": words of the phrasing's own between the ends
        before = text[:left]
        prep = re.search(r"\b(\w+)\s+$", before)
        if prep and prep.group(1).lower() in RANGE_PREPOSITIONS:
            said_prep = RANGE_PREPOSITIONS[prep.group(1).lower()]
            before = before[: prep.start()]
        elif before.strip() and not re.search(r"[,:;]\s*$", before):
            return None  # "picking up {a}": a range after a verb is no span said "for the same dates"
        else:
            said_prep = "for"
        if is_window(start.param):  # "classes between {a} and {b}": "classes during that rental"
            said = referring(["start"], start.entity, grain(start.param), window=True)
        else:
            said = f"{said_prep} " + referring(["start"], start.entity, grain(start.param))
        text = before + said + text[right:]
    for carry in carried:
        if carry.kind in ("start", "end"):
            continue
        for slot in slot_texts.get(carry.param, []):
            text = text.replace(slot, referring([carry.kind], carry.entity, ""))
    if re.search(r"\{[^}]*\}", text) and any(s in text for c in carried for s in slot_texts.get(c.param, [])):
        return None
    return text


def short_booking(carried: Sequence[Carry], arguments: dict[str, object]) -> bool:
    """Whether a carried range books something (its own start and end, not a window searched `after`/`before`)
    over less than `BOOKING_HOURS`: a car rented for the half hour of a meeting is no plan anyone makes."""
    ends = {c.kind: c.param for c in carried if c.kind in ("start", "end")}
    if len(ends) < 2 or is_window(ends["start"]):
        return False
    try:
        start = datetime.fromisoformat(str(arguments[ends["start"]]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(arguments[ends["end"]]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return False
    return (end - start).total_seconds() < BOOKING_HOURS * 3600


def refers(text: str) -> bool:
    """Whether a message refers to a value an earlier turn found, in the words `referring` gives it."""
    return REFERS.search(text) is not None


def _signatures(kinds: Mapping[str, Sequence[str]]) -> set[str]:
    """'range:<grain>' where both ends of one grain are there, and 'city'."""
    found = {"city"} if kinds.get("city") else set()
    found |= {f"range:{g}" for g in set(kinds.get("start", [])) & set(kinds.get("end", []))}
    return found


def offers(spec: ToolSpec, people: frozenset[str] = frozenset()) -> set[str]:
    """What `spec`'s output can carry to another server, as `_signatures` (a rough test, for choosing servers)."""
    found: set[str] = set()
    for fields in _sources(spec, people).values():
        kinds: dict[str, list[str]] = {}
        for field in fields:
            kind = kind_of(field.name, field.type)
            if kind is not None:
                kinds.setdefault(kind, []).append(grain(field.name))
        found |= _signatures(kinds)
    return found


def wants(spec: ToolSpec) -> set[str]:
    """What of another server's can fill an input of `spec`, as `_signatures`."""
    kinds: dict[str, list[str]] = {k: [grain(p.name) for p in ps] for k, ps in targets(spec).items()}
    return _signatures(kinds)


def flow_pairs(
    by_server: dict[str, list[ToolSpec]],
    pairs: Sequence[tuple[str, str]],
    people: Mapping[str, frozenset[str]] | None = None,
) -> list[tuple[str, str]]:
    """The pairs of `pairs`, ordered first turn -> second, where a tool of the first can carry a value into a tool
    of the second: those a cross-server task is drawn from when it should carry data between its turns. `people`:
    per server, the keys that name a person there (`_sources`)."""
    keys = people or {}
    offered = {s: set().union(*(offers(t, keys.get(s, frozenset())) for t in tools)) for s, tools in by_server.items()}
    wanted = {s: set().union(*(wants(t) for t in tools)) for s, tools in by_server.items()}
    ordered = [(a, b) for pair in pairs for a, b in (pair, pair[::-1])]
    return sorted(p for p in ordered if offered.get(p[0], set()) & wanted.get(p[1], set()))
