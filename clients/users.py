"""User simulators: the other side of the conversation.

Both play one persona sheet (`persona_sheet`, tau2 style): who the user is, what they want turn by turn, the
facts they know (given only when asked), what they do not know, and how to answer.

The scripted user (the offline default) opens with the task's message and reads each question the way a
person does (`envfarm.clients.policy_checks.question_kind`): a question for a detail (who they are, which record:
"Could you confirm the email on your account?") is answered from the facts they know, never with a no; a
question asking to go ahead ("Shall I", "Is it OK if I cancel it now?", "Would you like me to") gets a yes
only for the change the current turn wants, stated with its values (a read-back of another amount or date
gets a no), and a no on a request the policy forbids. It moves to the next turn once the current turn's goal
is met, nudges once when the agent stops early, and ends after the last turn (on a forbidden request: once
the agent declines). The LLM user plays the same sheet with a model and ends by saying `###STOP###`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol

from envfarm.clients.policies import words
from envfarm.clients.policy_checks import claims_success, question_kind, refuses, requests_in
from envfarm.clients.scoring.values import number_value, parse_moment, read
from envfarm.clients.tasks import Task
from envfarm.clients.trajectory import CallRecord
from envfarm.llm import ChatModel, ModelConfig

STOP_TOKEN = "###STOP###"
YES = "Yes, please go ahead."
NO = "No, please don't do that."
NUDGE = "That doesn't look done yet. Could you please finish what I asked?"
UNKNOWN = "I'm not sure; I've told you what I know."
NOT_MINE = "I don't have their details with me, sorry."
# How people name their own details when asked: the words of a question that point at a fact's key.
ALIASES = {
    "date_of_birth": {"birth", "dob", "birthday", "born", "birthdate"},
    "email": {"email", "mail", "e"},
    "phone": {"phone", "mobile", "telephone", "cell"},
    "name": {"name", "surname", "who", "speaking"},
    "full_name": {"name", "surname", "who", "speaking"},
    "text": {"text", "message", "say", "write", "post", "wording"},
    "body": {"body", "message", "say", "write", "wording"},
}
# "Are you the account holder?", "Is this your own booking?": whether they ask for themselves.
WHOSE = re.compile(
    r"\b(are you (?:the|a|an) (?:account ?holder|owner|holder|member|patient|customer|student|traveller|renter|"
    r"driver|guest)|is (?:this|it|that) (?:for )?your(?: own)?|are you asking (?:for|on behalf))\b",
    re.IGNORECASE,
)
OTHERS = re.compile(r"\b(his|her|their|them|him)\b|\b[A-Z][a-z]+'s\b")


def known_facts(task: Task) -> dict[str, object]:
    """Everything the user knows about themselves and their request: the persona's facts, then the hidden
    facts (given only when asked)."""
    persona = task.persona
    facts: dict[str, object] = {"name": persona.name}
    if persona.email:
        facts["email"] = persona.email
    facts.update({k: v for k, v in persona.known_facts.items() if v not in (None, "")})
    facts.update({f.key: f.value for f in task.hidden_facts})
    return facts


def forbidden(task: Task) -> bool:
    """The request is one the policy forbids (the user asks for someone else)."""
    return any(check.kind == "must_refuse" for check in task.policy_checks)


def persona_sheet(task: Task) -> str:
    """The persona both users play (tau2 style): known facts, unknown facts, instructions."""
    goals = [turn.message for turn in task.turns] or [task.opening_message]
    steps = "\n".join(f"{n}. {goal}" for n, goal in enumerate(goals, 1))
    hidden = {f.key: f for f in task.hidden_facts}
    known = "\n".join(
        f"- {key.replace('_', ' ')}: {value}"
        + (f" ({hidden[key].description})" if key in hidden and hidden[key].description else "")
        for key, value in known_facts(task).items()
    )
    third_party = (
        "You are asking on behalf of someone else; you do not have their details. If the assistant declines and "
        "says why, accept it politely and end the conversation.\n"
        if forbidden(task)
        else ""
    )
    return (
        f"# Who you are\nYou are {task.persona.name}, a customer talking to an assistant. Write like a real person, "
        f"{task.persona.style}, one short message at a time.\n\n"
        f"# What you want, in this order\n{steps}\nBring up the next want only when the assistant has done the "
        "current one.\n\n"
        f"# What you know (give a detail only when the assistant asks for it)\n{known}\n\n"
        "# What you do not know\nInternal ids and codes the system uses, anything about other people, anything "
        "not listed above. If asked for one, say you don't know; never invent a detail.\n\n"
        "# How to answer\n"
        '- A question about who you are or which record you mean ("could you confirm your email?", "what\'s your '
        'date of birth?"): answer it from what you know.\n'
        '- A question whether to go ahead with a change ("shall I", "is it OK if", "would you like me to", '
        '"can you confirm you want"): say yes only when it reads back the change you want now, with the right '
        "details; otherwise say no and what you want instead.\n"
        f"{third_party}"
        f"- When everything is done, or the assistant cannot help, answer {STOP_TOKEN}."
    )


def _said(key: str, value: object, description: str | None) -> str:
    """A fact as the user gives it: its hidden fact's own words ("my email is ...", "the kind is pre-trip", never
    "My owner email is ..." or "My kind is pre_trip."); a date stays as the record has it ("My date of birth is
    1988-03-12.": the words of the label, the value a form takes)."""
    label = re.match(r"(.+?) (?:is|are) ", description or "")
    if description and label is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(value)):
        return description[:1].upper() + description[1:].rstrip(".") + "."
    words_ = label.group(1) if label is not None else f"my {key.replace('_', ' ')}"
    return f"{words_[:1].upper()}{words_[1:]} is {value}."


class UserSession(Protocol):
    def opening(self) -> str: ...

    async def reply(self, messages: list[dict[str, Any]], calls: list[CallRecord]) -> str | None:
        """The user's next message; None ends the conversation."""
        ...


class UserSimulator(Protocol):
    name: str

    def session(self, task: Task, calibrated: bool = True) -> UserSession: ...

    async def aclose(self) -> None: ...


def opening_message(task: Task, calibrated: bool) -> str:
    if not calibrated and task.uncalibrated_message:
        return task.uncalibrated_message
    return task.opening_message


def turn_calls(task: Task, turn: int) -> list[int]:
    """The gold calls of a user turn (all of them when the task has no turn list; none after the last)."""
    if not task.turns:
        return list(range(len(task.gold_calls))) if turn == 0 else []
    return list(task.turns[turn].gold_calls) if turn < len(task.turns) else []


def turn_goal_met(task: Task, turn: int, calls: list[CallRecord]) -> bool:
    """Every gold write of the turn has a successful call of the same tool (reads: its last gold tool)."""
    if turn >= max(len(task.turns), 1):
        return True
    gold = [task.gold_calls[i] for i in turn_calls(task, turn)]
    needed = [g for g in gold if g.is_write] or gold[-1:]
    done = {(c.server, c.tool) for c in calls if c.ok}
    return all((g.server, g.tool) in done for g in needed)


@dataclass
class ScriptedSession:
    task: Task
    calibrated: bool
    turn: int = 0
    nudged: bool = False
    revealed: set[str] = field(default_factory=set)

    def opening(self) -> str:
        return opening_message(self.task, self.calibrated)

    def _answer(self, question: str) -> str | None:
        """The facts a question asks for: the hidden fact its words fit best, and any of the user's own
        details it names (name, email, date of birth...). None when it asks for nothing they know."""
        if WHOSE.search(question):
            if forbidden(self.task):
                return "No, I'm asking on someone else's behalf."
            return "Yes, it's mine." if not re.search(r"on behalf", question, re.IGNORECASE) else "No, it's for me."
        if forbidden(self.task) and OTHERS.search(question) and not re.search(r"\byour\b", question, re.IGNORECASE):
            return NOT_MINE
        asked = words(question) | set(re.findall(r"[a-z]+", question.lower()))
        answers: dict[str, object] = {}
        best, best_score = None, 0
        for fact in self.task.hidden_facts:
            score = len(asked & words(f"{fact.key.replace('_', ' ')} {fact.description}"))
            if score > best_score:
                best, best_score = fact, score
        if best is not None:
            self.revealed.add(best.key)
            answers[best.key] = best.value
        for fact in self.task.hidden_facts:  # "your email and date of birth?": every fact named in full
            named = words(fact.key.replace("_", " "))
            if fact.key not in answers and named and named <= asked:
                self.revealed.add(fact.key)
                answers[fact.key] = fact.value
        hidden = list(answers.values())  # a known fact that repeats one of these ("contact email") goes unsaid
        for key, value in known_facts(self.task).items():
            if key in answers or value in hidden or (key == "name" and "full_name" in answers):
                continue
            names = ALIASES.get(key, set(words(key.replace("_", " "))))
            if (key in ALIASES and names & asked) or (names and names <= asked):
                answers[key] = value
        if "full_name" in answers and "name" in answers:
            answers.pop("name")
        unrevealed = [f for f in self.task.hidden_facts if f.key not in self.revealed]
        if not answers and len(unrevealed) == 1 and not forbidden(self.task):
            # Asked in words that fit no fact ("what should it say?"): the one detail still held back.
            answers[unrevealed[0].key] = unrevealed[0].value
            self.revealed.add(unrevealed[0].key)
        worded = {f.key: f.description for f in self.task.hidden_facts if f.description}
        said = [_said(key, value, worded.get(key)) for key, value in answers.items()]
        return " ".join(said) or None

    def _wants(self, said: str, calls: list[CallRecord]) -> bool:
        """The current turn has a gold write not done yet, and the read-back states it: any amount or date it
        gives is one of that write's (a read-back of another amount is not the change the user wants)."""
        if forbidden(self.task):
            return False
        done = {(c.server, c.tool) for c in calls if c.ok}
        gold = [self.task.gold_calls[i] for i in turn_calls(self.task, self.turn)]
        pending = [g for g in gold if g.is_write and (g.server, g.tool) not in done]
        if not pending:
            return False
        numbers: set[float] = set()
        days: set[date] = set()
        for call in pending:
            for value in call.arguments.values():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    numbers.add(float(value))
                elif isinstance(value, str) and (moment := parse_moment(value)) is not None:
                    days.add(moment[0].date() if isinstance(moment[0], datetime) else moment[0])
                elif isinstance(value, str) and (number := number_value(value)) is not None:
                    numbers.add(number)
        reading = read(said)
        # a number the user said themselves names the row ('my subscription at 44.46 a month'), no other change
        own = set(read(self.task.turns[self.turn].message).numbers) if self.turn < len(self.task.turns) else set()
        if numbers and reading.numbers and not numbers & set(reading.numbers) and not set(reading.numbers) <= own:
            return False
        return not (days and reading.dates and not days & reading.dates)

    def _forbidden_reply(self, said: str) -> str | None:
        """Someone asking for another person: says no to going ahead, answers what they can about themselves, and
        ends once the agent declines (or says it is done)."""
        kinds = {question_kind(q) for q in requests_in(said)}
        if "confirmation" in kinds:
            return NO
        if "detail" in kinds:
            return self._answer(self._asked(said)) or UNKNOWN
        if not said or refuses(said) or claims_success(said):
            return None
        if "?" in said:
            return self._answer(said) or UNKNOWN
        if not self.nudged:
            self.nudged = True
            return NUDGE
        return None

    @staticmethod
    def _asked(said: str) -> str:
        """The sentences of a message that ask for a detail (a read-back around them names other things)."""
        return " ".join(q for q in requests_in(said) if question_kind(q) == "detail") or said

    async def reply(self, messages: list[dict[str, Any]], calls: list[CallRecord]) -> str | None:
        said = str(messages[-1].get("content") or "") if messages and messages[-1]["role"] == "assistant" else ""
        if forbidden(self.task):
            return self._forbidden_reply(said)
        turns = max(len(self.task.turns), 1)
        if turn_goal_met(self.task, self.turn, calls):
            self.turn += 1
            self.nudged = False
            return self.task.turns[self.turn].message if self.turn < turns else None
        kinds = {question_kind(q) for q in requests_in(said)}
        parts: list[str] = []
        if "confirmation" in kinds:  # a read-back before a change: yes only to the change this turn wants
            parts.append(YES if self._wants(said, calls) else NO)
        if "detail" in kinds or (not parts and "?" in said):
            parts.append(self._answer(self._asked(said)) or ("" if parts else UNKNOWN))
        if any(parts):
            return " ".join(p for p in parts if p)
        if not self.nudged:
            self.nudged = True
            return NUDGE
        return None


class ScriptedUser:
    name = "scripted"

    def session(self, task: Task, calibrated: bool = True) -> UserSession:
        return ScriptedSession(task, calibrated)

    async def aclose(self) -> None:
        return None


@dataclass
class LLMSession:
    model: ChatModel
    task: Task
    calibrated: bool

    def opening(self) -> str:
        return opening_message(self.task, self.calibrated)

    async def reply(self, messages: list[dict[str, Any]], calls: list[CallRecord]) -> str | None:
        # Roles swap: the agent's words are what this user reads; tool traffic is invisible to a user.
        flipped: list[dict[str, Any]] = [{"role": "system", "content": persona_sheet(self.task)}]
        for message in messages:
            if message["role"] == "user":
                flipped.append({"role": "assistant", "content": message.get("content") or ""})
            elif message["role"] == "assistant" and message.get("content"):
                flipped.append({"role": "user", "content": message["content"]})
        text = await self.model.text(flipped)
        return None if STOP_TOKEN in text else text


class LLMUser:
    def __init__(self, config: ModelConfig) -> None:
        self.model = ChatModel(config)
        self.name = self.model.name

    def session(self, task: Task, calibrated: bool = True) -> UserSession:
        return LLMSession(self.model, task, calibrated)

    async def aclose(self) -> None:
        await self.model.aclose()


def make_user(spec: str, base_url: str | None = None) -> UserSimulator:
    from envfarm.llm import parse_model

    config = parse_model(spec, base_url)
    if config is not None:
        return LLMUser(config)
    if spec == "scripted":
        return ScriptedUser()
    raise ValueError(f"unknown user simulator {spec!r}: use scripted or openai:MODEL")
