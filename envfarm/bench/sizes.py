"""How much work each measurement does."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sizes:
    """How much work each measurement does; --quick shrinks everything to a smoke run."""

    resets: int
    calls: int
    sessions: int
    episodes: int
    cold_starts: int
    farm_copies: int
    worker_tasks: int = 200  # `rollout --workers 1|2` on this many synthesized tasks
    worker_k: int = 5
    worker_rounds: int = 2
    era_episodes: int = 100  # isolated episodes per era per block, one at a time
    era_rounds: int = 4  # blocks of each era, alternating which era goes first

    @classmethod
    def for_mode(cls, quick: bool) -> Sizes:
        return (
            cls(
                resets=200,
                calls=30,
                sessions=40,
                episodes=50,
                cold_starts=3,
                farm_copies=2,
                worker_tasks=8,
                worker_k=2,
                worker_rounds=1,
                era_episodes=10,
                era_rounds=2,
            )
            if quick
            else cls(resets=2000, calls=400, sessions=1000, episodes=1000, cold_starts=15, farm_copies=4)
        )
