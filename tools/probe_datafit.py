"""Count, per defect, the tasks of a task file whose gold writes do not fit the live data (issue 27, helper gold6).

    .venv/bin/python tools/probe_datafit.py TASKS.jsonl

Connects to the farm's servers (`farm_targets`), reads their seed rows as the auditor does, and counts: DATA-BLIND
writes by reason (`envfarm.clients.datafit`), asked questions without a claim and claims nobody asked for
(`Auditor.claims`), and `must_identify` checks that name fewer fields than the policy (`identify`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path

from envfarm.clients.audit import build_auditor
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.tasks import Task

REPO = Path(__file__).resolve().parents[1]


async def main(path: str) -> None:
    tasks = [Task.model_validate_json(line) for line in Path(path).read_text().splitlines() if line.strip()]
    servers = sorted({s for t in tasks for s in t.servers})
    async with Connections(farm_targets(REPO, servers)) as farm:
        auditor = await build_auditor(farm, servers)
    per: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for task in tasks:
        reasons = {f.detail.split(":", 1)[0] for f in auditor.data(task)}
        reasons |= {f"claims: {_kind(f.detail)}" for f in auditor.claims(task)}
        for reason in reasons:
            per[reason] += 1
            examples.setdefault(reason, task.id)
    print(json.dumps({"tasks": len(tasks), "per_defect": dict(sorted(per.items())), "example": examples}, indent=1))


def _kind(detail: str) -> str:
    """A claims finding without its quote ('asks ... and no claim checks the answer': a question no claim answers)."""
    if detail.startswith("asks "):
        return "a question no claim answers"
    return detail.split(":", 1)[0]


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
