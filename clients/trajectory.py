"""The trajectory contract: what `envfarm rollout` writes (one JSON object per line) and `eval`/`export` read.

A trajectory is one rollout of one task: the OpenAI chat messages (with tool calls) the policy saw
and produced, the tools it was offered, every MCP call as it ran, the final state of each server,
and, once scored, the reward with its breakdown. It carries its task, so it can be re-scored and
exported (verl rows recreate the episode from it) without the tasks file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from envfarm.clients.tasks import Task
from envfarm.servers.runtime.control import TableDiff

StopReason = Literal[
    "done",  # the user ended the conversation
    "max_turns",
    "max_tool_calls",
    "max_tokens",
    "wall_time",
    "policy_error",  # the policy's endpoint failed (an LLMError)
    "server_error",  # a server hung, died or broke: never the agent's fault
    "user_error",  # the simulated user's model failed: not the agent's fault either
]

CallError = Literal["malformed", "unknown_tool", "invalid_arguments", "rejected", "server_error", "timeout"]

ErrorCategory = Literal[
    "policy_error",  # the policy's endpoint failed: kept out of rates, like a server error
    "server_error",
    "user_error",
    "out_of_turns",
    "policy_violation",
    "bad_arguments",
    "rule_violation",
    "wrong_tool",
    "gave_up",
    "wrong_answer",
    "false_success",  # told the user a change was made (or a forbidden one done) when it was not
    "judge_error",
]


class CallRecord(BaseModel):
    """One tool call the policy asked for, and what came of it."""

    call_id: str
    name: str = Field(description="the function name the policy used")
    server: str | None = Field(default=None, description="None when the name matched no enabled tool")
    tool: str | None = None
    arguments: Any = Field(default=None, description="parsed arguments (the raw string when they were not JSON)")
    ok: bool = False
    error: CallError | None = None
    output: Any = Field(default=None, description="structured content, or the text of the result")
    turn: int = 0
    seconds: float = 0.0


class ServerState(BaseModel):
    """A server's state at the end of the episode (control plane only); no hash: never opened, so the seed."""

    hash: str | None = None
    diff: dict[str, TableDiff] = Field(default_factory=dict)


class ClaimGrade(BaseModel):
    claim: str
    score: float = Field(description="1, 0.5 or 0")
    matched: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    judge: str | None = Field(default=None, description="'deterministic' or the judge model")
    judge_error: str | None = None
    detail: str = Field(default="", description="why a value the answer holds did not count (hedged, unsupported)")


class PolicyGrade(BaseModel):
    """One policy check of the task, graded on the trajectory."""

    rule_id: str = ""
    kind: str
    tool: str | None = None
    passed: bool
    detail: str = Field(default="", description="why it failed (empty when it passed)")
    judge: str | None = Field(default=None, description="'deterministic' or the judge model")
    judge_error: str | None = None


class Score(BaseModel):
    """Why a rollout got its reward: each part on its own, so rewards can be recomputed and audited."""

    state_match: bool | None = Field(default=None, description="None when no server could report its state")
    state_problems: list[str] = Field(default_factory=list)
    claims_coverage: float = 1.0
    claims_pass: bool = True
    claims: list[ClaimGrade] = Field(default_factory=list)
    policy_pass: bool = True
    policy_problems: list[str] = Field(default_factory=list)
    policy: list[PolicyGrade] = Field(default_factory=list, description="each policy check of the task")
    reward: float = 0.0
    success: bool = False
    error: ErrorCategory | None = Field(default=None, description="why it failed (None on success)")
    server_error: bool = Field(default=False, description="the environment broke: exclude from rewards")
    policy_error: bool = Field(
        default=False, description="the policy's endpoint failed (unreachable, erroring, garbage): exclude from rewards"
    )

    @property
    def excluded(self) -> bool:
        """Kept out of rates and rewards: the environment or the policy's endpoint broke, not the agent."""
        return self.server_error or self.policy_error


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Trajectory(BaseModel):
    id: str
    task_id: str
    policy: str
    user: str
    attempt: int = 0
    calibrated: bool = True
    messages: list[dict[str, Any]] = Field(description="OpenAI chat messages, system prompt first")
    tools: list[dict[str, Any]] = Field(description="OpenAI function tools offered to the policy")
    tool_map: dict[str, tuple[str, str]] = Field(default_factory=dict, description="function name -> (server, tool)")
    write_tools: list[str] = Field(default_factory=list, description="function names not marked read-only")
    calls: list[CallRecord] = Field(default_factory=list)
    stop_reason: StopReason = "done"
    stop_detail: str = ""
    user_turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0
    episodes: dict[str, str] = Field(default_factory=dict, description="server -> episode id used")
    final_state: dict[str, ServerState] = Field(default_factory=dict)
    score: Score | None = None
    task: Task
    metadata: dict[str, Any] = Field(default_factory=dict)

    def assistant_text(self) -> str:
        """Everything the assistant said in words (what claims are graded against)."""
        return "\n".join(m["content"] for m in self.messages if m["role"] == "assistant" and m.get("content"))
