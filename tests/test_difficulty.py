"""Graded difficulty: the sampled heuristic gives each task a solve rate in [0, 1], the same again for
the same tasks, and `--difficulty LO:HI` keeps the band."""

from __future__ import annotations

import pytest
from conftest import REPO

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.difficulty import POLICY, grade, in_band, parse_band
from envfarm.clients.synthesize import SynthesisOptions, synthesize


@pytest.mark.slow
async def test_solve_rates_are_fractions_of_k_and_repeat() -> None:
    servers = ["clinic", "banking", "calendar", "mail"]
    async with Connections(farm_targets(REPO, servers)) as farm:
        tasks = (await synthesize(SynthesisOptions(n=6, seed=3, servers=servers), farm)).tasks
        graded = await grade(tasks, farm, k=4)
        again = await grade(tasks, farm, k=4)
    rates = [t.difficulty.solve_rate[POLICY] for t in graded if t.difficulty]
    assert len(rates) == len(tasks) and all(r in {0.0, 0.25, 0.5, 0.75, 1.0} for r in rates)
    assert rates == [t.difficulty.solve_rate[POLICY] for t in again if t.difficulty]
    assert all(t.difficulty and t.difficulty.rollouts[POLICY] == 4 for t in graded)
    low = in_band(graded, 0.0, 0.0)
    assert all(t.difficulty and t.difficulty.solve_rate[POLICY] == 0.0 for t in low)
    assert len(in_band(graded, 0.0, 1.0)) == len(graded)


@pytest.mark.parametrize("text", ["0.5", "a:b", "0.8:0.2", "0:2"])
def test_a_bad_band_is_a_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match="--difficulty"):
        parse_band(text)
    assert parse_band("0.2:0.8") == (0.2, 0.8)
