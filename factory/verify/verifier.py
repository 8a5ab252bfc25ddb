"""Verify a generated server by execution: launch it over stdio, drive it with the MCP client, judge.

"Verified" is deterministic and executable, never an opinion. The server runs as a real subprocess
(`envfarm --farm <staging root> serve <name>`) and a real `mcp` client checks, per tool, that:
- the listing matches the spec (names, description, input and output schemas, annotations);
- valid calls, built from the seed, succeed and their outputs validate against the listed schema;
- reads leave the state hash unchanged; creates add one row; updates, deletes and custom writes
  change only the tables their effect declares;
- invalid calls (missing or wrong-typed argument, unknown id, each rule's example) give `isError`
  with a message and leave the state unchanged;
- every search lists exactly the rows its filters and the principal's scope select, in its declared
  order (the keys worked out from the spec on the seed: `factory/verify/search_check.py`);
- calls at the edges of each business rule (now, today, the rule's own numbers), and calls on a seed where a
  row they read has a date or number moved to such an edge, are refused exactly when the spec's rule SQL
  refuses them (`factory/verify/rule_check.py`);
- a session's reads do not change while another session writes (isolation), and replaying the
  same calls on a fresh episode gives the same outputs and state hash (determinism);
- no call crashes the handler, hangs past the timeout, or writes to the output streams.
Every check runs on its own episode (`_meta["envfarm/episode"]`) and reads the state hash and diff
from the control plane. The report is stored as `servers/<name>/verification.json`.

This module launches the server and runs the checks in order; each family of checks is a module of its own
(`tool_checks`, `behaviour`, `isolation`, `paging`), driving the server through one `probe.Probe`, and the
options and report are in `report`.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import StdioServerParameters

from envfarm.factory.publish import code_hash, file_hashes, runtime_hash, spec_hash
from envfarm.factory.sandbox.warm import stub_args
from envfarm.factory.spec import CustomTool, EnvironmentSpec
from envfarm.factory.verify.behaviour import check_behaviour
from envfarm.factory.verify.call_plan import plan_calls
from envfarm.factory.verify.coverage_gate import gate, gate_args, switch
from envfarm.factory.verify.isolation import check_principals, check_sessions
from envfarm.factory.verify.paging import check_paging, check_searches
from envfarm.factory.verify.probe import SERVER, Probe, Recorder, Stop, focused
from envfarm.factory.verify.report import Timings, VerificationReport, VerifyOptions
from envfarm.factory.verify.session import ServerSession, connect, serve_args
from envfarm.factory.verify.static_checks import check_handlers
from envfarm.factory.verify.tool_checks import (
    check_invalid,
    check_listing,
    check_rule_edges,
    check_state_edges,
    check_valid,
)


async def run_checks(probe: Probe, timings: Timings) -> None:
    """Every dynamic check, in order, over the probe's one connection: the listing, then per tool (the
    focused ones first) the contract checks, then sessions and lists, then the expectations (first of
    all with `fail_fast`: they catch most seeded bugs)."""
    options = probe.options
    mark = time.perf_counter()
    await check_listing(probe)
    timings.listing_s = time.perf_counter() - mark
    if options.fail_fast:
        mark = time.perf_counter()
        await check_behaviour(probe)
        timings.behaviour_s = time.perf_counter() - mark
    for tool in focused(probe.spec.tools, lambda t: t.name in options.focus):
        if tool.name in probe.listed:
            start = time.perf_counter()
            await check_valid(probe, tool)
            await check_invalid(probe, tool)
            await check_rule_edges(probe, tool)
            await check_state_edges(probe, tool)
            probe.recorder.tools[tool.name].seconds = round(time.perf_counter() - start, 4)
    timings.tools_s = time.perf_counter() - mark - timings.listing_s
    mark = time.perf_counter()
    await check_sessions(probe)
    await check_principals(probe)
    await check_searches(probe)
    await check_paging(probe)
    timings.sessions_s = time.perf_counter() - mark
    if not options.fail_fast:
        mark = time.perf_counter()
        await check_behaviour(probe)
        timings.behaviour_s = time.perf_counter() - mark


def load_server_spec(server_dir: Path) -> EnvironmentSpec:
    """The spec a generated server was built from: its spec.json plus seed.json."""
    data = json.loads((server_dir / "spec.json").read_text(encoding="utf-8"))
    seed = json.loads((server_dir / "seed.json").read_text(encoding="utf-8"))
    return EnvironmentSpec.model_validate({**data, "seed": seed})


ESCAPE_KINDS = frozenset({"import", "introspection"})  # static findings that are a way out of the sandbox


def _static(server_dir: Path, recorder: Recorder) -> bool:
    """Record the static findings; whether one is an escape (then the server is never launched)."""
    handlers = server_dir / "handlers.py"
    findings = check_handlers(handlers.read_text(encoding="utf-8")) if handlers.is_file() else []
    for finding in findings:
        call = {"file": "handlers.py", "line": finding.line, "function": finding.function}
        recorder.fail(
            "handlers.py",
            f"static:{finding.kind}",
            call,
            f"no {finding.kind.replace('_', ' ')}",
            f"{finding.code}  ({finding.reason})",
        )
    if not findings:
        recorder.passed(SERVER, "static")
    return any(f.kind in ESCAPE_KINDS for f in findings)


async def _launch_and_check(
    spec: EnvironmentSpec,
    import_root: Path,
    errlog: TextIO,
    recorder: Recorder,
    options: VerifyOptions,
    timings: Timings,
    workdir: Path,
) -> None:
    """Plan the calls in a thread while the server starts, then run the checks over one connection;
    with `options.coverage` the server runs under the coverage gate and is judged on it after it exits."""
    stream_errors: list[str] = []
    planned: dict[str, Any] = {}
    ready = anyio.Event()
    server_dir = import_root / "servers" / spec.name
    schema_sql = (server_dir / "schema.sql").read_text(encoding="utf-8")
    data_file, pid_file = workdir / "coverage.data", workdir / "server.pid"

    async def plan() -> None:
        planned["plans"], planned["seed"] = await anyio.to_thread.run_sync(plan_calls, spec, schema_sql)
        ready.set()

    if options.fail_fast and recorder.failures:
        return
    mark = time.perf_counter()
    args = serve_args(spec.name, import_root)
    if options.coverage:
        entry, argv = "coverage", gate_args(data_file, pid_file, server_dir, args)
    else:
        entry, argv = "serve", args
    if options.warm_socket is not None:
        parameters: StdioServerParameters | None = StdioServerParameters(
            command=sys.executable, args=stub_args(options.warm_socket, entry, argv)
        )
    elif options.coverage:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "envfarm.factory.verify.coverage_gate", *argv]
        )
    else:
        parameters = None
    client = connect(spec.name, import_root, errlog, options.launch_timeout, stream_errors, parameters)
    async with anyio.create_task_group() as group, AsyncExitStack() as stack:
        group.start_soon(plan)
        try:
            await stack.enter_async_context(client)
        except Exception as exc:  # noqa: BLE001 - whatever stops the server starting is the finding
            while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
                exc = exc.exceptions[0]
            errlog.seek(0)
            call = {"command": f"envfarm --farm {import_root} serve {spec.name}"}
            recorder.fail(
                SERVER,
                "launch",
                call,
                "the server starts and answers",
                f"{type(exc).__name__}: {exc}; stderr: ...{errlog.read()[-600:]}",
            )
            return
        timings.launch_s = time.perf_counter() - mark
        recorder.passed(SERVER, "launch")
        await ready.wait()
        session = ServerSession(client, errlog, options.call_timeout, stream_errors)
        probe = Probe(spec, session, recorder, planned["plans"], planned["seed"], options)
        if options.coverage:
            pid = int(pid_file.read_text(encoding="utf-8"))
            probe.switch = lambda context: switch(pid, context)
        recorder.fail_fast = options.fail_fast
        try:
            await run_checks(probe, timings)
        except Stop:
            recorder.fail_fast = False
            if options.fail_fast:
                return
            recorder.fail(
                SERVER, "completed", None, "every check runs", "stopped early: the server hung or broke the connection"
            )
            return
    recorder.fail_fast = False
    if options.coverage:
        _judge_coverage(spec, server_dir, data_file, recorder, options.coverage_gate)


def _judge_coverage(spec: EnvironmentSpec, server_dir: Path, data_file: Path, recorder: Recorder, strict: bool) -> None:
    """Every reject, write and handler branch ran under an expectation (a failure when `strict`, else
    listed in the report); per-tool coverage goes in the report."""
    if not data_file.is_file():
        recorder.fail(SERVER, "coverage", None, "coverage data from the server", "none written: did it exit cleanly?")
        return
    result = gate(data_file, server_dir)
    handlers = {t.handler: t.name for t in spec.tools if isinstance(t, CustomTool)}
    tools = {t.name for t in spec.tools}
    recorder.uncovered = [f"{s.file}:{s.line} {s.what} in {s.function}: {s.code}" for s in result.uncovered]
    for site in result.uncovered if strict else []:
        owner = site.function if site.file == "tools.py" and site.function in tools else handlers.get(site.function)
        what = {"reject": "a rejection", "write": "a write", "branch": "a branch"}[site.what]
        recorder.fail(
            owner or site.file,
            "coverage",
            {"file": site.file, "line": site.line, "function": site.function},
            f"{what} run by a call with an expectation (an example's expect, a rule example, a scenario step)",
            f"{site.file}:{site.line} never ran under one: {site.code}",
        )
    if strict and not result.uncovered:
        recorder.passed(SERVER, "coverage")
    for tool in spec.tools:
        parts = [result.functions.get(f"tools.py:{tool.name}")]
        if isinstance(tool, CustomTool):
            parts.append(result.functions.get(f"handlers.py:{tool.handler}"))
        found = [p for p in parts if p is not None]
        if found and tool.name in recorder.tools:
            recorder.tools[tool.name].coverage = sum(found[1:], found[0])


async def verify_server(
    server_dir: Path, import_root: Path, options: VerifyOptions | None = None
) -> VerificationReport:
    """Verify the server in `server_dir`, which must be `import_root/servers/<name>`.

    A faulty server never raises here: every fault becomes a failure in the report.
    """
    options = options or VerifyOptions()
    started = time.perf_counter()
    spec = load_server_spec(server_dir)
    if server_dir.resolve() != (import_root / "servers" / spec.name).resolve():
        raise ValueError(f"{server_dir} is not {import_root}/servers/{spec.name}")
    recorder = Recorder(spec)
    timings = Timings()
    escapes = options.static and _static(server_dir, recorder)
    timings.static_s = time.perf_counter() - started
    if not escapes:  # handlers that try to get out are refused as read, never run
        with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog, tempfile.TemporaryDirectory() as workdir:
            await _launch_and_check(spec, import_root, errlog, recorder, options, timings, Path(workdir))
    timings.total_s = time.perf_counter() - started
    return VerificationReport(
        server=spec.name,
        passed=not recorder.failures,
        verified_at=datetime.now(UTC).isoformat(timespec="seconds"),
        spec_hash=spec_hash(server_dir),
        code_hash=code_hash(server_dir),
        runtime_hash=runtime_hash(),
        files=file_hashes(server_dir),
        checks=recorder.server_checks,
        tools=list(recorder.tools.values()),
        failures=recorder.failures,
        advisories=recorder.advisories,
        uncovered=recorder.uncovered,
        timings=timings,
    )
