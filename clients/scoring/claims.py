"""Claims coverage (MCP-Atlas-style), graded by meaning on the assistant's answers alone.

The answer is what the assistant told the user at the end of each request (`final_answers`): not its
read-backs, not its questions, not tool traffic. A claim's value is stated when the answer says it in any
common form (`envfarm.clients.scoring.values`); it does not count when the answer hedges (offers several candidates
for the one value asked for) or when nothing in the conversation backs it (no tool output and no user
message holds it: a guess that happens to be right is still a guess). Each claim scores 1 / 0.5 / 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from envfarm.clients.policy_checks import asks_user
from envfarm.clients.scoring.values import Clock, fold, moment_stated, number_stated, number_value, parse_moment, read
from envfarm.clients.tasks import Claim
from envfarm.clients.trajectory import ClaimGrade

PASS_COVERAGE = 0.75

HEDGE = re.compile(
    r"\b(might|maybe|may be|perhaps|possibl[ey]|possibilit(?:y|ies)|could be|either|not (?:sure|certain)|"
    r"unsure|uncertain|probably|likely|i think|i believe|i guess|or so|whichever|"
    r"one of (?:the|these|those|them|several|a few|two|three|four))\b",
    re.IGNORECASE,
)
BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
NEGATION = {"not", "never", "no", "t", "cannot", "without"}
UNITS = re.compile(r"(?<=[.!?;])\s+(?=[A-Z\"'(])|\n+")


def final_answers(messages: Sequence[dict[str, Any]]) -> str:
    """What the assistant answered each request with: the last words of each stretch between user messages,
    except a question the next user message answers (a read-back before a change, a request for a detail)."""
    answers: list[str] = []
    last: str | None = None
    for message in messages:
        if message["role"] == "user":
            if last is not None and not asks_user(last):
                answers.append(last)
            last = None
        elif message["role"] == "assistant" and message.get("content"):
            last = str(message["content"])
    if last is not None:
        answers.append(last)
    return "\n".join(answers)


def evidence_of(messages: Sequence[dict[str, Any]]) -> str:
    """What the assistant could know a value from: the user's words and the tools' outputs."""
    return "\n".join(str(m.get("content") or "") for m in messages if m["role"] in ("user", "tool"))


def _text_found(value: str, answer: str) -> bool:
    """Folded `value` as whole words of the folded answer, not negated ("not sent" does not state "sent");
    a long value (a message body) also counts when nearly all its words are there (a light paraphrase)."""
    want, text = fold(value), fold(answer)
    if not want:
        return True
    for match in re.finditer(rf"(?<!\w){re.escape(want)}(?:s|es)?(?!\w)", text):  # a plural is the same thing
        before = text[: match.start()].split()[-3:]
        if not NEGATION & set(before):
            return True
    words = [w for w in want.split() if len(w) > 2]
    if len(words) >= 6:
        have = set(text.split())
        return sum(w in have for w in words) >= 0.85 * len(words)
    return False


def value_found(value: Any, answer: str, clocks: Sequence[Clock] = (), minutes: bool = False) -> bool:
    """Is `value` stated in `answer`? Moments and dates in any common form (relative ones against `clocks`),
    numbers by value (never inside a date, time or id; with `minutes`, also as hours), lists as sets, text by
    folded words."""
    raw = str(value).strip()
    if not raw:
        return True
    moment = parse_moment(raw)
    if moment is not None:
        year = moment[0].year
        return moment_stated(moment[0], moment[1], read(answer, clocks, default_year=year), clocks)
    target = number_value(raw)
    if target is not None:
        return number_stated(target, read(answer, clocks), minutes)
    if _text_found(raw, answer):
        return True
    parts = [part for part in raw.split(", ") if part.strip()]  # a list value: every item, in any order
    return len(parts) > 1 and all(value_found(part, answer, clocks, minutes) for part in parts)


def _candidates(value: str, unit: str, clocks: Sequence[Clock]) -> int:
    """How many values of the claim's kind one sentence offers."""
    moment = parse_moment(value)
    reading = read(unit, clocks, default_year=moment[0].year if moment else None)
    if moment is not None:
        return len(reading.dates) + (len(reading.times) if moment[1] else 0) - (1 if moment[1] else 0)
    if number_value(value) is not None:
        return len(set(reading.numbers))
    return len([p for p in re.split(r",|;|\bor\b|\band\b", unit) if p.strip()])


def hedged(value: Any, answer: str, clocks: Sequence[Clock] = (), minutes: bool = False) -> bool:
    """Does the answer offer `value` as one of several candidates ("it might be 12 or 15", a list of possible
    reasons), rather than stating it?"""
    raw = str(value).strip()
    units = [u for u in UNITS.split(answer) if u.strip()]
    bullets = [u for u in units if BULLET.match(u)]
    hedging = any(HEDGE.search(u) for u in units if not BULLET.match(u))
    for unit in units:
        if not value_found(raw, unit, clocks, minutes):
            continue
        if BULLET.match(unit) and len(bullets) >= 2 and hedging:
            return True
        if HEDGE.search(unit) and _candidates(raw, unit, clocks) >= 2:
            return True
        if re.search(r"\bor\b", unit) and _alternative(raw, unit, clocks):
            return True
    return False


def _alternative(value: str, unit: str, clocks: Sequence[Clock]) -> bool:
    """`12 or 15`, `"sent" or "draft"`, `at 9:00 or 10:00`: the value directly beside an `or` and another
    candidate (for a moment, its time beside another time)."""
    moment = parse_moment(value)
    for left, right in re.findall(r"(\S+(?:\s+\S+)?)\s+or\s+(\S+(?:\s+\S+)?)", unit):
        if moment is not None and isinstance(moment[0], datetime) and moment[1]:
            at = {(t.hour, t.minute) for t in (moment[0].astimezone(z) for z in [UTC, *(c.zone for c in clocks)])}
            times = [read(left, clocks).times, read(right, clocks).times]
            if all(times) and any(t & at for t in times) and not all(t <= at for t in times):
                return True
            continue
        sides = [value_found(value, left, clocks), value_found(value, right, clocks)]
        other = right if sides[0] else left
        if not any(sides) or all(sides):
            continue
        if number_value(value) is not None:
            if read(other, clocks).numbers:
                return True
        elif re.match(r"^\W*(?:(?:the|a|an)\s+)?[\"'“‘A-Z0-9]", other if sides[0] else other.split()[-1]):
            return True  # another candidate of the same kind: a name or a quoted label, not "have it delivered"
    return False


def _supported(value: Any, evidence: str, clocks: Sequence[Clock], minutes: bool) -> bool:
    """Could the assistant know `value` from the conversation? Found as an answer states it, or as a bare mention:
    a negation word just before it ("Release go/no-go", "folder": "inbox") unsays an answer, not a tool output."""
    want = fold(str(value))
    return value_found(value, evidence, clocks, minutes) or bool(
        want and re.search(rf"(?<!\w){re.escape(want)}(?!\w)", fold(evidence))
    )


# Words that say "no" to what they stand beside ("it doesn't", "without one", "not required"); a leading
# "No problem" or "no worries" is courtesy, not an answer.
NO_WORD = re.compile(
    r"\b(?:not|never|cannot|can't|without|neither|nor|none|no(?!\s+(?:problem|worries|doubt)\b)|nope|\w+n't)\b",
    re.IGNORECASE,
)
# "Yes," / "No." / "No -" opening a sentence: an interjection (never the "no" of "No prescription is needed").
YES_NO_LEAD = re.compile(
    r"^\W*(?:[^,.!?;:]{1,40},\s*)?(?:(?:actually|well|oh|so|sorry|and|but|ok|okay|then)\W+)*"
    r"(?:(yes|yep|yeah|correct|indeed|sure)|(no|nope))"
    r"(?:\s*[,.:;!—–-]+\s*|\s*$)",
    re.IGNORECASE,
)
CLAUSES = re.compile(r"(?<=[.!?;])\s+|\n+|,?\s+but\s+|;\s*")
# Words of a yes/no label that say nothing of its topic ('whether it is paid' is about 'paid').
YES_NO_FILLER = frozenset(
    "whether the and for you your our its it it's i i'm is are was were has have had been be does did do any "
    "still can will would yet of a an or".split()
)


def _topic(label: str) -> set[str]:
    """The content stems of a yes/no claim's label: 'whether it needs a prescription' -> {'need', 'pres'}."""
    words = re.findall(r"[a-z']+", label.lower().replace("’", "'"))
    return {w[:4] for w in words if w not in YES_NO_FILLER and len(w) > 2}


def yes_no_stated(label: str, answer: str) -> bool | None:
    """The answer's yes or no to a yes/no claim labelled `label` ('whether it needs a prescription'): the
    sentences that speak of its topic (a word stem of the label), each read as yes unless it negates it (an odd
    number of 'not', 'no', "n't", 'without': "you can't buy it without one" is a yes); a bare "Yes." or "No, it
    isn't." where no sentence names the topic. None when the answer gives none, hedges, or says both."""
    topic = _topic(label)
    said: set[bool] = set()
    bare: set[bool] = set()
    for unit in CLAUSES.split(answer.replace("’", "'")):
        unit = unit.strip()
        if not unit or unit.endswith("?"):
            continue  # a question back to the user, or the user's question read back, answers nothing
        lead = YES_NO_LEAD.match(unit)
        body = unit[lead.end() :] if lead else unit
        if topic & {w[:4] for w in re.findall(r"[a-z']+", body.lower()) if len(w) > 2} and not re.search(
            r"\b(?:whether|if)\b", body, re.IGNORECASE
        ):
            if HEDGE.search(body):
                return None
            said.add(len(NO_WORD.findall(body)) % 2 == 0)
        elif lead:
            bare.add(lead.group(1) is not None and not NO_WORD.search(body))
    found = said or bare
    return next(iter(found)) if len(found) == 1 else None


def _grade_yes_no(claim: Claim, answer: str) -> ClaimGrade:
    """A yes/no claim: 1 when the answer says the same yes or no, 0 when it says the opposite, both or nothing."""
    want = (claim.values or ["true"])[0].strip().lower() in ("true", "yes")
    label = claim.text.split(":")[0].split(" ", 1)[-1]
    stated = yes_no_stated(label, answer)
    ok = stated is want
    detail = "" if ok else ("no yes or no to it" if stated is None else f"says {'yes' if stated else 'no'}")
    return ClaimGrade(
        claim=claim.text,
        score=1.0 if ok else 0.0,
        matched=list(claim.values) if ok else [],
        missing=[] if ok else list(claim.values),
        judge="deterministic",
        detail=detail,
    )


def grade_claim(claim: Claim, answer: str, clocks: Sequence[Clock] = (), evidence: str | None = None) -> ClaimGrade:
    """1 when the answer states every value of the claim, 0.5 when some, 0 when none. A value the answer hedges
    on, or (given the conversation's `evidence`) one nothing in it backs, is not stated. A yes/no claim is graded
    by the yes or no the answer gives (`yes_no_stated`)."""
    if claim.kind == "yes_no":
        return _grade_yes_no(claim, answer)
    values = claim.values or [claim.text]
    minutes = "minute" in claim.text.lower()
    matched, missing, why = [], [], []
    for value in values:
        if not value_found(value, answer, clocks, minutes):
            missing.append(value)
        elif hedged(value, answer, clocks, minutes):
            missing.append(value)
            why.append(f"hedged: {value} is offered as one of several candidates")
        # a derived value (the seats left: capacity - seats booked) is the agent's own arithmetic, in no output
        elif evidence is not None and not claim.derived and not _supported(value, evidence, clocks, minutes):
            missing.append(value)
            why.append(f"unsupported: {value} is in no tool output nor anything the user said")
        else:
            matched.append(value)
    score = 1.0 if not missing else 0.5 if matched else 0.0
    return ClaimGrade(
        claim=claim.text, score=score, matched=matched, missing=missing, judge="deterministic", detail="; ".join(why)
    )
