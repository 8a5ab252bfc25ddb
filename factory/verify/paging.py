"""The list checks: every search lists exactly the rows the search oracle (`search_check`) works out from the
spec, in order, over all its pages; and every row a principal may see is reachable through some list's pages
(or a get by a key a list showed), with each paged list's pages adding up to its total.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envfarm.factory.spec import GetTool, SearchTool, ToolKind
from envfarm.factory.verify.probe import PRINCIPAL_KEY, SERVER, Probe, show
from envfarm.factory.verify.search_check import SearchOracle

MAX_PAGES = 50  # pages walked per list call in the paging check
WALKED_AT_LEAST = 3  # argument sets (keys) a list (get) is called with before the rest may wait


async def check_searches(probe: Probe) -> None:
    """Each search lists exactly the rows its filters and the principal's scope select, in its declared
    order, over all its pages: the keys the search oracle works out from the spec on the seed."""
    oracle = SearchOracle(probe.spec, probe.seed)
    for n, principal in enumerate(probe.seed.paging_principals()):  # the default first
        acting = {PRINCIPAL_KEY: principal} if n else {}
        for search in oracle.probes(principal):
            if search.tool.name not in probe.listed:
                continue
            listed = await _list_keys(probe, search.tool, search.arguments, acting)
            call = {"tool": search.tool.name, "arguments": {**search.arguments, **acting}}
            probe.recorder.judge(
                search.tool.name,
                "search",
                listed == search.expected or (listed is None and search.may_refuse),
                call,
                f"{search.label}: {len(search.expected)} rows in order {show(search.expected, 200)}",
                f"{len(listed)} rows {show(listed, 200)}" if listed is not None else "an error",
            )


async def _list_keys(
    probe: Probe, tool: SearchTool, arguments: dict[str, Any], acting: dict[str, Any]
) -> list[str] | None:
    """The keys of every page of one search call, in order (None if a page is refused)."""
    keys: list[str] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        call = {**arguments, **probe.seed.page_arguments(tool, cursor), **acting}
        result = await probe.call(tool.name, call, "search")
        if result.is_error or not isinstance(result.structured, dict):
            return None
        keys += [str(k) for k in probe.seed.row_keys(tool, result.structured)]
        cursor = result.structured.get("cursor")
        if not result.structured.get("has_more") or not cursor:
            break
    return keys


async def check_paging(probe: Probe) -> None:
    """Paging reachability, per table: every row the principal may see has its key in some page of some
    list (search tools, and custom tools that page), walking every cursor; and every list's pages add
    up to its total with no row twice. Checked as the default principal and, where rows are private,
    as the one seeing the most rows the default cannot (then on the private tables only)."""
    scoped = set(probe.spec.principal.scope) if probe.spec.principal else set()
    for n, principal in enumerate(probe.seed.paging_principals()):  # the default first
        await _check_paging_as(probe, principal, {PRINCIPAL_KEY: principal} if n else {}, scoped if n else None)


async def _check_paging_as(
    probe: Probe, principal: str | None, acting: dict[str, Any], tables: set[str] | None
) -> None:
    """The paging check as one principal, over `tables` (None: every table).

    Lists with the fewest argument sets go first. Once every row of a list's table has been found and
    the list was walked with WALKED_AT_LEAST argument sets (its totals checked), its other argument sets
    wait; the gets stop early the same way once nothing is hidden. Only if some row is still hidden at
    the end are the waiting lists walked and the gets redone in full, so the verdict is exactly the one
    walking everything gives."""
    visible = {t: set(keys) for t, keys in probe.seed.visible_keys(principal).items() if tables is None or t in tables}
    lists: dict[str, list[tuple[ToolKind, dict[str, Any]]]] = {}
    table_of: dict[str, str] = {}  # list tool -> the table its rows are
    for tool, arguments in probe.seed.list_calls(principal):
        listed = probe.seed.listed_entity(tool)
        if tool.name in probe.listed and listed is not None and (tables is None or listed[1] in tables):
            lists.setdefault(tool.name, []).append((tool, arguments))
            table_of[tool.name] = listed[1]
    listed_found: set[str] = set()
    waiting: list[tuple[ToolKind, dict[str, Any]]] = []
    # Fewest argument sets first: a search finding every row lets a per-parent list wait.
    for name, calls in sorted(lists.items(), key=lambda item: len(item[1])):
        rows = visible[table_of[name]]
        for n, (tool, arguments) in enumerate(calls):
            if n >= WALKED_AT_LEAST and rows <= listed_found:
                waiting += calls[n:]
                break
            listed_found |= await _walk_list(probe, tool, arguments, acting)
    gets = [
        t
        for t in probe.spec.tools
        if isinstance(t, GetTool) and t.name in probe.listed and (tables is None or t.entity in tables)
    ]
    fetched: dict[tuple[str, Any], set[str]] = {}
    found = await _get_found(probe, gets, listed_found, principal, acting, fetched, visible)
    if any(not keys <= found for keys in visible.values()):
        for tool, arguments in waiting:
            listed_found |= await _walk_list(probe, tool, arguments, acting)
        found = await _get_found(probe, gets, listed_found, principal, acting, fetched, None)
    for table, keys in visible.items():
        hidden = sorted(keys - found)
        strict = probe.options.strict_paging and table not in probe.spec.unlisted
        record = probe.recorder.judge if strict else probe.recorder.advise
        record(
            SERVER,
            f"reachable:{table}",
            not hidden,
            {"table": table, **acting},
            f"every {table} row {principal or 'the principal'} may see is in some list's pages (a search on "
            f"{table}, or a custom list that pages with a cursor)",
            f"{len(hidden)} of {len(keys)} {table} rows never listed, e.g. {hidden[:5]}",
        )


async def _walk_list(probe: Probe, tool: ToolKind, arguments: dict[str, Any], acting: dict[str, Any]) -> set[str]:
    """Every cursor of one list call: the keys its pages show; a paged list's pages must add up to its
    total with no row twice."""
    found: set[str] = set()
    cursor: str | None = None
    seen: list[str] = []
    for _ in range(MAX_PAGES):
        call = {**arguments, **probe.seed.page_arguments(tool, cursor), **acting}
        result = await probe.call(tool.name, call, "paging")
        if result.is_error or not isinstance(result.structured, dict):
            break
        page = result.structured
        found |= set(_keys(page))
        seen += [str(k) for k in probe.seed.row_keys(tool, page)]
        cursor = page.get("cursor")
        if not page.get("has_more") or not cursor:
            if isinstance(tool, SearchTool) or "cursor" in tool.params:  # a paged list (not any `total`)
                ok = len(seen) == page.get("total") == len(set(seen))
                probe.recorder.judge(
                    tool.name,
                    "paging",
                    ok,
                    {"tool": tool.name, "arguments": {**arguments, **acting}},
                    f"pages add up to total {page.get('total')}, each row once",
                    f"{len(seen)} rows over the pages, {len(set(seen))} distinct",
                )
            break
    return found


async def _get_found(
    probe: Probe,
    gets: list[GetTool],
    listed_found: set[str],
    principal: str | None,
    acting: dict[str, Any],
    fetched: dict[tuple[str, Any], set[str]],
    visible: dict[str, set[str]] | None,
) -> set[str]:
    """`listed_found` plus what gets show by keys some list (or an earlier get) showed: a row a get
    fetches by a listed key is reachable too (an invoice by its listed appointment). With `visible`,
    each get stops after WALKED_AT_LEAST keys once no visible row is hidden; `fetched` keeps what each
    (get, key) showed, so redoing the pass in full calls only what was skipped."""
    found = set(listed_found)
    for tool in gets:
        for n, value in enumerate(probe.seed.get_keys(tool, found, principal)[: MAX_PAGES * 6]):
            if visible is not None and n >= WALKED_AT_LEAST and all(k <= found for k in visible.values()):
                break
            if (tool.name, value) not in fetched:
                result = await probe.call(tool.name, {tool.key: value, **acting}, "paging")
                fetched[tool.name, value] = set() if result.is_error else set(_keys(result.structured))
            found |= fetched[tool.name, value]
    return found


def _keys(value: Any) -> Iterator[str]:
    """Every string or integer inside a JSON value, as text: where row keys show up (an imported API's
    keys may be integers)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, int) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)
