"""Tasks written by hand for the clinic and grounded for real: each chain runs on a fresh episode over
`Connections`, and its outputs and final state become the gold. The rollout tests use these until
(and besides) tasks from the synthesizer."""

from __future__ import annotations

from typing import Any

from envfarm.clients.connect import Connections
from envfarm.clients.tasks import (
    Claim,
    ExpectedState,
    GoldCall,
    HiddenFact,
    Persona,
    PolicyCheck,
    Provenance,
    Task,
    ToolRef,
    Turn,
)

CLINIC_TOOLS = [
    "find_patient",
    "search_doctors",
    "list_free_slots",
    "book_appointment",
    "list_appointments",
    "get_slot",
    "reschedule_appointment",
    "cancel_appointment",
    "get_invoice",
    "pay_invoice",
]
WRITES = {"book_appointment", "reschedule_appointment", "cancel_appointment", "pay_invoice"}


async def ground(
    connections: Connections,
    task_id: str,
    calls: list[tuple[str, dict[str, Any]]],
    turns: list[list[int]] | None = None,
) -> tuple[list[GoldCall], ExpectedState]:
    """Run `calls` on a fresh clinic episode; every call must succeed. Returns the gold calls and state."""
    gold: list[GoldCall] = []
    turn_of = {index: n for n, indices in enumerate(turns or [list(range(len(calls)))]) for index in indices}
    async with connections.episode("clinic", f"ground-{task_id}") as episode:
        for index, (tool, arguments) in enumerate(calls):
            result = await episode.call_tool(tool, arguments)
            assert not result.is_error, f"{task_id}: {tool} failed: {result.content}"
            gold.append(
                GoldCall(
                    server="clinic",
                    tool=tool,
                    arguments=arguments,
                    output=result.structured_content,
                    turn=turn_of.get(index, 0),
                    is_write=tool in WRITES,
                )
            )
        state = await episode.state()
    assert state is not None
    return gold, ExpectedState(hash=state.hash, diff=state.diff, tables=sorted(state.diff))


def base(
    task_id: str, opening: str, uncalibrated: str, gold: list[GoldCall], expected: ExpectedState, **extra: Any
) -> Task:
    return Task(
        id=task_id,
        servers=["clinic"],
        tools=[ToolRef(server="clinic", tool=name) for name in CLINIC_TOOLS],
        persona=extra.pop("persona", Persona(name="Lucas Yilmaz", email="lucas.yilmaz@example.com")),
        opening_message=opening,
        uncalibrated_message=uncalibrated,
        gold_calls=gold,
        expected_state={"clinic": expected},
        provenance=Provenance(sampler="hand", seed=0, chain=[f"clinic.{g.tool}" for g in gold]),
        **extra,
    )


async def pay_invoice_task(connections: Connections) -> Task:
    """find_patient -> list_appointments -> get_invoice -> pay_invoice, one turn."""
    calls = [
        ("find_patient", {"full_name": "Lucas Yilmaz"}),
        ("list_appointments", {"patient_id": "pat_dc63z3"}),
        ("get_invoice", {"appointment_id": "apt_ah2f96"}),
        ("pay_invoice", {"invoice_id": "inv_qd5x84", "amount": 95.0}),
    ]
    gold, expected = await ground(connections, "pay", calls)
    return base(
        "clinic-pay",
        "Hi, I'm Lucas Yilmaz. Please settle the open bill for my back pain visit.",
        "Call find_patient with full_name 'Lucas Yilmaz', list_appointments, get_invoice for apt_ah2f96, then "
        "pay_invoice inv_qd5x84 amount 95.",
        gold,
        expected,
        claims=[Claim(text="Invoice inv_qd5x84 for $95.00 is now paid.", values=["95", "paid"])],
        policy_checks=[PolicyCheck(rule="pay the exact amount due", kind="must_call", tool="pay_invoice")],
    )


async def booking_task(connections: Connections) -> Task:
    """Two turns: look up a cardiologist's slot (read), then book it; the email is a hidden fact."""
    calls = [
        ("search_doctors", {"specialty": "cardiology"}),
        ("list_free_slots", {"doctor_id": "doc_sty6w9", "starts_after": "2026-04-13T09:00:00Z"}),
        ("find_patient", {"email": "priya.lopez@example.com"}),
        ("book_appointment", {"patient_id": "pat_c5dt75", "slot_id": "slot_w76wb3", "reason": "chest pain"}),
    ]
    gold, expected = await ground(connections, "book", calls, turns=[[0, 1], [2, 3]])
    return base(
        "clinic-book",
        "Hello! When is Dr. Tanaka, the cardiologist, next free?",
        "search_doctors specialty cardiology, then list_free_slots for doc_sty6w9 starts_after 2026-04-13T09:00:00Z.",
        gold,
        expected,
        persona=Persona(name="Priya Lopez", email="priya.lopez@example.com"),
        hidden_facts=[HiddenFact(key="email", value="priya.lopez@example.com", description="my email address")],
        turns=[
            Turn(message="Hello! When is Dr. Tanaka, the cardiologist, next free?", gold_calls=[0, 1]),
            Turn(message="Great, please book that first slot for me, the reason is 'chest pain'.", gold_calls=[2, 3]),
        ],
        claims=[
            Claim(text="The first free slot is on 2026-04-13 at 10:00.", values=["2026-04-13T10:00:00Z"]),
            Claim(text="The appointment is booked for chest pain.", values=["booked"]),
        ],
    )


async def read_task(connections: Connections) -> Task:
    """A read-only question: the answer's claims carry the whole grade."""
    calls = [
        ("find_patient", {"full_name": "Priya Lopez"}),
        ("list_appointments", {"patient_id": "pat_c5dt75", "status": "booked"}),
    ]
    gold, expected = await ground(connections, "read", calls)
    appointments = gold[1].output["appointments"]
    return base(
        "clinic-read",
        "Hi, this is Priya Lopez. How many booked appointments do I have coming up?",
        "find_patient full_name 'Priya Lopez' then list_appointments with status booked.",
        gold,
        expected,
        persona=Persona(name="Priya Lopez"),
        claims=[Claim(text=f"You have {len(appointments)} booked appointments.", values=[str(len(appointments))])],
    )


async def handmade_tasks(connections: Connections) -> list[Task]:
    return [await pay_invoice_task(connections), await booking_task(connections), await read_task(connections)]
