"""Scoring: state match on real clinic episodes (path-independent, strict about everything else),
claims matched by value (numbers, dates, case), pass@k / pass^k, rewards and the error taxonomy."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import FREE_SLOT, REPO

from clients.connect import Connections, farm_targets
from clients.scoring import (
    RewardConfig,
    grade_claim,
    pass_at_k,
    pass_hat_k,
    reward,
    state_match,
    value_found,
)
from clients.tasks import Claim, ExpectedState, Persona, Provenance, Task
from clients.trajectory import Score, ServerState

OTHER_SLOT = "slot_w76wb3"


async def final_state(calls: list[tuple[str, dict[str, Any]]], name: str) -> ServerState:
    """Run `calls` on a fresh clinic episode and return its final state."""
    async with Connections(farm_targets(REPO, ["clinic"])) as farm, farm.episode("clinic", name) as episode:
        for tool, arguments in calls:
            result = await episode.call_tool(tool, arguments)
            assert not result.is_error, result.content
        state = await episode.state()
    assert state is not None
    return ServerState(hash=state.hash, diff=state.diff)


def book(slot: str, reason: str) -> tuple[str, dict[str, Any]]:
    return "book_appointment", {"patient_id": "pat_dc63z3", "slot_id": slot, "reason": reason}


def task_expecting(state: ServerState) -> Task:
    return Task(
        id="t",
        servers=["clinic"],
        tools=[],
        persona=Persona(name="Lucas Yilmaz"),
        opening_message="Book both visits.",
        gold_calls=[],
        expected_state={"clinic": ExpectedState(hash=state.hash, diff=state.diff, tables=sorted(state.diff))},
        provenance=Provenance(sampler="hand", seed=0),
    )


async def test_state_match_is_path_independent_and_strict() -> None:
    gold = await final_state([book(FREE_SLOT, "checkup"), book(OTHER_SLOT, "chest pain")], "gold")
    task = task_expecting(gold)
    swapped = await final_state([book(OTHER_SLOT, "chest pain"), book(FREE_SLOT, "checkup")], "swapped")
    assert swapped.hash != gold.hash, "the two orders hand out the new ids the other way round"
    assert state_match(task, {"clinic": swapped}) == (True, [])
    with_reads = await final_state(
        [
            ("find_patient", {"full_name": "Lucas"}),
            book(OTHER_SLOT, "chest pain"),
            ("search_doctors", {}),
            book(FREE_SLOT, "checkup"),
        ],
        "reads",
    )
    assert state_match(task, {"clinic": with_reads}) == (True, [])

    wrong_reason = await final_state([book(FREE_SLOT, "checkup"), book(OTHER_SLOT, "headache")], "wrong")
    matched, problems = state_match(task, {"clinic": wrong_reason})
    assert matched is False and problems == ["clinic.appointments: added rows differ (1 missing, 1 unexpected)"]

    too_much = await final_state(
        [
            book(FREE_SLOT, "checkup"),
            book(OTHER_SLOT, "chest pain"),
            ("pay_invoice", {"invoice_id": "inv_qd5x84", "amount": 95.0}),
        ],
        "extra",
    )
    matched, problems = state_match(task, {"clinic": too_much})
    assert matched is False and problems == ["clinic.invoices: changed, but the task never touches it"]

    missing = await final_state([book(FREE_SLOT, "checkup")], "missing")
    matched, problems = state_match(task, {"clinic": missing})
    assert matched is False and "clinic.slots: updated rows differ (1 missing, 0 unexpected)" in problems
    assert state_match(task, {}) == (None, [])  # no state evidence: no verdict either way


@pytest.mark.parametrize(
    ("value", "answer", "found"),
    [
        ("95", "You paid $95.00 today.", True),
        ("1200.5", "The total was $1,200.50.", True),
        ("95", "You paid $9.50.", False),
        ("2026-03-02", "It is on March 2, 2026.", True),
        ("2026-03-02", "It is on 2 March.", True),
        ("2026-03-02", "It is on 2026-03-20.", False),
        ("2026-03-02T10:00:00Z", "Monday March 2 at 10:00 AM", True),
        ("2026-03-02T10:00:00Z", "Monday March 2 at 11:00", False),
        ("2026-03-02T14:30:00Z", "on 2026-03-02 at 2:30 pm", True),
        ("Dr. Tanaka", "your doctor is DR. TANAKA", True),
        ("paid", "The invoice is still open.", False),
        ("a@example.com, b@example.com", "CC: B@example.com and a@example.com", True),
        ("a@example.com, b@example.com", "CC: a@example.com only", False),
    ],
)
def test_values_are_matched_after_normalizing(value: str, answer: str, found: bool) -> None:
    assert value_found(value, answer) is found


def test_claim_grades_are_one_half_or_zero() -> None:
    claim = Claim(text="Invoice inv_qd5x84 for $95 is paid.", values=["inv_qd5x84", "95", "paid"])
    assert grade_claim(claim, "Invoice INV_QD5X84 for $95.00 is now paid.").score == 1.0
    half = grade_claim(claim, "I paid $95.")
    assert half.score == 0.5 and half.missing == ["inv_qd5x84"]
    assert grade_claim(claim, "Nothing happened.").score == 0.0
    assert grade_claim(Claim(text="Dr. Tanaka"), "You will see dr. tanaka.").score == 1.0


def test_pass_at_k_and_pass_hat_k() -> None:
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 4) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25) and pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_hat_k(4, 2, 1) == pytest.approx(0.5) and pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert pass_hat_k(4, 3, 4) == 0.0


def test_reward_modes() -> None:
    good_state = Score(state_match=True, claims_coverage=0.5, claims_pass=False)
    assert reward(good_state, RewardConfig()) == 0.0
    assert reward(good_state, RewardConfig(require_claims=False)) == 1.0
    assert reward(good_state, RewardConfig(mode="weighted")) == 0.75
    assert reward(Score(state_match=None, claims_coverage=1.0, claims_pass=True), RewardConfig()) == 1.0
