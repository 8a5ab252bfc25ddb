"""Which farm a command works on, and how a server of another farm is imported: by location, by name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ANNEX, REPO

import envfarm.servers.clinic
from envfarm.cli import main
from envfarm.servers.runtime.farm import import_server, load_server
from envfarm.servers.runtime.registry import (
    REGISTRY_FILE,
    default_farm_root,
    load_registry,
    packaged_farm_root,
    registry_file,
)


def test_the_installed_farm_is_the_folder_holding_the_servers_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENVFARM_HOME", raising=False)
    assert packaged_farm_root() == default_farm_root() == Path(envfarm.servers.clinic.__file__).resolve().parents[2]
    monkeypatch.setenv("ENVFARM_HOME", str(REPO / "elsewhere"))
    assert default_farm_root() == (REPO / "elsewhere").resolve()


def test_a_server_of_another_farm_is_imported_from_that_folder(farm_root: Path) -> None:
    module = import_server(farm_root, ANNEX)
    assert module.__name__ == f"envfarm.servers.{ANNEX}.server"
    assert Path(module.__file__ or "").resolve() == (farm_root / "servers" / ANNEX / "server.py").resolve()
    assert module.DEFINITION.seed_rows() and import_server(farm_root, ANNEX) is module


def test_one_process_refuses_a_second_farms_copy_of_a_server(farm_root: Path) -> None:
    """`envfarm.servers.clinic` of this checkout is imported; the temporary farm's clinic cannot also be."""
    assert import_server(REPO, "clinic").__name__ == "envfarm.servers.clinic.server"
    with pytest.raises(LookupError, match=r"servers\.clinic is already imported from .*; one process cannot"):
        import_server(farm_root, "clinic")


@pytest.mark.parametrize("name", ["nosuch", "../clinic", "runtime"])
def test_a_name_that_is_not_a_server_of_the_farm_is_refused(farm_root: Path, name: str) -> None:
    with pytest.raises(LookupError, match=f"no server named {name!r} in the farm {farm_root}"):
        load_server(farm_root, name)


def test_an_installed_farm_reads_its_packaged_registry_and_refuses_builds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wheel ships registry.json inside `servers/`; building into that farm would write into site-packages."""
    (tmp_path / "servers").mkdir()
    shutil.copy(REPO / REGISTRY_FILE, tmp_path / "servers" / REGISTRY_FILE)
    assert registry_file(tmp_path) == tmp_path / "servers" / REGISTRY_FILE
    assert load_registry(tmp_path) == load_registry(REPO)
    assert main(["--farm", str(tmp_path), "build", str(REPO / "factory" / "specs" / "clinic")]) == 2
    assert "read-only; build into a folder with --out DIR" in capsys.readouterr().err
    assert not (tmp_path / REGISTRY_FILE).exists() and not (tmp_path / "servers" / "clinic").exists()


@pytest.mark.parametrize("name", [s.name for s in load_registry(REPO).servers])
def test_a_published_seed_image_holds_exactly_the_schema_and_the_seed_rows(name: str) -> None:
    """Servers start from `seed.sqlite`, not from seed.json: the image must be what the two build."""
    from envfarm.servers.runtime.database import snapshot
    from envfarm.servers.runtime.episodes import SEED_IMAGE, build_seed, open_memory

    definition = import_server(REPO, name).DEFINITION
    shipped = open_memory((definition.directory / SEED_IMAGE).read_bytes())
    built = build_seed(definition.schema_sql(), definition.seed_rows(), id_namespace=definition.id_namespace)
    assert snapshot(shipped) == snapshot(built) and snapshot(shipped)
    schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    assert shipped.execute(schema).fetchall() == built.execute(schema).fetchall()
    sequences = "SELECT * FROM _envfarm_sequences ORDER BY 1"
    assert shipped.execute(sequences).fetchall() == built.execute(sequences).fetchall()
