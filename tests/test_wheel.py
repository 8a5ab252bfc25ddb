"""A non-editable install works from any folder: build the wheel, install it into a fresh venv, and use
the farm from a folder that is not the checkout, with no PYTHONPATH.

The fresh venv gets the wheel and nothing else (`--no-deps`); its dependencies come from this test
environment's site-packages through a `.pth` line, so the test needs no network beyond what building
the wheel needs (pip fetches `setuptools` for the isolated build, as any `pip wheel` does). A path that
a `.pth` line adds is not a site directory, so the checkout's editable-install hook is not run there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from mcp import Client, StdioServerParameters
from test_inspector import NPX, inspector

from envfarm.servers.runtime.episodes import SEED_IMAGE
from envfarm.servers.runtime.listing import SCHEMAS_FILE
from envfarm.servers.runtime.registry import REGISTRY_FILE, load_registry

pytestmark = pytest.mark.slow

SOURCES = (
    "pyproject.toml",
    "setup.py",
    "MANIFEST.in",
    "README.md",
    REGISTRY_FILE,
    "envfarm",
    "factory",
    "servers",
    "clients",
)
SERVER_DATA = (
    "seed.json",
    SEED_IMAGE,
    SCHEMAS_FILE,
    "schema.sql",
    "spec.json",
    "server.json",
    "verification.json",
    "README.md",
)
# Nothing that could point the installed farm back at the checkout.
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENVFARM_HOME")}


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    elsewhere: Path

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *command: str) -> str:
        done = subprocess.run(
            command, check=False, cwd=self.elsewhere, env=ENV, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done.stdout


def run(*command: str | Path, cwd: Path) -> None:
    done = subprocess.run([str(c) for c in command], check=False, cwd=cwd, env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel, built from a copy of the sources (a build writes build/ beside them), in a fresh venv."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", ".staging-*", ".old-*", "*.sqlite*")

    def ignore(folder: str, names: list[str]) -> set[str]:
        return skip(folder, names) - {SEED_IMAGE}  # the seed image ships; other SQLite files are local state

    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=ignore)
        else:
            shutil.copy2(REPO / name, source / name)
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", work / "dist", source, cwd=work)
    [wheel] = (work / "dist").glob("envfarm-*.whl")
    venv = work / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=work)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_path(kind) for kind in ("purelib", "platlib"))
    Path(site, "_envfarm_test_dependencies.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--quiet",
        "--no-deps",
        "--no-index",
        wheel,
        cwd=work,
    )
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    return Installed(wheel=wheel, venv=venv, elsewhere=elsewhere)


def test_the_wheel_carries_the_registry_and_every_servers_data(installed: Installed) -> None:
    registry = load_registry(REPO)
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        assert wheel.read(f"envfarm/servers/{REGISTRY_FILE}") == (REPO / REGISTRY_FILE).read_bytes()
    missing = [
        f"envfarm/servers/{s.name}/{f}"
        for s in registry.servers
        for f in SERVER_DATA
        if f"envfarm/servers/{s.name}/{f}" not in names
    ]
    assert missing == []


def test_the_wheel_installs_only_envfarm_at_the_top_of_site_packages(installed: Installed) -> None:
    """`clients/`, `factory/` and `servers/` of the checkout are `envfarm.clients`, `envfarm.factory` and
    `envfarm.servers` once installed: no generic top-level name that another distribution could also claim."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        tops = {name.split("/", 1)[0] for name in wheel.namelist()}
        assert {
            "envfarm/clients/tasks.py",
            "envfarm/factory/sandbox/guard.py",
            "envfarm/servers/runtime/cli.py",
        } <= set(wheel.namelist())
    assert tops == {"envfarm", installed.wheel.name.split("-py3")[0] + ".dist-info"}
    code = "import importlib.util as u; print([u.find_spec(n) is None for n in ('clients', 'factory', 'servers')])"
    assert installed.run(installed.bin("python"), "-c", code).strip() == "[True, True, True]"


def test_the_installed_packages_come_from_the_venv_not_the_checkout(installed: Installed) -> None:
    code = (
        "import envfarm.clients, envfarm.factory, envfarm.servers.clinic; "
        "print(envfarm.__file__, envfarm.clients.__file__, envfarm.factory.__file__, envfarm.servers.clinic.__file__)"
    )
    files = [Path(f) for f in installed.run(installed.bin("python"), "-c", code).split()]
    assert len(files) == 4 and all(f.is_relative_to(installed.venv) for f in files), files


def test_envfarm_list_shows_the_whole_farm(installed: Installed) -> None:
    out = installed.run(installed.bin("envfarm"), "list").splitlines()
    rows = out[2 : out.index("")]
    expected = [s.name for s in load_registry(REPO).servers]
    assert [row.split()[0] for row in rows] == expected and len(expected) == 24
    assert out[-1].startswith("24 servers, 8 domains")


def test_every_server_of_the_installed_farm_loads(installed: Installed) -> None:
    """What `envfarm serve --all` (and the Dockerfile) hosts: each registered server, built from site-packages."""
    code = (
        "from envfarm.servers.runtime.farm import load_servers\n"
        "from envfarm.servers.runtime.registry import default_farm_root, load_registry\n"
        "root = default_farm_root()\n"
        "hosted = load_servers(root, [s.name for s in load_registry(root).servers])\n"
        "print(root, ' '.join(hosted))"
    )
    root, *names = installed.run(installed.bin("python"), "-c", code).split()
    assert Path(root).is_relative_to(installed.venv)
    assert names == [s.name for s in load_registry(REPO).servers]


async def test_the_printed_config_launches_a_server_with_no_pythonpath(installed: Installed) -> None:
    config = json.loads(installed.run(installed.bin("envfarm"), "config", "clinic"))
    entry = config["mcpServers"]["clinic"]
    assert entry == {"command": installed.bin("python"), "args": ["-m", "envfarm.servers.clinic"]}
    spec = json.loads((REPO / "servers" / "clinic" / "spec.json").read_text(encoding="utf-8"))
    farm = installed.elsewhere / "farm"  # a farm folder of its own, served by the runtime's entry point
    if not farm.exists():
        shutil.copytree(
            REPO / "servers" / "clinic", farm / "servers" / "clinic", ignore=shutil.ignore_patterns("__pycache__")
        )
        shutil.copy2(REPO / REGISTRY_FILE, farm / REGISTRY_FILE)
    launches = [
        StdioServerParameters(command=entry["command"], args=entry["args"], cwd=installed.elsewhere),
        StdioServerParameters(command=installed.bin("envfarm"), args=["serve", "clinic"], cwd=installed.elsewhere),
        StdioServerParameters(
            command=installed.bin("python"),
            args=["-m", "envfarm.servers.runtime", "--farm", str(farm), "clinic"],
            cwd=installed.elsewhere,
        ),
    ]
    for params in launches:
        async with Client(params) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            found = await client.call_tool("find_patient", {"full_name": "lopez"})
        assert tools == [tool["name"] for tool in spec["tools"]], params.args
        assert not found.is_error and found.structured_content and found.structured_content["count"] >= 1


@pytest.mark.inspector
@pytest.mark.skipif(NPX is None, reason="npx is not installed")
def test_the_inspector_lists_the_installed_servers_tools(installed: Installed) -> None:
    spec = json.loads((REPO / "servers" / "clinic" / "spec.json").read_text(encoding="utf-8"))
    listed = inspector("--method", "tools/list", python=installed.bin("python"), cwd=installed.elsewhere)
    assert [tool["name"] for tool in listed["tools"]] == [tool["name"] for tool in spec["tools"]]
