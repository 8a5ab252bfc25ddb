"""The local multi-process backend (`envfarm rollout|run --workers N`): two workers write the one-worker
trajectories and scores on synthesized tasks of two seeds (distractor servers included); a worker killed
mid-episode comes back as `server_error` episodes naming it, and a run whose every worker dies still ends;
a worker that cannot start is one clear error; no worker outlives the backend."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import REPO

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import Action, Agent, AgentTool, HeuristicPolicy
from envfarm.clients.ray_backend import HostSpec
from envfarm.clients.rollout import LocalBackend, RolloutOptions, task_servers
from envfarm.clients.scoring import Scorer
from envfarm.clients.synthesize import SynthesisOptions, synthesize
from envfarm.clients.tasks import Task, jsonl_line, write_jsonl
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import ScriptedUser
from envfarm.clients.workers import ProcessBackend, WorkerError, Written

SERVERS = ["clinic", "banking", "calendar", "mail"]


async def synthesized(seed: int, n: int = 6) -> list[Task]:
    async with Connections(farm_targets(REPO, SERVERS), timeout=10) as farm:
        return list((await synthesize(SynthesisOptions(n=n, seed=seed, servers=SERVERS), farm)).tasks)


def stable(line: str) -> str:
    """A trajectory line without what differs between any two runs, one worker or many: timings and the
    random tag of its episode ids."""
    row = json.loads(line)
    del row["seconds"], row["episodes"]
    for call in row["calls"]:
        del call["seconds"]
    return json.dumps(row)


def gone(pid: int, within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_workers_write_the_one_worker_trajectories_and_scores(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from envfarm.cli import main

    tasks = anyio.run(synthesized, seed)
    assert any(set(task_servers(t)) - set(t.servers) for t in tasks), "no task has a distractor server"
    tasks_file = tmp_path / "tasks.jsonl"
    write_jsonl(tasks_file, tasks)
    common = ["--farm", str(REPO), "rollout", str(tasks_file), "--k", "2", "--concurrency", "3"]
    outputs: dict[int, tuple[list[str], str]] = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.jsonl"
        assert main([*common, "--workers", str(workers), "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        summary = printed.split("\nworkers:")[0].split("\nwrote")[0]
        outputs[workers] = ([stable(line) for line in out.read_text().splitlines()], summary)
    assert outputs[2] == outputs[1]
    assert len(outputs[1][0]) == 2 * len(tasks)
    assert "workers: 2 processes, 12 episodes, 0 failed with 0 lost workers" in printed


@dataclass
class _Killer:
    """Kills (or blocks, `hang`) the worker process it runs in on its first action of `target` (every task
    when None)."""

    inner: Agent
    task: Task
    target: str | None
    parent: int
    hang: bool

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        if os.getpid() != self.parent and self.target in (None, self.task.id):
            if self.hang:
                time.sleep(600)  # noqa: ASYNC251 - blocks the worker's loop, which no episode limit can end
            os.kill(os.getpid(), signal.SIGKILL)
        return await self.inner.act(messages)


@dataclass
class KillingPolicy:
    """The heuristic, but a worker process (never the test's own) running `target` is killed."""

    target: str | None
    hang: bool = False
    parent: int = field(default_factory=os.getpid)  # taken here, in the test's process, and pickled
    name: str = "heuristic"

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> Agent:
        return _Killer(HeuristicPolicy().agent(task, tools), task, self.target, self.parent, self.hang)

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("lines", [False, True], ids=["trajectories", "lines"])
async def test_a_dead_worker_s_episodes_are_server_errors_and_the_rest_match(lines: bool) -> None:
    tasks = await synthesized(0)
    spec = HostSpec(farm=REPO, servers=sorted({s for t in tasks for s in task_servers(t)}), timeout=10)
    options = RolloutOptions(concurrency=1)
    async with Connections(spec.targets(), timeout=10) as connections:
        expected = await LocalBackend(connections)(tasks, HeuristicPolicy(), ScriptedUser(), options, scorer=Scorer())
    seen: list[tuple[int, int]] = []
    with anyio.fail_after(120):
        async with ProcessBackend(spec, 2) as backend:
            run = backend.lines if lines else backend
            done = await run(
                tasks,
                KillingPolicy(tasks[2].id),
                ScriptedUser(),
                options,
                scorer=Scorer(),
                progress=lambda d, n: seen.append((d, n)),
            )
            pids = [h.pid for h in backend.stats.hosts]
    if lines:  # each worker's line is the whole trajectory; beside it, the summary-only copy
        written = [w for w in done if isinstance(w, Written)]
        assert len(written) == len(done)
        got = [Trajectory.model_validate_json(w.line) for w in written]
        assert all(w.line == jsonl_line(t) for w, t in zip(written, got, strict=True))
        assert [w.trajectory.messages for w in written] == [[]] * len(written)
        assert [w.trajectory.score for w in written] == [t.score for t in got]
        assert [w.trajectory.task for w in written] == tasks
    else:
        got = [t for t in done if isinstance(t, Trajectory)]
    assert [t.id for t in got] == [t.id for t in expected]
    lost = [t for t in got if t.stop_reason == "server_error"]
    assert [t.task_id for t in lost] == [tasks[2].id]  # one episode in flight per worker: only the killer's
    assert "rollout worker" in lost[0].stop_detail and "SIGKILL" in lost[0].stop_detail
    assert lost[0].score is not None and not lost[0].score.success
    assert [stable(t.model_dump_json()) for t in got if t not in lost] == [
        stable(t.model_dump_json()) for t in expected if t.task_id != tasks[2].id
    ]
    assert backend.stats.lost_workers == 1 and backend.stats.failed_episodes == 1
    assert seen[-1] == (len(tasks), len(tasks)) and len(seen) == len(tasks)
    assert len(pids) == 2 and all(gone(pid) for pid in pids), "a worker outlived the backend"


async def test_a_run_whose_every_worker_dies_still_ends() -> None:
    tasks = await synthesized(1, n=4)
    spec = HostSpec(farm=REPO, servers=sorted({s for t in tasks for s in task_servers(t)}), timeout=10)
    with anyio.fail_after(120):
        async with ProcessBackend(spec, 2) as backend:
            options = RolloutOptions(k=2, concurrency=1)
            got = await backend(tasks, KillingPolicy(None), ScriptedUser(), options, scorer=Scorer())
    assert len(got) == 2 * len(tasks) and all(t.stop_reason == "server_error" for t in got)
    assert backend.stats.lost_workers == 2 and backend.stats.failed_episodes == len(got)
    # One episode in flight per worker, each killing its worker; the rest never started.
    assert sum("with this episode in flight" in t.stop_detail for t in got) == 2
    assert sum("every rollout worker died before this episode started" in t.stop_detail for t in got) == len(got) - 2


STALL_S = 10.0


async def test_a_stuck_worker_is_killed_and_its_episode_failed() -> None:
    tasks = await synthesized(0, n=4)
    spec = HostSpec(farm=REPO, servers=sorted({s for t in tasks for s in task_servers(t)}), timeout=10)
    # 10 s: with 3 s the test flaked at high load, where a healthy worker's first episode (its cold paths, on 2
    # cores shared by ~15 processes) can stay silent that long. The hung one sleeps 600 s, so only the limit ends it.
    started = time.monotonic()
    with anyio.fail_after(120):
        async with ProcessBackend(spec, 2, stall_s=STALL_S) as backend:
            options = RolloutOptions(concurrency=1)
            got = await backend(tasks, KillingPolicy(tasks[1].id, hang=True), ScriptedUser(), options, scorer=Scorer())
    took = time.monotonic() - started
    assert [t.task_id for t in got if t.stop_reason == "server_error"] == [tasks[1].id]
    assert f"said nothing for {STALL_S:g} s with episodes in flight and was killed" in got[1].stop_detail
    assert backend.stats.lost_workers == 1 and STALL_S <= took < 60


async def test_a_worker_that_cannot_start_is_one_clear_error() -> None:
    spec = HostSpec(farm=REPO, servers=["clinic", "no_such_server"], timeout=10)
    with anyio.fail_after(60), pytest.raises(WorkerError, match="could not start.*no_such_server"):
        async with ProcessBackend(spec, 2) as backend:
            await backend([], HeuristicPolicy(), ScriptedUser(), RolloutOptions())


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--workers", "0"], "error: --workers must be at least 1, not 0"),
        (["--workers", "2", "--transport", "stdio"], "error: --workers runs each worker's servers in-process"),
    ],
)
def test_bad_worker_options_are_one_clear_line(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from envfarm.cli import main

    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("")
    assert main(["--farm", str(REPO), "rollout", str(tasks_file), *extra]) == 2
    assert capsys.readouterr().err.startswith(message)


@pytest.mark.slow
def test_run_with_two_workers_gives_the_one_worker_scores(tmp_path: Path) -> None:
    from envfarm.cli import main

    common = ["--farm", str(REPO), "run", "--servers", "clinic", "pharmacy", "--tasks", "4", "--timeout", "10"]
    assert main([*common, "--out", str(tmp_path / "one")]) == 0
    assert main([*common, "--out", str(tmp_path / "two"), "--workers", "2"]) == 0
    [one] = (tmp_path / "one").iterdir()
    [two] = (tmp_path / "two").iterdir()
    scores = {d: json.loads((d / "scores.json").read_text()) for d in (one, two)}
    assert scores[two]["policies"] == scores[one]["policies"]
    assert scores[two]["policy_checks_per_task"] == scores[one]["policy_checks_per_task"]
    episodes = sum(p["episodes"] for p in scores[one]["policies"].values())
    assert scores[two]["workers"] == {"workers": 2, "episodes": episodes, "failed_episodes": 0, "lost_workers": 0}
    lines = {d: [stable(line) for line in (d / "trajectories.jsonl").read_text().splitlines()] for d in (one, two)}
    assert lines[two] == lines[one] and len(lines[one]) == episodes


@pytest.mark.parametrize(
    ("lines", "extra", "workers"),
    [
        (100, ["--k", "2"], 4),  # 200 offline episodes: one worker per core
        (199, [], 1),
        (100, ["--k", "2", "--policy", "openai:some-model"], 1),  # waits on its endpoint, not on cores
        (100, ["--k", "2", "--user", "openai:some-model"], 1),
        (100, ["--k", "2", "--transport", "stdio"], 1),
        (100, ["--k", "2", "--workers", "3"], 3),  # asked: as asked
    ],
)
def test_the_default_workers_are_the_cores_for_a_big_offline_job(
    lines: int, extra: list[str], workers: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envfarm.cli import driver
    from envfarm.cli.app import parser

    monkeypatch.setattr("envfarm.clients.fork_server.machine_cores", lambda: 4)
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("{}\n" * lines + "\n")
    args = parser().parse_args(["rollout", str(tasks_file), *extra])
    options = driver.RolloutCommandOptions.parse(args)
    assert options.local_workers(driver._auto_workers(options)) == workers
