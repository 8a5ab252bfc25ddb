"""The Ray backend on a local two-CPU cluster and one two-host backend, both shared by the module: the
same scores as the local backend, byte for byte; the trainer handle (reset / step / score); a farm host
killed mid-episode and its episodes retried from their seed; `envfarm run --backend ray`. Tearing down
checks the shutdown: no host process outlives the backend, no cluster process outlives `ray.shutdown()`.
Skipped without Ray."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from handmade import handmade_tasks, pay_invoice_task

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policies import Action, Agent, AgentTool, HeuristicPolicy, OraclePolicy
from envfarm.clients.ray_backend import EnvHandle, HostSpec, RayBackend, RayOptions, named_hosts
from envfarm.clients.rollout import LocalBackend, RolloutOptions
from envfarm.clients.scoring import Scorer
from envfarm.clients.tasks import Task
from envfarm.clients.trajectory import Trajectory
from envfarm.clients.users import ScriptedUser

ray = pytest.importorskip("ray")  # the backend imports Ray only when it starts, so the imports above need none

SPEC = HostSpec(farm=REPO, servers=["clinic"], timeout=10)
# Two hosts on two CPUs, with room for a replacement and the trainer's host.
OPTIONS = RayOptions(workers=2, cpus_per_worker=0.5, name="envfarm-test")


def children() -> set[int]:
    """Live (not zombie) processes whose parent is this one."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == os.getpid():
            found.add(int(stat.parent.name))
    return found


def gone(pid: int, within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return True
        if fields[0] == "Z":
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    """One local cluster for the module; at the end, no process of it may outlive `ray.shutdown()`."""
    before = children()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    # The crash policy below lives in this test module, which Ray workers cannot import by name.
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()
    leaked = {pid for pid in children() - before if not gone(pid)}
    assert not leaked, f"processes left after ray.shutdown(): {sorted(leaked)}"


@pytest.fixture(scope="module")
def backend() -> Iterator[RayBackend]:
    """Two farm hosts for the module (starting one costs seconds); each test counts from `stats` deltas."""
    backend = RayBackend(SPEC, OPTIONS)
    asyncio.run(backend.__aenter__())
    yield backend
    asyncio.run(backend.__aexit__())
    assert backend.hosts and all(gone(h.pid) for h in backend.hosts), "a farm host outlived the backend"


async def tasks() -> list[Task]:
    async with Connections(farm_targets(REPO, ["clinic"]), timeout=10) as connections:
        return await handmade_tasks(connections)


def by_id(trajectories: list[Trajectory]) -> dict[str, str]:
    return {t.id: t.score.model_dump_json() if t.score else "" for t in trajectories}


async def test_scores_match_the_local_backend_byte_for_byte(backend: RayBackend) -> None:
    chosen = await tasks()
    options = RolloutOptions(k=2, concurrency=4)
    policies = [OraclePolicy(), HeuristicPolicy()]
    async with Connections(farm_targets(REPO, ["clinic"]), timeout=10) as connections:
        local = LocalBackend(connections)
        expected = [await local(chosen, p, ScriptedUser(), options, scorer=Scorer()) for p in policies]
    seen: list[tuple[int, int]] = []
    before = backend.stats.model_copy()
    got = [
        await backend(chosen, p, ScriptedUser(), options, scorer=Scorer(), progress=lambda d, n: seen.append((d, n)))
        for p in policies
    ]
    hosts = backend.hosts
    assert len(hosts) == 2 and len({h.pid for h in hosts}) == 2 and os.getpid() not in {h.pid for h in hosts}
    for mine, theirs in zip(expected, got, strict=True):
        assert [t.id for t in theirs] == [t.id for t in mine]  # task order, then attempt
        assert by_id(theirs) == by_id(mine)
        assert [t.messages for t in theirs] == [t.messages for t in mine]
    assert any(t.score and t.score.success for t in got[1]) and all(t.score and t.score.reward == 1 for t in got[0])
    assert seen[-1] == (len(chosen) * 2, len(chosen) * 2) and len(seen) == 2 * len(chosen) * 2
    assert backend.stats.episodes - before.episodes == 2 * len(chosen) * 2
    assert backend.stats.retried_episodes == before.retried_episodes


@dataclass
class _Crashing:
    inner: Agent
    marker: Path

    async def act(self, messages: list[dict[str, Any]]) -> Action:
        try:
            self.marker.touch(exist_ok=False)
        except FileExistsError:
            return await self.inner.act(messages)
        os._exit(1)  # this process (a farm host) dies mid-episode, once per run


@dataclass
class CrashOnce:
    """The oracle, except that the first act of the run kills the farm host it runs on."""

    marker: Path
    name: str = "oracle"

    def agent(self, task: Task, tools: list[AgentTool], attempt: int = 0) -> Agent:
        return _Crashing(OraclePolicy().agent(task, tools), self.marker)

    async def aclose(self) -> None:
        return None


async def test_a_killed_host_s_episodes_are_retried_from_their_seed(backend: RayBackend, tmp_path: Path) -> None:
    chosen = await tasks()
    options = RolloutOptions(k=2, concurrency=2)
    async with Connections(farm_targets(REPO, ["clinic"]), timeout=10) as connections:
        expected = await LocalBackend(connections)(chosen, OraclePolicy(), ScriptedUser(), options, scorer=Scorer())
    first = {info.pid for info in [await a.ready.remote() for a in backend.actors()]}
    before = backend.stats.model_copy()
    got = await backend(chosen, CrashOnce(tmp_path / "crashed"), ScriptedUser(), options, scorer=Scorer())
    now = {info.pid for info in [await a.ready.remote() for a in backend.actors()]}
    assert (tmp_path / "crashed").exists()
    assert backend.stats.lost_workers - before.lost_workers == 1
    assert backend.stats.replaced_workers - before.replaced_workers == 1
    retried = backend.stats.retried_episodes - before.retried_episodes
    assert 1 <= retried <= options.concurrency  # what was in flight on the dead host
    assert sum(t.metadata.get("ray_retries", 0) for t in got) == retried
    assert by_id(got) == by_id(expected)  # every episode, retried or not, scores as it does locally
    assert len(now) == 2 and len(now & first) == 1  # one survivor, one replacement


async def test_trainer_handle_resets_steps_and_scores_an_episode(backend: RayBackend) -> None:
    """A trainer's own loop on a host it shares with the backend (found by name), through `EnvHandle`."""
    async with Connections(farm_targets(REPO, ["clinic"]), timeout=10) as connections:
        task = await pay_invoice_task(connections)
        [local] = await LocalBackend(connections)(
            [task], OraclePolicy(), ScriptedUser(), RolloutOptions(), scorer=Scorer()
        )
    hosts = named_hosts("envfarm-test")
    assert len(hosts) == 2
    host = hosts[0]
    try:
        env = EnvHandle(host)
        observation = await env.reset(task.model_dump_json())  # as a verl row's extra_info carries it
        assert [m["role"] for m in observation.messages] == ["system", "user"] and not observation.done
        assert {t["function"]["name"] for t in observation.tools} >= {"find_patient", "pay_invoice"}
        bad = await env.step({"name": "no_such_tool", "arguments": {}})
        assert bad.messages[0]["content"].startswith("Error: there is no tool named 'no_such_tool'")
        for n, gold in enumerate(task.gold_calls):
            result = await env.step({"name": gold.tool, "arguments": gold.arguments, "id": f"c{n}"})
            assert not result.done and result.messages[0]["role"] == "tool"
            assert json.loads(result.messages[0]["content"]) == gold.output
        score = await env.score(" ".join(c.text for c in task.claims))
        assert score.success and score.state_match and score.claims_pass
        assert score.model_dump() == {**local.score.model_dump(), "error": None} if local.score else False
        with pytest.raises(ray.exceptions.RayTaskError, match="has ended"):
            await env.step({"name": "find_patient", "arguments": {}})
        await env.close()
        unfinished = EnvHandle(host)
        await unfinished.reset(task)
        assert not (await unfinished.score()).success  # ended before doing anything: nothing paid
        with pytest.raises(ray.exceptions.RayTaskError, match="call reset"):
            await EnvHandle(host).step({"name": "find_patient"})
    finally:
        await EnvHandle(host, env.episode).close()


def test_run_backend_ray_gives_the_local_scores(tmp_path: Path) -> None:
    from envfarm.cli import main

    common = ["--farm", str(REPO), "run", "--servers", "clinic", "--tasks", "4", "--timeout", "10"]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    assert (
        main(
            [*common, "--out", str(tmp_path / "ray"), "--backend", "ray", "--workers", "2", "--cpus-per-worker", "0.25"]
        )
        == 0
    )
    [local] = (tmp_path / "local").iterdir()
    [remote] = (tmp_path / "ray").iterdir()
    scores = {d: json.loads((d / "scores.json").read_text()) for d in (local, remote)}
    assert scores[remote]["policies"] == scores[local]["policies"]
    assert scores[remote]["ray"]["episodes"] == sum(p["episodes"] for p in scores[local]["policies"].values())

    def rows(directory: Path) -> dict[str, Any]:
        lines = (directory / "trajectories.jsonl").read_text().splitlines()
        return {t["id"]: t["score"] for t in map(json.loads, lines)}

    assert rows(remote) == rows(local)


def test_rollout_backend_ray_writes_the_local_scores(tmp_path: Path) -> None:
    from envfarm.cli import main
    from envfarm.clients.tasks import write_jsonl

    tasks_file = tmp_path / "tasks.jsonl"
    write_jsonl(tasks_file, asyncio.run(tasks()))
    common = ["--farm", str(REPO), "rollout", str(tasks_file), "--policy", "heuristic", "--k", "2"]
    assert main([*common, "--out", str(tmp_path / "local.jsonl")]) == 0
    ray_args = ["--backend", "ray", "--workers", "1", "--cpus-per-worker", "0.25"]
    assert main([*common, "--out", str(tmp_path / "ray.jsonl"), *ray_args]) == 0

    def scores(path: Path) -> dict[str, Any]:
        return {t["id"]: t["score"] for t in map(json.loads, path.read_text().splitlines())}

    assert scores(tmp_path / "ray.jsonl") == scores(tmp_path / "local.jsonl")
    assert len(scores(tmp_path / "ray.jsonl")) == 6


@pytest.mark.slow
def test_ray_bench_writes_its_report(tmp_path: Path) -> None:
    from envfarm.bench.ray import RayBench, main

    out = tmp_path / "bench_ray.json"
    sizes = ["--episodes", "8", "--sequential", "2", "--tasks", "2", "--servers", "clinic", "--cpus-per-host", "0.1"]
    assert main(["--farm", str(REPO), "--out", str(out), *sizes]) == 0
    report = RayBench.model_validate_json(out.read_text())
    assert [(r.backend, r.workers) for r in report.rates] == [("local", 1), ("ray", 1), ("ray", 2)]
    assert all(r.episodes >= 8 and r.episodes_per_s > 0 for r in report.rates)
    assert report.host_idle_rss_mb > 0 and report.actor_round_trip_ms > 0 and report.trajectory_kb > 0
    assert "Ray overhead" in out.with_suffix(".md").read_text()


def test_the_default_path_never_imports_ray_and_a_missing_ray_is_one_clear_line(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "import envfarm.clients.run, envfarm.clients.rollout, envfarm.clients.ray_backend, envfarm.cli\n"
        "assert 'ray' not in sys.modules, 'imported ray'\n"
        "sys.modules['ray'] = None  # as if the extra were not installed\n"
        "sys.exit(envfarm.cli.main(['rollout', sys.argv[1], '--backend', 'ray']))\n"
    )
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("")
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tasks_file)], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == 'error: --backend ray: the Ray backend needs Ray: pip install "envfarm[ray]"'
