"""Shared fixtures: a small generated farm in a temporary folder, and that farm served over HTTP by a
real `envfarm serve --all` subprocess. Nothing here writes into the repository."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from envfarm.clients.connect import FarmProcess, farm_process
from envfarm.factory.build import build_all
from envfarm.render import render
from envfarm.servers.runtime.control import (
    EPISODE_META_KEY,
    CloseResult,
    EpisodeClient,
    ResetResult,
    State,
    StateResult,
)

REPO = Path(__file__).resolve().parents[1]
CLINIC_SPEC = REPO / "factory" / "specs" / "clinic"
# The farm's second server: the clinic under another name, so the farm host has several servers.
ANNEX = "clinic_annex"
EPISODE = EPISODE_META_KEY
# A future slot that is free in the clinic seed: every fresh episode can book it.
FREE_SLOT = "slot_kv2sy6"
# Two mailbox owners of the mail seed (Maria is its default principal).
NOAH, MARIA = "noah.moreau@example.com", "maria.patel@example.com"


@pytest.fixture(scope="session")
def farm_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A farm with `clinic` and `clinic_annex`, built (unverified, which is fast) from the clinic spec."""
    specs = tmp_path_factory.mktemp("specs")
    shutil.copytree(CLINIC_SPEC, specs / "clinic")
    shutil.copytree(CLINIC_SPEC, specs / ANNEX)
    spec_file = specs / ANNEX / "spec.yaml"
    renamed = spec_file.read_text().replace("name: clinic\n", f"name: {ANNEX}\nid_namespace: clinic\n", 1)
    spec_file.write_text(renamed)  # the same ids as the clinic: tests use one patient on both
    root = tmp_path_factory.mktemp("farm")
    built = anyio.run(partial(build_all, [specs], root, verify=False))
    assert built.ok, render(built)
    return root


@pytest.fixture(scope="session")
def mail_farm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A farm with `mail` (a user principal with scoped rows) and `clinic` (staff), built unverified (fast)."""
    specs = tmp_path_factory.mktemp("specs")
    for name in ("mail", "clinic"):
        shutil.copytree(REPO / "factory" / "specs" / name, specs / name)
    root = tmp_path_factory.mktemp("farm")
    built = anyio.run(partial(build_all, [specs], root, verify=False))
    assert built.ok, render(built)
    return root


@pytest.fixture(scope="session")
def farm(farm_root: Path) -> Iterator[FarmProcess]:
    """`envfarm serve --all` on a free loopback port, ready to answer; stopped at the end."""
    with farm_process(farm_root) as running:
        yield running


async def state(client: Client, episode: str | None = None, rows: bool = False) -> StateResult:
    """The control plane's view of an episode: hash, diff against the seed, and (optionally) rows."""
    return await EpisodeClient(client, episode).state(rows=rows)


async def reset(client: Client, episode: str | None = None, rows: State | None = None) -> ResetResult:
    return await EpisodeClient(client, episode).reset(rows)


async def close(client: Client, episode: str) -> CloseResult:
    return await EpisodeClient(client, episode).close()


def booking(slot: str, reason: str, patient: str = "pat_dc63z3") -> dict[str, str]:
    return {"patient_id": patient, "slot_id": slot, "reason": reason}


def reasons(result: types.CallToolResult) -> list[str]:
    """The visit reasons in a list_appointments result."""
    assert not result.is_error, result.content
    return sorted(a["reason"] for a in (result.structured_content or {})["appointments"])
