"""What a policy's identification rule names, and the columns that hold it.

A staff server's policy says how a customer is identified ("a customer gives their email and the last four
digits of a card on file"). Both the spec check (a rule must name fields the data has) and task synthesis
(hold those values back, look them up, check the agent did) read the rule the same way, so the reading lives
here, below both: the rule's alternatives of parts, and for each part the table column that holds it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

# Words of a part that name nothing of their own ("the last four digits of a card on file": 'card', 'last4').
FILLER = frozenset(
    {"their", "the", "a", "an", "its", "his", "her", "of", "on", "file", "record", "digits", "details", "at", "by"}
)
# A part's word -> the words a column spells it with ('birth' is 'dob' too, 'four' is 'last4').
SPELLINGS: dict[str, tuple[str, ...]] = {
    "birth": ("birth", "dob"),
    "four": ("last4", "last_four", "last"),
    "licence": ("licen",),
    "license": ("licen",),
    "surname": ("last_name", "surname"),
    "store": ("store", "customer"),  # a store ordering from a warehouse is its customer
}
IDENTIFY = re.compile(r"\bidentif|\bverify (the |their )?identity", re.IGNORECASE)


class IdentityPart(BaseModel):
    """One thing a rule names ('the last four digits of a card on file') and the column holding it."""

    phrase: str
    table: str | None = None
    column: str | None = None

    @property
    def found(self) -> bool:
        return self.column is not None


def identification_parts(rule: str) -> tuple[list[str], list[list[str]]]:
    """What an identification rule names, as (the subject's words, alternatives of parts): 'Identify the member
    by card number, or full name and email, before ...' -> (['member'], [['card number'], ['full name', 'email']])."""
    match = re.search(r"\ba ([\w' ]+?) (?:gives|is identified by) (.+?)(?:,? before\b|;|\(|\.$|$)", rule) or re.search(
        r"Identify the ([\w' ]+?) by (.+?)(?:,? before\b|;|\(|\.$|$)", rule
    )
    if match is None:
        return [], []
    subject = match[1].lower().split()
    body = re.sub(r"\s+on record\b|[,;]?\s*match (?:them|both).*$", "", match[2])
    found: list[list[str]] = []
    for alternative in (a.strip(" ,") for a in re.split(r",\s*or\b", body)):
        # "full name and the reservation's confirmation details or email": a part with its own "or" makes one
        # alternative per choice (full name and confirmation details; full name and email)
        options = [[p] for p in [""]]
        for part in (p.strip(" ,") for p in re.split(r"\s*(?:,|\band\b)\s*", alternative) if p.strip(" ,")):
            choices = [c.strip() for c in re.split(r"\s+or\s+", part) if c.strip()]
            options = [[*o, c] for o in options for c in choices]
        found += [[p for p in o if p] for o in options if any(o)]
    return subject, found


def _tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", text.lower().replace("'s", "")) if t not in FILLER]


def _overlap(tokens: set[str], words: set[str]) -> int:
    """How many of `tokens` a word of `words` spells, a shared stem counting ('ordering' is 'orders')."""
    return sum(1 for t in tokens if any(t == w or (len(t) >= 5 and len(w) >= 5 and t[:5] == w[:5]) for w in words))


def _singular(word: str) -> str:
    return word[:-3] + "y" if word.endswith("ies") else word.removesuffix("s")


def _id_like(column: str) -> bool:
    return column == "id" or column.endswith("_id")


def resolve_part(phrase: str, subject: Sequence[str], tables: Mapping[str, Sequence[str]]) -> IdentityPart:
    """The column a part of a rule names: one whose name holds the part's head word (as spelled in columns),
    the best by the part's and the subject's other words in the column's and its table's names. Never an id
    column (an internal key is nothing a customer gives)."""
    tokens = _tokens(phrase)
    if not tokens:
        return IdentityPart(phrase=phrase)
    head = "email" if "email" in tokens else next((t for t in tokens if t in SPELLINGS), tokens[-1])
    stems = SPELLINGS.get(head, (head,))
    wanted = set(tokens) | set(subject)
    best: tuple[tuple[int, int, int], str, str] | None = None
    for table, columns in tables.items():
        table_words = {_singular(w) for w in table.split("_")}
        for column in columns:
            lowered = column.lower()
            if _id_like(lowered) or not any(s in lowered for s in stems):
                continue
            words = set(lowered.split("_"))
            # 'order number' is an orders column, not a card_number; 'name' of a company is its company_name
            qualifiers = [t for t in tokens if t != head]
            if head == "number" and qualifiers and not _overlap(set(qualifiers), words | table_words):
                continue
            score = (_overlap(set(tokens), words | table_words), _overlap(wanted, words | table_words), -len(words))
            if best is None or score > best[0]:
                best = (score, table, column)
    if best is None:
        # "the ordering store": a row of another table, said by its name
        named = [t for t in tables if _singular(t.split("_")[-1]) == head and "name" in tables[t]]
        if named:
            return IdentityPart(phrase=phrase, table=named[0], column="name")
        return IdentityPart(phrase=phrase)
    return IdentityPart(phrase=phrase, table=best[1], column=best[2])


def identification(rule: str, tables: Mapping[str, Sequence[str]]) -> list[list[IdentityPart]]:
    """The rule's alternatives, each part resolved against `tables` (table -> columns)."""
    subject, alternatives = identification_parts(rule)
    return [[resolve_part(p, subject, tables) for p in alternative] for alternative in alternatives]


def is_identification_rule(rule: str) -> bool:
    return IDENTIFY.search(rule) is not None


def unresolved(rule: str, tables: Mapping[str, Sequence[str]]) -> list[str]:
    """The parts of an identification rule no column holds: the policy asks for what the data cannot match
    (a rule whose wording names no fields names nothing missing)."""
    alternatives = identification(rule, tables)
    return [part.phrase for alternative in alternatives for part in alternative if not part.found]
