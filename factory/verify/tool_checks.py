"""The contract checks, per tool: the listing against the spec, valid calls and their effect on the state,
invalid calls refused without a change, and calls at the edges of each business rule.

Valid calls come from the plan (`call_plan`): the spec's examples, else seed-built candidates, one of which
must succeed; the ones that do are kept on the probe, for the invalid calls, the rule edges and the session
checks to build on.
"""

from __future__ import annotations

from typing import Any

from envfarm.factory.spec import CreateTool, CustomTool, DeleteTool, EnvironmentSpec, ToolKind, UpdateTool, WriteTool
from envfarm.factory.verify.call_plan import InvalidCall, SeedView, invalid_calls
from envfarm.factory.verify.probe import SERVER, Probe, as_principal, show
from envfarm.factory.verify.rule_check import rule_probes, state_probes
from envfarm.factory.verify.schemas import canonical, differences, expected_input, expected_output
from envfarm.factory.verify.session import CallResult
from envfarm.servers.runtime.control import ErrorKind

# The MCP annotations each effect implies (readOnly, destructive, idempotent), written out here rather
# than taken from the runtime's `effect_hints`: the verifier must not share the code it checks, or a
# bug there would be expected as well as served. A read-only tool is never destructive.
EFFECT_ANNOTATIONS: dict[str, tuple[bool, bool, bool]] = {
    "search": (True, False, True),
    "get": (True, False, True),
    "create": (False, False, False),  # another call adds another row
    "update": (False, True, True),  # overwrites; replaying it changes nothing more
    "delete": (False, True, True),
    "custom": (False, True, False),
}


def expected_annotations(tool: ToolKind) -> dict[str, bool]:
    """The four hints the spec implies for `tool`: its effect's row of EFFECT_ANNOTATIONS, a custom tool
    that writes nothing read-only, then the spec's own `annotations` overrides."""
    read_only, destructive, idempotent = EFFECT_ANNOTATIONS[tool.effect]
    if isinstance(tool, CustomTool) and not tool.writes:
        read_only, destructive, idempotent = EFFECT_ANNOTATIONS["get"]
    if tool.annotations.destructive is not None:
        destructive = tool.annotations.destructive and not read_only
    if tool.annotations.idempotent is not None:
        idempotent = tool.annotations.idempotent
    return {
        "read_only_hint": read_only,
        "destructive_hint": destructive,
        "idempotent_hint": idempotent,
        "open_world_hint": False,
    }


def effect_problems(
    spec: EnvironmentSpec, seed: SeedView, tool: ToolKind, arguments: dict[str, Any], diff: dict[str, Any], output: Any
) -> list[str]:
    """What a successful call changed that its effect does not allow (empty when it is right)."""
    declared = tool.changed_tables
    problems = [f"changed {t} (undeclared): {show(diff[t], 200)}" for t in sorted(diff) if t not in declared]
    if not isinstance(tool, WriteTool):
        return problems
    pk = spec.entities[tool.entity].primary_key
    change = diff.get(tool.entity, {"added": [], "removed": [], "updated": []})
    # Rows of the entity besides the one the effect names may change only through declared `then` SQL.
    if isinstance(tool, CreateTool):
        added = change["added"]
        if len(added) != 1 or change["removed"]:
            problems.append(
                f"{tool.entity}: expected one row added, got {len(added)} added and {len(change['removed'])} removed"
            )
        elif isinstance(output, dict) and output.get(pk) != added[0].get(pk):
            problems.append(f"returned {pk} {output.get(pk)!r} but the row added is {added[0].get(pk)!r}")
        if change["updated"] and not tool.then:
            problems.append(f"{tool.entity}: a create also updated rows {[u['key'] for u in change['updated']]}")
        return problems
    target = (seed.sql_args(tool, arguments) or {}).get("id")
    if isinstance(tool, UpdateTool):
        if change["added"] or change["removed"]:
            problems.append(f"{tool.entity}: an update added or removed rows")
        others = [u["key"] for u in change["updated"] if u["key"] != target]
        if others and not tool.then:
            problems.append(f"{tool.entity}: updated rows {others} besides {target!r}")
    if isinstance(tool, DeleteTool):
        removed = [r.get(pk) for r in change["removed"]]
        if target not in removed or change["added"] or (len(removed) > 1 and not tool.then):
            problems.append(
                f"{tool.entity}: expected {target!r} removed, got removed {removed} and {len(change['added'])} added"
            )
    return problems


async def check_listing(probe: Probe) -> None:
    listing = await probe.session.client.list_tools()
    probe.listed = {t.name: t for t in listing.tools}
    call = {"method": "tools/list"}
    for name in probe.listed:
        if name not in probe.recorder.tools:
            probe.recorder.fail(SERVER, "listed", call, "only the spec's tools", f"extra tool {name!r}")
    for tool in probe.spec.tools:
        listed = probe.listed.get(tool.name)
        if not probe.recorder.judge(tool.name, "listed", listed is not None, call, "listed", "absent from tools/list"):
            continue
        assert listed is not None
        words = " ".join(tool.agent_description(probe.spec).split())
        got = " ".join((listed.description or "").split())
        probe.recorder.judge(tool.name, "description", got == words, call, show(words), show(got))
        found = differences(expected_input(tool), canonical(listed.input_schema))
        probe.recorder.judge(tool.name, "input_schema", not found, call, "the spec's params", "; ".join(found))
        found = differences(expected_output(probe.spec, tool), canonical(listed.output_schema or {}))
        probe.recorder.judge(tool.name, "output_schema", not found, call, "the spec's return shape", "; ".join(found))
        want = expected_annotations(tool)
        have = listed.annotations.model_dump(include=set(want)) if listed.annotations else {}
        probe.recorder.judge(tool.name, "annotations", have == want, call, show(want), show(have))
    probe.seed_hash = (await probe.state("verify:seed")).hash


async def _valid_call(probe: Probe, tool: ToolKind, arguments: dict[str, Any], episode: str) -> CallResult:
    """Call on a fresh episode; on success check the output and the effect on the state."""
    call = {"tool": tool.name, "arguments": arguments, "episode": episode}
    result = await probe.call(tool.name, arguments, episode)
    if result.is_error:
        return result
    probe.check_output(tool, result, call)
    state = await probe.state(as_principal(arguments, episode)[1])
    problems = effect_problems(
        probe.spec, probe.seed, tool, arguments, {t: d.model_dump() for t, d in state.diff.items()}, result.structured
    )
    expected = f"changes only {tool.changed_tables}" if tool.changed_tables else "state unchanged (a read)"
    probe.recorder.judge(tool.name, "effect", not problems, call, expected, "; ".join(problems))
    return result


async def check_valid(probe: Probe, tool: ToolKind) -> None:
    """Every `must_pass` call succeeds, or one of the seed-built candidates does."""
    plan = probe.plans[tool.name]
    succeeded: list[dict[str, Any]] = []
    for n, arguments in enumerate(plan.must_pass):
        episode = f"valid:{tool.name}:{n}"
        result = await _valid_call(probe, tool, arguments, episode)
        call = {"tool": tool.name, "arguments": arguments, "episode": episode}
        if probe.recorder.judge(tool.name, "valid_call", not result.is_error, call, "success", show(result.text)):
            succeeded.append(arguments)
    refused: list[tuple[dict[str, Any], CallResult]] = []
    for n, arguments in enumerate(plan.candidates[: probe.options.max_tries]):
        result = await _valid_call(probe, tool, arguments, f"valid:{tool.name}:{n}")
        if not result.is_error:
            succeeded.append(arguments)
            probe.recorder.passed(tool.name, "valid_call")
            break
        refused.append((arguments, result))
    if plan.candidates and not succeeded:
        arguments, result = refused[-1]
        tried = f"one of {len(refused)} seed-built calls succeeds"
        probe.recorder.fail(
            tool.name, "valid_call", {"tool": tool.name, "arguments": arguments}, tried, show(result.text)
        )
    probe.valid[tool.name] = succeeded
    probe.recorder.tools[tool.name].valid_calls = succeeded


async def _refused(probe: Probe, tool: ToolKind, bad: InvalidCall, episode: str) -> bool:
    """Make one invalid call and judge it; return whether it was refused."""
    result = await probe.call(tool.name, bad.arguments, episode)
    if bad.message is not None:
        ok = result.is_error and result.text == bad.message
    elif bad.check == "unknown_id":
        ok = result.is_error and bool(result.text) and result.kind != ErrorKind.SERVER_ERROR
    else:
        ok = result.is_error and bad.param is not None and bad.param in result.text
    shown = f"isError: {show(result.text)}" if result.is_error else f"success: {show(result.structured or result.text)}"
    call = {"tool": tool.name, "arguments": bad.arguments, "episode": episode}
    probe.recorder.judge(tool.name, bad.check, ok, call, bad.expectation, shown)
    return result.is_error


async def check_invalid(probe: Probe, tool: ToolKind) -> None:
    """Invalid calls share one episode (reset after any that wrongly succeeds); if its hash moved,
    each refused call is replayed alone to find the one that changed state."""
    plan = probe.plans[tool.name]
    base = (probe.valid.get(tool.name) or plan.must_pass or plan.candidates or [{}])[0]
    calls = invalid_calls(probe.seed, tool, base)
    if not calls:
        return
    episode = f"invalid:{tool.name}"
    refused: list[InvalidCall] = []
    for bad in calls:
        if await _refused(probe, tool, bad, episode):
            refused.append(bad)
        else:
            await probe.reset(as_principal(bad.arguments, episode)[1])
    used = {as_principal(bad.arguments, episode)[1] for bad in calls}
    hashes = [(await probe.state(e)).hash for e in sorted(used)]
    if all(h == probe.seed_hash for h in hashes):
        probe.recorder.passed(tool.name, "unchanged_on_error")
        return
    for n, bad in enumerate(refused):
        alone = f"invalid:{tool.name}:{n}"
        await probe.call(tool.name, bad.arguments, alone)
        state = await probe.state(as_principal(bad.arguments, alone)[1])
        if state.hash != probe.seed_hash:
            call = {"tool": tool.name, "arguments": bad.arguments, "episode": alone}
            probe.recorder.fail(
                tool.name,
                "unchanged_on_error",
                call,
                "a refused call changes nothing",
                show(state.model_dump(mode="json")["diff"]),
            )


async def check_rule_edges(probe: Probe, tool: ToolKind) -> None:
    """Calls at the edges of the tool's rules are refused exactly when the spec's rule SQL, run on the
    verifier's seed copy, refuses them, with that rule's message (`factory/verify/rule_check.py`)."""
    for n, edge in enumerate(rule_probes(probe.seed, tool, probe.valid.get(tool.name, []))):
        episode = f"edge:{tool.name}:{n}"
        result = await probe.call(tool.name, edge.arguments, episode)
        call = {"tool": tool.name, "arguments": edge.arguments, "episode": episode}
        _judge_edge(probe, tool, "rule_edge", call, edge.message, edge.messages, result)


def _judge_edge(
    probe: Probe,
    tool: ToolKind,
    check: str,
    call: dict[str, Any],
    message: str | None,
    messages: frozenset[str],
    result: CallResult,
    moved: str = "",
) -> None:
    """Refused with exactly `message`, or (None) with no rule's message at all."""
    refused = result.text if result.is_error else None
    if message is not None:
        ok, expected = refused == message, f"refused by its rule: {message!r}"
    else:
        ok, expected = refused not in messages, "no rule refuses it (the spec's rules let it through)"
    shown = f"isError: {show(result.text)}" if result.is_error else "accepted"
    probe.recorder.judge(tool.name, check, ok, call, f"with {moved}: {expected}" if moved else expected, shown)


async def check_state_edges(probe: Probe, tool: ToolKind) -> None:
    """The tool's valid call and rule examples, made on a seed where a row they read has a date or number
    moved to a rule's edge, are refused exactly when the spec's rule SQL refuses them on that state."""
    for n, edge in enumerate(state_probes(probe.seed, tool, probe.valid.get(tool.name, []))):
        _, episode, principal = as_principal(edge.arguments, f"state:{tool.name}:{n}")
        await probe.reset(episode, {edge.table: edge.rows}, principal)
        probe.opened.add(episode)
        result = await probe.call(tool.name, edge.arguments, f"state:{tool.name}:{n}", moved=edge.change)
        if result.kind == ErrorKind.SERVER_ERROR:
            continue  # advised above; a handler that breaks gives no rule's verdict
        call = {"tool": tool.name, "arguments": edge.arguments, "episode": episode, "state": edge.change}
        _judge_edge(probe, tool, "state_edge", call, edge.message, edge.messages, result, edge.change)
