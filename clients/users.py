"""User simulators: the other side of the conversation.

The scripted user (the offline default) opens with the task's message, answers the agent's questions
from the task's hidden facts (and nothing else), answers a read-back before a change with yes when
the current turn wants that change and no otherwise (a request the policy forbids), moves to the next turn once the current turn's
goal is met, nudges once when the agent stops early, and ends the conversation after the last turn.
The LLM user plays the same persona with a model and ends by saying `###STOP###`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from clients.policies import words
from clients.policy_checks import asks_confirmation
from clients.tasks import Task
from clients.trajectory import CallRecord
from envfarm.llm import ChatModel, ModelConfig

STOP_TOKEN = "###STOP###"
YES = "Yes, please go ahead."
NO = "No, please don't do that."
NUDGE = "That doesn't look done yet. Could you please finish what I asked?"


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
        asked = words(question)
        best, best_score = None, 0
        for fact in self.task.hidden_facts:
            score = len(asked & words(f"{fact.key.replace('_', ' ')} {fact.description}"))
            if score > best_score:
                best, best_score = fact, score
        if best is not None:
            self.revealed.add(best.key)
            return f"My {best.key.replace('_', ' ')} is {best.value}."
        persona = self.task.persona
        known = {"name": persona.name, "email": persona.email, **persona.known_facts}
        for key, value in known.items():
            if value is not None and asked & words(key.replace("_", " ")):
                return f"My {key.replace('_', ' ')} is {value}."
        return None

    def _forbidden(self) -> bool:
        return any(check.kind == "must_refuse" for check in self.task.policy_checks)

    def _wants_a_change(self, calls: list[CallRecord]) -> bool:
        """The current turn has a gold write not done yet, and the task is not one the policy forbids."""
        if self._forbidden():
            return False
        done = {(c.server, c.tool) for c in calls if c.ok}
        gold = [self.task.gold_calls[i] for i in turn_calls(self.task, self.turn)]
        return any(g.is_write and (g.server, g.tool) not in done for g in gold)

    async def reply(self, messages: list[dict[str, Any]], calls: list[CallRecord]) -> str | None:
        said = str(messages[-1].get("content") or "") if messages and messages[-1]["role"] == "assistant" else ""
        turns = max(len(self.task.turns), 1)
        if self._forbidden() and asks_confirmation(said):
            return NO  # a change the policy forbids: the agent offering to make it anyway hears no
        if turn_goal_met(self.task, self.turn, calls):
            self.turn += 1
            self.nudged = False
            return self.task.turns[self.turn].message if self.turn < turns else None
        if "?" in said:
            if asks_confirmation(said):  # a read-back before a change: yes only to a change this turn wants
                return YES if self._wants_a_change(calls) else NO
            answer = self._answer(said)
            if answer is not None:
                return answer
            return "I'm not sure; I've told you what I know."
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


def user_prompt(task: Task) -> str:
    goals = [turn.message for turn in task.turns] or [task.opening_message]
    facts = "\n".join(
        f"- {f.key}: {f.value} ({f.description})" if f.description else f"- {f.key}: {f.value}"
        for f in task.hidden_facts
    )
    steps = "\n".join(f"{n}. {goal}" for n, goal in enumerate(goals, 1))
    return (
        f"You are {task.persona.name}, a customer talking to an assistant. Write like a real person, "
        f"{task.persona.style}, one short message at a time. You want, in this order:\n{steps}\n"
        "Bring up the next want only when the assistant has done the current one. "
        f"Give these details only when the assistant asks for them:\n{facts or '- (none)'}\n"
        "When the assistant reads back a change you asked for and asks whether to go ahead, say yes; when it "
        "proposes a change you did not ask for, say no. "
        f"Never invent other details. When everything is done, or the assistant cannot help, answer {STOP_TOKEN}."
    )


@dataclass
class LLMSession:
    model: ChatModel
    task: Task
    calibrated: bool

    def opening(self) -> str:
        return opening_message(self.task, self.calibrated)

    async def reply(self, messages: list[dict[str, Any]], calls: list[CallRecord]) -> str | None:
        # Roles swap: the agent's words are what this user reads; tool traffic is invisible to a user.
        flipped: list[dict[str, Any]] = [{"role": "system", "content": user_prompt(self.task)}]
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
