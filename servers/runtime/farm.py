"""Load generated servers by name from a farm folder, for `envfarm serve` and for hosting many in one process.

A server is imported by location: `<farm_root>/servers/<name>/` becomes the package `envfarm.servers.<name>`,
so its own absolute imports (`envfarm.servers.<name>.tools`) resolve inside that folder while
`envfarm.servers.runtime` stays this installation's runtime. A server the registry does not mark
`trust: "reviewed"` gets its handlers run in a sandboxed process (`envfarm.servers.runtime.contained`).
Nothing is added to sys.path, so which folder runs is never a matter of the working directory or PYTHONPATH.
One process holds one package per name: loading a second farm's copy of a name already imported is refused.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from mcp.server.mcpserver import MCPServer

from envfarm.servers.runtime.contained import contain, inside_sandbox
from envfarm.servers.runtime.registry import Registry, load_registry, packaged_farm_root


def _imported_from(module: ModuleType) -> list[Path]:
    return [Path(p).resolve() for p in getattr(module, "__path__", [])]


def contained(registry: Registry, name: str) -> bool:
    """Whether server `name`'s handlers run in a sandboxed process (`envfarm.servers.runtime.contained`): all but
    those the registry records as built from the project's reviewed specs, unless this process is a
    sandbox already (the verifier's)."""
    entry = registry.get(name)
    return not (inside_sandbox() or (entry is not None and entry.trust == "reviewed"))


def import_server(farm_root: Path, name: str, registry: Registry | None = None) -> ModuleType:
    """Import `<farm_root>/servers/<name>/server.py` as `envfarm.servers.<name>.server`; the handlers of a server
    the farm's registry does not mark reviewed are put in a sandboxed process, never imported here."""
    folder = (farm_root / "servers" / name).resolve()
    if not name.isidentifier() or not (folder / "server.py").is_file():
        raise LookupError(f"no server named {name!r} in the farm {farm_root} ({folder / 'server.py'} not found)")
    package = f"envfarm.servers.{name}"
    loaded = sys.modules.get(package)
    if loaded is None:
        spec = importlib.util.spec_from_file_location(
            package, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        if spec is None or spec.loader is None:
            raise LookupError(f"{folder} is not an importable package (no __init__.py?)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[package] = module
        try:
            if contained(registry if registry is not None else load_registry(farm_root), name):
                module.handlers = contain(package, folder)  # type: ignore[attr-defined]
            spec.loader.exec_module(module)
        except BaseException:
            for loaded_name in (package, f"{package}.handlers"):
                sys.modules.pop(loaded_name, None)
            raise
    elif _imported_from(loaded) != [folder]:
        where = ", ".join(str(p) for p in _imported_from(loaded))
        raise LookupError(f"{package} is already imported from {where}; one process cannot also load {folder}")
    return importlib.import_module(f"{package}.server")


def load_server(farm_root: Path, name: str, registry: Registry | None = None, **options: Any) -> MCPServer:
    """Build the server `name` of the farm at `farm_root`."""
    server: MCPServer = import_server(farm_root, name, registry).build(**options)
    return server


def load_servers(farm_root: Path, names: Iterable[str], **options: Any) -> dict[str, MCPServer]:
    registry = load_registry(farm_root)  # read once for the farm, not once per server
    return {name: load_server(farm_root, name, registry, **options) for name in names}


def stdio_args(farm_root: Path, name: str) -> list[str]:
    """Arguments to this Python that run server `name` of `farm_root` over stdio from any folder with no
    PYTHONPATH: `-m envfarm.servers.<name>` for the installed farm, else `envfarm serve` (same distribution)
    with the farm named, which imports the server from that folder."""
    if farm_root.resolve() == packaged_farm_root() and not contained(load_registry(farm_root), name):
        return [
            "-m",
            f"envfarm.servers.{name}",
        ]  # `-m envfarm.servers.<name>` imports its handlers: reviewed servers only
    return ["-m", "envfarm.cli", "--farm", str(farm_root.resolve()), "serve", name]
