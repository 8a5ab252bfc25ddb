"""Export: trajectories as the files trainers read.

- `openai`: SFT rows `{"messages": [...], "tools": [...]}` (OpenAI chat with tool calls).
- `sharegpt`: LlamaFactory's sharegpt layout with tools (`conversations` of human / gpt /
  function_call / observation, a `system` prompt and a `tools` JSON string).
- `verl`: one RL row per task in verl's layout (`data_source`, `prompt`, `ability`, `reward_model`
  with the ground truth, `extra_info` with what recreates the episode), as Parquet when pyarrow is
  installed (the `parquet` extra) and JSONL otherwise.
SFT formats keep only successful rollouts by default (never those with a server error).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from clients.formats import FORMATS, Format
from clients.tasks import read_jsonl
from clients.trajectory import Trajectory


def load_trajectories(path: Path) -> list[Trajectory]:
    return list(read_jsonl(path, Trajectory))


def keep_for_sft(trajectory: Trajectory, include_failed: bool = False) -> bool:
    score = trajectory.score
    if score is None or score.excluded:
        return False
    return include_failed or score.success


def _complete(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat up to its last assistant message (a trainer learns from what the assistant said last)."""
    last = max((n for n, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    return messages[: last + 1]


def openai_row(trajectory: Trajectory) -> dict[str, Any]:
    return {"messages": _complete(trajectory.messages), "tools": trajectory.tools}


def _call_value(call: dict[str, Any]) -> dict[str, Any]:
    raw = call["function"].get("arguments") or "{}"
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        arguments = raw
    return {"name": call["function"]["name"], "arguments": arguments}


def sharegpt_row(trajectory: Trajectory) -> dict[str, Any]:
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
    tools = [tool["function"] for tool in trajectory.tools]
    return {"conversations": conversations, "system": system, "tools": json.dumps(tools, ensure_ascii=False)}


def verl_row(trajectory: Trajectory, index: int, split: str = "train") -> dict[str, Any]:
    """One RL prompt per task: the opening, the ground truth the reward needs, and what recreates the episode.
    Nested values are JSON strings, so every row has the same flat Parquet schema."""
    task = trajectory.task
    opening = [m for m in trajectory.messages if m["role"] in ("system", "user")][:2]
    ground_truth = {
        "expected_state": {s: e.model_dump(mode="json") for s, e in task.expected_state.items()},
        "claims": [c.model_dump(mode="json") for c in task.claims],
        "policy_checks": [p.model_dump(mode="json") for p in task.policy_checks],
        "gold_calls": [{"server": g.server, "tool": g.tool, "arguments": g.arguments} for g in task.gold_calls],
    }
    return {
        "data_source": "envfarm/" + "+".join(task.servers),
        "prompt": opening,
        "ability": "tool_use",
        "reward_model": {"style": "rule", "ground_truth": json.dumps(ground_truth, ensure_ascii=False)},
        "extra_info": {
            "index": index,
            "split": split,
            "task_id": task.id,
            "servers": json.dumps(task.servers),
            "principal": task.principal or "",
            "calibrated": trajectory.calibrated,
            "tools": json.dumps(trajectory.tools, ensure_ascii=False),
            "tool_map": json.dumps(trajectory.tool_map),
            "task": task.model_dump_json(),
        },
    }


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


def export(
    trajectories: Sequence[Trajectory],
    fmt: Format,
    out: Path,
    *,
    include_failed: bool = False,
    parquet: bool | None = None,
) -> tuple[Path, int]:
    """Write `trajectories` in `fmt` to `out` (the suffix is fixed to what was written); returns path and rows."""
    if fmt == "openai":
        rows = [openai_row(t) for t in trajectories if keep_for_sft(t, include_failed)]
    elif fmt == "sharegpt":
        rows = [sharegpt_row(t) for t in trajectories if keep_for_sft(t, include_failed)]
    elif fmt == "verl":
        firsts: dict[str, Trajectory] = {}
        for t in sorted(trajectories, key=lambda t: not t.calibrated):  # the calibrated opening when there is one
            firsts.setdefault(t.task_id, t)
        rows = [verl_row(t, n) for n, t in enumerate(firsts.values())]
        if parquet if parquet is not None else parquet_available():
            import pyarrow as pa
            import pyarrow.parquet as pq

            path = out.with_suffix(".parquet")
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(rows), path)
            return path, len(rows)
    else:
        raise ValueError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
    path = out.with_suffix(".jsonl")
    return path, _write_jsonl(path, rows)
