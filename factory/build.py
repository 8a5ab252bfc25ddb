"""`envfarm build` and `envfarm verify`: validate -> generate -> verify -> publish, and drift checks.

Builds run concurrently (`jobs`, default one per core): each loads its spec and generates code in a
worker thread, verifies the staged server in its own subprocess, and publishes under a lock so
registry.json is rewritten one server at a time. A build that fails at any step publishes nothing:
that server's folder and its registry entry stay exactly as they were.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TextIO

import anyio

from factory.progress import Job, ServerResult, default_jobs, print_failures, run_jobs
from factory.publish import code_hash, discard, file_hashes, publish, runtime_hash, spec_hash, stage, staging_root
from factory.source import SPEC_NAMES, find_spec_file, load_environment
from factory.spec import SpecError, read_document
from factory.verify import Failure, VerificationReport, VerifyOptions, load_report, verify_server
from factory.world.invariants import farm_violations
from servers.runtime.registry import RegistryEntry, load_registry


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
        source = await anyio.to_thread.run_sync(load_environment, path)
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


async def build_all_async(
    paths: list[Path],
    farm_root: Path,
    verify: bool = True,
    jobs: int | None = None,
    options: VerifyOptions | None = None,
    out: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    specs = expand_spec_paths(paths)
    names = {path: _declared_name(path) for path in specs}
    counts = Counter(n for n in names.values() if n)
    farm_root.mkdir(parents=True, exist_ok=True)
    publishing = anyio.Lock()
    planned: list[Job] = []
    for path in specs:
        if counts[names[path] or ""] > 1:  # two specs, one server: build neither rather than pick one
            planned.append(_clash(path, names[path] or path.name, [p for p in specs if names[p] == names[path]]))
        else:
            job = partial(_build_one, path, farm_root, verify, options or VerifyOptions(), publishing)
            planned.append((path.name, job))
    started = time.perf_counter()
    results = await run_jobs(planned, jobs or default_jobs(), out)
    print_failures(results, out)
    published = sum(r.ok for r in results)
    unverified = "" if verify else " (without verification)"
    print(
        f"\n{published} of {len(specs)} published into {farm_root} in {time.perf_counter() - started:.1f} s{unverified}",
        file=out,
    )
    return 0 if published == len(specs) else 1


def build_all(
    paths: list[Path],
    farm_root: Path,
    verify: bool = True,
    jobs: int | None = None,
    options: VerifyOptions | None = None,
    out: TextIO | None = None,
) -> int:
    """Build every spec under `paths` into `farm_root`; exit code 1 if any build failed.

    A failed build (invalid spec, failed verification, factory error) leaves that server and the
    registry exactly as they were; the others still publish.
    """
    return anyio.run(build_all_async, paths, farm_root, verify, jobs, options, out)


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
        for name in sorted(set(now) | set(report.files)):
            if now.get(name) != report.files.get(name):
                found.append(
                    _drifted(
                        "drift",
                        {"file": name},
                        f"sha256 {report.files.get(name)} (verified)",
                        f"sha256 {now.get(name)}",
                    )
                )
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


async def verify_published_async(
    farm_root: Path,
    names: list[str],
    all_servers: bool = False,
    jobs: int | None = None,
    options: VerifyOptions | None = None,
    out: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    registry = load_registry(farm_root)
    if not all_servers and not names:
        print("error: name servers to verify or pass --all", file=sys.stderr)
        return 2
    missing = [n for n in names if registry.get(n) is None]
    if missing:
        print(f"error: not in {farm_root / 'registry.json'}: {', '.join(missing)}", file=sys.stderr)
        return 2
    entries = registry.servers if all_servers else [e for e in registry.servers if e.name in names]
    planned: list[Job] = [(e.name, partial(_verify_one, e, farm_root, options or VerifyOptions())) for e in entries]
    started = time.perf_counter()
    results = await run_jobs(planned, jobs or default_jobs(), out)
    print_failures(results, out)
    holding = sum(r.ok for r in results)
    print(f"\n{holding} of {len(entries)} verified with no drift in {time.perf_counter() - started:.1f} s", file=out)
    violations = farm_violations(farm_root / "servers") if all_servers else []
    for violation in violations:
        print(f"world: {violation}", file=out)
    if all_servers:
        print(f"{len(violations)} world invariant violations", file=out)
    return 0 if holding == len(entries) and not violations else 1


def verify_published(
    farm_root: Path,
    names: list[str],
    all_servers: bool = False,
    jobs: int | None = None,
    options: VerifyOptions | None = None,
    out: TextIO | None = None,
) -> int:
    """Re-verify published servers and report drift; exit 0 iff every one holds.

    Read-only: it never rewrites verification.json or the registry, so drift stays visible until
    the server is rebuilt with `envfarm build`.
    """
    return anyio.run(verify_published_async, farm_root, names, all_servers, jobs, options, out)
