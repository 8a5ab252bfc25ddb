"""Tasks written from intents (issue 27, items 1-2): on a server whose spec has intents, every goal is
something the principal's people ask for, the opening is one of the goal's `say` phrasings with its slots
said as a person says them (rows named by their table's `refer` phrasing, unique among the persona's own
rows), and claims are the `hear` fields in the person's words; a server without intents still gets tasks
from the writer it had before."""

from __future__ import annotations

import json
import re
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from conftest import REPO

from envfarm.clients.audit import audit_tasks, build_auditor
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.graph import load_intents
from envfarm.clients.grounding import PersonaRecord
from envfarm.clients.synthesize import Synthesis, SynthesisOptions, dependency_depth, prune, synthesize
from envfarm.clients.tasks import Claim, GoldCall, Persona, Provenance, Task, Turn
from envfarm.clients.writing import _unasked
from envfarm.factory.build import build_all
from envfarm.render import render
from envfarm.servers.runtime.intents import ServerIntents, slots

ID = re.compile(r"\b[a-z]{2,5}_[a-z0-9]{4,}\b")
SNAKE = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")


def _served_without_intents(server: Path) -> None:
    """A built server whose spec.json lost every `intent` and `refer`: it serves no intents, as a foreign
    server or one built before intents (the spec check refuses such a spec, so the build cannot make it)."""
    spec = json.loads((server / "spec.json").read_text())
    for entity in (spec.get("entities") or {}).values():
        entity.pop("refer", None)
    for tool in spec.get("tools") or []:
        tool.pop("intent", None)
    (server / "spec.json").write_text(json.dumps(spec, indent=1))


# A few intents for `mail` (a signed-in user's own mailbox: `asks: user`), this test's own fixture.
MAIL_REFER = {
    "conversations": ["the “{subject}” conversation", "the email thread about “{subject}”"],
    "labels": ["my {name} label", "the label {name}"],
}
MAIL_INTENTS: dict[str, dict[str, Any]] = {
    "archive_conversation": {
        "asks": "user",
        "say": [
            "Please archive {conversation_id}.",
            "Can you get {conversation_id} out of my inbox and into the archive?",
        ],
    },
    "trash_conversation": {
        "asks": "user",
        "say": ["Delete {conversation_id}, please.", "Could you move {conversation_id} to the trash?"],
    },
    "apply_label": {
        "asks": "user",
        "say": ["Put {label_id} on {conversation_id}.", "Could you label {conversation_id} with {label_id}?"],
    },
}


def _with_mail_intents(spec: Path) -> None:
    data = yaml.safe_load(spec.read_text())
    for table, phrasings in MAIL_REFER.items():
        data["entities"][table]["refer"] = phrasings
    for tool in data["tools"]:
        # Only this test's tools are goals: every other tool is work nobody asks for here.
        tool["intent"] = MAIL_INTENTS.get(tool["name"], {"asks": "internal"})
    spec.write_text(yaml.safe_dump(data, sort_keys=False))


# The variants below are built under names of their own: a process imports each server package once, and
# other tests load the committed `envfarm.servers.clinic` and `envfarm.servers.mail`.
PLAIN_CLINIC, OWN_MAIL = "clinic_plain", "mail_own_intents"


def _renamed(spec: Path, name: str) -> None:
    data = yaml.safe_load(spec.read_text())
    data["name"] = name
    spec.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture(scope="module")
def intents_farm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mail` with this test's intents (a user principal) and `clinic` with its intents stripped (fast,
    unverified), each under a name of its own; the committed `hotel` (with its intents) is the repo's."""
    specs = tmp_path_factory.mktemp("specs")
    for name, variant in (("clinic", PLAIN_CLINIC), ("mail", OWN_MAIL)):
        shutil.copytree(REPO / "factory" / "specs" / name, specs / variant)
        _renamed(specs / variant / "spec.yaml", variant)
    _with_mail_intents(specs / OWN_MAIL / "spec.yaml")
    root = tmp_path_factory.mktemp("farm")
    built = anyio.run(partial(build_all, [specs], root, verify=False))
    assert built.ok, render(built)
    _served_without_intents(root / "servers" / PLAIN_CLINIC)
    return root


def _pattern(phrasing: str) -> re.Pattern[str]:
    """A `say` phrasing as a regex: its words literally, each slot as some words without an id."""
    parts, last = [], 0
    for match in re.finditer(r"\{[^{}]*\}", phrasing):
        parts += [re.escape(phrasing[last : match.start()]), r"(.+?)"]
        last = match.end()
    parts.append(re.escape(phrasing[last:]))
    return re.compile("".join(parts).replace(r"\ ", " "), re.IGNORECASE)


def _asked(message: str, say: list[str]) -> re.Match[str] | None:
    # '{adults} adults' said of one reads '1 adult': let a slot's plural word lose its s
    loose = [re.sub(r"(\(\.\+\?\) \w+)s\b", r"\1s?", _pattern(p).pattern) for p in say]
    # a reason in brackets ('cancel {res_id} ({cancel_reason})') is said as a clause: '... because ...'
    loose = [p.replace(r" \((.+?)\)", r"(?: \((.+?)\)| because (.+?))") for p in loose]
    return next((m for p in loose if (m := re.search(p, message, re.IGNORECASE))), None)


async def _synthesize(root: Path, servers: list[str], seed: int, n: int) -> tuple[Synthesis, ServerIntents | None]:
    async with Connections(farm_targets(root, servers)) as farm:
        synthesis = await synthesize(SynthesisOptions(n=n, seed=seed, servers=servers, max_servers=1), farm)
        report = audit_tasks(await build_auditor(farm, servers), synthesis.tasks)
        assert report.failed == 0, report.findings
        return synthesis, await load_intents(farm, servers[0])


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_hotel_tasks_open_with_a_say_phrasing_and_claim_what_the_person_wants_to_hear(seed: int) -> None:
    synthesis, intents = await _synthesize(REPO, ["hotel"], seed, 4)
    assert intents is not None and intents.tools
    assert synthesis.tasks, synthesis.summary.dropped
    for task in synthesis.tasks:
        if any(c.kind == "must_refuse" for c in task.policy_checks):
            continue
        tools = {c.tool for c in task.gold_calls}
        # The opening asks in the words of an intent of one of its calls, and says no id or column name.
        asking = [t for t in tools if t in intents.tools and intents.tools[t].say]
        assert asking, (task.id, tools)
        assert task.provenance.writer == "offline (intents)", task.id
        # Staff-internal work (post a charge, set housekeeping status) and tools without an intent are no goal.
        for call in task.gold_calls:
            if call.is_write:
                assert call.tool in intents.tools and intents.tools[call.tool].asks == "customer", (task.id, call.tool)
        assert all(intents.tools[t].asks == "customer" for t in asking), task.id  # staff principal: customers ask
        match = next((m for t in asking if (m := _asked(task.opening_message, intents.tools[t].say))), None)
        assert match is not None, (task.id, task.opening_message)
        assert not ID.search(task.opening_message), task.opening_message
        assert not SNAKE.search(task.opening_message), task.opening_message
        # Every claim is a `hear` field of a gold call, labelled with the person's words.
        for claim in task.claims:
            words = [
                w for t in tools if t in intents.tools for f, w in intents.tools[t].hear.items() if f == claim.field
            ]
            # said in the hear words, or asked in other words ("how much would it cost?" asks for the total)
            asked = any(w in task.opening_message for w in words) or not _unasked([claim], task.opening_message)
            assert any(w in claim.text for w in words) and asked, (task.id, claim)


async def test_a_row_is_named_so_that_no_other_row_of_the_persona_fits() -> None:
    """Every row an opening names through a `refer` phrasing is the only one of the persona's rows (of its
    table) that phrasing describes that way: rendered for each of their rows, the words fit the target alone."""
    async with Connections(farm_targets(REPO, ["hotel"])) as farm:
        synthesis = await synthesize(SynthesisOptions(n=8, seed=7, servers=["hotel"], max_servers=1), farm)
        intents = await load_intents(farm, "hotel")
    assert intents is not None
    from envfarm.clients.grounding import observe, persona_rows
    from envfarm.clients.sampling import Catalog
    from envfarm.clients.writing import OfflineWriter

    async with Connections(farm_targets(REPO, ["hotel"])) as farm:
        from envfarm.clients.graph import build_graph, load_specs

        specs = await load_specs(farm, ["hotel"])
        world = await observe(farm, "hotel", specs)
    writer = OfflineWriter(Catalog(specs, build_graph(specs), {"hotel": intents}), {"hotel": world})
    named = 0
    for task in synthesis.tasks:
        persona = PersonaRecord(name=task.persona.name, email=task.persona.email or "")
        own = persona_rows(world, persona, 2)
        for table, phrasings in intents.refer.items():
            key = world.keys[table]
            for row in own.get(table, []):
                for phrasing in phrasings:
                    said = writer._render_refer("hotel", table, phrasing, row)
                    if said is None or said.lower() not in task.opening_message.lower() or not slots(phrasing):
                        continue
                    named += 1
                    others = [
                        r
                        for r in own[table]
                        if r[key] != row[key] and writer._render_refer("hotel", table, phrasing, r)
                    ]
                    twins = [r for r in others if writer._render_refer("hotel", table, phrasing, r) == said]
                    assert not twins, (task.id, said, [t[key] for t in twins])
    assert named, "no opening named one of the persona's rows"


async def test_a_signed_in_user_asks_for_their_own_things_in_their_intents_words(intents_farm: Path) -> None:
    """On a user-principal server only `asks: user` tools are goals, and each opening is one of their phrasings
    with the conversation named by its subject (unique among the user's conversations, or the task is dropped)."""
    for seed in (0, 1):
        synthesis, intents = await _synthesize(intents_farm, [OWN_MAIL], seed, 3)
        assert intents is not None
        assert synthesis.tasks, synthesis.summary.dropped
        for task in synthesis.tasks:
            writes = [c.tool for c in task.gold_calls if c.is_write]
            assert writes and all(t in MAIL_INTENTS for t in writes), (task.id, writes)
            assert any(_asked(task.opening_message, MAIL_INTENTS[t]["say"]) for t in writes), task.opening_message
            assert not ID.search(task.opening_message) and not SNAKE.search(task.opening_message)
            assert task.principal == task.persona.email


async def test_the_same_seed_writes_the_same_intent_tasks() -> None:
    first, _ = await _synthesize(REPO, ["hotel"], 4, 3)
    again, _ = await _synthesize(REPO, ["hotel"], 4, 3)
    assert [t.model_dump_json() for t in first.tasks] == [t.model_dump_json() for t in again.tasks]


async def test_a_server_without_intents_still_gets_tasks(intents_farm: Path) -> None:
    synthesis, intents = await _synthesize(intents_farm, [PLAIN_CLINIC], 0, 3)
    assert intents is None
    assert synthesis.tasks, synthesis.summary.dropped
    assert all(t.provenance.writer.startswith("offline") for t in synthesis.tasks)


def _one_turn_task(message: str, calls: list[GoldCall], claim: Claim) -> Task:
    """A task of one turn on one server `s`: its gold calls and the one claim the answer must make."""
    return Task(
        id="t",
        servers=["s"],
        tools=[],
        persona=Persona(name="Ana Silva", style="polite"),
        principal=None,
        uncalibrated_message="",
        opening_message=message,
        turns=[Turn(message=message, gold_calls=list(range(len(calls))))],
        gold_calls=calls,
        claims=[claim],
        provenance=Provenance(sampler="topology", seed=0, chain=[f"s.{c.tool}" for c in calls]),
    )


def test_prune_keeps_the_call_a_claim_comes_from_and_drops_a_read_that_feeds_nothing_new() -> None:
    """A get that reads again a row a search already showed feeds nothing of its own: what the bill uses is
    traced to the first call that showed it, and the get goes; the claim's call and its chain stay."""
    stay = {"res_id": "res_a", "status": "confirmed"}
    calls = [
        GoldCall(
            turn=0, server="s", tool="find_guest", arguments={"email": "a@example.com"}, output={"guest_id": "g1"}
        ),
        GoldCall(
            turn=0, server="s", tool="find_stays", arguments={"guest_id": "g1"}, output={"stays": [stay]}, uses=[0]
        ),
        GoldCall(turn=0, server="s", tool="get_stay", arguments={"res_id": "res_a"}, output=stay, uses=[1]),
        GoldCall(
            turn=0, server="s", tool="get_bill", arguments={"res_id": "res_a"}, output={"balance": 12.5}, uses=[2]
        ),
    ]
    balance = Claim(text="states the balance: 12.50", values=["12.5"], field="balance")
    task = _one_turn_task("What's my balance?", calls, balance)
    pruned = prune(task)
    assert [c.tool for c in pruned.gold_calls] == ["find_guest", "find_stays", "get_bill"]
    assert [c.uses for c in pruned.gold_calls] == [[], [0], [1]]
    assert pruned.turns[0].gold_calls == [0, 1, 2]
    # Without the claim, reads that feed nothing go, and so does the chain behind them.
    assert prune(task.model_copy(update={"claims": []})).gold_calls == []


def test_prune_traces_a_number_key_to_the_first_call_showing_it_under_its_name() -> None:
    """Imported APIs key rows by numbers (`template_id: 5`): a get of a row the list already showed is padding
    before the delete, as with a text key; a 5 under another name (a count) shows no template."""
    listed = {"templates": [{"template_id": 4, "name": "Pinecrest"}, {"template_id": 5, "name": "Northwind"}]}

    def task(first: dict[str, Any], said: bool = False) -> Task:
        """`said`: the user gives the template's number, so the get is not fed by the listing."""
        calls = [
            GoldCall(turn=0, server="s", tool="list_templates", arguments={}, output=first),
            GoldCall(
                turn=0,
                server="s",
                tool="get_template",
                arguments={"template_id": 5},
                output={"template_id": 5},
                uses=[] if said else [0],
            ),
            GoldCall(
                turn=0,
                server="s",
                tool="delete_template",
                arguments={"template_id": 5},
                output={},
                uses=[1],
                is_write=True,
            ),
        ]
        return _one_turn_task("Delete the Northwind template.", calls, Claim(text="done", values=[]))

    assert [c.tool for c in prune(task(listed)).gold_calls] == ["list_templates", "delete_template"]
    counted = {"templates": [{"count": 5, "name": "Northwind"}]}
    assert [c.tool for c in prune(task(counted, said=True)).gold_calls] == ["get_template", "delete_template"]
    # Postmark's listing shows `id: 5`, its get and its delete take `domainid: 5`: the get keyed by the delete's own
    # value showed it second, so it is padding; a get keyed by another name's 2 (a user's, not the team's) is not
    shown = {"domains": [{"id": 5, "name": "Highland Domain"}]}
    by_name = [
        GoldCall(turn=0, server="s", tool="list_domains", arguments={}, output=shown),
        GoldCall(turn=0, server="s", tool="get_domain", arguments={"domainid": 5}, output={"id": 5}, uses=[0]),
        GoldCall(
            turn=0, server="s", tool="delete_domain", arguments={"domainid": 5}, output={}, uses=[1], is_write=True
        ),
    ]
    padded = _one_turn_task("Delete the Highland Domain.", by_name, Claim(text="done", values=[]))
    assert [c.tool for c in prune(padded).gold_calls] == ["list_domains", "delete_domain"]
    other = [
        by_name[0],
        GoldCall(turn=0, server="s", tool="get_team", arguments={"user_id": 5}, output={"team_id": 5}, uses=[0]),
        GoldCall(turn=0, server="s", tool="delete_team", arguments={"team_id": 5}, output={}, uses=[1], is_write=True),
    ]
    kept = _one_turn_task("Delete my team.", other, Claim(text="done", values=[]))
    assert [c.tool for c in prune(kept).gold_calls] == ["list_domains", "get_team", "delete_team"]


def test_a_claim_is_answered_by_the_first_call_that_shows_it_on_the_same_row() -> None:
    """A list that already shows the asked row's status answers the claim, so a get of that row is padding and
    goes; a list where only another row holds the same status answers nothing, and the get stays."""
    asked = {"order_id": "o2", "name": "Blue kettle", "status": "shipped"}
    other = {"order_id": "o1", "name": "Red mug", "status": "shipped"}
    shipped = Claim(text="states the status: shipped", values=["shipped"], field="status")

    def task(listed: list[dict[str, str]]) -> Task:
        calls = [
            GoldCall(turn=0, server="s", tool="list_orders", arguments={}, output={"orders": listed}),
            GoldCall(turn=0, server="s", tool="get_order", arguments={"order_id": "o2"}, output=asked),
        ]
        return _one_turn_task("Has my blue kettle shipped?", calls, shipped)

    assert [c.tool for c in prune(task([other, asked])).gold_calls] == ["list_orders"]
    assert [c.tool for c in prune(task([other])).gold_calls] == ["get_order"]


WEEKDAY = re.compile(r"\b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b")


@pytest.mark.parametrize("seed", [3, 5])
async def test_a_run_never_repeats_a_goal_and_spreads_over_the_intents(seed: int) -> None:
    """The same goal with the same arguments for the same person is one task per run, goals spread over the
    server's intents (no one goal is most of the run), and a held-back date is said as a person states it (with
    its year, never a weekday)."""
    synthesis, _ = await _synthesize(REPO, ["hotel"], seed, 8)
    assert len(synthesis.tasks) >= 6, synthesis.summary.dropped
    seen = set()
    goals: list[str] = []
    for task in synthesis.tasks:
        writes = [(c.tool, sorted(c.arguments.items())) for c in task.gold_calls if c.is_write]
        key = (task.persona.email, repr(writes or task.opening_message))
        assert key not in seen, (task.id, key)
        seen.add(key)
        goals.append(task.provenance.chain[-1] if not writes else writes[-1][0])
        for fact in task.hidden_facts:
            assert not WEEKDAY.search(fact.description), (task.id, fact.description)
    top = max(goals.count(g) for g in goals)
    assert top <= len(goals) // 2, goals
    assert len(set(goals)) >= 3, goals
    # The chain starts from what the user says (their name or email, the hotel they name), not from a code
    # they would have to be asked for: few roots are keyed on a held-back value.
    held_back = 0
    for task in synthesis.tasks:
        said = " ".join(t.message for t in task.turns).lower()
        who = {task.persona.name.lower(), (task.persona.email or "").lower()}
        roots = [c for c in task.gold_calls if not c.uses]
        held_back += any(
            isinstance(v, str) and v.lower() not in said and v.lower() not in who
            for c in roots
            for v in c.arguments.values()
        )
    assert held_back <= len(synthesis.tasks) // 4, held_back
    deep = sum(1 for t in synthesis.tasks if dependency_depth(t) >= 3)
    assert deep >= len(synthesis.tasks) // 3, deep


def test_a_refusal_is_made_only_of_a_change_to_the_owners_records() -> None:
    """The third-party rule forbids changing a customer's records for someone else: a goal that only adds rows
    (a new booking for one's partner) or changes rows that are no one's (a room taken, a copy lent) changes none
    of theirs, so it is no refusal; their stay moved or their hold removed is."""
    from envfarm.clients.grounding import Grounded, ServerWorld
    from envfarm.clients.sampling import Chain, Step
    from envfarm.clients.synthesize import changes_records
    from envfarm.clients.tasks import ExpectedState, GoldCall
    from envfarm.servers.runtime.control import TableDiff

    world = ServerWorld(
        server="hotel",
        controlled=True,
        tables={
            "guests": [{"guest_id": "g1", "email": "ana@example.com"}, {"guest_id": "g2", "email": "bo@example.com"}],
            "reservations": [{"res_id": "res_a", "guest_id": "g1"}, {"res_id": "res_b", "guest_id": "g2"}],
            "rooms": [{"room_id": "r1", "status": "clean"}],
        },
        keys={"guests": "guest_id", "reservations": "res_id", "rooms": "room_id"},
    )

    def grounded(diff: dict[str, TableDiff]) -> Grounded:
        return Grounded(
            chain=Chain(steps=[Step(server="hotel", tool="x", role="goal")], sampler="topology"),
            persona=PersonaRecord(name="Ana Silva", email="ana@example.com"),
            calls=[GoldCall(turn=0, server="hotel", tool="x", arguments={}, output={}, is_write=True)],
            sources=[{}],
            targets=[None],
            expected={"hotel": ExpectedState(hash="h", diff=diff)},
        )

    def moved(key: str) -> TableDiff:
        return TableDiff(updated=[{"key": key, "before": {"n": 1}, "after": {"n": 2}}])

    booked = grounded({"reservations": TableDiff(added=[{"res_id": "res_new"}]), "rooms": moved("r1")})
    assert not changes_records(booked, "hotel", world)
    assert changes_records(grounded({"reservations": moved("res_a")}), "hotel", world)
    assert changes_records(grounded({"reservations": TableDiff(removed=[{"res_id": "res_a"}])}), "hotel", world)
    assert not changes_records(grounded({"reservations": moved("res_b")}), "hotel", world)  # someone else's
    assert not changes_records(grounded({"reservations": moved("res_a")}), "clinic", world)  # nothing there


def test_a_phrasing_ending_in_a_said_value_still_ends_its_sentence() -> None:
    from envfarm.clients.writing import _ended

    assert _ended("Please cancel my subscription. Too many emails") == "Please cancel my subscription. Too many emails."
    for whole in ("Done.", "Is it paid?", 'Say "hi"', "(thanks)"):
        assert _ended(whole) == whole


SPEECH_SEEDS = [0, 7, 3100]


def _registered() -> list[str]:
    return sorted(s["name"] for s in json.loads((REPO / "registry.json").read_text())["servers"])


@pytest.mark.slow
@pytest.mark.parametrize("seed", SPEECH_SEEDS)
async def test_the_user_never_says_a_code_a_snake_token_or_their_own_name_twice(seed: int) -> None:
    """Over the whole built-in farm: what the user says holds no enum code their intent words for people
    ("duplicate" where it says "I was charged twice"), no snake_case token, never the persona's full name
    twice in one message, never "of <their name>" (their own card, said in the third person), never a value they
    say scrubbed to "that one" ("My email is that one.", found reading seed 6161), never a reason as a form field
    ("Why? Too many emails.", found annotating seed 7373)."""
    servers = _registered()
    async with Connections(farm_targets(REPO, servers)) as farm:
        synthesis = await synthesize(SynthesisOptions(n=40, seed=seed, servers=servers), farm)
        intents = {s: i for s in servers if (i := await load_intents(farm, s)) is not None}
        report = audit_tasks(await build_auditor(farm, servers), synthesis.tasks)
    assert report.failed == 0, report.findings
    assert len(synthesis.tasks) >= 30, synthesis.summary.dropped
    for task in synthesis.tasks:
        name = task.persona.name
        for message in [task.opening_message, *(t.message for t in task.turns[1:])]:
            # an email, a quote, and an emoji shortcode as a chat user types it (":white_check_mark:") are no codes
            text = re.sub(r"\S+@\S+|“[^”]*”|\"[^\"]*\"|:[a-z0-9_+-]+:", "", message)
            assert not SNAKE.search(text), (task.id, message)
            assert len(re.findall(rf"\b{re.escape(name)}\b", message)) <= 1, (task.id, message)
            assert not re.search(rf"\bof {re.escape(name)}\b", message), (task.id, message)
            # a form field ends at its value ("Paid: no."); "... from FreshCart Austin: no longer needed" is a note
            assert not re.search(r"\b\w+: (?:yes|no|true|false)\b(?!\s+\w)", message), (task.id, message)
            # a value the person says (an email a later tool refers to) is never scrubbed as an internal id
            assert not re.search(r"\b(?:is|was|to|at|on|for) that one\b", message), (task.id, message)
            # a reason is a clause of the sentence, never a form field ('Why? No longer relevant.', found at 7373)
            assert not re.search(r"\bWhy\? [A-Z]|\bReason: ", text), (task.id, message)
            for call in task.gold_calls:
                found = intents.get(call.server)
                intent = found.tools.get(call.tool) if found else None
                for param, said in (intent.words if intent else {}).items():
                    value = call.arguments.get(param)
                    code = str(value).lower() if isinstance(value, str) else None
                    spaced = (code or "").replace("_", " ")
                    if code and code in said and spaced not in said[code].lower() and "_" in code:
                        assert not re.search(rf"\b{re.escape(spaced)}\b", text.lower()), (
                            task.id,
                            code,
                            message,
                        )


@pytest.mark.slow
async def test_a_tour_the_user_names_is_searched_by_its_name_never_by_a_held_back_bound_or_language() -> None:
    """Seed 6173 held back "the max price is 42.00" and seed 9400 "the language is Japanese" for a tour the user
    names by its title: a search is keyed on the words that name the row, and no hidden fact is a search bound."""
    async with Connections(farm_targets(REPO, ["tour_booking"])) as farm:
        tasks = [
            task
            for seed in (11, 12)
            for task in (
                await synthesize(SynthesisOptions(n=6, seed=seed, servers=["tour_booking"], max_servers=1), farm)
            ).tasks
        ]
    searches = [c for t in tasks for c in t.gold_calls if c.tool == "search_tours"]
    assert searches, "no task searched the tours"
    assert all(set(c.arguments) & {"title", "city"} for c in searches), [c.arguments for c in searches]
    held = {h.key for t in tasks for h in t.hidden_facts}
    assert not held & {"max_price", "language", "category"}, held
