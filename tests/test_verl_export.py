"""The verl export runs in verl as it is (`pip install -e ".[verl]"`: verl 0.7, CPU-only torch is enough).

verl's own dataset class loads our Parquet with our tool config; recorded episodes are replayed turn by turn
the way verl's tool agent loop plays them (verl's tool registry builds our tools, its interaction registry our
simulated user), and the reward verl's `custom_reward_function` gets from `envfarm.clients.verl_reward.compute_score`
equals the reward `envfarm eval` gives the recorded episode: for a solved one and for failed ones."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from uuid import uuid4

import anyio
import pytest
from conftest import REPO
from handmade import handmade_tasks

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.export import export, verl_tool_names
from envfarm.clients.run import evaluate
from envfarm.clients.scoring import Scorer
from envfarm.clients.tasks import Task
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.verl_reward import compute_score

pytest.importorskip("verl.interactions.base", reason="verl 0.7 is the `verl` extra")
pytestmark = pytest.mark.slow  # importing verl imports torch, transformers and ray (~10 s)


async def _recorded() -> list[Trajectory]:
    async with Connections(farm_targets(REPO, ["clinic"])) as connections:
        tasks = await handmade_tasks(connections)
        return await evaluate(tasks, connections, show_progress=False)


@pytest.fixture(scope="module")
def recorded() -> list[Trajectory]:
    return anyio.run(_recorded)


@pytest.fixture(scope="module")
def exported(recorded: list[Trajectory], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    out = tmp_path_factory.mktemp("verl") / "rl"
    written = export(recorded, "verl", out, parquet=True, farm=REPO)
    assert written.path.suffix == ".parquet" and written.rows == len({t.task_id for t in recorded})
    tools, interaction, _ = written.files
    return written.path, tools, interaction


def _dataset(exported: tuple[Path, Path, Path], tmp_path: Path) -> Any:
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    path, tools, _ = exported
    config = OmegaConf.create(
        {"filter_overlong_prompts": False, "tool_config_path": str(tools), "cache_dir": str(tmp_path)}
    )
    return RLHFDataset(str(path), tokenizer=None, config=config)


def test_verl_dataset_loads_our_rows(
    exported: tuple[Path, Path, Path], recorded: list[Trajectory], tmp_path: Path
) -> None:
    dataset = _dataset(exported, tmp_path)
    assert len(dataset) == len({t.task_id for t in recorded})
    assert dataset.tool_schemas, "verl's own tool registry built our tools from the YAML"
    names = {s["function"]["name"] for s in dataset.tool_schemas}
    assert names == set(verl_tool_names(recorded).values())
    for item in (dataset[n] for n in range(len(dataset))):
        assert [m["role"] for m in item["raw_prompt"]] == ["system", "user"]
        assert item["interaction_kwargs"]["name"] == "envfarm" and item["data_source"] == "envfarm"
        assert item["agent_name"] == "envfarm_agent"
        assert item["extra_info"]["split"] in ("train", "eval") and item["extra_info"]["task_id"]
        first = next(t for t in recorded if t.task_id == item["extra_info"]["task_id"] and t.calibrated)
        assert item["raw_prompt"] == first.messages[:2], "the whole opening a rollout needs"


async def _replay(trajectory: Trajectory, item: dict[str, Any], tools: dict[str, Any], interaction: Any) -> float:
    """Play the recorded episode through verl's interfaces as verl's tool agent loop does; the turn score
    the interaction gave at the end (the loop puts it in `turn_scores`)."""
    names = verl_tool_names([trajectory])
    request_id = uuid4().hex
    kwargs = item["interaction_kwargs"]
    await interaction.start_interaction(request_id, **kwargs)
    agent_data = SimpleNamespace(request_id=request_id, interaction=interaction)
    messages = list(item["raw_prompt"])
    recorded = trajectory.messages[2:]
    turn_scores: list[float] = []
    for n, message in enumerate(recorded):
        if message["role"] != "assistant":
            continue
        messages.append({"role": "assistant", "content": message.get("content") or ""})
        if message.get("tool_calls"):
            answers = [m for m in recorded[n + 1 :] if m["role"] == "tool"][: len(message["tool_calls"])]
            for call, answer in zip(message["tool_calls"], answers, strict=True):
                tool = tools[names[tuple(trajectory.tool_map[call["function"]["name"]])]]
                instance_id, _ = await tool.create(create_kwargs={})
                response, _, _ = await tool.execute(
                    instance_id, json.loads(call["function"]["arguments"]), agent_data=agent_data
                )
                await tool.release(instance_id)
                assert response.text == answer["content"], "the same call gives the same answer"
                messages.append({"role": "tool", "content": response.text})
            continue
        done, reply, score, _ = await interaction.generate_response(request_id, messages, **kwargs)
        turn_scores.append(score)
        if done:
            break
        following = next(m for m in recorded[n + 1 :] if m["role"] == "user")
        assert reply == following["content"], "the interaction answers as the recorded user did"
        messages.append({"role": "user", "content": reply})
    else:
        pytest.fail("the interaction never ended the episode")
    return compute_score(
        "envfarm",
        messages[-1]["content"],
        item["reward_model"]["ground_truth"],
        {**item["extra_info"], "turn_scores": turn_scores},
    )


def test_recorded_episodes_replay_to_the_eval_reward(
    exported: tuple[Path, Path, Path], recorded: list[Trajectory], tmp_path: Path
) -> None:
    from verl.interactions.utils.interaction_registry import initialize_interactions_from_config
    from verl.tools.utils.tool_registry import initialize_tools_from_config

    _, tools_yaml, interaction_yaml = exported
    dataset = _dataset(exported, tmp_path)
    items = {dataset[n]["extra_info"]["task_id"]: dataset[n] for n in range(len(dataset))}
    tools = {tool.name: tool for tool in initialize_tools_from_config(str(tools_yaml))}
    interaction = initialize_interactions_from_config(str(interaction_yaml))["envfarm"]
    episodes = [t for t in recorded if t.calibrated and t.stop_reason == "done"]
    rewards: dict[str, list[float]] = {}
    for trajectory in episodes:
        expected = anyio.run(Scorer(), trajectory).score
        assert expected is not None
        got = anyio.run(_replay, trajectory, items[trajectory.task_id], tools, interaction)
        assert got == pytest.approx(expected.reward), f"{trajectory.id}: verl reward {got}, eval {expected.reward}"
        offline = compute_score("envfarm", "", "", {"trajectory": trajectory.model_dump_json()})
        assert offline == pytest.approx(expected.reward)
        rewards.setdefault(trajectory.policy, []).append(got)
    assert rewards["oracle"] and all(r == 1.0 for r in rewards["oracle"])
    assert any(r < 1.0 for r in rewards["heuristic"]), "a failed episode replays to its (lower) eval reward too"
    assert not interaction.sessions, "every episode closed when its user was done"


def test_each_row_is_offered_only_its_tasks_tools(
    exported: tuple[Path, Path, Path], recorded: list[Trajectory]
) -> None:
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    from verl.tools.utils.tool_registry import initialize_tools_from_config

    from envfarm.clients.verl_agent import EnvfarmAgentLoop, enabled_schemas

    assert _agent_loop_registry["envfarm_agent"]["_target_"].endswith("EnvfarmAgentLoop")
    agent_yaml = exported[1].with_name(exported[0].stem + ".agent.yaml")
    assert "envfarm.clients.verl_agent.EnvfarmAgentLoop" in agent_yaml.read_text() and EnvfarmAgentLoop
    tools = {tool.name: tool for tool in initialize_tools_from_config(str(exported[1]))}
    schemas = [tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for tool in tools.values()]
    task = recorded[0].task
    offered = {s["function"]["name"] for s in enabled_schemas(schemas, tools, task)}
    assert offered == {ref.tool for ref in task.tools}
    narrowed = Task.model_validate({**task.model_dump(), "tools": task.model_dump()["tools"][:2]})
    assert len(enabled_schemas(schemas, tools, narrowed)) == 2


def _word_tokenizer() -> Any:
    """A stand-in for a model's tokenizer (no hub here): one token per word or sign, a plain chat template
    that renders the tools too, as real templates do."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    inner = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    inner.pre_tokenizer = pre_tokenizers.Whitespace()
    template = (
        "{% if tools %}{% for t in tools %}{{ t | tojson }}\n{% endfor %}{% endif %}"
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    )
    return PreTrainedTokenizerFast(tokenizer_object=inner, unk_token="[UNK]", chat_template=template)


def test_verl_length_filter_keeps_rows_only_without_the_whole_tool_list(
    exported: tuple[Path, Path, Path], recorded: list[Trajectory], tmp_path: Path
) -> None:
    """verl's dataset drops prompts over `max_prompt_length`, counting every tool of `data.tool_config_path`
    (which defaults to the rollout's): the README's command sets it to null, since `envfarm_agent` offers
    each row its own tools."""
    from omegaconf import OmegaConf
    from verl.tools.utils.tool_registry import initialize_tools_from_config
    from verl.utils.dataset.rl_dataset import RLHFDataset

    path, tools, _ = exported
    tokenizer = _word_tokenizer()
    schemas = [
        t.tool_schema.model_dump(exclude_unset=True, exclude_none=True)
        for t in initialize_tools_from_config(str(tools))
    ]

    def length(messages: list[dict[str, Any]], offered: list[dict[str, Any]] | None) -> int:
        text = tokenizer.apply_chat_template(messages, tools=offered, add_generation_prompt=True, tokenize=False)
        return len(tokenizer(text)["input_ids"])

    openings = [t.messages[:2] for t in recorded if t.calibrated]
    longest = max(length(m, None) for m in openings)
    assert min(length(m, schemas) for m in openings) > longest, "the whole tool list outweighs any opening"
    common = {"filter_overlong_prompts": True, "max_prompt_length": longest, "filter_overlong_prompts_workers": 1}
    kept = RLHFDataset(str(path), tokenizer, OmegaConf.create({**common, "cache_dir": str(tmp_path / "a")}))
    assert len(kept) == len({t.task_id for t in recorded})
    counted = OmegaConf.create({**common, "cache_dir": str(tmp_path / "b"), "tool_config_path": str(tools)})
    assert len(RLHFDataset(str(path), tokenizer, counted)) == 0, "counting every tool drops every row"
