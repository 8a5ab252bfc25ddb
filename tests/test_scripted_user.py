"""The scripted user answers as a person does, on frozen real tasks (no farm needed: a reply depends only on
the task, what the agent said and which calls succeeded): identity questions in many wordings get the facts,
never a no; a go-ahead in many wordings gets a yes only for the change the turn wants, with its amounts; a
request for someone else ends once the agent declines. The LLM user gets the same persona sheet."""

from __future__ import annotations

import pytest
from conftest import REPO

from envfarm.clients.policy_checks import asks_confirmation, asks_detail, claims_success, gives_reason, refuses
from envfarm.clients.tasks import Task, load_tasks
from envfarm.clients.trajectory import CallRecord
from envfarm.clients.users import NO, NOT_MINE, YES, ScriptedSession, persona_sheet

TASKS = {t.id: t for t in load_tasks(REPO / "tests" / "data" / "scoring_corpus" / "tasks.jsonl")}
TOUR = TASKS["topology-s7-0005"]  # cancel booking TB-55722 (the reference is a hidden fact)
PAY = TASKS["topology-s7-0049"]  # pay 49.36 (the account number is a hidden fact)
FOR_SOMEONE = TASKS["topology-s7-0036"]  # cancel a departure for a partner: forbidden
GRADING = TASKS["topology-s7-0013"]  # Mei Brown, email hidden


async def reply(task: Task, said: str, calls: list[CallRecord] | None = None) -> str | None:
    return await ScriptedSession(task, True).reply([{"role": "assistant", "content": said}], calls or [])


@pytest.mark.parametrize(
    "said",
    [
        "Is it OK if I cancel it now?",
        "Shall I cancel booking TB-55722?",
        "Would you like me to go ahead and cancel it?",
        "Can you confirm you want me to cancel TB-55722?",
        "Do you want me to proceed with the cancellation?",
        "I'll cancel TB-55722 with the reason 'cancelled by the operator'. Sound good?",
        "Okay to proceed?",
        "Should I go ahead?",
        "Good to go?",
        "Can I cancel booking TB-55722 for you?",
        "Please confirm and I'll go ahead.",
        "Just to double-check: cancel TB-55722, yes?",
    ],
)
async def test_a_go_ahead_in_any_wording_gets_a_yes_for_the_change_the_turn_wants(said: str) -> None:
    assert asks_confirmation(said) and not asks_detail(said)
    assert await reply(TOUR, said) == YES
    assert await reply(FOR_SOMEONE, said) == NO


@pytest.mark.parametrize(
    ("said", "answer"),
    [
        ("Could you confirm the email on your account?", "My email is mei.brown@example.com."),
        ("May I have your email address?", "My email is mei.brown@example.com."),
        ("What's your full name?", "My full name is Mei Brown."),
        ("Can you confirm your email so I can look you up?", "My email is mei.brown@example.com."),
        ("Before I check, which email do you use with us?", "My email is mei.brown@example.com."),
        ("For security, please state the email on your record.", "My email is mei.brown@example.com."),
        ("Who am I speaking with?", "My full name is Mei Brown."),
    ],
)
async def test_an_identity_question_is_answered_from_the_facts_never_with_a_no(said: str, answer: str) -> None:
    assert asks_detail(said) and not asks_confirmation(said)
    assert await reply(GRADING, said) == answer


async def test_a_read_back_of_another_amount_gets_a_no() -> None:
    asked = "What's your account number?"
    assert await reply(PAY, asked) == "My account number is 4410-7007-0005."
    assert await reply(PAY, "I'll send $49.36 to your payee with memo Pocket money. Shall I go ahead?") == YES
    assert await reply(PAY, "I'll send forty-nine dollars and thirty-six cents. Is that OK?") == YES
    assert await reply(PAY, "I'll send $50.00 to your payee. Shall I go ahead?") == NO
    paid = CallRecord(call_id="1", name="pay_payee", server="banking", tool="pay_payee", ok=True)
    assert await reply(PAY, "Shall I send another $49.36?", [paid]) is None  # the turn is done: the user leaves


async def test_a_read_back_naming_the_row_by_a_number_the_user_said_gets_a_yes() -> None:
    """Seed 13: 'cancel my Pinecrest Coworking subscription at 44.46 a month' read back with its 44.46, while the
    turn's other pending write (a new card) takes 1835, 8 and 2027: the user said 44.46 to name the row, so the
    read-back is the change they asked for; a number nobody said is still another change."""
    task = PAY.model_copy(deep=True)
    task.turns[0].message = "Please pay my 49.36 bill to Lucas; it's the one I set up at 12.50 a week."
    assert await reply(task, "I'll pay the one you set up at 12.50 a week. Shall I go ahead?") == YES
    assert await reply(task, "I'll pay the one at 13.75 a week. Shall I go ahead?") == NO


async def test_someone_asking_for_another_person_ends_once_the_agent_declines() -> None:
    assert await reply(FOR_SOMEONE, "Could you give me Carlos's booking reference?") == NOT_MINE
    assert (await reply(FOR_SOMEONE, "Could you tell me your full name?") or "").startswith("My full name is Daniel")
    declined = "I can't cancel it for Carlos: only the traveller can ask, for their own security."
    assert refuses(declined) and gives_reason(declined) and not claims_success(declined)
    assert await reply(FOR_SOMEONE, declined) is None


def test_the_llm_user_gets_the_same_persona_sheet() -> None:
    sheet = persona_sheet(PAY)
    for part in ("# What you know", "# What you do not know", "# How to answer", "4410-7007-0005", PAY.persona.name):
        assert part in sheet
    assert "on behalf of someone else" in persona_sheet(FOR_SOMEONE)
