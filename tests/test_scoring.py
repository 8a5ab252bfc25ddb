"""Scoring: state match on real clinic episodes (path-independent, strict about everything else),
claims matched by value (numbers, dates, case), pass@k / pass^k, rewards and the error taxonomy."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import FREE_SLOT, REPO

from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.policy_checks import claims_success, gives_reason, refuses
from envfarm.clients.scoring import (
    RewardConfig,
    final_answers,
    grade_claim,
    hedged,
    pass_at_k,
    pass_hat_k,
    reward,
    state_match,
    value_found,
)
from envfarm.clients.scoring.values import clocks_from
from envfarm.clients.tasks import Claim, ExpectedState, Persona, Provenance, Task
from envfarm.clients.trajectory import Score, ServerState

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
        principal=None,
        persona=Persona(name="Lucas Yilmaz", style="polite"),
        opening_message="Book both visits.",
        uncalibrated_message="",
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


NEEDS_RX = Claim(
    text="states whether it needs a prescription: yes", values=["true"], field="requires_prescription", kind="yes_no"
)
NO_RX = NEEDS_RX.model_copy(update={"text": "states whether it needs a prescription: no", "values": ["false"]})


@pytest.mark.parametrize(
    ("answer", "yes"),
    [
        ("Yes.", True),
        ("Yes, you need a prescription for it. It's $4.00 a unit.", True),
        ("A prescription is required, and each tablet is $4.00.", True),
        ("No, you can't buy it without a prescription.", True),  # two negations: a yes to 'needs one'
        ("No problem! You will need a prescription for that one.", True),  # courtesy, not an answer
        ("No.", False),
        ("No, it isn't.", False),
        ("It does not require a prescription.", False),
        ("You don't need a prescription; it's $4.00 a unit.", False),
        ("No prescription is needed, and it costs $4.", False),
        ("You can buy it without a prescription.", False),
        ("Nope. It is sold over the counter.", False),
        ("As for your earlier request, no, you cannot buy it over the counter without a prescription.", True),
        ("As for your earlier request, no, it does not need a prescription.", False),
        ("As for your earlier request, yes, it needs a prescription.", True),
    ],
)
def test_a_yes_no_claim_is_graded_by_the_answer_in_words(answer: str, yes: bool) -> None:
    """Seed 6173: "do I need a prescription?" had no claim (a flag was never claimed), so any answer passed. The
    answer's yes or no is read from the sentence that speaks of the topic, or a bare "Yes."/"No.": the claim of
    that polarity passes and the opposite claim fails (a reply saying the opposite never earns it)."""
    right, wrong = (NEEDS_RX, NO_RX) if yes else (NO_RX, NEEDS_RX)
    assert grade_claim(right, answer).score == 1.0
    assert grade_claim(wrong, answer).score == 0.0


@pytest.mark.parametrize(
    "answer",
    [
        "The price per unit is $4.00.",  # says nothing of it
        "It might need a prescription, I'm not sure.",  # hedges
        "Do you need a prescription for it?",  # a question back is no answer
        "Yes, you need a prescription. Actually no, you don't need one.",  # says both
    ],
)
def test_a_yes_no_claim_fails_without_one_clear_answer(answer: str) -> None:
    assert grade_claim(NEEDS_RX, answer).score == 0.0
    assert grade_claim(NO_RX, answer).score == 0.0


def test_the_oracle_states_a_yes_no_claim_so_it_passes() -> None:
    """The oracle's reply ('No, it does not need a prescription.') passes its own claim and fails the opposite."""
    from envfarm.clients.speech import state_claims, yes_no_answer

    for label in ("whether it went through", "whether you accept it", "whether it's on the shelf", "whether it passed"):
        for yes in (True, False):
            claim = Claim(text=f"states {label}: x", values=[str(yes).lower()], field="f", kind="yes_no")
            opposite = claim.model_copy(update={"values": [str(not yes).lower()]})
            said = " ".join(state_claims([claim]))
            assert said == yes_no_answer(label, yes)
            assert grade_claim(claim, said).score == 1.0, said
            assert grade_claim(opposite, said).score == 0.0, said


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


FARM_CLOCK = clocks_from("Now: Monday 13 April 2026, 09:00 UTC (10:00 in Europe/Lisbon). Time zone: Europe/Lisbon.")


@pytest.mark.parametrize(
    ("value", "answer", "found"),
    [
        ("2", "Your stay is on 2026-02-24.", False),  # a number never matches inside a date
        ("1057", "Your invoice is INV-1057.", False),  # nor inside an id
        ("45.74", "That is forty-five dollars and seventy-four cents.", True),
        ("45.74", "You paid 45.74 USD.", True),
        ("45.74", "You paid $45.74.", True),
        ("0.85", "It costs 85 cents per kilo.", True),
        ("12", "The supplier delivered twelve units.", True),
        ("12", "The supplier delivered fewer units.", False),
        ("0", "You have no holds at the moment.", True),
        ("0", "You don't have any holds.", True),
        ("12", "A dozen eggs.", True),
        ("2026-04-13T09:00:00Z", "Posted just now.", True),
        ("2026-04-13T09:00:00Z", "Posted today at 10:00 Lisbon time.", True),  # the clock's own zone
        ("2026-04-13T09:00:00Z", "Posted yesterday at 09:00.", False),
        ("2026-04-20", "It is next Monday.", True),
        ("2026-04-12", "It was yesterday.", True),
        ("2026-02-24", "It is on Feb 24.", True),
        ("2026-04-13", "It is on 13/04/2026.", True),  # day first where only that reading is a date
        ("2026-06-27", "It is on 06/27/2026.", True),
        ("30", "A 30-minute session.", True),  # a number with its unit, not an id
        ("José Álvarez", "Your trainer is jose alvarez.", True),
        ("pre_trip", "A pre-trip inspection was recorded.", True),
        ("sent", "The campaign was not sent.", False),
        ("paid", "The invoice is still unpaid.", False),
        ("Wireless headset", "40 Wireless headsets", True),
    ],
)
def test_values_are_read_by_meaning(value: str, answer: str, found: bool) -> None:
    assert value_found(value, answer, FARM_CLOCK) is found


@pytest.mark.parametrize(
    ("value", "answer", "hedging"),
    [
        ("71.37", "It was either $71.37 or $500.00.", True),
        ("Never signed up", "It might be 'Never signed up', 'Too many emails', 'Not relevant' or 'Other'.", True),
        ("letter", "It could be one of these:\n- letter\n- pass/fail", True),
        ("2026-06-27T09:00:00Z", "Your pickup is on June 27 at 9:00 or 11:00.", True),
        ("2026-06-27T09:00:00Z", "Your pickup is on June 27 at 9:00 UTC (10:00 in Lisbon).", False),
        ("20.00", "The copay is $20 for generics or $0 for specialty drugs.", False),
        ("7.00", "Your rental extra costs $7.00 per day and you have one of it.", False),
        ("71.37", "Your last transfer was $71.37.", False),
    ],
)
def test_an_answer_that_offers_candidates_hedges(value: str, answer: str, hedging: bool) -> None:
    assert hedged(value, answer, FARM_CLOCK) is hedging


def test_claims_are_graded_on_the_answers_not_the_read_backs() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "Pay my bill."},
        {"role": "assistant", "content": "I'll pay $95.00. Shall I go ahead?"},
        {"role": "user", "content": "Yes, please go ahead."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "tool_call_id": "1", "content": '{"amount": 95.0}'},
        {"role": "assistant", "content": "Done."},
    ]
    answer = final_answers(messages)
    assert answer == "Done." and grade_claim(Claim(text="amount", values=["95"]), answer).score == 0.0
    said = final_answers([*messages[:-1], {"role": "assistant", "content": "Paid: $95.00."}])
    evidence = "\n".join(str(m.get("content")) for m in messages if m["role"] in ("user", "tool"))
    assert grade_claim(Claim(text="amount", values=["95"]), said, evidence=evidence).score == 1.0
    unsupported = grade_claim(Claim(text="amount", values=["95"]), said, evidence="nothing looked up")
    assert unsupported.score == 0.0 and "unsupported" in unsupported.detail


def test_a_derived_claim_is_the_agents_arithmetic_so_no_output_need_hold_it() -> None:
    """'How many seats are left' is capacity - seats booked: the tools return 20 and 11, never 9."""
    evidence = '{"capacity": 20, "seats_booked": 11}'
    left = Claim(text="states how many seats are left: 9", values=["9"], field="capacity - seats_booked")
    assert left.derived and not Claim(text="seats", values=["9"], field="seats_booked").derived
    assert grade_claim(left, "There are 9 seats left.", evidence=evidence).score == 1.0
    assert grade_claim(left, "There are 11 seats left.", evidence=evidence).score == 0.0
    plain = Claim(text="states how many seats: 9", values=["9"], field="seats")
    assert grade_claim(plain, "There are 9 seats.", evidence=evidence).score == 0.0


@pytest.mark.parametrize(
    ("said", "refusal_with_reason"),
    [
        ("I'm sorry, but I can't do that for someone else; Ethan needs to contact us himself.", True),
        ("That's not something I'm allowed to do on someone else's behalf.", True),
        ("I have to decline: I can only act for the person who owns the account.", True),
        ("Per our policy, I cannot book sessions for another student.", True),
        ("Only Daniel himself can start his trip, so I can't do it for you.", True),
        ("Sorry, I can't do that.", False),  # no reason
        ("Let me look into that for you.", False),  # no refusal
        ("Done, the contact details are updated.", False),  # a claim of success
        ("I can't cancel it since only the traveller can ask, but I've updated his notes.", False),
    ],
)
def test_a_refusal_declines_says_why_and_claims_nothing(said: str, refusal_with_reason: bool) -> None:
    assert (refuses(said) and gives_reason(said) and not claims_success(said)) is refusal_with_reason


def test_a_value_after_a_negation_word_in_a_tool_output_still_backs_the_answer() -> None:
    """`"subject": "... go/no-go", "folder": "inbox"`: "no" before "inbox" unsays an answer, not the evidence."""
    from envfarm.clients.scoring.claims import grade_claim
    from envfarm.clients.tasks import Claim

    evidence = '{"subject": "migration script before the Release go/no-go", "folder": "inbox"}'
    claim = Claim(text="confirms the folder: inbox", values=["inbox"])
    assert grade_claim(claim, "It is back in your inbox.", evidence=evidence).score == 1.0
    assert grade_claim(claim, "It is back in your inbox.", evidence='{"folder": "trash"}').score == 0.0
