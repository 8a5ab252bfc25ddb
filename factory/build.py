"""`envfarm build` and `envfarm verify`: validate -> generate -> verify -> publish, and drift checks.

Both return typed results (`BuildResult`, `VerifyResult`) and print nothing; the CLI renders them.

Builds run concurrently (`jobs`, default one per core): each loads its spec and generates code in a
worker thread, verifies the staged server in its own subprocess, and publishes under a lock so
registry.json is rewritten one server at a time. A build that fails at any step publishes nothing:
that server's folder and its registry entry stay exactly as they were.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import anyio
from pydantic import BaseModel

from envfarm.factory.importers.documents import imported_environment
from envfarm.factory.progress import Job, OnResult, ServerResult, default_jobs, run_jobs
from envfarm.factory.publish import (
    code_hash,
    discard,
    file_hashes,
    publish,
    runtime_hash,
    spec_hash,
    stage,
    staging_root,
)
from envfarm.factory.sandbox.warm import warm_launcher
from envfarm.factory.source import SPEC_NAMES, find_spec_file, load_environment
from envfarm.factory.spec import SpecError, read_document
from envfarm.factory.verify.report import Failure, VerificationReport, VerifyOptions, load_report
from envfarm.factory.verify.verifier import verify_server
from envfarm.servers.runtime.registry import RegistryEntry, load_registry, registry_file


def expand_spec_paths(paths: list[Path]) -> list[Path]:
    """A spec file, a spec folder, or a folder of spec folders (built in name order)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir() and not any((path / n).is_file() for n in SPEC_NAMES):
            found += sorted(p for p in path.iterdir() if p.is_dir() and any((p / n).is_file() for n in SPEC_NAMES))
        else:
            found.append(path)
    return found


def _declared_name(path: Path) -> str | None:
    """The `name` a spec declares, read without validating it (to find clashes before building)."""
    try:
        data = read_document(find_spec_file(path))
    except (SpecError, OSError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None


async def _build_one(
    path: Path, farm_root: Path, verify: bool, options: VerifyOptions, publishing: anyio.Lock
) -> ServerResult:
    started = time.perf_counter()
    try:
        source = await anyio.to_thread.run_sync(load_environment, path, imported_environment)
    except SpecError as exc:
        return ServerResult(name=path.name, status="invalid", message=str(exc), seconds=time.perf_counter() - started)
    name, tools = source.spec.name, len(source.spec.tools)
    staged = await anyio.to_thread.run_sync(stage, source, farm_root)
    try:
        report: VerificationReport | None = None
        if verify:
            report = await verify_server(staged, staging_root(staged), options)
            if not report.passed:
                seconds = time.perf_counter() - started
                return ServerResult(
                    name=name, status="rejected", tools=tools, report=report, problems=report.failures, seconds=seconds
                )
            report.write(staged)
        async with publishing:
            verification = "passed" if report else "unverified"
            publish(
                source, staged, farm_root, verification=verification, verified_at=report.verified_at if report else None
            )
        seconds = time.perf_counter() - started
        return ServerResult(
            name=name,
            status="published",
            tools=tools,
            report=report,
            message="" if report else "unverified",
            seconds=seconds,
        )
    finally:
        discard(staged)


def _clash(path: Path, name: str, paths: list[Path]) -> Job:
    async def job() -> ServerResult:
        others = ", ".join(str(p) for p in paths if p != path)
        return ServerResult(name=name, status="invalid", message=f"{path} declares the same server name as {others}")

    return name, job


class BatchResult(BaseModel):
    """What one `build_all` or `verify_published` run did: an outcome per server, in the order they finished."""

    farm_root: Path
    servers: list[ServerResult]
    seconds: float

    @property
    def succeeded(self) -> int:
        return sum(r.ok for r in self.servers)

    @property
    def ok(self) -> bool:
        """Every server was published (a build) or holds with no drift (a re-verification)."""
        return self.succeeded == len(self.servers)


class BuildResult(BatchResult):
    verified: bool


class VerifyResult(BatchResult):
    pass


@contextmanager
def warm_options(options: VerifyOptions, servers: int) -> Iterator[VerifyOptions]:
    """`options`, launching every server through one warm launcher (factory/sandbox/warm.py) when several are
    verified: a fork instead of an interpreter start and the SDK import each."""
    if servers < 2 or options.warm_socket is not None:
        yield options
        return
    with warm_launcher() as socket_path:
        yield options.model_copy(update={"warm_socket": socket_path})


async def build_all(
    paths: list[Path],
    farm_root: Path,
    *,
    verify: bool = True,
    jobs: int | None = None,
    options: VerifyOptions | None = None,
    on_result: OnResult | None = None,
) -> BuildResult:
    """Build every spec under `paths` into `farm_root`.

    A failed build (invalid spec, failed verification, factory error) leaves that server and the
    registry exactly as they were; the others still publish.
    """
    specs = expand_spec_paths(paths)
    names = {path: _declared_name(path) for path in specs}
    counts = Counter(n for n in names.values() if n)
    farm_root.mkdir(parents=True, exist_ok=True)
    publishing = anyio.Lock()
    started = time.perf_counter()
    with warm_options(options or VerifyOptions(), len(specs) if verify else 0) as launching:
        planned: list[Job] = []
        for path in specs:
            if counts[names[path] or ""] > 1:  # two specs, one server: build neither rather than pick one
                planned.append(_clash(path, names[path] or path.name, [p for p in specs if names[p] == names[path]]))
            else:
                planned.append((path.name, partial(_build_one, path, farm_root, verify, launching, publishing)))
        results = await run_jobs(planned, jobs or default_jobs(), on_result)
    return BuildResult(farm_root=farm_root, servers=results, seconds=time.perf_counter() - started, verified=verify)


def _drifted(check: str, call: dict[str, str], expected: str, actual: str) -> Failure:
    return Failure(tool="*", check=check, call=call, expected=expected, actual=actual)


def drift(entry: RegistryEntry, server_dir: Path, report: VerificationReport | None) -> list[Failure]:
    """Code or spec that no longer matches what was verified, file by file where the report says."""
    if not server_dir.is_dir():
        return [_drifted("drift", {"folder": str(server_dir)}, "the published folder", "missing")]
    found: list[Failure] = []
    if report is None or not report.passed:
        what = "no verification.json" if report is None else "a failed verification.json"
        found.append(_drifted("drift", {"file": "verification.json"}, "a passing verification report", what))
    else:
        if report.runtime_hash != (current_runtime := runtime_hash()):
            found.append(
                _drifted(
                    "drift",
                    {"runtime": "servers/runtime"},
                    f"sha256 {report.runtime_hash} (verified)",
                    f"sha256 {current_runtime}",
                )
            )
        now = file_hashes(server_dir)
        found += [
            _drifted("drift", {"file": name}, f"sha256 {report.files.get(name)} (verified)", f"sha256 {now.get(name)}")
            for name in sorted(set(now) | set(report.files))
            if now.get(name) != report.files.get(name)
        ]
    for label, recorded, current in (
        ("spec", entry.spec_hash, spec_hash(server_dir)),
        ("code", entry.code_hash, code_hash(server_dir)),
    ):
        if recorded != current:
            found.append(_drifted("drift", {"registry": f"{label}_hash"}, recorded, current))
    if entry.verification != "passed":
        found.append(_drifted("drift", {"registry": "verification"}, "passed", entry.verification))
    return found


async def _verify_one(entry: RegistryEntry, farm_root: Path, options: VerifyOptions) -> ServerResult:
    started = time.perf_counter()
    server_dir = farm_root / "servers" / entry.name
    problems = drift(entry, server_dir, load_report(server_dir))
    report = await verify_server(server_dir, farm_root, options) if server_dir.is_dir() else None
    problems += report.failures if report else []
    drifted = sum(f.check == "drift" for f in problems)
    return ServerResult(
        name=entry.name,
        status="failed" if problems else "passed",
        tools=entry.tool_count,
        report=report,
        problems=problems,
        message=f"{drifted} drift" if drifted else "",
        seconds=time.perf_counter() - started,
    )


async def verify_published(
    farm_root: Path,
    names: Sequence[str] | None = None,
    *,
    jobs: int | None = None,
    options: VerifyOptions | None = None,
    on_result: OnResult | None = None,
) -> VerifyResult:
    """Re-verify the published servers `names` (default: all) and report drift.

    Read-only: it never rewrites verification.json or the registry, so drift stays visible until
    the server is rebuilt with `envfarm build`. A name the registry does not list is a `LookupError`.
    """
    registry = load_registry(farm_root)
    missing = [n for n in names or [] if registry.get(n) is None]
    if missing:
        raise LookupError(f"not in {registry_file(farm_root)}: {', '.join(missing)}")
    entries = registry.servers if names is None else [e for e in registry.servers if e.name in names]
    started = time.perf_counter()
    with warm_options(options or VerifyOptions(), len(entries)) as launching:
        planned: list[Job] = [(e.name, partial(_verify_one, e, farm_root, launching)) for e in entries]
        results = await run_jobs(planned, jobs or default_jobs(), on_result)
    return VerifyResult(farm_root=farm_root, servers=results, seconds=time.perf_counter() - started)
