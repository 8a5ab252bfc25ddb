"""A server process's start-up: what `python -m envfarm.servers.<name>` imports before its first answer, and
the collector pause around it (`envfarm.servers.runtime.cli.start_up`)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest

from envfarm.bench.startup import HANDSHAKE, cold_start_sample
from envfarm.servers.runtime.cli import start_up


def _imported_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=60)
    return set(json.loads(done.stdout))


def test_the_entry_point_imports_neither_the_sdk_nor_pydantic() -> None:
    """`cli` is imported by every server's `__main__` before `start_up` begins: what it imported would be
    outside the pause."""
    loaded = _imported_after("import envfarm.servers.runtime.cli")
    heavy = sorted(m for m in loaded if m.split(".")[0] in {"mcp", "mcp_types", "pydantic", "sqlite3", "anyio"})
    assert heavy == []
    runtime = {m for m in loaded if m.startswith("envfarm.servers.runtime.")}
    assert runtime == {"envfarm.servers.runtime.cli"}


def test_the_runtime_package_still_offers_its_public_names() -> None:
    import envfarm.servers.runtime as runtime
    from envfarm.servers.runtime.database import Database
    from envfarm.servers.runtime.toolkit import Page

    assert runtime.Database is Database and runtime.Page is Page
    assert set(runtime.__all__) == {n for n in runtime.__all__ if getattr(runtime, n) is not None}
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = runtime.Nope


def test_a_stdio_server_serves_no_http_stack() -> None:
    """Serving stdio imports neither the farm's HTTP host nor the registry (the CLI's `--source`), nor ctypes
    (for the first closed episode). The SDK itself imports uvicorn, for every server alike."""
    loaded = _imported_after(
        "import envfarm.servers.runtime.cli as cli, argparse\n"
        "p = argparse.ArgumentParser(); cli.add_serving_arguments(p)\n"
        "from envfarm.servers.clinic.server import build\n"
        "cli._prepare(p, p.parse_args([]), 'clinic', build)"
    )
    assert "envfarm.servers.clinic.server" in loaded and "envfarm.servers.runtime.stdio" in loaded
    assert not {"envfarm.servers.runtime.http", "envfarm.servers.runtime.registry", "ctypes"} & loaded


def test_start_up_pauses_collection_and_freezes_what_it_made() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        with start_up():
            assert not gc.isenabled()
            made: list[list[int]] = [[] for _ in range(1000)]
        assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(made)
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        with start_up():  # someone else turned it off: left so, nothing frozen
            pass
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_server_answers_the_handshake_after_start_up() -> None:
    """The whole path: spawn, initialize and tools/list written at once, the answer, and the CPU it took."""
    wall, cpu, answered = cold_start_sample([sys.executable, "-m", "envfarm.servers.clinic"], timeout=120)
    assert 0 < wall < 120 and cpu > 0
    assert answered is None or 0 < answered <= cpu + 0.05
    assert HANDSHAKE.count(b"\n") == 3
