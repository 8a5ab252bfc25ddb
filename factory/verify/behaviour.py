"""The behaviour checks: every expectation the spec states (an example's `expect`, a rule's example, a
scenario's steps) run on a fresh episode and judged on results, rows changed and column values after.

What a step changed is the difference between the rows before and after it, rebuilt from the seed plus the
episode's diff (`expect`). While a step with an expectation runs, the coverage gate counts what it covers.
"""

from __future__ import annotations

from typing import Any

from envfarm.factory.spec import Expect, Scenario, Step
from envfarm.factory.verify.call_plan import rule_message
from envfarm.factory.verify.coverage_gate import CHECKS, EXPECT
from envfarm.factory.verify.expect import Rows, UnresolvedReference, apply_diff, judge, resolve, seed_rows
from envfarm.factory.verify.probe import Probe, as_principal, focused, show


def _touches_focus(probe: Probe, scenario: Scenario) -> bool:
    return any(step.tool in probe.options.focus for step in scenario.steps)


def behaviour_scenarios(probe: Probe) -> list[tuple[str, Scenario]]:
    """What the behaviour phase runs, each on a fresh episode: every example with an expectation and
    every rule example (as one-step scenarios, named by where they are in the spec), then the spec's
    scenarios."""
    runs: list[tuple[str, Scenario]] = []
    for i, tool in enumerate(probe.spec.tools):
        if tool.name not in probe.listed:
            continue
        for j, example in enumerate(tool.examples):
            if example.expect is not None:
                step = Step(tool=tool.name, args=example.args, expect=example.expect)
                runs.append((f"tools.{i}({tool.name}).examples.{j}", Scenario(name=tool.name, steps=[step])))
        for j, rule in enumerate(tool.rules):
            message = rule_message(probe.seed, tool, rule.example, rule.message)
            step = Step(tool=tool.name, args=rule.example, expect=Expect(error=message))
            runs.append((f"tools.{i}({tool.name}).rules.{j}", Scenario(name=tool.name, steps=[step])))
    runs += [(f"scenarios.{i}({s.name})", s) for i, s in enumerate(probe.spec.scenarios)]
    return runs


async def _rows(probe: Probe, base: Rows, episode: str) -> Rows:
    """The episode's rows: `base` (the seed's) with the episode's diff applied."""
    state = await probe.state(episode)
    return apply_diff(base, {t: d.model_dump() for t, d in state.diff.items()}, probe.spec)


async def check_behaviour(probe: Probe) -> None:
    """Run every expectation of the spec: results, rows changed and column values after each call."""
    base = seed_rows(probe.spec)
    runs = list(enumerate(behaviour_scenarios(probe)))
    for n, (where, scenario) in focused(runs, lambda run: _touches_focus(probe, run[1][1])):
        await _scenario(probe, base, where, scenario, f"expect:{n}")
    probe.use_context(CHECKS)


async def _scenario(probe: Probe, base: Rows, where: str, scenario: Scenario, episode: str) -> None:
    results: dict[str, Any] = {}
    before = base
    rule = ".rules." in where
    for k, step in enumerate(scenario.steps):
        label = where if len(scenario.steps) == 1 else f"{where}.steps.{k}"
        try:
            arguments = resolve(step.args, results)
            expect = Expect.model_validate(resolve(step.expect.model_dump(), results)) if step.expect else None
        except UnresolvedReference as exc:
            probe.recorder.fail(step.tool, "expect", {"expectation": label}, "a resolvable reference", str(exc))
            return
        call = {"tool": step.tool, "arguments": arguments, "episode": episode, "expectation": label}
        probe.use_context(EXPECT if expect is not None else CHECKS)
        result = await probe.call(step.tool, arguments, episode)
        tool = probe.spec.tool(step.tool)
        # A read cannot change the state (the effect check holds it to that), so a read whose
        # expectation is about its result alone needs no state request.
        reads_result = not tool.changed_tables and expect is not None and expect.error is None
        if reads_result and expect is not None and expect.rows is None and not expect.state:
            after = before
        else:
            after = await _rows(
                probe, base, as_principal(arguments, episode)[1]
            )  # an example may act as another principal
        if not result.is_error and step.tool in probe.listed:
            probe.check_output(tool, result, call)
        if expect is not None:
            found = judge(probe.spec, expect, result.is_error, result.text, result.structured, before, after)
            check = "rule" if rule else "expect"
            for mismatch in found:
                probe.recorder.judge(
                    step.tool,
                    check,
                    False,
                    call,
                    mismatch.expected,
                    f"{mismatch.field}: {mismatch.actual}",
                    once=rule,
                )
            if not found:
                probe.recorder.passed(step.tool, check)
        elif result.is_error:
            probe.recorder.fail(step.tool, "expect", call, "success", show(result.text))
        if step.name and not result.is_error:
            results[step.name] = result.structured
        before = after
