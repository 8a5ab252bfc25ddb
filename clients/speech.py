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

from envfarm.clients.scoring.claims import value_found
from envfarm.clients.tasks import Claim, GoldCall, HiddenFact, Task

#: Fields whose value is an amount of money (by the words of their name).
MONEY = re.compile(
    r"\b(price|amount|cost|total(?! number| count| of)|total price|difference|fee|fees|balance|copay|pays|subtotal|"
    r"salary|charge|refund|paid|due|rate|budget|spent|limit amount|deposit|tip|tax|revenue|outstanding|owed|value)\b"
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
    words_ = head.split()
    if len(words_) > 1 and last.endswith("ed"):  # 'the credits earned are 39': the noun before a participle
        last = words_[-2]
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


def _the(words: str) -> str:
    """A label with its article: 'the daily price', but 'your plan' (said back from 'my plan'), never 'the your'."""
    return words if re.match(r"(?:the|a|an|your|our|their|his|her|its)\b", words) else f"the {words}"


def _fact(words: str, value: str, currency: str | None) -> str:
    """One claim as a clause: 'the daily price is $24.00', 'it starts on April 17, 2026 at 09:00 UTC',
    'the weight is 6.32 kg'; a label worded as a question as an answer to it ('as for how many days late
    it was, that's 0')."""
    said = say_value(words, value, currency)
    when = _when(value.strip())
    words = _addressed(words)
    question = re.match(r"(when|whether|how|who|what|which|where)\b\s*(.*)", words)
    many = re.fullmatch(r"how many (\w+s) (are|were|is|was|have|has) (.+)", words)
    if many is not None and _numeric(said):  # 'how many invoices are overdue' -> '0 invoices are overdue'
        return f"{said} {many.group(1)} {many.group(2)} {many.group(3)}"
    late = re.fullmatch(r"how many (\w+s) (\w+) (it|you|they) (was|were|is|are)", words)
    if late is not None and _numeric(said):  # 'how many days late it was' -> 'it was 0 days late'
        return f"{late.group(3)} {late.group(4)} {said} {late.group(1)} {late.group(2)}"
    if question is not None:  # a label worded as a question ('when it was submitted')
        if question.group(1) == "when" and question.group(2):
            return f"{question.group(2)} on {when}" if when is not None else f"{question.group(2)} {said}"
        if question.group(1) == "who" and re.fullmatch(r"\w+(?: \w+)?", question.group(2)):
            return f"the person who {question.group(2)} is {said}"  # never 'as for who wrote it, that's ...'
        spoke = re.fullmatch(r"(?:they|it|he|she) (?:said|say|says|wrote|write|writes)", question.group(2))
        if question.group(1) == "what" and spoke is not None:
            return f"{question.group(2)} “{said}”"  # 'what they said' -> 'they said “...”'
        wordy = len(said.split()) >= 3 and not _numeric(said.replace(",", "").lstrip("$€£¥₹"))
        return f"as for {words}, that's {when or (f'“{said}”' if wordy else said)}"
    if when is not None:
        event = _dated(words, when)
        if event is not None:
            return f"it {event}"
        if _noun(words) != words:
            return f"{_the(_noun(words))} {_verb_is(_noun(words))} on {when}"
        return f"{_the(words)} {_verb_is(words)} {when}"
    wordy = len(said.split()) >= 3 or (len(said.split()) == 2 and said.endswith((".", "!", "?")))
    if wordy and not _numeric(said.replace(",", "").lstrip("$€£¥₹")):
        said = f"“{said}”"
    words, unit = _unit(words)
    return f"{_the(words)} {_verb_is(words)} {said}" + (f" {unit}" if unit and _numeric(value) else "")


#: Past forms a yes/no label may use, with the form "did not" takes ('it went through' -> 'it did not go through').
IRREGULAR_PAST = {"went": "go", "got": "get", "came": "come", "took": "take", "left": "leave", "made": "make"}


def yes_no_answer(label: str, yes: bool) -> str:
    """A yes/no claim answered in words: 'whether it needs a prescription' -> 'Yes, it needs a prescription.' or
    'No, it does not need a prescription.' (the clause negated at its verb; 'it is not the case that ...' when
    no verb form is known)."""
    spoken_by_us = re.sub(r"\byou\b", "we", label)  # 'whether you accept it': the service answers 'we accept it'
    clause = re.sub(r"^(?:whether|if)\s+", "", _addressed(spoken_by_us).strip()).strip(" .?")
    clause = re.sub(r"\b(it|that|he|she)'s\b", r"\1 is", clause)
    clause = re.sub(r"\byou're\b", "you are", clause)
    if yes:
        return _sentence(f"yes, {clause}")
    aux = re.search(r"\b(is|are|was|were|has|have|had|can|will|would|could|should)\b", clause)
    if aux is not None:
        negated = clause[: aux.end()] + (" not" if aux.group(1) != "can" else "not") + clause[aux.end() :]
    elif (verb := re.match(r"((?:it|he|she|the \w+) )(\w+?)(?:es|s)\b(.*)$", clause)) and not verb.group(2).endswith(
        "s"
    ):
        negated = f"{verb.group(1)}does not {verb.group(2)}{verb.group(3)}"
    elif verb := re.match(r"((?:it|he|she|you|they|we|the \w+) )(\w+)(.*)$", clause):
        word = verb.group(2)
        base = IRREGULAR_PAST.get(word) or (word[:-2] if word.endswith("ed") else None)
        negated = f"{verb.group(1)}{'did' if base else 'do'} not {base or word}{verb.group(3)}"
    else:
        negated = f"it is not the case that {clause}"
    return _sentence(f"no, {negated}")


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


#: A sentence that ends inside its closing quote ('saying “Thanks.”', 'saying "Thanks."'): no second full stop.
CLOSED_QUOTE = re.compile(r"[.?!][”\"]\s*$")


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) or CLOSED_QUOTE.search(text) else ".")


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
        if claim.kind == "yes_no":
            label = claim.text.split(":")[0].split(" ", 1)[-1]
            loose.append(yes_no_answer(label, (claim.values or ["true"])[0].lower() in ("true", "yes")))
            continue
        part = claim_parts(claim)
        if part is not None:
            words, value = part
            if (
                re.match(r"(?:whether|where) ", words)
                and claim.field
                and claim.field.isalpha()
                and re.fullmatch(r"[a-z]+(?:_[a-z]+)*", value)
            ):
                # 'whether it passed: pass' said as 'as for whether it passed, that's pass': the field it reports
                # ('result', 'status') says it as a person does: 'the result is pass', 'the status is pending'
                words = claim.field
            parts.append((words, value))
            continue
        text = claim.text
        for value in ids:
            text = re.sub(rf"\s*(?<!\w){re.escape(value)}(?!\w)", "", text)
        if text.strip():
            loose.append(_sentence(text))
    sentences: list[str] = []
    # A page's count and total are whole numbers; an invoice's "total" (12624.00) is money, said as a fact.
    paging = {words: value for words, value in parts if words in ("count", "total") and value.isdigit()}
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
        if words not in paging and words.replace(" ", "_") not in PAGING
    ]
    sentences += [_sentence(_join(said[start : start + 2])) for start in range(0, len(said), 2)]
    return list(dict.fromkeys(loose)) + sentences


# ---------------------------------------------------------------- changes in words


#: Verbs a tool name writes as one word: said as a person says them ('checkout_copy' -> 'check out').
COMPOUND_VERBS = {"checkout": "check out", "checkin": "check in", "setup": "set up", "signup": "sign up"}


#: The verb an API's own tool name puts last (Azure's `Campaigns_Create`), and an HTTP method's verb on a path
#: (`put_users_id`): what imported tools are named, where a built-in server's names start with their verb.
TRAILING_VERBS = frozenset(
    {"create", "update", "delete", "cancel", "start", "stop", "restart", "replace", "add", "remove"}
)
METHOD_VERBS = {"put": "update", "patch": "update", "delete": "delete"}


def _action(tool: str) -> tuple[str, str]:
    """(verb, object) of a tool name: `pay_invoice` -> ('pay', 'invoice'), `checkout_copy` -> ('check out', 'copy'),
    and imported names, `campaigns_create` -> ('create', 'campaign'), `put_users_id` -> ('update', 'user')."""
    words = label(tool).split()
    if not words:
        return "do", "that"
    if len(words) > 1 and words[0] not in IMPERATIVES and words[-1] in TRAILING_VERBS:
        return words[-1], " ".join([*words[:-2], _singular(words[-2])])
    if len(words) > 2 and words[0] in METHOD_VERBS and words[-1] == "id":
        return METHOD_VERBS[words[0]], " ".join([*words[1:-2], _singular(words[-2])])
    return COMPOUND_VERBS.get(words[0], words[0]), " ".join(words[1:])


def _singular(word: str) -> str:
    """'campaigns' -> 'campaign', 'policies' -> 'policy'; a word not plural as it stands ('status') is kept."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


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
    if not entity:  # a row named by what it says, of a kind unnamed: 'the user “Ivan Ahmed”', never 'for the  “...”'
        return verb, f"the {thing} {described}" if not creates else f"{article} {thing}"
    last, kinds = thing.split()[-1], entity.split()
    if last.startswith(kinds[-1]) or kinds[-1].startswith(last):  # 'doc' is the 'document'
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
    asked = asked_readback(call)
    if asked is not None:
        said = asked.strip() if CLOSED_QUOTE.search(asked) else asked.rstrip(".! ") + "."
        return f"Just to confirm: {said} Shall I go ahead?"
    ids, currency = task_ids(task), _currency(task)
    verb, what = _change(task, index, ids, currency)
    # The numbers the confirm check wants said are said even where one equals some row's key (an imported API's
    # `admin: 1` beside user 1): the read-back states the change the check grades.
    stated = {
        v
        for c in task.policy_checks
        if c.kind == "must_confirm" and (c.server, c.tool) == (call.server, call.tool)
        for v in c.values
    }
    details, events = _details(call, ids - stated, currency)
    text = f"Just to confirm: I'll {verb} {what}" + (f", with {_join(details)}" if details else "")
    text += f", {_join(events)}" if events else ""
    return text + ". Shall I go ahead?"


def did(task: Task, index: int) -> str:
    """A change that was made, in the past tense: 'I've paid the invoice “March rent”.' A change the user asked
    for in their own words is reported in them ('I've added you to the Careers list.'), or, where those words ask
    the agent to do nothing it can report that way, said briefly ('That's done.') rather than in column names."""
    call = task.gold_calls[index]
    if call.asked:
        return asked_done(call) or "That's done."
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
    currency, ids = _currency(task), task_ids(task)
    recent = _turn_claims(task, last) if last and len(task.turns) > 1 else task.claims
    earlier = [c for c in task.claims if c not in recent]
    found = state_claims(recent, currency, ids)
    if earlier:
        # what an earlier request asked to hear, said as that request's ('the status is completed' after a credit
        # note would read as the credit's): the answer is graded alone, so it is still said
        before = state_claims(earlier, currency, ids)
        before[0] = "As for your earlier request, " + before[0][:1].lower() + before[0][1:]
        found += before
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


def refusal(rule: str, record: str | None = None) -> str:
    """A refusal that gives the reason (what the lookups showed: `record`, as the user named it, is not under
    their name) and the policy rule, and claims nothing was done. A clause of the rule that points into the policy
    document ('unless policy below allows it') is the document's, not the agent's: left out."""
    said = re.sub(r"[,;]?\s*[^,;.]*\b(?:below|above)\b[^,;.]*(?=[.;]|$)", "", rule.strip()).strip()
    said = said if said.endswith((".", "!", "?")) else said + "."
    if record:
        return (
            f"I'm sorry, but I can't do that: {record} is not under your name. Our policy says: {said} "
            "The person it belongs to can contact us about it themselves. I haven't changed anything."
        )
    return f"I'm sorry, but I can't do that. Our policy says: {said} I haven't changed anything."


def declined() -> str:
    return "Understood: I haven't changed anything."


#: A hidden fact's description names what it is before its value: "my email is ...", "the isbn is ...".
_FACT_NAME = re.compile(r"^\s*(my|the|our)\s+(.+?)\s+(?:is|are|was|were)\b", re.IGNORECASE)


def _fact_name(fact: HiddenFact) -> str:
    """What the agent asks for, in the user's own words turned to the agent's side: "my email is x" -> "your
    email"; without a description that names it, the fact's key in words ("your date of birth")."""
    if match := _FACT_NAME.match(fact.description):
        owner, name = match.group(1).lower(), match.group(2)
        if fact.description[match.end() :].startswith(" in "):  # "the branch is in Austin": where it is
            return f"where {'the' if owner == 'the' else 'your'} {name} is"
        return f"{'the' if owner == 'the' else 'your'} {name}"
    return f"your {label(fact.key)}"


def ask_for(facts: Sequence[HiddenFact]) -> str:
    """The agent asks for the details it needs and was not given (before it uses them, never after)."""
    return f"Could you tell me {_join([_fact_name(f) for f in facts])}, please?"


# ---------------------------------------------------------------- what must never be said

RUBRIC_TEXT = re.compile(r"\b(?:states|confirms) the\b|\bcount:|\bhas_more\b|\bcursor:|\bnext_cursor\b", re.IGNORECASE)
FIELD_DUMP = re.compile(r"(?:\b\w+: [^;\n]+; ){2,}")
#: The shape of the farm's generated ids (`sch_xr3qi5`, `pat_0042`): a short prefix, `_`, letters with a digit.
ID_SHAPE = re.compile(r"\b[a-z]{2,5}_(?=[a-z0-9]*\d)[a-z0-9]{4,}\b")


#: Seams of a sentence built from a tool's and its columns' names, as reviewers found them in read-backs and
#: answers: 'with hours purchased 20' (a label, then its number), 'the member contact for the member', 'the res',
#: 'subscribe the list', 'enrolled the in section', 'replied to it to thread', 'with arrival date on May 3',
#: 'as for whether it passed, that's pass'.
TEMPLATE_SEAMS = (
    # a label then its number; never an identifier a person names a thing by ('the Ford Ranger with plate 92-AI-58')
    re.compile(
        r"\bwith (?!the |a |an |my |your |our |this |that )(?:[a-z]+ ){0,2}"
        r"(?!(?:plate|barcode|code|number|isbn|reference|room|card|account|order|ticket|line|tracking) )[a-z]+ "
        r"\d[\d.,]*(?![\w-])"
    ),
    re.compile(r"\bthe (\w+) \w+ for the \1\b"),
    re.compile(r"\bthe res\b"),
    re.compile(r"\b(?:subscribe|unsubscribe|enroll|register)(?:d|ed)? the\b"),
    re.compile(r"\bthe (?:in|into|to|from|out|with|of|on|at|by) [a-z]+\b"),
    re.compile(r"\bto (?:it|them) to\b"),
    re.compile(r"\bwith [a-z]+ (?:date|time) (?:on )?[A-Z][a-z]+ \d"),
    re.compile(r"\bas for whether\b", re.IGNORECASE),
    re.compile(r"[.?!][\"”]\."),  # a second full stop after a quote that ended its own sentence
)


def template_seams(text: str) -> list[str]:
    """The phrases of `text` that read as a template filled with field names (see `TEMPLATE_SEAMS`)."""
    return [f"template seam {m.group(0)!r}" for pattern in TEMPLATE_SEAMS if (m := pattern.search(text))]


def speech_problems(text: str, task: Task, fields: Iterable[str] = ()) -> list[str]:
    """What reads like a grader or a database in an agent's words: rubric text, paging fields, a
    `key: value; key: value` dump, a raw field name (`odometer_km`) or an internal id."""
    problems = [f"rubric or paging text {m.group(0)!r}" for m in RUBRIC_TEXT.finditer(text)]
    problems += [f"field dump {m.group(0)[:40]!r}" for m in FIELD_DUMP.finditer(text)]
    problems += [f"internal id {m.group(0)!r}" for m in ID_SHAPE.finditer(text)]
    problems += template_seams(text)
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


def say_slot(value: Any, fmt: str | None, coded: bool = True) -> str | None:
    """A value filling a `{slot:format}` of an intent's phrasing, as a person says it: `date` 12 May, `day`
    Tuesday 12 May, `time` 10:30, `datetime` Tuesday 12 May at 10:30, `money` 1,250.00, `number` 3 or 2.5, a
    %-pattern through strftime; no format: dates in words, numbers plainly, enum words unfolded. A value that is
    no code (`coded` False: a username `tomas_ahmed` a write stores as given) is said as it is written. None when
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
    return text.replace("_", " ") if coded and re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", text) else text


# ---------------------------------------------------------------- a change in the user's own words

#: Verbs a request opens with when it tells the agent what to do ("Send 40.00 to ...", "Archive the thread").
IMPERATIVES = frozenset(
    [
        "accept",
        "add",
        "address",
        "answer",
        "apply",
        "approve",
        "archive",
        "assign",
        "attach",
        "book",
        "bring",
        "buy",
        "cancel",
        "change",
        "charge",
        "check",
        "close",
        "confirm",
        "create",
        "decline",
        "delete",
        "discard",
        "draft",
        "drop",
        "edit",
        "email",
        "end",
        "enroll",
        "extend",
        "file",
        "find",
        "fix",
        "forward",
        "freeze",
        "give",
        "hold",
        "invite",
        "issue",
        "join",
        "keep",
        "label",
        "leave",
        "let",
        "list",
        "log",
        "make",
        "mark",
        "move",
        "offer",
        "open",
        "pass",
        "pause",
        "pay",
        "pin",
        "place",
        "post",
        "put",
        "react",
        "record",
        "refund",
        "register",
        "release",
        "remove",
        "rename",
        "renew",
        "reprice",
        "request",
        "reserve",
        "resolve",
        "restore",
        "resume",
        "return",
        "roll",
        "save",
        "schedule",
        "send",
        "set",
        "share",
        "ship",
        "sign",
        "start",
        "stop",
        "submit",
        "subscribe",
        "switch",
        "take",
        "tell",
        "transfer",
        "turn",
        "unfreeze",
        "unpin",
        "unsubscribe",
        "update",
        "upload",
        "void",
        "withdraw",
        "write",
    ]
)
#: Verbs of a request the agent arranges rather than does ('deliver my order to X instead', 'ship it Monday').
ARRANGED = frozenset({"deliver", "ship", "collect", "pick", "bring", "send over"})
#: Past participles a change is reported with ("I've taken it off", never "I've taked").
PARTICIPLES = {
    **PAST,
    "take": "taken",
    "give": "given",
    "write": "written",
    "run": "run",
    "get": "got",
    "withdraw": "withdrawn",
    "freeze": "frozen",
    "unfreeze": "unfrozen",
    "do": "done",
    "go": "gone",
    "begin": "begun",
    "let": "let",
    "keep": "kept",
    "bring": "brought",
    "tell": "told",
    "find": "found",
    "hold": "held",
    "set": "set",
    "put": "put",
    "end": "ended",
    "sign": "signed",
}
#: The speaker's words as the agent says them back: 'my card' -> 'your card', "I'm" -> "you're", 'our' -> 'your';
#: the service's words ('your Austin branch') as the agent's ('our Austin branch').
_PERSON = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "i'm": "you're",
    "i've": "you've",
    "i'll": "you'll",
    "i'd": "you'd",
    "we": "you",
    "us": "you",
    "our": "your",
    "ours": "yours",
    "we're": "you're",
    "we've": "you've",
    "we'll": "you'll",
    "we'd": "you'd",
    "your": "our",
    "yours": "ours",
    "am": "are",
    "was": "were",
}
_PERSON_WORD = re.compile(
    r"(?<![\w'’])(?:I'm|I've|I'll|I'd|I|me|my|mine|myself|we're|we've|we'll|we'd|we|us|our|ours|your|yours)(?![\w'’])",
    re.IGNORECASE,
)
_INTERJECTION = re.compile(r"^(?:hi|hello|hey|oh|so|ok|okay|right|well|sorry)\b[,!]?\s+", re.IGNORECASE)
_AGENT_ASKED = re.compile(
    r"^(?:please\s+|kindly\s+)?(?:can|could|would|will) you(?: please)?\s+(.+?)\s*\?$", re.IGNORECASE
)
_PLEASE = re.compile(r"^(?:please|kindly),?\s+(.+)$", re.IGNORECASE)
_MAY_I = re.compile(r"^(?:can|could|may) (?:i|we)\s+(.+?)\s*\?$", re.IGNORECASE)
_GO_AHEAD = re.compile(r"^go ahead and\s+", re.IGNORECASE)
_MASK = "\u2063{}\u2063"
#: A said value longer than this is named by its first words in a read-back, not read out whole.
LONG_TEXT = 100


def _spoken_person(text: str) -> str:
    """`text` from the other side of the conversation: first person becomes second ('my card' -> 'your card'),
    the service's 'your branch' the agent's 'our branch'; 'I am'/'I was' follow ('you are', 'you were')."""
    text = re.sub(r"(?<![\w'’])I (am|was)\b", lambda m: "you " + _PERSON[m.group(1)], text)
    text = re.sub(r"(?<![\w'’])(am|was) I\b", lambda m: _PERSON[m.group(1)] + " you", text)
    return _PERSON_WORD.sub(lambda m: m.group(0) if m.group(0) in ("US", "i") else _PERSON[m.group(0).lower()], text)


def _masked(text: str, values: Iterable[str]) -> tuple[str, list[str]]:
    """`text` with quoted passages and the call's own text values hidden (a message body's 'I' is the body's, not
    the speaker's), and the hidden pieces in order."""
    pieces: list[str] = []

    def hide(match: re.Match[str]) -> str:
        pieces.append(match.group(0))
        return _MASK.format(len(pieces) - 1)

    text = re.sub(r"“[^”]*”|\"[^\"]*\"", hide, text)
    for value in sorted({v for v in values if len(v) >= 12}, key=len, reverse=True):
        text = re.sub(re.escape(value), hide, text)
    return text, pieces


def _unmasked(text: str, pieces: Sequence[str]) -> str:
    def back(match: re.Match[str]) -> str:
        piece = pieces[int(match.group(1))]
        if len(piece) <= LONG_TEXT:
            return piece
        inner = piece.strip('“”"')
        return "“" + " ".join(inner.split()[:6]).rstrip(",.;:") + "…”"

    return re.sub("\u2063(\\d+)\u2063", back, text)


def _clauses(text: str) -> list[tuple[str, str]]:
    """A request's clauses as the agent says them back, each with its kind: ('do', 'cancel your booking RA1') for
    what the agent is asked to do, ('want', "you'd like to ...") for what the user asks to be allowed,
    ('say', "you won't need the car after all") for what they tell. Empty when one cannot be said back (a question
    that is no request)."""
    said: list[tuple[str, str]] = []
    text = re.sub(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Mt|No|vs)\. ", "\\1\u2064 ", text.strip())  # 'Dr. Lopez' ends nothing
    # 'Leaving the depot for X, please mark me as departed': what they tell, then what they ask
    text = re.sub(r",\s+(please\s+\w)", r"; \1", text, flags=re.IGNORECASE)
    for part in re.split(r"(?<=[.!?;])\s+|;\s*", text):
        clause = _INTERJECTION.sub("", part.strip()).strip().replace("\u2064", ".")
        clause = re.sub(r",\s*please\b(?=\s*[?.!,]|$)|\bplease,\s*", "", clause, flags=re.IGNORECASE).strip()
        if not clause:
            continue
        asked = _AGENT_ASKED.match(clause)
        if asked is not None:
            said.append(("do", _spoken_person(asked.group(1))))
            continue
        allowed = _MAY_I.match(clause)
        if allowed is not None:
            said.append(("want", "you'd like to " + _spoken_person(allowed.group(1))))
            continue
        body = clause.rstrip(".!")
        pleased = _PLEASE.match(body)
        body = _GO_AHEAD.sub("", pleased.group(1) if pleased is not None else body)
        body = re.sub(r",?\s+please$", "", body, flags=re.IGNORECASE)
        first = body.split(" ", 1)[0].lower()
        if body.endswith("?"):
            return []
        if pleased is not None or first in IMPERATIVES:
            said.append(("do", _spoken_person(body[:1].lower() + body[1:])))
            continue
        person = _spoken_person(body)
        if re.match(r"[A-Z][a-z]+ing\b", person):  # 'Leaving the depot for ...' -> "you're leaving the depot for ..."
            person = "you're " + person[:1].lower() + person[1:]
        if person[:1].isupper() and person.split(" ", 1)[0].lower() in _LOWER_FIRST:
            person = person[:1].lower() + person[1:]
        said.append(("say", person))
    return said


#: First words of a told clause that are ordinary words, not a name: lower-cased after 'Just to confirm:'.
_LOWER_FIRST = frozenset(
    [
        "about",
        "after",
        "all",
        "any",
        "anything",
        "everything",
        "for",
        "from",
        "here",
        "here's",
        "if",
        "it",
        "it's",
        "nobody",
        "nothing",
        "regarding",
        "some",
        "something",
        "that",
        "that's",
        "the",
        "there",
        "there's",
        "this",
        "these",
        "those",
        "what",
        "when",
        "where",
        "which",
        "who",
    ]
)


def _call_values(call: GoldCall) -> list[str]:
    return [v for v in call.arguments.values() if isinstance(v, str)]


def _numbers_said(call: GoldCall, text: str) -> bool:
    """Every number the change takes is in `text` (the confirmation check looks for them), in any usual form."""
    return all(  # the check's own reading: 'one adult' says 1
        value_found(str(value), text)
        for value in call.arguments.values()
        if isinstance(value, int | float) and not isinstance(value, bool)
    )


def _asked_clauses(call: GoldCall) -> tuple[list[tuple[str, str]], list[str]] | None:
    if not call.asked:
        return None
    masked, pieces = _masked(call.asked, _call_values(call))
    clauses = _clauses(masked)
    if not clauses:
        return None
    return clauses, pieces


def asked_readback(call: GoldCall) -> str | None:
    """The read-back of a change in the user's own request, said from the agent's side: "Please add me to the
    Careers list. My email is ..." -> "I'll add you to the Careers list; your email is ..."; None when the call
    has no request or it cannot be said back, or when it leaves out a number the change takes."""
    found = _asked_clauses(call)
    if found is None:
        return None
    clauses, pieces = found
    parts: list[str] = []
    previous = ""
    for kind, clause in clauses:
        text = f"I'll {clause}" if kind == "do" else clause
        if kind == "do" and previous and previous != "do":
            parts[-1] += f", so {text}"
        else:
            parts.append(text)
        previous = kind
    said = _unmasked("; ".join(parts), pieces)
    return said if _numbers_said(call, said) else None


def asked_done(call: GoldCall) -> str | None:
    """The change reported in the user's request's words, in the perfect: 'I've added you to the Careers list.';
    None when the request asks the agent to do nothing it can report that way (the user says what they are doing:
    'I'm returning the car ...')."""
    found = _asked_clauses(call)
    if found is None:
        return None
    clauses, pieces = found
    todo = next((clause for kind, clause in clauses if kind == "do"), None)
    if todo is None:
        return None
    verb, _, rest = todo.partition(" ")
    if not verb.isalpha():
        return None
    rest = re.sub(r",?\s+(?:right now|now|right away|straight away)$", "", rest)  # 'send it now': done, not now
    done = PARTICIPLES.get(verb) or _past(verb)
    if verb in ARRANGED:  # "deliver my order to X instead": the agent arranges it, nothing is delivered yet
        return _sentence(_unmasked(f"I've arranged to {todo}", pieces))
    # "make it 117.28 and have it go out on 15 May": each verb of the request is reported done
    rest = re.sub(
        r"\b(and|then) (\w+)\b",
        lambda m: (
            f"{m.group(1)} {'had' if m.group(2) == 'have' else PARTICIPLES.get(m.group(2)) or _past(m.group(2))}"
            if m.group(2) in IMPERATIVES or m.group(2) == "have"
            else m.group(0)
        ),
        rest,
    )
    return _sentence(_unmasked(f"I've {done} {rest}".strip(), pieces))
