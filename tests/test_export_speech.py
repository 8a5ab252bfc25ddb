"""The SFT data `envfarm run` exports reads as an agent speaks: over several seeds, no oracle turn (read-back,
progress note, final answer, refusal) and no exported row holds rubric text, paging fields, a field dump, a raw
field name or an internal id; every row has its task id and split; no tool schema keeps `x-envfarm-*` keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envfarm.cli import main
from envfarm.clients.export import load_trajectories, sft_speech_problems, split_of
from envfarm.clients.speech import say_value, speech_problems
from envfarm.clients.tasks import Claim, GoldCall, Persona, Provenance, Task


def _task() -> Task:
    call = GoldCall(server="s", tool="find_invoice", arguments={}, output={"invoice_id": "inv_ab12cd", "total": 5})
    return Task(
        id="t",
        servers=["s"],
        tools=[],
        persona=Persona(name="Ann Lee"),
        opening_message="hi",
        gold_calls=[call],
        claims=[Claim(text="states the total: 5", values=["5"])],
        provenance=Provenance(sampler="x", seed=0),
    )


@pytest.mark.parametrize(
    "text",
    [
        "states the daily price: 24.00 states the name: Compact",
        "Done. count: 1; total: 1; has_more: False",
        "To confirm: I will cancel appointment (schedule id: sch_xr3qi5). Shall I go ahead?",
        "The invoice inv_ab12cd is paid.",
        "The odometer_km is 5.",
    ],
)
def test_bad_speech_is_caught(text: str) -> None:
    assert speech_problems(text, _task(), ["odometer_km"])


def test_good_speech_passes_and_values_read_well() -> None:
    good = "I've paid the invoice issued on March 1, 2026. The total is $80.00 and the kind is post_trip."
    assert speech_problems(good, _task(), ["odometer_km", "total"]) == []
    assert say_value("starts_at", "2026-04-17T09:00:00Z") == "April 17, 2026 at 09:00 UTC"
    assert say_value("total_price", 16.2, "USD") == "$16.20" and say_value("quantity", "6.00") == "6"


def test_split_is_stable_and_follows_the_ratio() -> None:
    ids = [f"task-{n}" for n in range(2000)]
    assert [split_of(i) for i in ids] == [split_of(i) for i in ids]
    share = sum(split_of(i, 0.25) == "eval" for i in ids) / len(ids)
    assert 0.2 < share < 0.3 and {split_of(i, 0.0) for i in ids} == {"train"}
    with pytest.raises(ValueError, match="between 0 and 1"):
        split_of("x", 1.5)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 3, 7])
def test_run_exports_read_as_an_agent_speaks(seed: int, tmp_path: Path) -> None:
    assert main(["run", "--tasks", "10", "--seed", str(seed), "--k", "1", "--out", str(tmp_path)]) == 0
    (run,) = tmp_path.iterdir()
    trajectories = load_trajectories(run / "trajectories.jsonl")
    oracle = [t for t in trajectories if t.policy == "oracle"]
    assert oracle
    for trajectory in oracle:  # every oracle turn, exported or not: the filter must have nothing to hide
        assert sft_speech_problems(trajectory) == [], trajectory.task_id
    by_task = {t.task_id: t for t in oracle}
    rows = [json.loads(line) for line in (run / "exports" / "sft_openai.jsonl").read_text().splitlines()]
    assert rows and any(r["policy"] == "oracle" for r in rows)
    for row in rows:
        assert row["task_id"] in by_task and row["split"] == split_of(row["task_id"]) and row["servers"]
        assert "x-envfarm" not in json.dumps(row["tools"])
        fields = {k for t in row["tools"] for k in t["function"]["parameters"].get("properties", {})}
        for message in row["messages"]:
            if message["role"] == "assistant" and message.get("content"):
                assert speech_problems(message["content"], by_task[row["task_id"]].task, fields) == []
    shared = [json.loads(line) for line in (run / "exports" / "sft_sharegpt.jsonl").read_text().splitlines()]
    assert len(shared) == len(rows) and all(r["task_id"] and r["split"] for r in shared)
    assert "x-envfarm" not in (run / "exports" / "sft_sharegpt.jsonl").read_text()
    assert json.loads((run / "exports" / "dataset_info.json").read_text())["sft_sharegpt"]["formatting"] == "sharegpt"


def test_claims_are_said_in_sentences_whatever_their_wording() -> None:
    from envfarm.clients.speech import state_claims

    said = " ".join(
        state_claims(
            [
                Claim(text="states the daily price: $24.00", values=["24.00"]),  # rubric wording, a currency sign
                Claim(text="states when it was submitted: 2026-03-01T10:00:00Z", values=["2026-03-01T10:00:00Z"]),
                Claim(text="confirms the weight kg: 6.32", values=["6.32"]),
                Claim(text="The first free slot is on 2026-03-02 at 10:00.", values=["2026-03-02"]),  # a statement
            ],
            currency="USD",
        )
    )
    assert "The first free slot is on 2026-03-02 at 10:00." in said
    assert "the daily price is $24.00" in said.lower() and "the weight is 6.32 kg" in said.lower()
    assert "it was submitted on March 1, 2026 at 10:00 UTC" in said
    assert speech_problems(said, _task()) == []


def test_a_money_total_is_said_as_money_and_a_page_count_as_records() -> None:
    """An invoice's `total` (12624.00) is an amount, not a page's count of matching records."""
    from envfarm.clients.speech import state_claims

    money = state_claims([Claim(text="states the total: 12624.00", values=["12624.00"], field="total")], "USD")
    assert money == ["The total is $12,624.00."]
    assert state_claims([Claim(text="states the count: 3", values=["3"], field="count")]) == [
        "There are 3 matching records."
    ]


def test_a_label_said_back_keeps_its_own_possessive() -> None:
    """'my plan' said back is 'your plan', never 'the your plan' (read in the seed-2718 oracle answers)."""
    from envfarm.clients.speech import state_claims

    said = state_claims([Claim(text="states my plan: Corporate", values=["Corporate"], field="plan")])
    assert said == ["Your plan is Corporate."]


def test_a_number_is_said_with_every_digit_it_has() -> None:
    """`:g` kept six significant digits: 'what the client still owes: 12443.45' was said as 12443.5."""
    from envfarm.clients.speech import say_value

    assert say_value("what the client still owes", 12443.45) == "12443.45"
    assert say_value("ratio", 1234567.891) == "1234567.891"
    assert say_value("weight", 0.1 + 0.2) == "0.3"


def test_the_oracle_says_outcomes_in_words_never_codes_or_column_grammar() -> None:
    """Question labels are answered, the user's own words ('what I owe') come back as 'you', a code is said
    with spaces, a date a change sets reads as an event ('starting on', never 'with starts on')."""
    from envfarm.clients.speech import readback, state_claims

    said = " ".join(
        state_claims(
            [
                Claim(text="states what I owe in fines: 0.00", values=["0.00"]),
                Claim(text="confirms whether the account is active: active", values=["active"]),
                Claim(text="states the grading basis: pass_fail", values=["pass_fail"]),
                Claim(text="states the number of seats: 8", values=["8"]),
                Claim(text="states what they wrote: Great guide, the group was large.", values=["x"]),
            ]
        )
    )
    assert "what you owe in fines, that's 0" in said, said
    assert "whether the account is active, that's active" in said, said
    assert "pass fail" in said and "pass_fail" not in said, said
    assert "the number of seats is 8" in said, said
    call = GoldCall(
        server="s",
        tool="create_event",
        arguments={"title": "Sync", "starts_at": "2026-04-26T09:00:00Z", "grading_basis": "pass_fail"},
        output={"event_id": "evt_ab12cd"},
    )
    task = _task().model_copy(update={"gold_calls": [call]})
    text = readback(task, 0)
    assert "starting on April 26, 2026" in text and "with starts" not in text, text
    assert "grading basis pass fail" in text and "“pass_fail”" not in text, text


# What the seed-7373/11 reviews read in the oracle's read-backs: a change built from the tool's and columns' names.
SEAMS = [
    "Just to confirm: I'll subscribe the list “Careers”, with email “a@example.com”. Shall I go ahead?",
    "Just to confirm: I'll purchase the package for the student “Felix Andersen”, with hours purchased 20.",
    "I've updated the member contact for the member “Samuel Haddad”.",
    "Just to confirm: I'll check the res with arrival date on April 11, 2026 out. Shall I go ahead?",
    "I've enrolled the in section for the student “Liam Lopez”.",
    "I've replied to it to thread.",
    "As for whether it passed, that's pass.",
]


@pytest.mark.parametrize("text", SEAMS)
def test_template_seams_are_caught(text: str) -> None:
    from envfarm.clients.speech import template_seams

    assert template_seams(text), text


@pytest.mark.parametrize(
    ("asked", "arguments", "readback", "done"),
    [
        (
            "Please add me to the Careers list. My email is priya.rossi@example.com.",
            {"list_id": "lst_ab12cd", "email": "priya.rossi@example.com"},
            "I'll add you to the Careers list; your email is priya.rossi@example.com",
            "I've added you to the Careers list.",
        ),
        (
            "I won't need the car after all; can you cancel booking RA60599?",
            {"rental_id": "ren_ab12cd"},
            "you won't need the car after all, so I'll cancel booking RA60599",
            "I've cancelled booking RA60599.",
        ),
        (
            "Could I get another 5 hours of tutoring?",
            {"hours": 5},
            "you'd like to get another 5 hours of tutoring",
            None,
        ),
        (
            "I'm returning the car from booking RA1 here at your Vienna branch. The odometer reads 56206 km.",
            {"odometer_km": 56206},
            "you're returning the car from booking RA1 here at our Vienna branch; the odometer reads 56206 km",
            None,
        ),
        (
            "Take down the Portable speaker listed for $12.00 in Dublin.",
            {"listing_id": "lst_ab12cd"},
            "I'll take down the Portable speaker listed for $12.00 in Dublin",
            "I've taken down the Portable speaker listed for $12.00 in Dublin.",
        ),
        (
            'Post "I\'ll be late, sorry" in the #general channel.',
            {"text": "I'll be late, sorry"},
            "I'll post \"I'll be late, sorry\" in the #general channel",  # a quoted text keeps its own 'I'
            "I've posted \"I'll be late, sorry\" in the #general channel.",
        ),
    ],
)
def test_a_change_is_read_back_and_reported_in_the_users_own_request(
    asked: str, arguments: dict[str, object], readback: str, done: str | None
) -> None:
    from envfarm.clients.speech import asked_done, asked_readback, did
    from envfarm.clients.speech import readback as read_back

    call = GoldCall(server="s", tool="t", arguments=arguments, output={}, is_write=True, asked=asked)
    assert asked_readback(call) == readback
    assert asked_done(call) == done
    task = _task().model_copy(update={"gold_calls": [call]})
    assert read_back(task, 0) == f"Just to confirm: {readback.rstrip('.')}. Shall I go ahead?"
    assert did(task, 0) == (done or "That's done.")  # never the tool's name when words fail: less is said
    assert not template_seams_of(read_back(task, 0)) and not template_seams_of(did(task, 0))


def test_a_read_back_ending_in_the_users_own_sentence_has_one_full_stop() -> None:
    from envfarm.clients.speech import readback as read_back

    note = "Can pick up this weekend."
    asked = f"Please add a note to my offer: {note}"
    call = GoldCall(server="s", tool="t", arguments={"note": note}, output={}, is_write=True, asked=asked)
    task = _task().model_copy(update={"gold_calls": [call]})
    assert (
        read_back(task, 0)
        == "Just to confirm: I'll add a note to your offer: Can pick up this weekend. Shall I go ahead?"
    )


def test_a_read_back_states_the_numbers_its_confirm_check_wants_even_where_one_equals_a_key() -> None:
    """An imported API's `put_users_id {id: 4, admin: 1}` beside user 1: the 1 is the admin flag, not user 1, and the
    confirm check wants it said; read-backs left it out as an id, and the oracle failed its own task's policy."""
    from envfarm.clients.speech import readback as read_back
    from envfarm.clients.tasks import PolicyCheck

    listing = GoldCall(server="s", tool="get_users", arguments={}, output={"users": [{"id": 1}, {"id": 4}]})
    change = GoldCall(server="s", tool="put_users_id", arguments={"id": 4, "admin": 1}, output={}, is_write=True)
    check = PolicyCheck(rule="confirm", kind="must_confirm", server="s", tool="put_users_id", values=["1"])
    task = _task().model_copy(update={"gold_calls": [listing, change], "policy_checks": [check]})
    said = read_back(task, 1)
    assert "admin 1" in said, said
    assert "4" not in said, said  # the row's own key is still not read out


@pytest.mark.parametrize(
    ("tool", "said"),
    [
        ("campaigns_create", "I'll create a new campaign"),  # Azure's `Campaigns_Create`
        ("web_apps_update", "I'll update the web app “Ivan Ahmed”"),
        ("put_users_id", "I'll update the user “Ivan Ahmed”"),  # an HTTP method on a path
        ("delete_geofences_id", "I'll delete the geofence “Ivan Ahmed”"),
        ("cancel_booking", "I'll cancel the booking “Ivan Ahmed”"),  # a built-in name, verb first, as it was
    ],
)
def test_an_imported_tool_name_is_read_back_verb_first(tool: str, said: str) -> None:
    """Imported tools keep the API's own names (`Campaigns_Create`, `PUT /users/{id}`); the read-back says the change
    in English ('I'll campaigns the create', 'I'll put the users id for the  “Ivan Ahmed”' before)."""
    from envfarm.clients.speech import readback as read_back

    listing = GoldCall(server="s", tool="list", arguments={}, output={"rows": [{"id": 4, "name": "Ivan Ahmed"}]})
    change = GoldCall(server="s", tool=tool, arguments={"id": 4}, output={}, is_write=True, uses=[0])
    task = _task().model_copy(update={"gold_calls": [listing, change]})
    assert read_back(task, 1).startswith(f"Just to confirm: {said}"), read_back(task, 1)
    assert "  " not in read_back(task, 1)


def template_seams_of(text: str) -> list[str]:
    from envfarm.clients.speech import template_seams

    return template_seams(text)


def test_a_request_that_leaves_out_a_number_the_change_takes_is_not_read_back_from_it() -> None:
    """The confirmation check looks for every number the change takes: a request that names the row but not the
    amount ('Please change my Netflix payment.') cannot be the read-back."""
    from envfarm.clients.speech import asked_readback

    call = GoldCall(server="s", tool="t", arguments={"amount": 117.28}, asked="Please change my Netflix payment.")
    assert asked_readback(call) is None
    call = call.model_copy(update={"asked": "Please make my Netflix payment 117.28 from now on."})
    assert asked_readback(call) == "I'll make your Netflix payment 117.28 from now on"


def test_a_refusal_gives_the_rule_without_the_documents_pointers() -> None:
    """'... even a relative, unless policy below allows it.' is the policy file speaking, not an agent."""
    from envfarm.clients.policy_checks import gives_reason
    from envfarm.clients.speech import refusal

    said = refusal(
        "Never read out or change one customer's records for another person, even a relative, unless policy below "
        "allows it."
    )
    assert "below" not in said and "even a relative." in said and gives_reason(said), said
    assert "may cancel a subscription." in refusal("Only the account holder may cancel a subscription.")


@pytest.mark.parametrize(
    "text",
    [
        "Just to confirm: is there still an open workshop order on the Ford Ranger with plate 92-AI-58?",
        "I'd like to borrow the copy with barcode 31200003542.",
        "I've booked the Thursday 23 April departure for 2 of you. The credits earned are 39.",
    ],
)
def test_a_person_naming_a_thing_by_its_identifier_is_no_seam(text: str) -> None:
    from envfarm.clients.speech import template_seams

    assert template_seams(text) == [], text
