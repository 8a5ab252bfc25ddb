"""Scoring: rewards that cannot be gamed by the path taken or by talk alone, one module per job.

`state` (the final state against the gold one), `values` and `claims` (what the answer states), `checks`
(the policy checks), `judge` (the optional LLM judge), `scorer` (one reward and the error taxonomy) and
`aggregate` (rates, pass@k, difficulty). The names other modules use are importable from here.
"""

from envfarm.clients.scoring.aggregate import (
    PolicySummary,
    fill_difficulty,
    oracle_failures,
    pass_at_k,
    pass_hat_k,
    summarize,
)
from envfarm.clients.scoring.checks import grade_check, policy_grades, policy_problems
from envfarm.clients.scoring.claims import PASS_COVERAGE, final_answers, grade_claim, hedged, value_found
from envfarm.clients.scoring.scorer import RewardConfig, Scorer, classify, false_success, reward
from envfarm.clients.scoring.state import NEW_ID, state_match, state_problems

__all__ = [
    "NEW_ID",
    "PASS_COVERAGE",
    "PolicySummary",
    "RewardConfig",
    "Scorer",
    "classify",
    "false_success",
    "fill_difficulty",
    "final_answers",
    "grade_check",
    "grade_claim",
    "hedged",
    "oracle_failures",
    "pass_at_k",
    "pass_hat_k",
    "policy_grades",
    "policy_problems",
    "reward",
    "state_match",
    "state_problems",
    "summarize",
    "value_found",
]
