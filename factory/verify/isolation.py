"""The episode checks: isolation (one episode's writes never reach another's reads), determinism (the same
calls on a fresh episode give the same outputs and state hash), and principals (a call made again as another
principal neither returns nor changes a row only the first may see).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envfarm.factory.verify.probe import PRINCIPAL_KEY, SERVER, Probe, as_principal, show


async def check_sessions(probe: Probe) -> None:
    """Isolation: episode B's reads are unmoved while A runs every call. Determinism: replaying
    A's calls on a fresh episode C gives the same outputs and state hash."""
    sequence = [(t.name, a) for t in probe.spec.tools for a in probe.valid.get(t.name, [])]
    reads = [(name, a) for name, a in sequence if not probe.spec.tool(name).changed_tables]
    before = await probe.run_all(reads, "iso:b")
    first = await probe.run_all(sequence, "iso:a")
    first_hash = (await probe.state("iso:a")).hash
    after = await probe.run_all(reads, "iso:b")
    b_hash = (await probe.state("iso:b")).hash
    for (name, arguments), old, new in zip(reads, before, after, strict=True):
        call = {"tool": name, "arguments": arguments, "episode": "iso:b"}
        probe.recorder.judge(
            SERVER, "isolation", old == new, call, f"unchanged while iso:a runs: {show(old, 200)}", show(new, 200)
        )
    probe.recorder.judge(
        SERVER, "isolation", b_hash == probe.seed_hash, {"episode": "iso:b"}, f"seed hash {probe.seed_hash}", b_hash
    )
    replay = await probe.run_all(sequence, "det:c")
    replay_hash = (await probe.state("det:c")).hash
    for (name, arguments), old, new in zip(sequence, first, replay, strict=True):
        call = {"tool": name, "arguments": arguments, "episode": "det:c"}
        probe.recorder.judge(SERVER, "determinism", old == new, call, f"as on iso:a: {show(old, 200)}", show(new, 200))
    probe.recorder.judge(
        SERVER,
        "determinism",
        replay_hash == first_hash,
        {"episode": "det:c"},
        f"hash as on iso:a {first_hash}",
        replay_hash,
    )


async def check_principals(probe: Probe) -> None:
    """Cross-principal, per tool: every valid call, made again as another principal, neither returns
    nor changes a row that only the call's own principal may see."""
    principal = probe.spec.principal
    if principal is None or not principal.scope:
        return
    for tool in probe.spec.tools:
        for n, arguments in enumerate(probe.valid.get(tool.name, [])):
            owner = str(arguments.get(PRINCIPAL_KEY) or principal.default)
            other = probe.seed.other_principal(owner)
            if other is None:
                continue
            private = probe.seed.private_keys(owner, other)
            call = {**{k: v for k, v in arguments.items() if k != PRINCIPAL_KEY}, PRINCIPAL_KEY: other}
            episode = f"xp:{tool.name}:{n}"
            result = await probe.call(tool.name, call, episode)
            leaked = sorted(private & set(_strings(result.structured))) if not result.is_error else []
            diff = (await probe.state(as_principal(call, episode)[1])).diff
            touched = sorted(
                str(key)
                for table, change in diff.items()
                for key in [u["key"] for u in change.updated] + [next(iter(r.values())) for r in change.removed]
                if str(key) in private and not tool.reaches_others
            )
            probe.recorder.judge(
                tool.name,
                "cross_principal",
                not leaked and not touched,
                {"tool": tool.name, "arguments": call, "episode": episode},
                f"as {other}: none of {owner}'s private rows returned or changed",
                f"returned {leaked[:5]}, changed {touched[:5]}",
            )


def _strings(value: Any) -> Iterator[str]:
    """Every string value inside a JSON value (where row keys show up)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
