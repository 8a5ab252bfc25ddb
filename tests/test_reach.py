"""`Catalog.reach` on a server with many reads: bounded by depth, not by the number of chains (an imported API of
hundreds of tools took minutes for one task when every chain was walked)."""

from __future__ import annotations

from envfarm.clients.graph import OutField, Param, ToolSpec, build_graph
from envfarm.clients.sampling import EXACT_READS, MAX_DEPTH, Catalog


def _reads(n: int) -> list[ToolSpec]:
    """`n` reads of one server, each looking up a thing id that every other one returns: a complete graph."""
    return [
        ToolSpec(
            server="wide",
            name=f"get_thing_{i}",
            read_only=True,
            annotated=True,
            params=[Param(name="thing_id", required=True, ref="things.thing_id", user_known=False)],
            outputs=[OutField(name="thing_id", ref="things.thing_id", user_known=False)],
        )
        for i in range(n)
    ]


def _chain(n: int) -> list[ToolSpec]:
    """`n` reads in a line: read i needs the id only read i - 1 returns."""
    specs = []
    for i in range(n):
        params = [Param(name=f"t{i - 1}_id", required=True, ref=f"t{i - 1}.id", user_known=False)] if i else []
        specs.append(
            ToolSpec(
                server="line",
                name=f"read_{i}",
                read_only=True,
                annotated=True,
                params=params,
                outputs=[OutField(name=f"t{i}_id", ref=f"t{i}.id", user_known=False)],
            )
        )
    return specs


def test_a_wide_server_s_reach_is_bounded_by_depth_and_quick() -> None:
    specs = _reads(EXACT_READS * 5)
    catalog = Catalog(specs, build_graph(specs))
    reaches = {catalog.reach(spec) for spec in specs}
    assert reaches == {1 + MAX_DEPTH}
    # each (tool, depth) is worked out once: 200 x 5 states, where walking every chain took 200 ** 4 steps per tool
    assert len(catalog._bounded) <= len(specs) * (MAX_DEPTH + 1)


def test_reach_counts_a_line_of_lookups_on_a_wide_server() -> None:
    specs = _chain(EXACT_READS + 6)
    catalog = Catalog(specs, build_graph(specs))
    assert [catalog.reach(spec) for spec in specs[:8]] == [1, 2, 3, 4, 5, 5, 5, 5]
