"""Write a generated server into the farm: stage, then swap in atomically with its registry entry.

A failed build leaves `servers/` and `registry.json` exactly as they were: files are written to a
staging folder inside `servers/` and only renamed into place once everything succeeded.

The staging folder is itself a small farm root, `servers/.staging-<name>-xxxx/servers/<name>/`, so
the staged code can be run and verified as the real package `envfarm.servers.<name>` (`envfarm --farm
<staging root> serve <name>` imports it from there) before it is published, and published by one
rename on the same disk.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from envfarm.factory.generate.codegen import render_server
from envfarm.factory.source import EnvironmentSource
from envfarm.servers.runtime import listing
from envfarm.servers.runtime.contained import contain
from envfarm.servers.runtime.episodes import SEED_IMAGE, seed_image
from envfarm.servers.runtime.registry import Launch, RegistryEntry, Trust, load_registry, write_registry

SPEC_FILES = ("spec.json", "seed.json")
CODE_SUFFIXES = (".py", ".sql", ".sqlite")  # the seed image runs too: servers load it instead of seed.json
CODE_FILES = (listing.SCHEMAS_FILE,)  # the tool schemas a server lists
REPORT_FILE = "verification.json"


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("envfarm")
    except PackageNotFoundError:
        return "0.0.0"


def _digest(paths: list[Path], root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def spec_hash(server_dir: Path) -> str:
    """Hash of what the server was built from: spec.json and seed.json."""
    return _digest([server_dir / name for name in SPEC_FILES], server_dir)


def _code_files(server_dir: Path) -> list[Path]:
    return [p for p in server_dir.iterdir() if (p.suffix in CODE_SUFFIXES or p.name in CODE_FILES) and p.is_file()]


def code_hash(server_dir: Path) -> str:
    """Hash of everything that runs: the generated Python, handlers, schema.sql, the seed image and the
    listed tool schemas."""
    return _digest(_code_files(server_dir), server_dir)


def runtime_hash() -> str:
    """Hash of the shared runtime (`servers/runtime/*.py`) every server runs on: a change to it
    is drift too, because what was verified is no longer what runs."""
    import envfarm.servers.runtime

    root = Path(envfarm.servers.runtime.__file__).parent
    return _digest(sorted(root.glob("*.py")), root)


def file_hashes(server_dir: Path) -> dict[str, str]:
    """sha256 of each file the two hashes cover, so drift can name the file that changed."""
    paths = [server_dir / name for name in SPEC_FILES if (server_dir / name).is_file()] + _code_files(server_dir)
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(paths)}


def write_files(target: Path, files: dict[str, str]) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for relative, text in files.items():
        (target / relative).write_text(text, encoding="utf-8")


def stage(source: EnvironmentSource, farm_root: Path) -> Path:
    """Generate the server into a fresh staging root inside `farm_root/servers/`; return the server
    folder, `<staging root>/servers/<name>` (see `staging_root`)."""
    servers_dir = farm_root / "servers"
    servers_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f".staging-{source.spec.name}-", dir=servers_dir))
    staged = root / "servers" / source.spec.name
    files = render_server(source.spec, source.handlers, package_version())
    write_files(staged, files)
    seed = seed_image(files["schema.sql"], json.loads(files["seed.json"]), source.spec.ids_namespace)
    (staged / SEED_IMAGE).write_bytes(seed)
    write_listing(staged)
    return staged


@contextmanager
def private_package(folder: Path) -> Iterator[str]:
    """Import the package in `folder` under a fresh private name (its own imports are relative), so a
    staged server is loaded beside a published one of the same name; forgotten when the block ends."""
    name = f"_envfarm_staged_{folder.name}_{secrets.token_hex(4)}"
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"{folder} is not an importable package")
    sys.modules[name] = importlib.util.module_from_spec(spec)
    try:
        contain(name, folder)  # handlers.py is untrusted: deriving the listing never runs it here
        spec.loader.exec_module(sys.modules[name])
        yield name
    finally:
        # a snapshot: builds stage in worker threads, and another one may be importing while this one forgets
        for module in [m for m in list(sys.modules) if m == name or m.startswith(f"{name}.")]:
            del sys.modules[module]


def write_listing(staged: Path) -> None:
    """Derive the tool schemas of the staged server once, as the SDK would at each start (`tools.json`)."""
    with private_package(staged) as package:
        definition = importlib.import_module(f"{package}.server").DEFINITION
        derived = listing.derive(
            [definition.function(tool) for tool in definition.tool_definitions()], staged / listing.TOOLS_MODULE
        )
    (staged / listing.SCHEMAS_FILE).write_text(derived.model_dump_json(indent=2) + "\n", encoding="utf-8")


def staging_root(staged: Path) -> Path:
    """The farm root of a staged server folder: the farm to run the staged code from."""
    return staged.parents[1]


def discard(staged: Path) -> None:
    """Remove a staging root and whatever is left in it (after publishing, or after a failure)."""
    shutil.rmtree(staging_root(staged), ignore_errors=True)


REVIEWED_SPECS = Path(__file__).resolve().parent / "specs"


def trust_of(source: EnvironmentSource) -> Trust:
    """'reviewed' for a server built from one of the project's own specs (factory/specs/, reviewed in
    its repository), 'generated' for anything else (proposed, imported, any other folder): its handlers
    then run in a sandboxed process at serve time."""
    return "reviewed" if source.spec_path.resolve().is_relative_to(REVIEWED_SPECS) else "generated"


def launch_args(name: str, trust: Trust) -> list[str]:
    """The stdio command of a published server: `-m envfarm.servers.<name>` imports its handlers into the
    process, so only a reviewed server is launched that way; any other goes through `envfarm serve`,
    whose loader runs its handlers in the sandbox."""
    return ["-m", f"envfarm.servers.{name}"] if trust == "reviewed" else ["-m", "envfarm.cli", "serve", name]


def registry_entry(
    source: EnvironmentSource, server_dir: Path, verification: str, verified_at: str | None
) -> RegistryEntry:
    spec = source.spec
    trust = trust_of(source)
    return RegistryEntry(
        name=spec.name,
        domain=spec.domain,
        title=spec.title,
        description=spec.description,
        version=spec.version,
        tags=[*spec.tags, *(["imported"] if spec.source and "imported" not in spec.tags else [])],
        tool_count=len(spec.tools),
        write_tool_count=sum(1 for t in spec.tools if t.changed_tables),
        tables=len(spec.entities),
        seed_rows=sum(len(rows) for rows in spec.seed.values()),
        launch=Launch(args=launch_args(spec.name, trust), http_path=f"/{spec.name}/mcp"),
        spec_hash=spec_hash(server_dir),
        code_hash=code_hash(server_dir),
        verification=verification,
        verified_at=verified_at,
        trust=trust,
        source=spec.source,
    )


def publish(
    source: EnvironmentSource,
    staging: Path,
    farm_root: Path,
    verification: str = "unverified",
    verified_at: str | None = None,
) -> RegistryEntry:
    """Move the staged server folder into `servers/<name>/` and record it in registry.json; all or
    nothing. The caller discards the emptied staging root."""
    name = source.spec.name
    target = farm_root / "servers" / name
    if verification == "passed" and verified_at is None:
        verified_at = datetime.now(UTC).isoformat(timespec="seconds")
    entry = registry_entry(source, staging, verification, verified_at)
    registry = load_registry(farm_root).with_entry(entry)
    backup = target.with_name(f".old-{name}")
    if backup.exists():
        shutil.rmtree(backup)
    if target.exists():
        os.replace(target, backup)
    try:
        os.replace(staging, target)
        write_registry(farm_root, registry)
    except BaseException:
        if target.exists():
            shutil.rmtree(target)
        if backup.exists():
            os.replace(backup, target)
        raise
    if backup.exists():
        shutil.rmtree(backup)
    return entry
