"""The task audit (`envfarm.clients.audit`): one hand-made task that passes every check, and for each check a
copy of it broken the way a real generator breaks it, which must fail that check (and only it)."""

from __future__ import annotations

import pytest

from envfarm.clients.audit import (
    Auditor,
    ServerFacts,
    catalog_cased,
    common_words,
    mentions,
    repeated_phrase,
    server_facts,
    spoken,
)
from envfarm.clients.graph import OutField, Param, ToolSpec
from envfarm.clients.grounding import ServerWorld, people
from envfarm.clients.tasks import (
    Claim,
    ExpectedState,
    GoldCall,
    HiddenFact,
    Persona,
    PolicyCheck,
    Provenance,
    Task,
    Turn,
)
from envfarm.servers.runtime.control import TableDiff

APPOINTMENTS = [
    {"appointment_id": "apt_1", "patient_id": "pat_1", "reason": "Follow-up", "starts_at": "2026-03-04T10:00:00Z"},
    {"appointment_id": "apt_2", "patient_id": "pat_1", "reason": "Check-up", "starts_at": "2026-03-06T09:00:00Z"},
]
SPECS = [
    ToolSpec(
        server="clinic",
        name="find_patient",
        read_only=True,
        params=[Param(name="full_name")],
        outputs=[OutField(name="patient_id", user_known=False), OutField(name="full_name")],
    ),
    ToolSpec(
        server="clinic",
        name="list_appointments",
        read_only=True,
        params=[Param(name="patient_id", required=True, user_known=False, ref="patients.patient_id")],
        outputs=[
            OutField(name="appointment_id", user_known=False),
            OutField(name="starts_at"),
            OutField(name="reason"),
        ],
    ),
    ToolSpec(
        server="clinic",
        name="cancel_appointment",
        read_only=False,
        params=[
            Param(name="appointment_id", required=True, user_known=False, ref="appointments.appointment_id"),
            Param(name="reason", required=True),
        ],
        outputs=[OutField(name="status"), OutField(name="cancelled_at")],
    ),
    ToolSpec(
        server="clinic", name="receive_supplies", read_only=False, params=[Param(name="sku_id", user_known=False)]
    ),
]
WORLD = ServerWorld(
    server="clinic",
    controlled=True,
    tables={
        "patients": [{"patient_id": "pat_1", "full_name": "Maria Lopez", "email": "maria.lopez@example.com"}],
        "appointments": APPOINTMENTS,
    },
    keys={"patients": "patient_id", "appointments": "appointment_id"},
)
FACTS = {"clinic": ServerFacts(clock="2 March 2026 09:00", kind="staff", third_party_rule=None)}


def good() -> Task:
    """Maria cancels her Wednesday follow-up: every value is said or looked up, one row fits."""
    calls = [
        GoldCall(
            server="clinic",
            tool="find_patient",
            arguments={"full_name": "Maria Lopez"},
            output={"patients": [{"patient_id": "pat_1", "full_name": "Maria Lopez"}], "count": 1},
        ),
        GoldCall(
            server="clinic",
            tool="list_appointments",
            arguments={"patient_id": "pat_1"},
            output={"appointments": APPOINTMENTS, "count": 2, "has_more": False},
            uses=[0],
        ),
        GoldCall(
            server="clinic",
            tool="cancel_appointment",
            arguments={"appointment_id": "apt_1", "reason": "feeling better"},
            output={"appointment_id": "apt_1", "status": "cancelled", "cancelled_at": "2026-03-02T09:00:00Z"},
            is_write=True,
            uses=[1],
        ),
    ]
    message = (
        "Hi, this is Maria Lopez. I'm feeling better, so please cancel my follow-up on Wednesday 4 March; "
        "the reason is feeling better."
    )
    return Task(
        id="t-0",
        servers=["clinic"],
        tools=[],
        principal="Front desk: Alex Morgan",
        persona=Persona(name="Maria Lopez", email="maria.lopez@example.com"),
        opening_message=message,
        turns=[Turn(message=message, gold_calls=[0, 1, 2])],
        gold_calls=calls,
        expected_state={
            "clinic": ExpectedState(hash="h1", diff={"appointments": TableDiff(updated=[{"key": "apt_1"}])})
        },
        claims=[Claim(text="states the status: cancelled", values=["cancelled"], field="status")],
        provenance=Provenance(sampler="hand", seed=0),
    )


def auditor(facts: dict[str, ServerFacts] | None = None) -> Auditor:
    return Auditor(SPECS, {"clinic": WORLD}, facts or FACTS)


def checks(task: Task, facts: dict[str, ServerFacts] | None = None) -> set[str]:
    return {f.check for f in auditor(facts).check(task)}


def test_the_good_task_passes_every_check() -> None:
    assert auditor().check(good()) == []


def with_message(task: Task, message: str) -> Task:
    task.opening_message = message
    task.turns[0].message = message
    return task


def test_determinacy_fails_when_a_write_takes_a_value_nobody_said() -> None:
    task = with_message(good(), "Hi, this is Maria Lopez. Please cancel my follow-up on Wednesday 4 March.")
    found = auditor().check(task)
    assert {f.check for f in found} == {"determinacy"}
    assert any("cancel_appointment.reason" in f.detail for f in found)


def test_determinacy_fails_when_a_write_copies_every_detail_from_a_lookup() -> None:
    task = good()
    task.gold_calls[2].arguments["reason"] = "Follow-up"  # copied from the row, never asked for
    task.opening_message = task.turns[0].message = "Hi, this is Maria Lopez. Cancel my visit on Wednesday 4 March."
    found = [f.detail for f in auditor().check(task) if f.check == "determinacy"]
    assert found == [
        "cancel_appointment: the user says nothing of what to write",
        "cancel_appointment.reason='Follow-up' is never said",
    ]


def test_garble_fails_on_someone_elses_email_held_back_as_the_users_own() -> None:
    task = good()
    task.hidden_facts = [HiddenFact(key="email", value="hugo.garcia@example.com", description="my email is hugo")]
    assert checks(task) == {"garble"}
    task.hidden_facts[0].value = "maria.lopez@example.com"
    assert checks(task) == set()


def test_referents_fail_when_two_rows_fit_what_the_user_says() -> None:
    task = with_message(good(), "Hi, this is Maria Lopez. Please cancel my appointment, the reason is feeling better.")
    found = auditor().check(task)
    assert {f.check for f in found} == {"referents"}
    assert found[0].call == 1 and found[0].field == "appointment_id" and found[0].value == "apt_1"


def test_referents_fail_when_the_words_pick_another_row() -> None:
    task = with_message(good(), "Maria Lopez here: cancel my check-up on Friday 6 March, the reason is feeling better.")
    assert "referents" in checks(task)


def test_roles_fail_for_staff_internal_work_and_for_another_signed_in_user() -> None:
    task = good()
    task.gold_calls[2] = task.gold_calls[2].model_copy(update={"tool": "receive_supplies", "arguments": {}})
    assert "roles" in checks(task)
    user = {"clinic": ServerFacts(clock="2 March 2026 09:00", kind="user")}
    assert checks(good(), user) == {"roles"}  # a user server acting for someone other than the persona
    mine = good()
    mine.principal = "maria.lopez@example.com"
    assert checks(mine, user) == set()


def test_roles_fail_when_a_staff_write_acts_on_someone_elses_rows() -> None:
    task = good()
    task.persona = Persona(name="Maria Lopez", email="someone.else@example.com")
    assert "roles" in checks(task)


def test_roles_fail_for_a_refusal_citing_a_rule_that_does_not_forbid_it() -> None:
    task = good()
    task.gold_calls, task.claims, task.turns[0].gold_calls = [], [], []
    task.policy_checks = [PolicyCheck(rule="Identify the customer before acting for them.", kind="must_refuse")]
    assert checks(task) == {"roles"}
    task.policy_checks[0].rule = "Never read out or change one customer's records for another person, even a relative."
    assert checks(task) == set()


@pytest.mark.parametrize(
    ("claim", "why"),
    [
        (Claim(text="states the count: 2", values=["2"], field="count"), "paging"),
        (Claim(text="states the total: 2", values=["2"]), "paging"),  # read from the text when no field
        (Claim(text="confirms the reason: feeling better", values=["feeling better"], field="reason"), "echoes"),
    ],
)
def test_claims_fail_on_paging_fields_and_echoes(claim: Claim, why: str) -> None:
    task = good()
    task.claims = [claim]
    found = [f for f in auditor().check(task) if f.check == "claims"]
    assert found and why in found[0].detail


def test_claims_fail_when_one_label_has_two_answers() -> None:
    task = good()
    task.claims = [
        Claim(text="states the issue date: Monday 2 March", values=["2026-03-02"], field="issue_date"),
        Claim(text="states the issue date: Friday 6 March", values=["2026-03-06"], field="issue_date"),
    ]
    found = [f for f in auditor().check(task) if f.check == "claims"]
    # (neither is asked for either: "claim on what the user never asked" beside it)
    assert [f.detail for f in found if "two claims" in f.detail] == [
        "two claims 'states the issue date' with different values"
    ]
    task.claims = task.claims[:1]
    assert not any("two claims" in f.detail for f in auditor().check(task))


def test_verify_fails_without_anything_to_check_or_for_a_write_that_changes_nothing() -> None:
    task = good()
    task.claims = []
    task.expected_state = {"clinic": ExpectedState(hash="h0")}
    found = [f.detail for f in auditor().check(task) if f.check == "verify"]
    assert any("nothing to verify" in d for d in found) and any("change nothing" in d for d in found)


def test_verify_fails_for_a_question_no_claim_checks() -> None:
    task = good()
    task.turns = [
        Turn(message=task.opening_message, gold_calls=[2]),
        Turn(message="Also, my visits?", gold_calls=[0, 1]),
    ]
    found = [f.detail for f in auditor().check(task) if f.check == "verify"]
    assert found == ["turn 1 asks for something no claim checks"]


def test_clock_fails_when_servers_disagree_on_now() -> None:
    task = good()
    task.servers = ["clinic", "banking"]
    facts = {**FACTS, "banking": ServerFacts(clock="6 March 2026 09:30", kind=None)}
    assert checks(task, facts) == {"clock"}


def test_clock_fails_for_a_question_about_what_is_ahead_keyed_on_or_answered_by_a_day_already_past() -> None:
    task = good()
    task.gold_calls[1].arguments = {"patient_id": "pat_1", "starts_after": "2026-02-27"}
    task.turns[0].message = "Hi, this is Maria Lopez. Is Dr. Weber still free on Friday 27 February?"
    found = auditor().asked_ahead_of_the_past(task)
    assert [f.check for f in found] == ["clock"] and "2026-02-27, before today 2026-03-02" in found[0].detail
    # the same question about a day ahead, or a question that does not look ahead, is no finding
    task.gold_calls[1].arguments = {"patient_id": "pat_1", "starts_after": "2026-03-06"}
    assert auditor().asked_ahead_of_the_past(task) == []
    task.gold_calls[1].arguments = {"patient_id": "pat_1", "starts_after": "2026-02-27"}
    task.turns[0].message = "Hi, this is Maria Lopez. What did Dr. Weber note on Friday 27 February?"
    assert auditor().asked_ahead_of_the_past(task) == []
    # a claim answering 'when is it coming?' with a past day fails the same way
    task.turns[0].message = "Hi, this is Maria Lopez. When is my follow-up coming up?"
    task.gold_calls[1].arguments = {"patient_id": "pat_1"}
    task.gold_calls[1].output = {"appointments": [{"appointment_id": "apt_1", "starts_at": "2026-02-25T10:00:00Z"}]}
    task.claims = [
        Claim(text="states the day: Wednesday 25 February", values=["2026-02-25T10:00:00Z"], field="starts_at")
    ]
    assert [f.check for f in auditor().asked_ahead_of_the_past(task)] == ["clock"]


@pytest.mark.parametrize(
    "sentence",
    [
        "Tell me the starts at of it.",
        "The reason should be feeling better.",
        "It's the one at 2026-03-04T10:00:00Z.",
        "Could you it my it today?",
        "Use the appointment_id please.",
        "Afterwards, tell me more.",
        "I mean the with me on Friday.",
        "What's the reason and the status?",
        "Quantity: 5.00.",
        "Body: Thanks for the call.",
        "I mean the invoice on Friday 6 March. I mean the item “Consulting”.",
        "I mean the package for 0.00.",
        "Please drop my class in Marlow Library 108 on TR at 16:00.",
        "It's the MWF one.",
        "It was filled up by me.",
        "I need a new report for this: Planning offsite with the team.",
        "Make an offer with the note: Can pick up this weekend.",
        "Please cancel it because of the trip postponed.",
        "Add a :white check mark: to my message, please.",
        'Please record the reason as "Returned hardware".',
        'Please note "Plans changed" as the reason.',
        "Could you book the Porto walk for one of us?",
        "Hi, I'm here for my appointment too.",
        "Also, is my follow-up on Wednesday 4 March paid?",
    ],
)
def test_garble_fails_on_column_names_leaks_and_step_words(sentence: str) -> None:
    task = with_message(good(), good().opening_message + " " + sentence)
    # a question the good task's one claim does not answer ("tell me more") also fails `claims`
    assert checks(task) - {"claims"} == {"garble"}, sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "One more thing: the reason is “Feeling better”.",
        "The body is “Note: bring the forms.”",
        "I mean the appointment on Friday 6 March.",
        "It's my Tuesdays and Thursdays class at 16:00.",
        "I filled it up myself.",
        "Please put “Planning offsite with the team” down as the purpose.",
        "It's because of the discount agreed after delivery.",
        "I want to save a new payee: Clearwater Water Co.",
        "Add a :white_check_mark: to my message, please.",
        "It's because we returned the hardware.",
        "Could you book the Porto walk for one person?",
    ],
)
def test_garble_passes_details_said_as_clauses_and_one_pointer(sentence: str) -> None:
    task = with_message(good(), good().opening_message + " " + sentence)
    assert "garble" not in checks(task), sentence


def test_values_are_recognised_as_people_say_them() -> None:
    assert spoken("2026-03-04T10:00:00Z") == "Wednesday 4 March at 10:00"
    assert spoken("2026-03-04") == "Wednesday 4 March"
    assert mentions("my visit on 4 March", "2026-03-04T10:00:00Z")
    assert mentions("it was 80.00 in total", 80.0) and mentions("it was 80 in total", 80)
    assert not mentions("it was 180.00", 80.0)


def test_server_facts_read_clock_kind_and_third_party_rule() -> None:
    text = (
        "Clinic.\n\nNow: Monday 2 March 2026, 09:00 UTC (09:00 in Europe/London).\nYou are the front desk, serving "
        "customers.\n- Never read out or change one customer's records for another person, even a relative."
    )
    facts = server_facts(text)
    assert facts.clock == "2 March 2026 09:00" and facts.kind == "staff"
    assert facts.third_party_rule and facts.third_party_rule.startswith("Never read out")
    assert server_facts("Now: Friday 6 March 2026, 09:30 UTC. You act for x@example.com").kind == "user"
    assert server_facts(None) == ServerFacts()


# ---------------------------------------------------------------- the synthesizer, soaked


@pytest.mark.slow
async def test_every_task_the_synthesizer_keeps_passes_the_audit_over_many_seeds() -> None:
    """20 seeds x 3 tasks over four servers (two sharing a clock): every kept task passes every check of
    an auditor built independently from the live servers, and a seed gives the same bytes again."""
    from conftest import REPO

    from envfarm.clients.audit import audit_tasks, build_auditor
    from envfarm.clients.connect import Connections, farm_targets
    from envfarm.clients.synthesize import SynthesisOptions, synthesize

    servers = ["banking", "clinic", "calendar", "mail"]
    async with Connections(farm_targets(REPO, servers)) as farm:
        independent = await build_auditor(farm, servers)
        produced = 0
        for seed in range(20):
            synthesis = await synthesize(SynthesisOptions(n=3, seed=seed, servers=servers), farm)
            report = audit_tasks(independent, synthesis.tasks)
            assert report.failed == 0, (seed, report.findings)
            produced += len(synthesis.tasks)
            if seed % 7 == 0:
                again = await synthesize(SynthesisOptions(n=3, seed=seed, servers=servers), farm)
                assert [t.model_dump_json() for t in again.tasks] == [t.model_dump_json() for t in synthesis.tasks]
        assert produced >= 50, produced


def test_roles_fail_when_the_user_gives_only_one_of_the_identifying_values() -> None:
    facts = {
        "clinic": FACTS["clinic"].model_copy(
            update={"identify_rule": "Identify the patient by full name and date of birth before you act."}
        )
    }
    patient = {**WORLD.tables["patients"][0], "date_of_birth": "1990-02-03"}
    world = WORLD.model_copy(update={"tables": {**WORLD.tables, "patients": [patient]}})
    task = good()
    task.gold_calls[0].output = {"patients": [{k: v for k, v in patient.items() if k != "email"}], "count": 1}
    found = Auditor(SPECS, {"clinic": world}, facts).check(task)
    assert {f.check for f in found} == {"roles"}
    assert any("date of birth; the user never gives it" in f.detail for f in found)
    assert any("no must_identify check" in f.detail for f in found)
    task.hidden_facts.append(HiddenFact(key="date_of_birth", value="1990-02-03", description="my date of birth"))
    task.policy_checks.append(
        PolicyCheck(
            rule="Identify the patient",
            kind="must_identify",
            server="clinic",
            tool="cancel_appointment",
            values=["Maria Lopez", "1990-02-03"],
        )
    )
    assert Auditor(SPECS, {"clinic": world}, facts).check(task) == []
    # the lookup the gold makes must show the date of birth the desk matches against
    task.gold_calls[0].output = {"patients": [{"patient_id": "pat_1", "full_name": "Maria Lopez"}], "count": 1}
    found = Auditor(SPECS, {"clinic": world}, facts).check(task)
    assert [f.detail for f in found] == ["clinic: no gold lookup shows date of birth to match it against"]


def test_referents_fail_for_a_claim_on_one_of_several_rows_even_when_they_agree() -> None:
    # "Which room is my appointment in?" with two appointments in Room B: the answer is the same, but
    # nothing says which appointment is asked about (an annotator reads it as ambiguous).
    task = good()
    for row in task.gold_calls[1].output["appointments"]:
        row["room"] = "Room B"
    task.gold_calls = task.gold_calls[:2]
    task.turns[0].gold_calls = [0, 1]
    task.expected_state = {"clinic": ExpectedState(hash="h0")}
    message = "Hi, this is Maria Lopez. Which room is my appointment in?"
    task = with_message(task, message)
    task.claims = [Claim(text="states the room: Room B", values=["Room B"], field="room")]
    assert "referents" in checks(task)
    task = with_message(task, message + " The follow-up on Wednesday 4 March.")
    assert "referents" not in checks(task)


def test_a_persona_knows_the_columns_of_their_own_rows_not_of_rows_that_carry_their_email() -> None:
    """What the scripted user can say about themselves: their own row (`email` beside their name) and a row they
    answer for (`contact_email` beside `contact_name`), never a project's name or a message's body because the
    row carries their email as owner or sender."""
    email = "rafael.nguyen@example.com"
    world = ServerWorld(
        server="crm",
        controlled=True,
        tables={
            "members": [{"member_id": "mem_1", "full_name": "Rafael Nguyen", "email": email, "job_title": "Analyst"}],
            "clients": [
                {
                    "client_id": "cli_1",
                    "company_name": "Stonegate",
                    "contact_name": "Rafael Nguyen",
                    "contact_email": email,
                }
            ],
            "projects": [{"project_id": "prj_1", "name": "Customer portal", "owner_email": email}],
            "messages": [{"message_id": "msg_1", "sender_email": email, "body": "Thanks Maria."}],
        },
        user_known={
            "members": ["full_name", "email", "job_title"],
            "clients": ["company_name", "contact_name", "contact_email"],
            "projects": ["name", "owner_email"],
            "messages": ["sender_email", "body"],
        },
    )
    record = people(world)[email]
    assert record.name == "Rafael Nguyen"
    assert record.facts == {
        "full_name": "Rafael Nguyen",
        "email": email,
        "job_title": "Analyst",
        "company_name": "Stonegate",
        "contact_name": "Rafael Nguyen",
        "contact_email": email,
    }


def test_a_claim_a_later_write_made_stale_fails_claims() -> None:
    """'Your follow-up starts 4 March at 10:00', then the gold moves it: the claim rewards the stale answer."""
    task = good()
    moved = {"appointment_id": "apt_1", "patient_id": "pat_1", "starts_at": "2026-03-05T10:00:00Z"}
    task.gold_calls[2] = task.gold_calls[2].model_copy(update={"tool": "cancel_appointment", "output": moved})
    task.claims = [Claim(text="states when it starts: 4 March", values=["2026-03-04T10:00:00Z"], field="starts_at")]
    stale = [f for f in auditor().check(task) if "stale" in f.detail]
    assert [f.check for f in stale] == ["claims"]
    # the same claim on the other appointment, which no write touches, holds in the end state
    task.claims = [Claim(text="states when it starts: 6 March", values=["2026-03-06T09:00:00Z"], field="starts_at")]
    assert not [f for f in auditor().check(task) if "stale" in f.detail]
    # a write that leaves the claimed field as it was does not make it stale
    task.gold_calls[2] = task.gold_calls[2].model_copy(
        update={"output": {**moved, "starts_at": APPOINTMENTS[0]["starts_at"]}}
    )
    task.claims = [Claim(text="states when it starts: 4 March", values=["2026-03-04T10:00:00Z"], field="starts_at")]
    assert not [f for f in auditor().check(task) if "stale" in f.detail]


def test_a_catalog_name_said_mid_sentence_in_its_catalog_case_fails_garble() -> None:
    """'add the Child seat' (a catalog line's capital kept mid-sentence) fails; 'the child seat' passes; a name
    ('Lisbon hub': capitalised alone elsewhere in the data) and a name inside quotes keep their capitals."""
    extras = [
        {"extra_id": "ext_1", "name": "Child seat"},
        {"extra_id": "ext_2", "name": "Lisbon hub"},
        {"extra_id": "ext_3", "name": "Lisbon"},
        {"extra_id": "ext_4", "name": "Roof box for the child seat"},
    ]
    world = WORLD.model_copy(update={"tables": {**WORLD.tables, "extras": extras}})
    common = common_words([world])
    assert "child" in common and "lisbon" not in common
    lookup = GoldCall(server="clinic", tool="find_patient", arguments={}, output={"extras": extras})
    task = good()
    task = task.model_copy(update={"gold_calls": [*task.gold_calls, lookup]})
    judge = Auditor(SPECS, {"clinic": world}, FACTS)

    def garbled(sentence: str) -> bool:
        said = with_message(task.model_copy(deep=True), task.opening_message + " " + sentence)
        return any("catalog case" in f.detail for f in judge.garble(said))

    assert garbled("Please add the Child seat to it.")
    assert not garbled("Please add the child seat to it.")
    assert not garbled("Child seat, please.")  # a sentence's own first word
    assert not garbled('Please add "Child seat" to it.')
    assert not garbled("Please drop it at the Lisbon hub.")
    assert catalog_cased("add the Child seat", ["Child seat"], common) == ["Child seat"]
    # another server's proper name ('Organic Chemistry', a course) does not make this server's word a name
    # ('Organic carrots'): the finding is the same whether the auditor was built over this server or the farm
    carrots = {"extra_id": "ext_5", "name": "Organic carrots"}
    world = world.model_copy(update={"tables": {**world.tables, "extras": [*extras, carrots]}})
    lookup = GoldCall(server="clinic", tool="find_patient", arguments={}, output={"extras": [*extras, carrots]})
    task = good().model_copy(update={"gold_calls": [*good().gold_calls, lookup]})
    course = ServerWorld(
        server="school", controlled=True, tables={"courses": [{"id": "c_1", "title": "Organic Chemistry"}]}
    )
    said = with_message(task.model_copy(deep=True), task.opening_message + " Please add the Organic carrots to it.")
    alone = Auditor(SPECS, {"clinic": world}, FACTS).garble(said)
    farm = Auditor(SPECS, {"clinic": world, "school": course}, FACTS).garble(said)
    assert [f.detail for f in farm] == [f.detail for f in alone] != []


@pytest.mark.parametrize(
    ("text", "repeated"),
    [
        ("Join #general in the Northwind workspace. Also, post it in #general in the Northwind workspace.", True),
        (
            "Could you tell me the total? I like to have it written down. And the fee? I like to have it written down.",
            True,
        ),
        ("Join #general in the Northwind workspace. Also, post it in the #general channel.", False),
        ("Could you move my stay at the Central Oslo from 4 May to room 301 at the Central Oslo?", True),
        ("Could you move my stay at the Central Oslo from 4 May to room 301?", False),
        ('Post "in the Northwind workspace now" in #general in the Northwind workspace now.', False),
    ],
)
def test_a_phrase_said_twice_in_one_message_is_found(text: str, repeated: bool) -> None:
    assert (repeated_phrase(text) is not None) is repeated
