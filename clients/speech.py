"""How the oracle speaks: read-backs, progress notes and final answers a good agent would say.

The oracle's turns are SFT data, so they must read as an agent talking to a person: no rubric text
("states the price: 24.00"), no field dumps, no paging fields and no internal ids. Everything is rendered
from the task alone (its gold calls, their recorded outputs and its claims), deterministically:

- a read-back names the change in words, describes the row it touches by what a person knows about it
  (a title, a name, a date) instead of its id, and states every number the change uses (the confirmation
  check looks for them);
- a final answer states each claim's value with the field's human label, dates in words, money with two
  decimals (and its currency when the row says which), in sentences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from envfarm.clients.tasks import Claim, GoldCall, Task

#: Fields whose value is an amount of money (by the words of their name).
MONEY = re.compile(
    r"\b(price|amount|cost|total price|fee|fees|balance|copay|pays|subtotal|salary|charge|refund|paid|due|"
    r"rate|budget|spent|limit amount|deposit|tip|tax|revenue|outstanding|owed|value)\b"
)
#: A coded value (an enum's `pass_fail`, `in_progress`): said with spaces, never raw. No digits: ids have them.
CODE = re.compile(r"[a-z]+(?:_[a-z]+)+")
#: Paging fields: never a fact a person asked to hear, and never said as a field.
PAGING = {"cursor", "has_more", "next_cursor", "limit", "offset"}
#: How a claim's rubric text is worded today ("states the daily price: 24.00"); the label is group 1.
RUBRIC = re.compile(
    r"^\s*(?:states|confirms|says|gives|mentions|reports)\s+(?:the\s+)?(.+?)\s*(?::\s*(.*))?$", re.IGNORECASE
)
#: Output fields that describe a row to a person, best first.
DESCRIBERS = (
    "title",
    "name",
    "full_name",
    "subject",
    "summary",
    "label",
    "plate",
    "drug_name",
    "description",
)
UNITS = {
    "kg",
    "g",
    "lb",
    "cm",
    "mm",
    "m",
    "km",
    "mi",
    "ml",
    "l",
    "liters",
    "minutes",
    "hours",
    "days",
    "pct",
    "percent",
}
CURRENCY_SIGNS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹"}
CREATE_VERBS = {
    "create",
    "add",
    "submit",
    "open",
    "book",
    "schedule",
    "place",
    "file",
    "log",
    "register",
    "request",
    "post",
    "send",
    "record",
    "draft",
    "issue",
    "upload",
}
PAST = {
    "pay": "paid",
    "send": "sent",
    "set": "set",
    "put": "put",
    "submit": "submitted",
    "cancel": "cancelled",
    "refund": "refunded",
    "upload": "uploaded",
    "make": "made",
    "write": "written",
    "give": "given",
    "reply": "replied to",
    "schedule": "scheduled",
    "log": "logged",
    "transfer": "transferred",
    "drop": "dropped",
    "ship": "shipped",
    "plan": "planned",
    "stop": "stopped",
    "file": "filed",
    "leave": "left",
    "hold": "held",
    "run": "ran",
    "get": "got",
    "buy": "bought",
    "read": "read",
    "withdraw": "withdrawn",
    "begin": "begun",
    "split": "split",
    "forward": "forwarded",
    "unsubscribe": "unsubscribed",
}


def label(name: str) -> str:
    """A field name as words: `starts_at` -> 'starts at', `odometerKm` -> 'odometer km'."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return " ".join(t.lower() for t in re.split(r"[^A-Za-z0-9]+", spaced) if t)


def is_id_key(key: str) -> bool:
    """An internal identifier's field (`patient_id`, `id`, `calendarId`)."""
    words = label(key).split()
    return bool(words) and words[-1] in ("id", "ids")


def task_ids(task: Task) -> set[str]:
    """Every internal id the task's gold calls saw (values of id fields in arguments and outputs)."""
    found: set[str] = set()
    for call in task.gold_calls:
        for key, value in _pairs([call.arguments, call.output]):
            if is_id_key(key) and isinstance(value, str | int) and not isinstance(value, bool):
                found.add(str(value))
    return found


def _pairs(node: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, scalar) of a nested JSON value."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict | list):
                yield from _pairs(value)
            else:
                yield key, value
    elif isinstance(node, list):
        for item in node:
            yield from _pairs(item)


def rows(node: Any) -> Iterator[dict[str, Any]]:
    """Every object of a nested JSON value (the rows of an output, and the output itself)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from rows(value)
    elif isinstance(node, list):
        for item in node:
            yield from rows(item)


def _currency(task: Task) -> str | None:
    """The task's currency: a currency field of its outputs, or the sign its claims are written with."""
    for claim in task.claims:
        for code, sign in CURRENCY_SIGNS.items():
            if sign in claim.text:
                return code
    for call in task.gold_calls:
        for key, value in _pairs(call.output):
            if label(key).split()[-1:] == ["currency"] and isinstance(value, str) and len(value) == 3:
                return value.upper()
    return None


def _when(text: str) -> str | None:
    """An ISO date or datetime in words ('April 17, 2026 at 09:00 UTC'); None when `text` is neither."""
    if not re.match(r"^\d{4}-\d{2}-\d{2}", text):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    day = f"{moment:%B} {moment.day}, {moment.year}"
    if len(text) <= 10:
        return day
    zone = " UTC" if text.endswith(("Z", "+00:00")) else ""
    return f"{day} at {moment:%H:%M}{zone}"


def say_value(name: str, value: Any, currency: str | None = None) -> str:
    """A value as a person says it: dates in words, money with two decimals, whole numbers without."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value).strip()
    when = _when(text)
    if when is not None:
        return when
    try:
        number = float(text.replace(",", "").removeprefix("$"))
    except ValueError:
        return text.replace("_", " ") if CODE.fullmatch(text) else text  # 'pass_fail' -> 'pass fail'
    if MONEY.search(label(name)):
        sign = CURRENCY_SIGNS.get(currency or "")
        amount = f"{number:,.2f}"
        return f"{sign}{amount}" if sign else f"{amount} {currency}" if currency else amount
    if number.is_integer() and not re.search(r"\.\d*[1-9]", text):
        return text.split(".")[0] if "." in text else text
    return f"{number:.15g}"  # every digit it has (`:g` cut 12443.45 to 12443.5): no float noise


def _verb_is(words: str) -> str:
    """'is' or 'are' for a label ('the notes are', 'the status is', 'the number of seats is')."""
    head = words.split(" of ")[0] if " of " in words else words
    last = head.split()[-1] if head.split() else ""
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is")) and last != "news"
    return "are" if plural else "is"


def _dated(words: str, when: str) -> str | None:
    """A date field said as an event: 'starts at' -> 'starts on April 17, 2026 at 09:00 UTC',
    'issued on' -> 'was issued on March 1, 2026'; None when the label is not an event ('due date')."""
    parts = words.split()
    if len(parts) < 2 or parts[-1] not in ("at", "on"):
        return None
    verb = " ".join(parts[:-1])
    if parts[0].endswith("ed"):
        return f"was {verb} on {when}"
    if parts[0].endswith("s") and not parts[0].endswith("ss"):
        return f"{verb} on {when}"
    return None  # a noun ('pickup at', 'next run at'): see `_noun`


def _noun(words: str) -> str:
    """A date field's label without its preposition: 'pickup at' -> 'pickup'."""
    parts = words.split()
    return " ".join(parts[:-1]) if len(parts) > 1 and parts[-1] in ("at", "on") else words


def _unit(words: str) -> tuple[str, str]:
    """A label and the unit its last word names: 'weight kg' -> ('weight', 'kg'); ('price per kg', '')."""
    parts = words.split()
    if len(parts) > 1 and parts[-1] in UNITS and parts[-2] != "per":
        kept = parts[:-2] if parts[-2] == "in" and len(parts) > 2 else parts[:-1]  # 'length in minutes'
        return " ".join(kept), parts[-1]
    return words, ""


def _addressed(words: str) -> str:
    """A label in the user's words said back by the agent: 'what I owe in fines' -> 'what you owe in fines',
    'my copay' -> 'your copay', 'whether I got a seat' -> 'whether you got a seat'."""
    swaps = {"i": "you", "my": "your", "me": "you", "mine": "yours", "i've": "you've", "i'm": "you're", "am": "are"}
    return re.sub(
        r"\b(?:I've|I'm|I|my|me|mine)\b|(?<=\bI )am\b",
        lambda m: swaps.get(m.group(0).lower(), m.group(0)),
        words,
    )


def _fact(words: str, value: str, currency: str | None) -> str:
    """One claim as a clause: 'the daily price is $24.00', 'it starts on April 17, 2026 at 09:00 UTC',
    'the weight is 6.32 kg'; a label worded as a question as an answer to it ('as for how many days late
    it was, that's 0')."""
    said = say_value(words, value, currency)
    when = _when(value.strip())
    words = _addressed(words)
    question = re.match(r"(when|whether|how|who|what|which|where)\b\s*(.*)", words)
    if question is not None:  # a label worded as a question ('when it was submitted')
        if question.group(1) == "when" and question.group(2):
            return f"{question.group(2)} on {when}" if when is not None else f"{question.group(2)} {said}"
        wordy = len(said.split()) >= 3 and not _numeric(said.replace(",", "").lstrip("$€£¥₹"))
        return f"as for {words}, that's {when or (f'“{said}”' if wordy else said)}"
    if when is not None:
        event = _dated(words, when)
        if event is not None:
            return f"it {event}"
        if _noun(words) != words:
            return f"the {_noun(words)} {_verb_is(_noun(words))} on {when}"
        return f"the {words} {_verb_is(words)} {when}"
    wordy = len(said.split()) >= 3 or (len(said.split()) == 2 and said.endswith((".", "!", "?")))
    if wordy and not _numeric(said.replace(",", "").lstrip("$€£¥₹")):
        said = f"“{said}”"
    words, unit = _unit(words)
    return f"the {words} {_verb_is(words)} {said}" + (f" {unit}" if unit and _numeric(value) else "")


def claim_parts(claim: Claim) -> tuple[str, str] | None:
    """(label, value) of a rubric-worded claim ('states the daily price: 24.00'); None for a claim already
    worded as a statement ('The first free slot is on March 2.'), which is said as it is."""
    match = RUBRIC.match(claim.text)
    if match is None:
        return None
    value = claim.values[0] if claim.values else match.group(2)
    if value is None:
        return None
    words = match.group(1)
    if (
        match.group(2) is None
    ):  # 'states the total 24.00': the value trails the label ('whether it is active: active' keeps it)
        words = re.sub(rf":?\s*{re.escape(str(value))}\s*$", "", words).strip(" :")
    return (words or "value"), str(value)


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!", ".”", "?”", "!”")) else ".")


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def state_claims(claims: Iterable[Claim], currency: str | None = None, ids: Iterable[str] = ()) -> list[str]:
    """Each claim as a sentence: 'The daily price is $24.00.'; a count and a total as 'There are 3 matching
    records.'; a claim worded as a statement as it is, without the internal ids it may quote."""
    parts: list[tuple[str, str]] = []
    loose: list[str] = []
    for claim in claims:
        part = claim_parts(claim)
        if part is not None:
            parts.append(part)
            continue
        text = claim.text
        for value in ids:
            text = re.sub(rf"\s*(?<!\w){re.escape(value)}(?!\w)", "", text)
        if text.strip():
            loose.append(_sentence(text))
    sentences: list[str] = []
    paging = {words: value for words, value in parts if words in ("count", "total")}
    if paging:
        count, total = paging.get("count"), paging.get("total")
        if count is not None and total is not None and count != total:
            sentences.append(f"There are {total} matching records in all ({count} listed here).")
        else:
            sentences.append(f"There are {total if total is not None else count} matching records.")
    unique = list(dict.fromkeys(parts))
    said = [
        _fact(words, value, currency)
        for words, value in unique
        if words not in ("count", "total") and words.replace(" ", "_") not in PAGING
    ]
    sentences += [_sentence(_join(said[start : start + 2])) for start in range(0, len(said), 2)]
    return list(dict.fromkeys(loose)) + sentences


# ---------------------------------------------------------------- changes in words


#: Verbs a tool name writes as one word: said as a person says them ('checkout_copy' -> 'check out').
COMPOUND_VERBS = {"checkout": "check out", "checkin": "check in", "setup": "set up", "signup": "sign up"}


def _action(tool: str) -> tuple[str, str]:
    """(verb, object) of a tool name: `pay_invoice` -> ('pay', 'invoice'), `checkout_copy` -> ('check out', 'copy')."""
    words = label(tool).split()
    return (COMPOUND_VERBS.get(words[0], words[0]), " ".join(words[1:])) if words else ("do", "that")


def _past(verb: str) -> str:
    if " " in verb:  # 'check out' -> 'checked out'
        head, _, rest = verb.partition(" ")
        return f"{_past(head)} {rest}"
    if verb in PAST:
        return PAST[verb]
    for prefix in ("un", "re"):  # unpin -> unpinned, resubmit -> resubmitted, reopen -> reopened
        if verb.startswith(prefix) and len(verb) > len(prefix) + 2:
            return prefix + _past(verb[len(prefix) :])
    if sum(c in "aeiou" for c in verb) == 1 and re.search(r"[^aeiou][aeiou][^aeiouwxy]$", verb):
        return verb + verb[-1] + "ed"  # pin -> pinned, tag -> tagged
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


def _describe(row: dict[str, Any], ids: set[str], currency: str | None, skip: set[str], dates: bool = True) -> str:
    """A row by what a person knows of it: 'Client visit' or 'from March 1, 2026'."""
    for key in DESCRIBERS:
        value = row.get(key)
        if key in skip or not isinstance(value, str) or str(value) in ids or not 0 < len(value) <= 60:
            continue
        return f"“{value}”"
    for key, value in row.items():
        if key in skip or is_id_key(key) or not isinstance(value, str) or value in ids:
            continue
        when = _when(value)
        if when is not None and dates:
            event = _dated(label(key), when)
            if event is None:
                return f"with {_noun(label(key))} on {when}"
            return event.removeprefix("was ") if event.startswith("was ") else f"that {event}"
    return ""


def _own_key(row: dict[str, Any]) -> str | None:
    """The row's own id field: its first id field (a primary key comes first; later ones are references)."""
    return next((key for key in row if is_id_key(key)), None)


def _referent(task: Task, index: int, ids: set[str], currency: str | None) -> tuple[str, str]:
    """(entity, description) of the row a gold call acts on: the earlier output row whose own id is one of
    the call's id arguments ('invoice', '“March rent”'); ('', '') when none describes it."""
    call = task.gold_calls[index]
    wanted = {
        (key, str(value))
        for key, value in call.arguments.items()
        if is_id_key(key) and isinstance(value, str | int) and not isinstance(value, bool)
    }
    for earlier in reversed(task.gold_calls[:index]):
        for row in rows(earlier.output):
            own = _own_key(row)
            if own is not None and any(own == key and str(row.get(key)) == value for key, value in wanted):
                described = _describe(row, ids, currency, skip=set(call.arguments))
                if described:
                    return " ".join(label(own).split()[:-1]), described
    return "", ""


def _change(task: Task, index: int, ids: set[str], currency: str | None) -> tuple[str, str]:
    """(verb, what) of a change: ('pay', 'the invoice issued on March 1, 2026'), ('post', 'a new message
    for the channel “general”'), ('unsubscribe', 'the subscription “Weekly digest”')."""
    call = task.gold_calls[index]
    verb, thing = _action(call.tool)
    entity, described = _referent(task, index, ids, currency)
    creates = verb in CREATE_VERBS
    if thing.split()[:1] and thing.split()[0] in ("to", "from", "into", "as", "out"):  # `move_to_inbox`
        target = f"the {entity} {described}".strip() if entity else "it"
        return verb, f"{target} {thing}"
    if not thing:
        thing = entity
    if not thing:
        return verb, "you"  # `subscribe`, `enroll`: the user is the object
    article = "a new" if creates else "the"
    if not described:
        return verb, f"{article} {thing}"
    last, kinds = thing.split()[-1], entity.split()
    if entity and (last.startswith(kinds[-1]) or kinds[-1].startswith(last)):  # 'doc' is the 'document'
        return verb, f"the {thing} {described}" if not creates else f"{article} {thing}"
    if last in kinds:  # a row that links to it ('channel member' for 'leave the channel') says nothing of it
        return verb, f"{article} {thing}"
    return verb, f"{article} {thing} for the {entity} {described}"


def _participle(event: str) -> str:
    """A date field's event as a clause that follows a noun: 'starts on May 2' -> 'starting on May 2', 'was
    issued on May 2' -> 'issued on May 2' ('with starts on May 2' is no English)."""
    if event.startswith("was "):
        return event.removeprefix("was ")
    verb, _, rest = event.partition(" ")
    stem = verb[:-1] if verb.endswith("s") and not verb.endswith("ss") else verb
    stem = stem[:-1] if stem.endswith("e") and not stem.endswith("ee") else stem
    return f"{stem}ing {rest}".strip()


def _details(call: GoldCall, ids: set[str], currency: str | None) -> tuple[list[str], list[str]]:
    """The values a change sets, in words (ids left out; long texts named, not read out): those said after
    'with' ('amount 24.00'), and dates said as events ('starting on May 2')."""
    out: list[str] = []
    events: list[str] = []
    for key, value in call.arguments.items():
        if value in (None, "", [], {}) or is_id_key(key) or str(value) in ids or key in PAGING:
            continue
        if isinstance(value, dict | list):
            continue
        words = label(key)
        text = say_value(key, value, currency)
        when = _when(value) if isinstance(value, str) else None
        if isinstance(value, str) and len(value) > 80:
            out.append(f"the {words} you gave me")
        elif when is not None:
            event = _dated(words, when)
            if event is not None:
                events.append(_participle(event))
            elif _noun(words) != words:  # 'due on': 'due on March 24', never 'with due on March 24'
                events.append(f"{_noun(words)} on {when}")
            else:
                out.append(f"{words} {when}")
        elif isinstance(value, bool):
            out.append(f"{words} set to {text}")
        elif isinstance(value, str) and (CODE.fullmatch(value) or re.fullmatch(r"[a-z]+", value)):
            out.append(f"{words} {text.replace('_', ' ')}")  # a code ('pass_fail', 'damaged') in words, not quoted
        elif isinstance(value, str) and not _numeric(value):
            out.append(f"{words} “{text}”")
        elif words in UNITS and _numeric(text):  # `liters`: '53.8 liters', never 'liters 53.8'
            out.append(f"{text} {words}")
        else:
            words, unit = _unit(words)
            out.append(f"{words} {text}" + (f" {unit}" if unit else ""))
    return out, events


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def readback(task: Task, index: int) -> str:
    """What the agent says before a governed change: the change in words, then 'Shall I go ahead?'."""
    call = task.gold_calls[index]
    ids, currency = task_ids(task), _currency(task)
    verb, what = _change(task, index, ids, currency)
    details, events = _details(call, ids, currency)
    text = f"Just to confirm: I'll {verb} {what}" + (f", with {_join(details)}" if details else "")
    text += f", {_join(events)}" if events else ""
    return text + ". Shall I go ahead?"


def did(task: Task, index: int) -> str:
    """A change that was made, in the past tense: 'I've paid the invoice “March rent”.'"""
    call = task.gold_calls[index]
    ids, currency = task_ids(task), _currency(task)
    verb, what = _change(task, index, ids, currency)
    if verb in CREATE_VERBS:
        made = next(rows(call.output), None) or call.arguments
        described = _describe(made, ids, currency, skip=set(), dates=False)
        what = what.replace("a new ", "the ", 1) + (f" {described}" if described and " for the " not in what else "")
    return _sentence(f"I've {_past(verb)} {what}")


def _turn_claims(task: Task, calls: Iterable[int]) -> list[Claim]:
    """The claims whose values the given gold calls' outputs hold."""
    seen = {_same(value) for i in calls for _, value in _pairs(task.gold_calls[i].output)}
    return [c for c in task.claims if c.values and all(_same(v) in seen for v in c.values)]


def _same(value: Any) -> str:
    """A value's comparable text: numbers by value ('45.00' and 45.0 alike)."""
    text = str(value).strip()
    try:
        return f"{float(text):.6g}" if not isinstance(value, bool) else text
    except ValueError:
        return text


def progress(task: Task, calls: Sequence[int], done: set[int]) -> str:
    """What the agent says when one of several requests is finished: what changed and what it found."""
    changed = [did(task, i) for i in calls if i in done and task.gold_calls[i].is_write]
    found = state_claims(_turn_claims(task, calls), _currency(task), task_ids(task))
    return " ".join([*changed, *found] or ["That's taken care of."]) + " What else can I do for you?"


def final_answer(task: Task, done: set[int], last: Sequence[int] = ()) -> str:
    """The last answer: what was changed in the last request, then every fact the user asked to hear in
    sentences (the whole conversation's: the answer is graded alone, so earlier facts are recapped)."""
    now = [i for i in last if i in done and task.gold_calls[i].is_write] if last else sorted(done)
    changed = [did(task, i) for i in now if task.gold_calls[i].is_write]
    found = state_claims(task.claims, _currency(task), task_ids(task))
    if found and len(last) < len(task.gold_calls) and len(task.turns) > 1:
        found[0] = "To recap: " + found[0][:1].lower() + found[0][1:]
    if not changed and not found:
        found = _summary(task)
    return " ".join([*changed, *found] or ["That's all taken care of."])


def _summary(task: Task) -> list[str]:
    """When the user asked to hear nothing in particular: the first row the last lookup found, in words."""
    ids, currency = task_ids(task), _currency(task)
    for call in reversed(task.gold_calls):
        for row in rows(call.output):
            facts = [
                _fact(label(key), str(value), currency)
                for key, value in row.items()
                if not isinstance(value, dict | list | bool)
                and value not in (None, "")
                and not is_id_key(key)
                and key not in PAGING
                and key not in ("count", "total")
                and str(value) not in ids
                and len(str(value)) <= 80
            ][:3]
            if facts:
                return ["Here's what I found: " + _join(facts) + "."]
    return []


def refusal(rule: str) -> str:
    """A refusal that gives the reason (the policy rule) and claims nothing was done."""
    return f"I'm sorry, but I can't do that. Our policy says: {rule.strip()} I haven't changed anything."


def declined() -> str:
    return "Understood: I haven't changed anything."


# ---------------------------------------------------------------- what must never be said

RUBRIC_TEXT = re.compile(r"\b(?:states|confirms) the\b|\bcount:|\bhas_more\b|\bcursor:|\bnext_cursor\b", re.IGNORECASE)
FIELD_DUMP = re.compile(r"(?:\b\w+: [^;\n]+; ){2,}")
#: The shape of the farm's generated ids (`sch_xr3qi5`, `pat_0042`): a short prefix, `_`, letters with a digit.
ID_SHAPE = re.compile(r"\b[a-z]{2,5}_(?=[a-z0-9]*\d)[a-z0-9]{4,}\b")


def speech_problems(text: str, task: Task, fields: Iterable[str] = ()) -> list[str]:
    """What reads like a grader or a database in an agent's words: rubric text, paging fields, a
    `key: value; key: value` dump, a raw field name (`odometer_km`) or an internal id."""
    problems = [f"rubric or paging text {m.group(0)!r}" for m in RUBRIC_TEXT.finditer(text)]
    problems += [f"field dump {m.group(0)[:40]!r}" for m in FIELD_DUMP.finditer(text)]
    problems += [f"internal id {m.group(0)!r}" for m in ID_SHAPE.finditer(text)]
    for value in task_ids(task):
        if len(value) >= 4 and not value.isdigit() and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text):
            problems.append(f"internal id {value!r}")
    for name in fields:
        if "_" in name and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text):
            problems.append(f"field name {name!r}")
    return sorted(set(problems))


def _moment(value: Any) -> tuple[datetime, bool] | None:
    """An ISO date or datetime value as a datetime, and whether it had a time of day."""
    text = str(value).strip()
    match = re.match(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?", text)
    if match is None:
        return None
    try:
        moment = datetime(int(match[1]), int(match[2]), int(match[3]), int(match[4] or 0), int(match[5] or 0))
    except ValueError:
        return None
    return moment, match[4] is not None


def say_slot(value: Any, fmt: str | None) -> str | None:
    """A value filling a `{slot:format}` of an intent's phrasing, as a person says it: `date` 12 May, `day`
    Tuesday 12 May, `time` 10:30, `datetime` Tuesday 12 May at 10:30, `money` 1,250.00, `number` 3 or 2.5, a
    %-pattern through strftime; no format: dates in words, numbers plainly, enum words unfolded. None when
    the value does not fit the format (a date format on a value that is no date)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    when = _moment(value) if isinstance(value, str) else None
    if fmt in ("date", "day", "time", "datetime") or (fmt or "").startswith("%"):
        if when is None:
            return None
        moment, timed = when
        day = f"{moment:%A} {moment.day} {moment:%B}"
        if fmt == "date":
            return f"{moment.day} {moment:%B}"
        if fmt == "day":
            return day
        if fmt == "time":
            return f"{moment:%H:%M}" if timed else None
        if fmt == "datetime":
            return f"{day} at {moment:%H:%M}" if timed and (moment.hour, moment.minute) != (0, 0) else day
        return moment.strftime(str(fmt))
    if fmt == "money" or fmt == "number" or isinstance(value, (int, float)):
        try:
            number = float(str(value).replace(",", ""))
        except ValueError:
            return None if fmt in ("money", "number") else str(value)
        if fmt == "money":
            return f"{number:,.2f}"
        return str(int(number)) if number.is_integer() else f"{number:.15g}"
    text = str(value)
    if when is not None:
        moment, timed = when
        day = f"{moment:%A} {moment.day} {moment:%B}"
        return f"{day} at {moment:%H:%M}" if timed and (moment.hour, moment.minute) != (0, 0) else day
    return text.replace("_", " ") if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", text) else text
