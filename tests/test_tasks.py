"""Task synthesis end to end on live servers: the graph's links, seeded sampling, grounding that
replays, calibrated messages that give nothing away, an LLM writer whose bad answers fall back,
and a foreign MCP server known only from an `mcpServers` entry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import REPO
from scripted_openai import scripted_openai

from envfarm.cli import main
from envfarm.clients.connect import Connections, farm_targets, load_server_configs
from envfarm.clients.graph import (
    OutField,
    Param,
    build_graph,
    link_quality,
    load_specs,
    param_node,
    render_svg,
    similarity,
    tool_node,
)
from envfarm.clients.synthesize import (
    CROSS_SERVER_SHARE,
    MULTI_SERVER_SHARE,
    MULTI_SERVER_SHARE_BEHIND,
    PAIR_TRIAL,
    Synthesis,
    SynthesisOptions,
    dependency_depth,
    pair_odds,
    synthesize,
)
from envfarm.clients.tasks import Task, read_jsonl
from envfarm.clients.writing import STEP_WORDS, Vocabulary, over_specification
from envfarm.llm import ModelConfig

TODO_SERVER = Path(__file__).parent / "foreign" / "todo_server.py"
PAIR = ["banking", "clinic"]


async def run(servers: list[str], **options: object) -> Synthesis:
    async with Connections(farm_targets(REPO, servers)) as farm:
        return await synthesize(SynthesisOptions(servers=servers, **options), farm)  # type: ignore[arg-type]


def dumped(tasks: list[Task]) -> str:
    return "\n".join(t.model_dump_json() for t in tasks)


async def test_the_graph_has_the_advertised_links_and_similarity_finds_most_of_them() -> None:
    async with Connections(farm_targets(REPO, ["clinic"])) as farm:
        specs = await load_specs(farm, ["clinic"])
    graph = build_graph(specs)
    pay = param_node("clinic", "pay_invoice", "invoice_id")
    assert graph.nodes[pay]["required"] and not graph.nodes[pay]["user_known"]
    assert graph.edges[tool_node("clinic", "get_invoice"), pay]["source"] == "exact"
    assert tool_node("clinic", "find_patient") in graph.predecessors(
        param_node("clinic", "list_appointments", "patient_id")
    )
    assert graph.nodes[param_node("clinic", "find_patient", "email")]["user_known"]
    assert graph.nodes[tool_node("clinic", "find_patient")]["read_only"]
    assert not graph.nodes[tool_node("clinic", "pay_invoice")]["read_only"]
    quality = link_quality(specs)
    assert quality.exact > 20 and quality.precision >= 0.9 and quality.recall >= 0.6, quality
    svg = render_svg(graph)
    assert (
        svg.startswith("<svg") and "http" not in svg.replace("http://www.w3.org/2000/svg", "") and "pay_invoice" in svg
    )


def test_similarity_matches_ids_of_the_same_entity_only() -> None:
    account = OutField(name="account_id", entity="Account")
    assert similarity(Param(name="from_account_id", user_known=False), account) >= 0.8
    assert similarity(Param(name="patient_id", user_known=False), account) == 0.0
    assert similarity(Param(name="account_id", type="integer", user_known=False), account) == 0.0
    assert similarity(Param(name="project_id", user_known=False), OutField(name="id", entity="Project")) >= 0.8
    assert similarity(Param(name="owner_email"), OutField(name="email")) > similarity(
        Param(name="title"), OutField(name="email")
    )


def test_over_specification_counts_what_a_message_gives_away() -> None:
    vocab = Vocabulary(tool_names=["pay_invoice", "get_invoice"], internal_ids=["inv_0031"], literals=["80.00"])
    measure = over_specification("First call get_invoice, then pay invoice inv_0031 for 80.00.", vocab)
    assert (measure.tool_names, measure.internal_ids, measure.literal_arguments) == (2, 1, 1)
    assert measure.step_words == 3 and {"first", "then", "call"} <= set(STEP_WORDS)
    assert over_specification("I still owe you for my last visit, can I settle it?", vocab).total == 0


async def test_the_same_seed_gives_the_same_tasks_byte_for_byte() -> None:
    first, again = await run(PAIR, n=6, seed=3), await run(PAIR, n=6, seed=3)
    assert len(first.tasks) == 6 and dumped(first.tasks) == dumped(again.tasks)
    other = await run(PAIR, n=6, seed=4)
    assert dumped(other.tasks) != dumped(first.tasks)


async def test_tasks_are_grounded_calibrated_and_replay_to_the_expected_state() -> None:
    synthesis = await run(PAIR, n=8, seed=1)
    tasks = synthesis.tasks
    assert synthesis.summary.leaks == {"tool_names": 0, "internal_ids": 0}
    async with Connections(farm_targets(REPO, PAIR)) as farm:
        names = {t.name for s in PAIR for t in await farm.tools(s)}
        for task in tasks:
            ids = {
                v
                for call in task.gold_calls
                for k, v in call.arguments.items()
                if k.endswith("_id") and isinstance(v, str)
            }
            for turn in task.turns:
                assert not any(name in turn.message for name in names), turn.message
                assert not any(i in turn.message for i in ids), turn.message
            assert (
                task.turns[0].message == task.opening_message and task.persona.name.split()[0] in task.opening_message
            )
            refusal = any(c.kind == "must_refuse" for c in task.policy_checks)
            assert task.uncalibrated_message and (
                refusal or task.over_specification["calibrated"].total < task.over_specification["uncalibrated"].total
            )
            assert sorted(i for t in task.turns for i in t.gold_calls) == list(range(len(task.gold_calls)))
            assert all(u < i for i, call in enumerate(task.gold_calls) for u in call.uses)
            # Replaying the gold calls on fresh episodes, acting for the task's principal, reaches the recorded state.
            for server in task.servers:
                async with farm.episode(server, f"replay-{task.id}", principal=task.principal) as episode:
                    for call in task.gold_calls:
                        if call.server == server:
                            result = await episode.call_tool(call.tool, call.arguments)
                            assert not result.is_error, (task.id, call.tool, result.content)
                    state = await episode.state()
                    assert state is not None and state.hash == task.expected_state[server].hash
                    assert set(state.diff) == set(task.expected_state[server].diff)
    assert any(t.principal == t.persona.email for t in tasks if "banking" in t.servers), "banking acts for the persona"
    assert any(t.hidden_facts for t in tasks) and any(t.claims for t in tasks)
    assert any(call.is_write for t in tasks for call in t.gold_calls)
    single = [t for t in tasks if len(t.servers) == 1]
    assert single and all(any(ref.server not in t.servers for ref in t.tools) for t in single), (
        "distractors from another server"
    )


def looked_up_elsewhere(task: Task) -> int:
    """Id arguments whose value no earlier call of the task returned (the user could not know them)."""
    missing = 0
    for index, call in enumerate(task.gold_calls):
        seen = json.dumps([c.output for c in task.gold_calls[:index]])
        missing += sum(
            1
            for k, v in call.arguments.items()
            if k.endswith("_id") and isinstance(v, str) and json.dumps(v) not in seen
        )
    return missing


async def test_servers_on_the_farm_clock_pair_up_and_reach_the_cross_server_share() -> None:
    """banking, clinic and library once ran on three clocks, so no task could mix them; on the farm clock
    every two of them share people and a clock, and the kept tasks reach the cross-server share."""
    shares = []
    for seed in (0, 1, 2):
        synthesis = await run(["banking", "clinic", "library"], n=12, seed=seed)
        assert synthesis.summary.kept_apart == {}
        assert len(synthesis.tasks) == 12
        shares.append(synthesis.summary.cross_server_share)
    # Pairs are favoured while the kept share is under the target, so a run of 12 ends at or just under it
    # (3 of 12 is one task short of 0.3); over the three runs the share reaches it within a task per run.
    assert min(shares) >= CROSS_SERVER_SHARE - 1 / 12, shares
    assert sum(shares) / len(shares) >= CROSS_SERVER_SHARE - 1 / 36, shares


def test_pairs_are_drawn_nearly_always_while_short_of_the_share_unless_they_starve_the_one_server_tasks() -> None:
    # ahead of the share: the plain odds; behind it (0 of 10 kept span two servers): a pair nearly always
    assert pair_odds({"pair": 50, "one": 50}, {"pair": 5, "one": 5}) == MULTI_SERVER_SHARE
    assert pair_odds({"pair": 5, "one": 50}, {"pair": 0, "one": 10}) == MULTI_SERVER_SHARE_BEHIND > 0.9
    # pairs keep a task in 200 tries where one server keeps one in 17 (seed 8243): they still pay for themselves
    assert pair_odds({"pair": 4000, "one": 700}, {"pair": 17, "one": 41}) == MULTI_SERVER_SHARE_BEHIND
    # pairs tried PAIR_TRIAL times or more that keep nothing: one-server tasks get their share of the draws again
    assert pair_odds({"pair": PAIR_TRIAL, "one": 100}, {"pair": 0, "one": 10}) == MULTI_SERVER_SHARE
    assert pair_odds({"pair": 5 * PAIR_TRIAL, "one": 100}, {"pair": 1, "one": 40}) == MULTI_SERVER_SHARE
    # too few tries to tell: a pair, though none has passed yet
    assert pair_odds({"pair": PAIR_TRIAL - 1, "one": 100}, {"pair": 0, "one": 10}) == MULTI_SERVER_SHARE_BEHIND


async def test_topology_sampling_looks_everything_up_and_spans_servers() -> None:
    # seed 7: the sample of ten holds a cross-server task; which seeds do depends on the servers' tool
    # lists and on which chains pass the audit.
    topology = await run(["calendar", "mail"], n=10, seed=7)
    walk = await run(["calendar", "mail"], n=10, seed=7, sampler="random")
    assert all(looked_up_elsewhere(t) == 0 for t in topology.tasks)
    # The baseline takes ids from the seed; the audit drops every such chain (the user could not know them).
    assert all(looked_up_elsewhere(t) == 0 for t in walk.tasks)
    assert walk.summary.dropped.get("audit: determinacy", 0) > 0
    deep = [dependency_depth(t) >= 3 for t in topology.tasks]
    assert topology.summary.data_dependency_share == round(sum(deep) / len(deep), 3) > 0
    spanning = [t for t in topology.tasks if len(t.servers) == 2]
    assert spanning and all(len(t.turns) == 2 for t in spanning)
    # Every turn of a kept task passes the audit on its own; a later turn that takes a value an earlier
    # turn found is rare since (0 of seeds 0-13 here), so it is not asserted.
    assert all({c.server for c in t.gold_calls} == set(t.servers) for t in spanning)
    assert all(t.persona.email for t in spanning)
    single = await run(["calendar", "mail"], n=4, seed=0, max_servers=1)
    assert all(len(t.servers) == 1 for t in single.tasks)


async def test_a_foreign_server_from_an_mcp_servers_entry(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"todo": {"command": sys.executable, "args": [str(TODO_SERVER)]}}}))
    async with Connections(load_server_configs(config), timeout=20) as farm:
        synthesis = await synthesize(SynthesisOptions(n=2, seed=0), farm)
    assert len(synthesis.tasks) == 2
    for task in synthesis.tasks:
        assert task.servers == ["todo"] and task.expected_state == {}
        assert "project_id" in {k for call in task.gold_calls for k in call.arguments}
        assert any(call.uses for call in task.gold_calls), "ids come from earlier outputs"
        assert (
            task.over_specification["calibrated"].tool_names == 0
            and task.over_specification["calibrated"].internal_ids == 0
        )
        assert "prj_" not in task.opening_message


async def test_an_llm_writers_vague_message_and_bad_answers_fall_back_to_the_offline_request() -> None:
    good = json.dumps(
        {
            "message": "Hi, it's me again. Something is off with my money, can you sort it?",
            "hidden_facts": {"email": "x@example.com"},
        }
    )
    script = [good, "I cannot help with that.", '{"message": "please call get_invoice", "hidden_facts": {}}']
    with scripted_openai(script) as model:
        writer = ModelConfig(model="scripted", base_url=model.base_url, max_retries=0, timeout_s=10)
        synthesis = await run(["clinic"], n=3, seed=0, writer=writer, max_servers=1)
    # The model only rewords tasks the audit passed. Its first message names nothing the gold acts on (the
    # audit's solver cannot reach the gold from it), the others are unusable: each keeps the offline request.
    worded = [t for t in synthesis.tasks if t.provenance.writer != "offline (refusal)"]  # refusals are not asked
    assert len(synthesis.tasks) == 3 and synthesis.summary.writer_fallbacks == len(worded) == len(model.requests) >= 2
    assert not any(t.opening_message.startswith("Hi, it's me again") for t in synthesis.tasks)
    assert all(t.provenance.writer.startswith("offline") for t in synthesis.tasks)
    assert all("get_invoice" not in t.opening_message for t in synthesis.tasks)
    assert "no tool or function names" in model.requests[0]["messages"][0]["content"]


def test_an_unreachable_writer_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Three tasks: refusals are never reworded, and the refusal cap leaves at least two for the writer.
    with scripted_openai([{"status": 500}]) as model:
        argv = ["--farm", str(REPO), "tasks", "--n", "3", "--servers", "clinic", "--out", str(tmp_path / "t.jsonl")]
        assert main([*argv, "--writer", "openai:scripted", "--base-url", model.base_url]) == 2
    assert "task writer: openai:scripted" in capsys.readouterr().err and not (tmp_path / "t.jsonl").exists()


def test_envfarm_tasks_writes_jsonl_and_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tasks.jsonl"
    assert (
        main(["--farm", str(REPO), "tasks", "--n", "3", "--servers", "clinic", "--seed", "2", "--out", str(out)]) == 0
    )
    tasks = list(read_jsonl(out, Task))
    assert len(tasks) == 3 and all(t.provenance.seed == 2 for t in tasks)
    summary = json.loads(out.with_name("tasks.summary.json").read_text())
    assert summary["produced"] == 3 and "dropped" in summary and "over_specification" in summary
    captured = capsys.readouterr()
    assert "3/3 tasks" in captured.out and "3/3 tasks" in captured.err  # the summary, and the progress bar
    assert main(["--farm", str(REPO), "graph", "--servers", "clinic", "--out", str(tmp_path / "g")]) == 0
    graph = json.loads((tmp_path / "g" / "graph.json").read_text())
    assert any(n["id"] == "tool:clinic/pay_invoice" for n in graph["nodes"])
    assert (tmp_path / "g" / "graph.svg").read_text().startswith("<svg")


def test_bad_input_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--farm", str(REPO), "tasks", "--servers", "nope", "--out", str(tmp_path / "t.jsonl")]) == 2
    assert "nope" in capsys.readouterr().err
    assert (
        main(
            [
                "--farm",
                str(REPO),
                "tasks",
                "--writer",
                "gpt-4",
                "--servers",
                "clinic",
                "--out",
                str(tmp_path / "t.jsonl"),
            ]
        )
        == 2
    )
    assert "openai:MODEL" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}")
    assert (
        main(["--farm", str(REPO), "graph", "--config", str(tmp_path / "bad.json"), "--out", str(tmp_path / "g")]) == 2
    )
    assert "mcpServers" in capsys.readouterr().err


def test_two_tasks_with_the_same_writes_for_one_person_are_one_goal() -> None:
    """Seed 9907 kept "move booking HB04429 to room 302" twice: the second plan had a room-type read beside the
    write, which the pruning took out later. Where the calls write, the writes alone make the goal; a read-only
    task is told apart by its goal reads, and another person's same write is another task."""
    from envfarm.clients.grounding import PersonaRecord
    from envfarm.clients.synthesize import goal_signature
    from envfarm.clients.tasks import GoldCall

    def call(tool: str, args: dict, write: bool = False) -> GoldCall:
        return GoldCall(server="hotel", tool=tool, arguments=args, output={}, turn=0, is_write=write)

    diego, ana = PersonaRecord(name="Diego Rossi", email="diego@example.com"), PersonaRecord(name="Ana", email="a@x")
    find = call("find_reservation", {"guest_id": "gst_1"})
    move = call("move_room", {"res_id": "res_1", "room_id": "room_2"}, write=True)
    types = call("list_room_types", {"hotel_id": "htl_1"})
    plain = goal_signature(diego, [find, move], ["lookup", "goal"])
    assert goal_signature(diego, [find, move, types], ["lookup", "goal", "follow"]) == plain
    assert goal_signature(ana, [find, move], ["lookup", "goal"]) != plain
    other_room = call("move_room", {"res_id": "res_1", "room_id": "room_3"}, write=True)
    assert goal_signature(diego, [find, other_room], ["lookup", "goal"]) != plain
    # read-only: the goal reads tell tasks apart, the lookups do not
    agenda = call("get_folio", {"res_id": "res_1"})
    assert goal_signature(diego, [find, agenda], ["lookup", "goal"]) == goal_signature(diego, [agenda], ["goal"])
    assert goal_signature(diego, [find, agenda], ["lookup", "goal"]) != goal_signature(diego, [find], ["goal"])
