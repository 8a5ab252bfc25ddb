"""Export: trajectories as the files trainers read.

- `openai`: SFT rows `{"messages": [...], "tools": [...]}` (OpenAI chat with tool calls).
- `sharegpt`: LlamaFactory's sharegpt layout with tools (`conversations` of human / gpt /
  function_call / observation, a `system` prompt and a `tools` JSON string), with the
  `dataset_info.json` LlamaFactory reads beside it.
- `verl`: one RL row per task for verl's multi-turn tool agent loop (`envfarm.clients.verl_env`), as Parquet
  when pyarrow is installed (the `parquet` extra) and JSONL otherwise, with the tool and interaction
  configs verl reads beside it.
Every row carries its `task_id`, `policy`, `servers` and a `split` (train/eval, by a hash of the task id,
so every rollout of a task lands on the same side). SFT formats keep only successful rollouts by default
(never those with a server error), and only those whose agent turns read as an agent speaks
(`envfarm.clients.speech.speech_problems`): no rubric text, field dumps, paging fields or internal ids.
Tool schemas lose the farm's `x-envfarm-*` annotations. Nothing is written over an existing file
without `force`, and never over the input.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from envfarm.clients.formats import FORMATS, Format
from envfarm.clients.speech import speech_problems
from envfarm.clients.tasks import read_jsonl
from envfarm.clients.trajectory import Trajectory

#: The share of tasks whose rows go to the eval split.
EVAL_RATIO = 0.1


class ExportError(ValueError):
    """An export that would overwrite a file it must not (its input, or an existing file without force)."""


def split_of(task_id: str, eval_ratio: float = EVAL_RATIO) -> str:
    """'eval' or 'train', by a hash of the task id: stable across runs, machines and Python versions."""
    if not 0 <= eval_ratio <= 1:
        raise ValueError(f"eval ratio {eval_ratio} is not between 0 and 1")
    bucket = int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "big") / 2**64
    return "eval" if bucket < eval_ratio else "train"


def clean_schema(node: Any) -> Any:
    """A tool schema without the farm's `x-envfarm-*` annotations (a trainer's prompt needs none of them)."""
    if isinstance(node, dict):
        return {k: clean_schema(v) for k, v in node.items() if not str(k).startswith("x-envfarm")}
    if isinstance(node, list):
        return [clean_schema(v) for v in node]
    return node


def _meta(trajectory: Trajectory, eval_ratio: float) -> dict[str, Any]:
    return {
        "task_id": trajectory.task_id,
        "policy": trajectory.policy,
        "servers": list(trajectory.task.servers),
        "split": split_of(trajectory.task_id, eval_ratio),
    }


def load_trajectories(path: Path) -> list[Trajectory]:
    return list(read_jsonl(path, Trajectory))


def keep_for_sft(trajectory: Trajectory, include_failed: bool = False) -> bool:
    """A scored rollout without a server error, successful (unless `include_failed`), whose agent turns
    read as an agent speaks."""
    score = trajectory.score
    if score is None or score.excluded:
        return False
    return (include_failed or score.success) and not sft_speech_problems(trajectory)


def sft_speech_problems(trajectory: Trajectory) -> list[str]:
    """What reads badly in the assistant's words of a rollout (see `envfarm.clients.speech.speech_problems`)."""
    fields = {str(k) for t in trajectory.tools for k in t["function"].get("parameters", {}).get("properties", {})}
    fields |= {str(k) for c in trajectory.task.gold_calls for k in _keys(c.output)}
    return [
        problem
        for m in trajectory.messages
        if m["role"] == "assistant" and m.get("content")
        for problem in speech_problems(str(m["content"]), trajectory.task, fields)
    ]


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def _complete(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat up to its last assistant message (a trainer learns from what the assistant said last)."""
    last = max((n for n, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    return messages[: last + 1]


def openai_row(trajectory: Trajectory, eval_ratio: float = EVAL_RATIO) -> dict[str, Any]:
    return {
        "messages": _complete(trajectory.messages),
        "tools": clean_schema(trajectory.tools),
        **_meta(trajectory, eval_ratio),
    }


def _call_value(call: dict[str, Any]) -> dict[str, Any]:
    raw = call["function"].get("arguments") or "{}"
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        arguments = raw
    return {"name": call["function"]["name"], "arguments": arguments}


def sharegpt_row(trajectory: Trajectory, eval_ratio: float = EVAL_RATIO) -> dict[str, Any]:
    """LlamaFactory sharegpt: human/observation at odd positions, gpt/function_call at even ones."""
    messages = _complete(trajectory.messages)
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    conversations: list[dict[str, str]] = []
    pending: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            pending.append(str(message.get("content") or ""))
            continue
        if pending:
            value = pending[0] if len(pending) == 1 else json.dumps(pending, ensure_ascii=False)
            conversations.append({"from": "observation", "value": value})
            pending = []
        if message["role"] == "user":
            conversations.append({"from": "human", "value": str(message.get("content") or "")})
        elif message["role"] == "assistant" and message.get("tool_calls"):
            calls = [_call_value(c) for c in message["tool_calls"]]
            value = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
            conversations.append({"from": "function_call", "value": value})
        elif message["role"] == "assistant":
            conversations.append({"from": "gpt", "value": str(message.get("content") or "")})
    tools = [clean_schema(tool["function"]) for tool in trajectory.tools]
    return {
        "conversations": conversations,
        "system": system,
        "tools": json.dumps(tools, ensure_ascii=False),
        **_meta(trajectory, eval_ratio),
    }


def llamafactory_info(path: Path) -> dict[str, Any]:
    """LlamaFactory's `dataset_info.json` entry for a sharegpt file written by `sharegpt_row`."""
    return {
        path.stem: {
            "file_name": path.name,
            "formatting": "sharegpt",
            "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
            "tags": {
                "role_tag": "from",
                "content_tag": "value",
                "user_tag": "human",
                "assistant_tag": "gpt",
                "observation_tag": "observation",
                "function_tag": "function_call",
                "system_tag": "system",
            },
        }
    }


#: verl's names for our parts: the data source `compute_score` answers for, the interaction and the agent loop.
VERL_SOURCE = "envfarm"
VERL_INTERACTION = "envfarm"
VERL_AGENT = "envfarm_agent"


def approx_tokens(text: str) -> int:
    """Tokens of `text` by the usual rule of thumb for BPE tokenizers on English and JSON: 4 characters each."""
    return (len(text) + 3) // 4


def verl_tool_names(trajectories: Sequence[Trajectory]) -> dict[tuple[str, str], str]:
    """One function name per (server, tool) across the export: the tool's own name, `server__tool` where
    two servers share it (verl offers one tool list to every row)."""
    pairs = sorted({pair for t in trajectories for pair in map(tuple, t.tool_map.values())})
    owners: dict[str, int] = {}
    for _, tool in pairs:
        owners[tool] = owners.get(tool, 0) + 1
    return {(server, tool): tool if owners[tool] == 1 else f"{server}__{tool}" for server, tool in pairs}


def verl_schema(function: dict[str, Any]) -> dict[str, Any]:
    """A function in the subset verl's `OpenAIFunctionToolSchema` validates: every property a plain `type`
    (the first non-null one of an `anyOf`), a description, string enums; what that drops (bounds, defaults,
    nullability) is said in the description instead."""
    parameters = function.get("parameters") or {}
    properties: dict[str, Any] = {}
    for name, raw in (parameters.get("properties") or {}).items():
        options = [raw, *raw.get("anyOf", [])]
        typed: dict[str, Any] = next((o for o in options if o.get("type") not in (None, "null")), {})
        kind = typed.get("type", "string")
        notes = [raw.get("description") or typed.get("description") or ""]
        if any(o.get("type") == "null" for o in options):
            notes.append("may be null")
        notes += [f"{key} {typed[key]}" for key in ("minimum", "maximum", "format") if key in typed]
        if "default" in raw and raw["default"] is not None:
            notes.append(f"default {raw['default']}")
        prop: dict[str, Any] = {"type": kind if isinstance(kind, str) else "string"}
        description = "; ".join(n for n in notes if n)
        if description:
            prop["description"] = description
        enum = typed.get("enum")
        if enum and all(isinstance(v, str) for v in enum):
            prop["enum"] = list(enum)
        properties[name] = prop
    return {
        "type": "function",
        "function": {
            "name": function["name"],
            "description": function.get("description") or "",
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(parameters.get("required", [])),
            },
        },
    }


def verl_row(trajectory: Trajectory, index: int, eval_ratio: float = EVAL_RATIO) -> dict[str, Any]:
    """One RL prompt per task for verl's tool agent loop: the system prompt and the first user turn; the
    interaction's kwargs (the task: persona sheet, hidden facts, later turns, ground truth) so that
    `envfarm.clients.verl_env.EnvfarmInteraction` plays the user and scores the episode as `envfarm eval` does."""
    task = trajectory.task
    opening = [m for m in trajectory.messages if m["role"] in ("system", "user")][:2]
    ground_truth = {
        "expected_state": {s: e.model_dump(mode="json") for s, e in task.expected_state.items()},
        "claims": [c.model_dump(mode="json") for c in task.claims],
        "policy_checks": [p.model_dump(mode="json") for p in task.policy_checks],
    }
    return {
        "data_source": VERL_SOURCE,
        "agent_name": VERL_AGENT,
        "prompt": opening,
        "ability": "tool_use",
        "reward_model": {"style": "rule", "ground_truth": json.dumps(ground_truth, ensure_ascii=False)},
        "extra_info": {
            "index": index,
            "split": split_of(task.id, eval_ratio),
            "task_id": task.id,
            "servers": json.dumps(task.servers),
            "principal": task.principal or "",
            "prompt_tokens_approx": approx_tokens("".join(str(m.get("content") or "") for m in opening)),
            "interaction_kwargs": {
                "name": VERL_INTERACTION,
                "task": task.model_dump_json(),
                "calibrated": trajectory.calibrated,
            },
        },
    }


def verl_configs(trajectories: Sequence[Trajectory], farm: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """verl's tool config (every tool of the export, run by `envfarm.clients.verl_env.EnvfarmTool`) and its
    interaction config (`envfarm.clients.verl_env.EnvfarmInteraction`, the simulated user and the reward)."""
    functions = {
        (s, t): fn["function"]
        for tr in trajectories
        for fn in tr.tools
        for s, t in [tr.tool_map[fn["function"]["name"]]]
    }
    names = verl_tool_names(trajectories)
    farm_text = str(farm) if farm is not None else None
    tools = []
    for (server, tool), name in sorted(names.items(), key=lambda item: item[1]):
        schema = verl_schema({**clean_schema(functions[(server, tool)]), "name": name})
        config = {"type": "native", "server": server, "tool": tool, "farm": farm_text}
        tools.append({"class_name": "envfarm.clients.verl_env.EnvfarmTool", "config": config, "tool_schema": schema})
    interaction = {
        "interaction": [
            {
                "name": VERL_INTERACTION,
                "class_name": "envfarm.clients.verl_env.EnvfarmInteraction",
                "config": {"farm": farm_text, "user": "scripted"},
            }
        ]
    }
    return {"tools": tools}, interaction


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def parquet_available() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


class Written(NamedTuple):
    """What an export wrote: the rows' file and count, the files beside it, and lines worth printing."""

    path: Path
    rows: int
    files: list[Path]
    notes: list[str]


def _target(out: Path, suffix: str) -> Path:
    """`out` with the format's suffix: replaced when `out` has a data suffix, appended otherwise (so
    `run.v2` becomes `run.v2.jsonl`, not `run.jsonl`)."""
    return (
        out.with_suffix(suffix) if out.suffix in (".jsonl", ".json", ".parquet") else out.with_name(out.name + suffix)
    )


def _check_targets(paths: Sequence[Path], inputs: Sequence[Path], force: bool) -> None:
    """Refuse to write over an input (ever) or over any existing file (without `force`)."""
    sources = {p.resolve() for p in inputs}
    for path in paths:
        if path.resolve() in sources:
            raise ExportError(f"{path} is the export's input: choose another --out")
        if path.exists() and not force:
            raise ExportError(f"{path} exists: choose another --out, or pass --force to overwrite it")


def export(
    trajectories: Sequence[Trajectory],
    fmt: Format,
    out: Path,
    *,
    include_failed: bool = False,
    parquet: bool | None = None,
    eval_ratio: float = EVAL_RATIO,
    force: bool = False,
    inputs: Sequence[Path] = (),
    farm: Path | None = None,
) -> Written:
    """Write `trajectories` in `fmt` to `out` (its suffix set by what is written) and the files a trainer
    reads beside it; never over one of `inputs`, nor over an existing file unless `force`."""
    split_of("", eval_ratio)  # a bad ratio fails before anything is written
    notes: list[str] = []
    if fmt in ("openai", "sharegpt"):
        kept = [t for t in trajectories if keep_for_sft(t, include_failed)]
        dropped = sum(1 for t in trajectories if keep_for_sft(t, True) and sft_speech_problems(t))
        if dropped:
            notes.append(f"left out {dropped} rollouts whose agent turns read like a grader or a database")
        path = _target(out, ".jsonl")
        if fmt == "openai":
            _check_targets([path], inputs, force)
            return Written(path, _write_jsonl(path, [openai_row(t, eval_ratio) for t in kept]), [], notes)
        info_path = path.with_name("dataset_info.json")
        info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.exists() else {}
        if not isinstance(info, dict):
            raise ExportError(f"{info_path} is not a LlamaFactory dataset_info object")
        _check_targets([path], inputs, force)
        _check_targets([info_path], inputs, force=True)  # merged into, not replaced: only never the input
        if path.stem in info and not force:
            raise ExportError(f"{info_path} already names a dataset {path.stem!r}: pass --force to replace it")
        count = _write_jsonl(path, [sharegpt_row(t, eval_ratio) for t in kept])
        info.update(llamafactory_info(path))
        info_path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        return Written(path, count, [info_path], notes)
    if fmt != "verl":
        raise ValueError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
    firsts: dict[str, Trajectory] = {}
    for t in sorted(trajectories, key=lambda t: not t.calibrated):  # the calibrated opening when there is one
        firsts.setdefault(t.task_id, t)
    chosen = list(firsts.values())
    rows = [verl_row(t, n, eval_ratio) for n, t in enumerate(chosen)]
    use_parquet = parquet if parquet is not None else parquet_available()
    path = _target(out, ".parquet" if use_parquet else ".jsonl")
    tools_path, interaction_path, agent_path = (
        path.with_name(f"{path.stem}.{name}.yaml") for name in ("tools", "interaction", "agent")
    )
    _check_targets([path, tools_path, interaction_path, agent_path], inputs, force)
    tool_config, interaction_config = verl_configs(chosen, farm)
    path.parent.mkdir(parents=True, exist_ok=True)
    tools_path.write_text(yaml.safe_dump(tool_config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    interaction_path.write_text(yaml.safe_dump(interaction_config, sort_keys=False), encoding="utf-8")
    agent_config = [{"name": VERL_AGENT, "_target_": "envfarm.clients.verl_agent.EnvfarmAgentLoop"}]
    agent_path.write_text(yaml.safe_dump(agent_config, sort_keys=False), encoding="utf-8")
    if use_parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        _write_jsonl(path, rows)
    if rows:
        prompts = sorted(r["extra_info"]["prompt_tokens_approx"] for r in rows)
        schemas = {t["tool_schema"]["function"]["name"]: t["tool_schema"] for t in tool_config["tools"]}
        names = verl_tool_names(chosen)
        offered = sorted(
            approx_tokens(json.dumps([schemas[n] for r in t.task.tools if (n := names.get((r.server, r.tool)))]))
            for t in chosen
        )
        notes.append(
            f"prompt tokens (approx., 4 characters a token): messages median {prompts[len(prompts) // 2]}, "
            f"max {prompts[-1]}; the task's tool schemas add median {offered[len(offered) // 2]}, max "
            f"{offered[-1]} (the envfarm_agent loop); verl's plain tool_agent loop would offer all "
            f"{len(schemas)} tools to every row, ~{approx_tokens(json.dumps(list(schemas.values())))}"
        )
    return Written(path, len(rows), [tools_path, interaction_path, agent_path], notes)
