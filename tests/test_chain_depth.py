"""The chain-depth counter (`envfarm.clients.audit.chain_depth`), the rubric's criterion D: hand-made golds whose
needed, motivated calls were counted by hand, and a soak over seeds that the generator reaches its deep share."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import REPO

from envfarm.clients.audit import chain_depth, depth_histogram
from envfarm.clients.connect import Connections, farm_targets
from envfarm.clients.synthesize import DEEP_CALLS, DEEP_SHARE, SynthesisOptions, synthesize
from envfarm.clients.tasks import Claim, GoldCall, HiddenFact, Persona, PolicyCheck, Provenance, Task, Turn


def call(tool: str, arguments: dict[str, Any], output: Any, write: bool = False, server: str = "tutoring") -> GoldCall:
    return GoldCall(server=server, tool=tool, arguments=arguments, output=output, is_write=write)


def task(opening: str, calls: list[GoldCall], claims: list[Claim] | None = None, **extra: Any) -> Task:
    return Task(
        id="t",
        servers=sorted({c.server for c in calls}),
        tools=[],
        persona=Persona(name="Ana Silva", email="ana@example.com"),
        opening_message=opening,
        turns=[Turn(message=opening, gold_calls=list(range(len(calls))))],
        gold_calls=calls,
        claims=claims or [],
        provenance=Provenance(sampler="topology", seed=0),
        **extra,
    )


STUDENT = {"student_id": "stu_1", "name": "Ana Silva", "email": "ana@example.com"}
SESSIONS = {
    "sessions": [
        {"session_id": "ses_1", "tutor_id": "tut_1", "starts_at": "2026-04-23T15:00:00Z", "subject": "Algebra"},
        {"session_id": "ses_2", "tutor_id": "tut_2", "starts_at": "2026-04-08T10:00:00Z", "subject": "Physics"},
    ]
}
TUTOR = {"tutor_id": "tut_1", "name": "Daniel Patel", "hourly_rate": 42.5}
CANCELLED = {"session_id": "ses_1", "status": "cancelled", "refund": 42.5}


def test_person_records_detail_act_is_four_deep() -> None:
    """Find the student, list their sessions, read the tutor of the one said, and rate that tutor: every call
    feeds the next with a value only it showed."""
    gold = [
        call("find_student", {"email": "ana@example.com"}, STUDENT),
        call("list_sessions", {"student_id": "stu_1"}, SESSIONS),
        call("get_tutor", {"tutor_id": "tut_1"}, TUTOR),
        call("rate_tutor", {"tutor_id": "tut_1", "session_id": "ses_1", "stars": 5}, {"ok": True}, write=True),
    ]
    found = chain_depth(task("Rate the tutor of my 23 April session five stars. I'm ana@example.com.", gold))
    # rate_tutor's tutor_id was first shown by list_sessions, so get_tutor feeds nothing: padding, not counted
    assert found.needed == [0, 1, 3] and found.depth == 3
    assert found.feeds[3] == [1]
    # asked for the tutor's rate, the get is needed (it alone shows 42.5)
    claims = [Claim(text="the hourly rate: 42.50", values=["42.5"], field="hourly_rate")]
    asked = "What does the tutor of my 23 April session charge? Rate them five stars. I'm ana@example.com."
    deeper = chain_depth(task(asked, gold, claims))
    assert deeper.needed == [0, 1, 2, 3] and deeper.depth == 4


def test_a_value_the_user_says_needs_no_lookup_and_an_unsaid_literal_motivates_nothing() -> None:
    # the subject is said, so the search by it is rooted in the user's words; the student id is looked up
    gold = [
        call("find_student", {"email": "ana@example.com"}, STUDENT),
        call("book_session", {"student_id": "stu_1", "subject": "Algebra"}, {"session_id": "ses_9"}, write=True),
    ]
    assert chain_depth(task("Book me an Algebra session, please (ana@example.com).", gold)).depth == 2
    # the email is never said nor held back: the lookup is rooted in a literal the agent never gets, and the
    # write that takes its output is unmotivated with it
    assert chain_depth(task("Book me an Algebra session, please.", gold)).needed == []
    held = task("Book me an Algebra session.", gold, hidden_facts=[HiddenFact(key="email", value="ana@example.com")])
    assert chain_depth(held).depth == 2


def test_a_read_after_the_write_counts_only_for_a_claim_it_alone_answers() -> None:
    gold = [
        call("find_student", {"email": "ana@example.com"}, STUDENT),
        call("list_sessions", {"student_id": "stu_1"}, SESSIONS),
        call("cancel_session", {"session_id": "ses_1"}, CANCELLED, write=True),
        call("get_session", {"session_id": "ses_1"}, {**SESSIONS["sessions"][0], "status": "cancelled"}),
    ]
    said = "Cancel my 23 April session; ana@example.com"
    assert chain_depth(task(said, gold)).needed == [0, 1, 2]
    # the refund is first shown by the write itself: the re-read after it still pads
    refund = [Claim(text="the refund: 42.50", values=["42.5"], field="refund")]
    assert chain_depth(task(said, gold, refund)).needed == [0, 1, 2]


def test_two_servers_join_only_when_a_value_flows_between_them() -> None:
    member = {"member_id": "mem_4", "email": "ana@example.com"}
    turn_two = [
        call("find_member", {"email": "ana@example.com"}, member, server="library"),
        call("renew_card", {"member_id": "mem_4"}, {"ok": True}, write=True, server="library"),
    ]
    gold = [
        call("find_student", {"name": "Ana Silva"}, STUDENT),
        call("cancel_session", {"session_id": "ses_1"}, CANCELLED, write=True),
        *turn_two,
    ]
    # the session id was never looked up: that write is rooted in nothing the agent has; the student found by
    # name still feeds the library search its email (find_student -> find_member -> renew_card)
    unrooted = chain_depth(task("Cancel my 23 April session and renew my library card.", gold))
    assert unrooted.needed == [0, 2, 3] and unrooted.depth == 3
    linked = [gold[0], call("list_sessions", {"student_id": "stu_1"}, SESSIONS), gold[1], *turn_two]
    # the email the library search takes is the one the tutoring lookup showed (the user never said it)
    assert chain_depth(task("Cancel my 23 April session and renew my library card.", linked)).depth == 5
    # said by the user, the email joins nothing: two chains of three and two
    said = chain_depth(task("Cancel my 23 April session and renew my library card; ana@example.com", linked))
    assert said.depth == 3 and len(said.needed) == 5


def test_a_refusal_counts_the_reads_that_establish_it() -> None:
    gold = [
        call("find_member", {"name": "Ana Silva"}, {"member_id": "mem_4", "card": "LC-100001"}, server="library"),
        call("find_member", {"card": "LC-200765"}, {"member_id": "mem_9", "card": "LC-200765"}, server="library"),
    ]
    check = PolicyCheck(rule="Only the member may change their holds.", kind="must_refuse", server="library")
    refusal = task("Cancel the hold on my card LC-200765, I'm Ana Silva.", gold, policy_checks=[check])
    assert chain_depth(refusal).depth == 2 and depth_histogram([refusal]) == {2: 1}


@pytest.mark.slow
async def test_the_generator_reaches_its_deep_share_over_seeds() -> None:
    """Over seeds, on servers whose goals can be reached by four linked calls (a copy borrowed, a car rented, a
    message unpinned, a tour booked), the kept tasks reach the deep share less a few points, and the summary
    reports the same histogram the counter gives. A farm whose goals are one lookup away stays shallow: shallow
    tasks are set aside with odds, never excluded."""
    servers = ["library", "team_chat", "car_rental", "tour_booking"]
    shares = []
    async with Connections(farm_targets(REPO, servers)) as farm:
        for seed in (11, 12, 13):
            synthesis = await synthesize(SynthesisOptions(servers=servers, n=10, seed=seed), farm)
            tasks = synthesis.tasks
            assert synthesis.summary.chain_depths == depth_histogram(tasks)
            assert synthesis.summary.deep_chain_share == round(
                sum(chain_depth(t).depth >= DEEP_CALLS for t in tasks) / len(tasks), 3
            )
            shares.append(synthesis.summary.deep_chain_share)
    # At 10 tasks a run the share lags the target (the first tasks are kept before it bites, refusals are never
    # set aside): 0.4, 0.5, 0.4 here; 0.46 to 0.54 at 80 tasks over the whole farm (seeds 4402-4405), against
    # 0.19 to 0.32 before the target existed.
    assert sum(shares) / len(shares) >= DEEP_SHARE - 0.15 - 1e-9 and min(shares) >= 0.3, shares
