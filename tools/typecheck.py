"""mypy over the tree under its installed names: `python tools/typecheck.py [mypy options] [FILES...]`.

setup.py maps the folders `clients/`, `factory/` and `servers/` to `envfarm.clients`, `envfarm.factory` and
`envfarm.servers`. mypy names a file after its folders (`clients/tasks.py` without the `envfarm.` prefix) and
cannot follow the finder setuptools installs for an editable install, so plain `mypy` finds no
`envfarm.clients.tasks`. This runs mypy's own build with each file given under the name code imports it
by; the files, excludes and overrides still come from pyproject.toml's [tool.mypy], and the output is
mypy's (`Success: no issues found in N source files`, or the errors with the checkout's paths).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.fscache import FileSystemCache
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "envfarm"


def installed_name(path: Path) -> str:
    """`clients/scoring/state.py` -> `envfarm.clients.scoring.state`; `envfarm/cli/__init__.py` -> `envfarm.cli`."""
    parts = list(path.resolve().relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts if parts[0] == NAMESPACE else [NAMESPACE, *parts])


def main(argv: list[str]) -> int:
    fscache = FileSystemCache()
    found, options = process_options(argv, fscache=fscache)
    sources = [BuildSource(s.path, installed_name(Path(s.path)), None) if s.path else s for s in found]
    try:
        result = build.build(sources, options, fscache=fscache)
    except CompileError as exc:
        print("\n".join(exc.messages), file=sys.stderr)
        return 2
    if result.errors:
        print("\n".join(result.errors))
        files = len({line.split(":", 1)[0] for line in result.errors if ": error:" in line})
        print(f"Found {sum(': error:' in line for line in result.errors)} errors in {files} files")
        return 1
    print(f"Success: no issues found in {len(sources)} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
