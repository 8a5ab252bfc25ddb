"""Load an environment source: a folder with `spec.yaml` (or `.json`), optional `handlers.py`
(custom tool behaviour), optional `seed.py` (deterministic seed rows from `spec.seed_number`) and
optional `policy.md` (what the agent may and may not do; the server's instructions carry it).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envfarm.factory.ids import opaque_seed
from envfarm.factory.sandbox.guard import VIOLATION
from envfarm.factory.spec import POLICY_NAME, EnvironmentSpec, SpecError, parse_spec, read_document
from envfarm.servers.runtime.python_ast import parse_module

SPEC_NAMES = ("spec.yaml", "spec.yml", "spec.json")
# A seed is a small world an agent explores, not a data set: the largest built-in server has 812 rows in
# one table, a 0.6 MB seed and an 82 KB spec file. Anything far past that is refused as it is read,
# naming its size, before any verification work (100,000 inline rows once took 368 s to be refused, for
# a symptom): a spec file by its size before it is parsed, then a seed by its rows and bytes.
MAX_SEED_ROWS_PER_TABLE = 5_000
MAX_SEED_BYTES = 8 * 1024 * 1024
MAX_SPEC_FILE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class EnvironmentSource:
    spec: EnvironmentSpec
    spec_path: Path
    handlers: str | None


def find_spec_file(path: Path) -> Path:
    if path.is_file():
        return path
    for name in SPEC_NAMES:
        if (path / name).is_file():
            return path / name
    raise SpecError(str(path), [("", f"no spec file: expected one of {', '.join(SPEC_NAMES)}")])


def handler_functions(source: str, origin: str) -> set[str]:
    """Top-level function names in handlers.py, read without importing it (it is untrusted)."""
    try:
        tree = parse_module(source, origin)
    except SyntaxError as exc:
        raise SpecError(origin, [(f"line {exc.lineno}", f"handlers.py does not parse: {exc.msg}")]) from exc
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def check_seed_size(seed: Any, origin: str) -> None:
    """Refuse a seed over MAX_SEED_ROWS_PER_TABLE rows in a table or MAX_SEED_BYTES of JSON, naming its size."""
    if not isinstance(seed, dict):
        return  # parse_spec reports a malformed seed
    problems = [
        (f"seed.{table}", f"{len(rows):,} rows: over the limit of {MAX_SEED_ROWS_PER_TABLE:,} rows per table")
        for table, rows in seed.items()
        if isinstance(rows, list) and len(rows) > MAX_SEED_ROWS_PER_TABLE
    ]
    if not problems:
        size = len(json.dumps(seed, default=str))
        if size > MAX_SEED_BYTES:
            problems.append(("seed", f"{size:,} bytes of rows: over the limit of {MAX_SEED_BYTES:,} bytes"))
    if problems:
        raise SpecError(origin, problems)


def generate_seed(seed_file: Path, spec: EnvironmentSpec, timeout_s: float = 120.0) -> dict[str, list[dict]]:
    """Run `seed.py`'s `build(rng, now)` with the spec's seed number, in a sandboxed process
    (`envfarm.factory.sandbox.seeds`): a spec folder's code never runs in the factory's own process."""
    command = [
        sys.executable,
        "-m",
        "envfarm.factory.sandbox.seeds",
        str(seed_file),
        str(spec.seed_number),
        spec.now.isoformat(),
    ]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SpecError(str(seed_file), [("build", f"took more than {timeout_s:g} s")]) from exc
    if run.returncode != 0:
        said = [line for line in run.stderr.strip().splitlines() if line.strip()]
        violation = next((line for line in said if line.startswith(VIOLATION)), None)
        raise SpecError(str(seed_file), [("build", violation or (said[-1] if said else f"exit code {run.returncode}"))])
    if len(run.stdout) > MAX_SEED_BYTES:
        raise SpecError(
            str(seed_file),
            [("build", f"{len(run.stdout):,} bytes of rows: over the limit of {MAX_SEED_BYTES:,} bytes")],
        )
    try:
        rows = json.loads(run.stdout)
    except json.JSONDecodeError as exc:
        raise SpecError(str(seed_file), [("build", f"printed something that is not its rows: {exc}")]) from exc
    if not isinstance(rows, dict):
        raise SpecError(str(seed_file), [("build", f"must return {{table: [rows]}}, got {type(rows).__name__}")])
    check_seed_size(rows, str(seed_file))
    return rows


def _opaque_seed(data: dict) -> Any:
    """The seed with sequential ids made opaque (envfarm.factory.ids); a malformed spec is left for parse_spec
    to report."""
    entities, seed = data.get("entities"), data.get("seed")
    if not isinstance(entities, dict) or not isinstance(seed, dict):
        return seed
    try:
        formats = {t: str(e["id_format"]) for t, e in entities.items()}
        keys = {t: str(e["primary_key"]) for t, e in entities.items()}
    except (KeyError, TypeError):
        return seed
    return opaque_seed(str(data.get("id_namespace") or data.get("name", "")), formats, keys, seed)


# Turns an API document (its path and parsed content) into a source: `envfarm.factory.importers.documents`.
ImportDocument = Callable[[Path, dict[str, Any]], EnvironmentSource]


def load_environment(path: Path, import_document: ImportDocument | None = None) -> EnvironmentSource:
    """Read and validate one environment; SpecError lists every problem with file and field path.

    A file that is an OpenAPI document or EnvFactory metadata rather than a spec goes to `import_document`
    (the importers sit above this module and pass themselves in); without one it is refused."""
    spec_file = find_spec_file(path)
    folder = spec_file.parent
    if (size := spec_file.stat().st_size) > MAX_SPEC_FILE_BYTES:
        raise SpecError(str(spec_file), [("", f"{size:,} bytes: over the limit of {MAX_SPEC_FILE_BYTES:,} bytes")])
    data = read_document(spec_file)
    if isinstance(data, dict):
        check_seed_size(data.get("seed"), str(spec_file))
    if path.is_file() and isinstance(data, dict) and ("openapi" in data or "swagger" in data or "class_name" in data):
        if import_document is None:
            raise SpecError(str(path), [("", "an API document, not a spec: import it first (envfarm import)")])
        return import_document(path, data)
    handlers_file = folder / "handlers.py"
    handlers = handlers_file.read_text(encoding="utf-8") if handlers_file.is_file() else None
    names = handler_functions(handlers, str(handlers_file)) if handlers is not None else set()
    seed_file = folder / "seed.py"
    if seed_file.is_file() and isinstance(data, dict):
        # Validate the rest first so the seed builder sees a well-formed clock and seed number;
        # if it is malformed, parse_spec below reports every problem.
        try:
            header: EnvironmentSpec | None = EnvironmentSpec.model_validate({**data, "seed": {}})
        except ValidationError:
            header = None
        if header is not None:
            generated = generate_seed(seed_file, header)
            data = {**data, "seed": {**(data.get("seed") or {}), **generated}}
    if isinstance(data, dict):
        check_seed_size(data.get("seed"), str(spec_file))
    if isinstance(data, dict) and data.get("ids") == "opaque":
        data = {**data, "seed": _opaque_seed(data)}
    policy_file = folder / POLICY_NAME
    if policy_file.is_file() and isinstance(data, dict):
        data = {**data, "policy": policy_file.read_text(encoding="utf-8")}
    spec = parse_spec(data, str(spec_file), names)
    return EnvironmentSource(spec=spec, spec_path=spec_file, handlers=handlers)
