"""The import structure goes one way: read every import of the tree (module level, inside functions and under
TYPE_CHECKING alike) and fail on an import from a lower layer to a higher one, between the two packages that
share a layer, or on any import cycle.

Layers, bottom to top (installed names; the folders are `servers/`, `clients/`, `factory/`, `envfarm/`):
- the runtime `envfarm.servers.runtime`, and beside it the LLM client `envfarm.llm` and the namespace's own
  `envfarm/__init__.py` (they import nothing of the project);
- the generated servers `envfarm.servers.<name>`, on the runtime;
- the factory `envfarm.factory` (spec folders included) and the driver `envfarm.clients`, side by side:
  neither imports the other;
- the command line on top: every other module of `envfarm` (the package `envfarm.cli`, `envfarm.bench`,
  `envfarm.soak`, ...).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
from conftest import REPO

NAMESPACE = "envfarm"
FOLDERS = ("envfarm", "servers", "factory", "clients")  # at the top of the repository
# rank of each layer; two groups of one rank may not import each other
RANKS = {"runtime": 0, "llm": 0, "namespace": 0, "server": 1, "factory": 2, "clients": 2, "cli": 3}
# Cycles inside one layer that the package splits of issue 30 remove (the command line becoming a package):
# a cycle passes only inside one of these, so none can grow or appear.
KNOWN_CYCLES = ()


def module_name(path: Path) -> str:
    """The installed name of a file of the tree: `clients/scoring/state.py` -> `envfarm.clients.scoring.state`."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts if parts[0] == NAMESPACE else [NAMESPACE, *parts])


def group(module: str) -> str:
    if module == NAMESPACE:
        return "namespace"
    if module == "envfarm.llm":
        return "llm"
    if module == "envfarm.servers.runtime" or module.startswith("envfarm.servers.runtime."):
        return "runtime"
    for name, prefix in (
        ("server", "envfarm.servers."),
        ("factory", "envfarm.factory"),
        ("clients", "envfarm.clients"),
    ):
        if module == prefix.rstrip(".") or module.startswith(prefix.rstrip(".") + "."):
            return "runtime" if module == "envfarm.servers" else name
    return "cli"


def tree_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for folder in FOLDERS
        for path in sorted((REPO / folder).rglob("*.py"))
        if "__pycache__" not in path.parts and not any(p.startswith(".") for p in path.relative_to(REPO).parts)
    }


def imported_names(path: Path, module: str) -> list[tuple[str, int]]:
    """Every module name an import statement of `path` names (`from a import b` names `a` and `a.b`)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names += [(base, node.lineno), *((f"{base}.{alias.name}", node.lineno) for alias in node.names)]
    return names


@functools.cache
def import_graph() -> nx.DiGraph:
    """module -> module it imports (the deepest module of the tree an import names), with the line."""
    modules = tree_modules()
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        for name, line in imported_names(path, module):
            target = name
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # a package's own parents (`envfarm`, `envfarm.servers`) are imported by every submodule: not an edge
            if target and target != module and not module.startswith(target + "."):
                graph.add_edge(module, target, where=f"{path.relative_to(REPO)}:{line}")
    return graph


def layer_violations(graph: nx.DiGraph) -> list[str]:
    found = []
    for source, target, where in graph.edges(data="where"):
        mine, theirs = group(source), group(target)
        if RANKS[theirs] > RANKS[mine] or (RANKS[theirs] == RANKS[mine] and mine != theirs):
            direction = "up" if RANKS[theirs] > RANKS[mine] else "sideways"
            found.append(f"{where}: {source} ({mine}) imports {target} ({theirs}): {direction}")
    return sorted(found)


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def new_cycles(graph: nx.DiGraph) -> list[list[str]]:
    """The cycles that are not inside a known one."""
    return [c for c in cycles(graph) if not any(set(c) <= known for known in KNOWN_CYCLES)]


def test_the_tree_is_read_under_its_installed_names() -> None:
    modules = tree_modules()
    assert {"envfarm.cli", "envfarm.llm", "envfarm.clients.tasks", "envfarm.factory.sandbox.guard"} <= set(modules)
    assert {"envfarm.servers.runtime.cli", "envfarm.servers.clinic.server"} <= set(modules)
    assert module_name(REPO / "clients" / "scoring" / "__init__.py") == "envfarm.clients.scoring"
    assert [group(m) for m in ("envfarm", "envfarm.servers", "envfarm.servers.runtime.farm")] == ["namespace"] + [
        "runtime"
    ] * 2
    assert [
        group(m) for m in ("envfarm.servers.clinic.tools", "envfarm.factory.specs.clinic.seed", "envfarm.bench")
    ] == [
        "server",
        "factory",
        "cli",
    ]


def test_nothing_imports_a_folder_by_its_own_name() -> None:
    """`clients`, `factory` and `servers` are importable only as `envfarm.*` once installed; from the
    checkout's root they would also import under the bare name, as second copies of every module."""
    bare = {"clients", "factory", "servers"}
    files = [*tree_modules().items(), *((p.stem, p) for p in sorted((REPO / "tests").rglob("*.py")))]
    found = [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for module, path in files
        for name, line in imported_names(path, module)
        if name.split(".", 1)[0] in bare
    ]
    assert found == []


def test_imports_go_down_the_layers_only() -> None:
    assert layer_violations(import_graph()) == []


def test_there_is_no_import_cycle_but_the_known_ones() -> None:
    assert new_cycles(import_graph()) == []


def test_the_checks_catch_an_upward_import_a_sideways_one_and_a_cycle() -> None:
    """The rules themselves fail where they should (a graph with the three faults added)."""
    graph = import_graph().copy()  # the cached graph stays the tree's
    graph.add_edge("envfarm.servers.runtime.farm", "envfarm.cli", where="farm.py:1")
    graph.add_edge("envfarm.factory.verify.verifier", "envfarm.clients.connect", where="verify.py:1")
    graph.add_edge("envfarm.servers.runtime.cli", "envfarm.servers.runtime.farm", where="cli.py:1")
    graph.add_edge("envfarm.servers.runtime.farm", "envfarm.servers.runtime.cli", where="farm.py:2")
    problems = layer_violations(graph)
    assert "farm.py:1: envfarm.servers.runtime.farm (runtime) imports envfarm.cli (cli): up" in problems
    assert (
        "verify.py:1: envfarm.factory.verify.verifier (factory) imports envfarm.clients.connect (clients): sideways"
        in problems
    )
    assert any({"envfarm.servers.runtime.cli", "envfarm.servers.runtime.farm"} <= set(c) for c in new_cycles(graph))
