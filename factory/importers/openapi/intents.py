"""Task-readiness: the intents (who asks, how, what they hear back) derived from the operations' summaries, and
the drafted policy and scenarios.
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

from envfarm.factory import fakedata
from envfarm.factory.importers.openapi.models import LIST_TEXT, NESTED_TEXT
from envfarm.factory.importers.openapi.seed import noun_of
from envfarm.factory.importers.openapi.words import (
    RPC_VERBS,
    WRAPPERS,
    indefinite,
    singular,
    spaced_words,
    verb_phrase,
)
from envfarm.factory.spec import with_default_words

# Columns a person names a row by, most telling first.
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[a-z]+")
NAMING_WORDS = ("name", "title", "email", "username", "login", "handle", "subject", "label", "number", "code", "slug")


def _slot(name: str, param: dict[str, Any]) -> str:
    kind = param.get("type")
    return f"{{{name}:date}}" if kind == "date" else f"{{{name}:datetime}}" if kind == "datetime" else f"{{{name}}}"


def _said(name: str, param: dict[str, Any], entity: dict[str, Any]) -> str:
    """A param as a person says it: an id through its table's reference (the slot alone), else '<label> x', a
    free text in quotes ('content “Call first.”, tag finance', not 'content Call first., tag finance')."""
    column = entity["columns"].get(param.get("column", name)) or {}
    if column.get("ref") or name.endswith("_id") or name == entity["primary_key"]:
        return _slot(name, param)
    if param.get("type", "string") == "string" and set(name.split("_")) & (SAYING_WORDS | {"content", "comments"}):
        return f"{spaced_words(name)} “{_slot(name, param)}”"
    return f"{spaced_words(name)} {_slot(name, param)}"


def _details(names: list[str], params: dict[str, Any], entity: dict[str, Any]) -> str:
    """What a create is given, as sentences a person writes ('The broker server is {broker_server} and the
    username is {username}. It is for {client_id}.'), never a form's 'It is broker server ..., username ...'."""
    clauses, owners = [], []
    for name in names:
        said = _said(name, params[name], entity)
        label = spaced_words(name)
        if not said.startswith(label):  # a row of another table, said as the row itself
            owners.append(said)
        elif params[name].get("type") == "boolean":
            clauses.append(f"“{label}” is {said.removeprefix(label).strip()}")
        else:
            clauses.append(f"the {label} is {said.removeprefix(label).strip()}")
    sentences = []
    if clauses:
        listed = ", ".join(clauses[:-1]) + " and " + clauses[-1] if len(clauses) > 1 else clauses[0]
        sentences.append(listed[0].upper() + listed[1:] + ".")
    if owners:
        sentences.append("It is for " + " and ".join(owners) + ".")
    return " ".join(sentences)


# Words of a column whose values tell one row from another as people know it: what it is called or goes by
# (NAMING_WORDS, most telling first), a reference it is filed under, or what it says.
REFERENCE_WORDS = frozenset({"reference", "serial", "sku", "sha", "domain", "hostname", "phone", "no", "num"})
SAYING_WORDS = frozenset({"text", "message", "comment", "body", "caption", "headline", "description", "note"})
# ... and words of one that does not, however distinct its seeded values: a measure, a moment, a kind of record.
NOT_NAMING_WORDS = frozenset(
    """count total size amount price cost duration minutes seconds hours days percent percentage rate ratio quantity
    length width height weight score balance level max min maximum minimum limit at time timestamp stamp date
    created updated modified published kind type etag format version country currency language locale timezone
    region status error response""".split()
)
# A column that is the row's own name, said as 'the pet Rex' rather than 'the pet with name Rex'.
OWN_NAMES = frozenset({"name", "title", "label", "full_name", "display_name", "friendly_name"})


def _refer(table: str, entity: dict[str, Any], rows: list[dict[str, Any]], parts: dict[str, str]) -> list[str]:
    """How a person names one row: by a column they know that names it (`_names_a_row`) and whose seeded values
    tell the rows apart. Never by a detail of one of its parts (`parts`: column -> the nested object it was
    flattened from; 'the transaction with invoice address street name ...' names no transaction), except a
    wrapper of the record's own fields, said without the wrapper's name."""
    noun = spaced_words(singular(table))
    labels: dict[str, str] = {}  # column -> its name as said
    for c, col in entity["columns"].items():
        part = parts.get(c, "")
        label = c[len(part) + 1 :] if part in WRAPPERS else c
        if (
            col.get("user_known")
            and (not part or part in WRAPPERS)
            and _names_a_row(label, col)
            and not col.get("enum")
            and rows
            and all(r.get(c) not in (None, "") for r in rows)
            and len({str(r.get(c)) for r in rows}) == len(rows)
        ):
            labels[c] = label

    def own(column: str) -> str:  # its label without the row's own noun: `client_name` of a client is its `name`
        return "_".join(w for w in labels[column].split("_") if w not in noun.split()) or labels[column]

    # Its own name first (`name`, `email`), then a name of something else it holds (`category_name`), then a
    # reference, then what it says.
    def rank(column: str) -> tuple[int, int]:
        words = labels[column].split("_")
        first = next((i for i, w in enumerate(NAMING_WORDS) if w in words), len(NAMING_WORDS))
        named = own(column) in NAMING_WORDS or own(column) in OWN_NAMES
        return (0 if named else 1 if first < len(NAMING_WORDS) else 2 if set(words) & REFERENCE_WORDS else 3, first)

    phrasings = []
    for column in sorted(labels, key=rank)[:2]:
        slot, label = _slot(column, entity["columns"][column]), labels[column]
        if own(column) in OWN_NAMES or spaced_words(label) == noun:
            # a name that says what it names ('Silverleaf disk') is said alone: 'the Silverleaf disk'
            says_noun = all(str(r.get(column)).lower().endswith(f" {noun}") for r in rows)
            phrasings.append(f"the {slot}" if says_noun else f"the {noun} {slot}")
        elif rank(column)[0] == 3:
            phrasings.append(f"the {noun} that says “{slot}”")
        else:
            phrasings.append(f"the {noun} with {spaced_words(label)} {slot}")
    return phrasings


def _names_a_row(name: str, column: dict[str, Any]) -> bool:
    """Whether a person could name a row by this column: by what it is called, a number or reference it goes by
    ('order number 1042') or what it says; never by a measure ('the quota counter with kb transferred 62.42',
    'number alternative schools 12'), a moment ('the call with created at ...'), a category ('the ip probe with
    country code US') or a kind of record ('the dataset with kind personal'), nor by a link or a key."""
    words = name.split("_")
    if column["type"] in ("boolean", "date", "datetime") or set(words) & NOT_NAMING_WORDS:
        return False
    if NOT_SPOKEN.search(name) or (words[0] == "number" and len(words) > 1):  # 'number_of_seats': a count
        return False
    if column["type"] in ("integer", "number"):
        return words[-1] in ("number", "code", "no", "num")
    return bool(set(words) & (set(NAMING_WORDS) | REFERENCE_WORDS | SAYING_WORDS))


def _hear(entity: dict[str, Any], skip: set[str], limit: int = 4) -> dict[str, str]:
    """Output fields a person wants back, by their words: columns they know (not the ones they gave), then the
    record's other plain facts (a status, a count, a price, a date). The task writer claims up to two of those
    the answer holds once and the person did not say, so a read named by the very fields it knows (the sound
    asked for by its name) still has something to hear back; ids, references, links and nested text never."""
    columns = {c: col for c, col in entity["columns"].items() if c not in skip and c != entity["primary_key"]}
    known = [c for c, col in columns.items() if col.get("user_known") and col["type"] != "boolean"]
    facts = [c for c, col in columns.items() if c not in known and _plain_fact(c, col)]
    return {c: f"the {spaced_words(c)}" for c in (known + facts)[:limit]}


NOT_SPOKEN = re.compile(r"(^|_)(id|key|uuid|url|uri|link|href|etag|hash|token|icon|image|thumbnail|avatar)s?($|_)")


def _plain_fact(name: str, column: dict[str, Any]) -> bool:
    """A column whose value a person would take in when told: not an id or reference, a link, a flag or
    nested data kept as text."""
    description = str(column.get("description") or "")
    return (
        not column.get("ref")
        and column["type"] != "boolean"
        and NOT_SPOKEN.search(name) is None
        and LIST_TEXT not in description
        and NESTED_TEXT not in description
    )


# First words of a summary that a person asking would say; another first word ('Given a word, returns ...',
# 'Collection version details', 'The IP Blocklist API will ...') is no request.
REQUEST_VERBS = frozenset(
    """accept acknowledge activate add apply approve archive assign associate attach block book calculate cancel change
    check close complete confirm convert copy create deactivate decline delete deploy detach detect disable
    disassociate download edit enable end estimate export extract find finish follow generate get grant import
    invite join leave list lock look mark merge modify move mute open pause publish purchase reactivate read
    reboot refresh regenerate register reject release remove rename renew reopen re-open replace request reset
    resend restart restore resume retrieve revoke rotate run save schedule search send set share show sign star
    start stop submit subscribe suspend sync tag transfer translate unblock unfollow unlock unmute unpublish
    unstar unsubscribe untag update upgrade validate verify withdraw email pay refund capture void charge notify
    initiate
    upload resolve unconfirm retry trigger execute preview print ship deliver""".split()
)
# Words of documentation, not of a person asking: a summary holding one is said plainly instead.
DOC_WORDS = re.compile(
    r"\b(api|apis|request|requests|response|responses|endpoint|endpoints|objects?|entity|entities|representation|"
    r"criteria|payload|proxy|resources?|method|operation|operations|instance|parameters?|json|xml|uri|url|sdk)\b",
    re.IGNORECASE,
)
# Qualifiers a person leaves out ('delete the specified pipeline' -> 'delete the pipeline').
FILLER = re.compile(
    r"\b(specified|given|existing|provided|particular|single|requested)\s+|"
    r"\s+(by (its )?(id|key|name)|for the (authenticated|current|signed-in) user|of the authenticated user)\b",
    re.IGNORECASE,
)
MAX_REQUEST_WORDS = 9


def spoken_request(summary: str) -> str:
    """An operation's summary as a person asks for it ('Deletes the specified pipeline.' -> 'delete the
    pipeline'), or '' where it does not read as a request: it opens with no verb a person says, names the
    API's own machinery (a request, a resource, an object, a CamelCase type), or runs long."""
    phrase = verb_phrase(summary)
    words = phrase.split()
    if not words or words[0] not in REQUEST_VERBS or (words[0] == "get" and len(words) == 1):
        return ""
    phrase = " ".join(FILLER.sub("", phrase).split())
    if re.search(r"[a-z][A-Z]|_|\d", phrase) or DOC_WORDS.search(phrase):
        return ""
    return phrase if 2 <= len(phrase.split()) <= MAX_REQUEST_WORDS else ""


DETERMINERS = frozenset(
    "a an the my our your its their this that these those all some any each every one new another no".split()
)
PARTICLES = frozenset(
    "up in out on off down over back to for from by with at into or and if whether how what which who".split()
)


def with_article(phrase: str, effect: str) -> str:
    """A summary's bare noun given its article, as a person says it: 'Confirm transaction' -> 'confirm the
    transaction', 'Generate report' (a create) -> 'generate a report'; a plural ('add contacts'), a particle
    ('look up ...'), a gerund or a determiner already there is left as it is."""
    words = phrase.split()
    if len(words) < 2:
        return phrase
    gerund = len(words) == 2 and words[1].endswith("ing")  # 'start recording', not 'close accounting period'
    plural = words[1].endswith("s") and not words[1].endswith(("ss", "us", "is"))  # 'add contacts'; 'reset status'
    if words[1] in ("a", "an") and len(words) > 2:  # the document's own article, made right ('send a order')
        return " ".join([words[0], indefinite(words[2]), *words[2:]])
    if words[1] in DETERMINERS or words[1] in PARTICLES or plural or gerund:
        return phrase
    article = indefinite(words[1]) if effect == "create" else "the"
    return " ".join([words[0], article, *words[1:]])


def topic(tool: str) -> str:
    """What a computed read is about, from its tool's name: `get_exchange_rates` -> 'exchange rates'."""
    words = tool.split("_")
    while len(words) > 1 and words[0] in ("get", "list", "search", "find", "fetch", "retrieve", "query", "post"):
        words = words[1:]
    return " ".join(w for w in words if w != "answers") or spaced_words(tool)


def derive_intents(spec: dict[str, Any], asked: dict[str, str], parts: dict[str, dict[str, str]]) -> None:
    """Intents from the document: each write, get and computed read says who asks for it (the signed-in user,
    or a customer asking staff), two ways a person asks (the operation's summary as the request, its params as
    slots) and what they want to hear back; each table a person names rows of says how (a column whose seeded
    values tell its rows apart, not one flattened from a nested object: `parts`, per table). Plain searches
    carry none: a task does not end in a listing."""
    asks = "user" if spec["principal"]["kind"] == "user" else "customer"
    for table, entity in spec["entities"].items():
        if entity["primary_key"] != "lookup_id" and (
            refer := _refer(table, entity, spec["seed"].get(table) or [], parts.get(table, {}))
        ):
            entity["refer"] = refer
    verb_last = verbs_last([t["name"] for t in spec["tools"]])
    for tool in spec["tools"]:
        entity = spec["entities"][tool["entity"]]
        noun = noun_of(tool["entity"])
        a = indefinite(noun)
        params: dict[str, dict[str, Any]] = tool["params"]
        effect, key = tool["effect"], tool.get("key")
        lookup = entity["primary_key"] == "lookup_id"
        if effect == "search" and not lookup:
            continue
        default = {
            "create": f"create a new {noun}",
            "update": f"update {a} {noun}",
            "delete": f"delete {a} {noun}",
            "get": f"look up {a} {noun}",
            "search": f"look up {topic(tool['name'])}",
        }[effect]
        # the summary as a request, else the operation's own name where it names another write than the path's
        # method made of it ('delete_vpc_association_authorization' mapped as a create is no 'create a new vpc')
        name_says = RPC_VERBS.get(tool["name"].split("_")[0])
        by_name = spoken_request(spaced_words(tool["name"])) if name_says in ("create", "update", "delete") else ""
        asking = spoken_request(asked.get(tool["name"], "")) or (by_name if name_says != effect else "")
        verb = with_article(asking, effect) or default
        if not asking and effect == "create":  # no summary: what the name does ('list keys', 'validate phone')
            verb = spoken_request(request_by_name(tool["name"], verb_last)) or default
        hear: dict[str, str] = {}
        if effect == "create":
            # every required detail: a create the person leaves one out of is refused, or its task unsolvable
            chosen = [p for p, v in params.items() if v.get("required")] or list(params)[:2]
            said = ", ".join(_said(p, params[p], entity) for p in chosen)
            say = [f"Please {verb}, with {said}.", f"Could you {verb}? {_details(chosen, params, entity)}"]
            column = entity["columns"].get(params[chosen[0]].get("column", chosen[0])) or {} if chosen else {}
            named = noun_of(column["ref"].split(".")[0]).split() if len(chosen) == 1 and column.get("ref") else []
            if named and verb.split()[1:] in (["the", *named], ["a", *named], ["an", *named]):
                # 'email the credit memo' of one referenced credit memo: the row said in place of its noun
                say = [f"Please {verb.split()[0]} {said}.", f"Could you {verb.split()[0]} {said}?"]
            elif named:  # made for one row of another table: 'email an invoice for the transaction ...'
                say = [f"Please {verb} for {said}.", f"Could you {verb} for {said}?"]
        elif effect == "search":  # a computed read: its inputs, its answer
            chosen = [p for p, v in params.items() if v.get("required")][:3] or list(params)[:2]
            said = ", ".join(_said(p, params[p], entity) for p in chosen)
            say = (
                [f"Can you {verb}? For {said}.", f"I need to {verb}, for {said}."]
                if chosen
                else [
                    f"Can you {verb}?",
                    f"I need to {verb}.",
                ]
            )
            hear = _hear(entity, set(params) | {entity["primary_key"]})
        else:
            assert isinstance(key, str)
            target = _slot(key, params[key])
            changes = [p for p in params if p != key]
            if effect == "update" and changes and not tool.get("set"):
                first, second = changes[0], changes[1] if len(changes) > 1 else changes[0]
                say = [
                    f"Please {verb}; for {target}, set the {spaced_words(first)} to {_slot(first, params[first])}.",
                    f"Could you change the {spaced_words(second)} of {target} to {_slot(second, params[second])}?",
                ]
                hear = {params[first].get("column", first): f"the {spaced_words(first)}"}
            elif effect == "get":
                say = [f"Can you {verb}? I mean {target}.", f"What do you have on {target}?"]
                hear = _hear(entity, {key, params[key].get("column", key)})
            elif verb.split()[1:] in (["the", *noun.split()], [a, *noun.split()]):
                # 'close the accounting period' names the row itself: the row said in place of its noun
                say = [f"I need to {verb.split()[0]} {target}.", f"Can you {verb.split()[0]} {target}?"]
            else:
                say = [f"I need to {verb}; it is {target}.", f"Can you {verb} for {target}?"]
        intent: dict[str, Any] = {"asks": asks, "say": say}
        if hear:
            intent["hear"] = hear
        tool["intent"] = intent
    with_default_words(spec)  # a code said in a phrasing: its values humanized, never said raw


def _said_verb(word: str) -> bool:
    return word in REQUEST_VERBS or word == "lookup"


def _name_words(tool: str) -> list[str]:
    """A tool's name as words, without an HTTP method it opens with (`post_mail_send`) or a word said twice."""
    words = [w for n, w in enumerate(tool.split("_")) if n or w not in METHOD_WORDS or "_" not in tool]
    return [w for n, w in enumerate(words) if not n or w != words[n - 1]]  # 'surveys surveys'


def verbs_last(tools: list[str]) -> bool:
    """Whether a document names its operations noun first (Neutrino's `phone_validate`, `bin_lookup`, Google's
    `bigquery_jobs_cancel`): more of its names end with a verb a person says than open with one."""
    words = [_name_words(t) for t in tools]
    return sum(_said_verb(w[-1]) for w in words if w) > sum(_said_verb(w[0]) for w in words if w)


def request_by_name(tool: str, verb_last: bool) -> str:
    """A tool's name as a request, its verb first: `list_keys` -> 'list keys', `start_query_execution` -> 'start
    query execution', and in a document naming operations noun first (`verbs_last`) Neutrino's `phone_validate`
    -> 'validate phone', `bin_lookup` -> 'look up bin'; Traccar's `post_commands_send` -> 'send commands'. ''
    where its verb is a create's (a create named for its record says 'create a new ...'), where the word in the
    verb's place is no verb a person says, or where it runs long."""
    words = _name_words(tool)
    said = ["look up" if w == "lookup" else w for w in words]
    verb = words[-1] if verb_last else words[0]
    if len(words) > 5 or not _said_verb(verb) or RPC_VERBS.get(verb) == "create":
        return ""
    return " ".join([said[-1], *said[:-1]]) if verb_last else " ".join(said)


# HTTP methods an operation's name may open with (`post_mail_send`), no word a person says.
METHOD_WORDS = frozenset({"get", "post", "put", "patch"})


def account_holder(spec: dict[str, Any]) -> str | None:
    """The name of the one account's holder, drawn per server and seed number, where no seeded row carries an
    email (else the people of the seed are who ask, and naming another would contradict them)."""
    emails = (v for rows in spec["seed"].values() for row in rows for v in row.values())
    if any(isinstance(v, str) and EMAIL.fullmatch(v) for v in emails):
        return None
    return fakedata.unique_people(random.Random(f"{spec['name']}:{spec.get('seed_number', 0)}"), 1)[0]


def draft_policy(spec: dict[str, Any], description: str) -> str:
    """policy.md from what the document says: who the agent is, what to confirm, the rules its schemas
    state (required fields, allowed values) and paging."""
    principal = spec["principal"]
    writes = [t for t in spec["tools"] if t["effect"] in ("create", "update", "delete")]
    lines = [f"You are {principal['description']}. {description}".strip(), "", "Identity:"]
    if principal["kind"] == "user":
        lines.append(
            f"- Act only as the signed-in user (their {principal['column'].replace('_', ' ')}); never give another "
            "person's identity to a tool."
        )
    else:
        lines.append(f"- Identify the customer first: {principal['customers']}.")
        # No users or customers resource: the API serves one account, whose holder is who asks (the audit reads it),
        # named where no seeded row is a person's, so a task has someone to speak for (the driver reads the name).
        holder = account_holder(spec)
        held = f", held by {holder}" if holder else ""
        lines.append(
            f"- Every record here belongs to the one account this API serves{held}: the person asking is its holder, "
            "and no record is another customer's."
        )
    if writes:
        lines += [
            "",
            "Before you change anything:",
            (
                "- Read the change back and get an explicit yes before you create, change or delete a record (not "
                "enforced by the tools: it is your job)."
            ),
        ]
    rules = []
    for tool in writes:
        required = [p for p, v in tool["params"].items() if v.get("required") and p != tool.get("key")]
        if tool["effect"] == "create" and required:
            rules.append(f"- `{tool['name']}` needs {', '.join(f'`{p}`' for p in required)}.")
        enums = [f"`{p}` is one of {', '.join(v['enum'])}" for p, v in tool["params"].items() if v.get("enum")]
        if enums:
            rules.append(f"- In `{tool['name']}`, " + "; ".join(enums) + ".")
    if rules:
        lines += ["", "Rules the API states (the tools refuse breaches with a reason):", *rules[:12]]
    lines += [
        "",
        (
            "- Lists come a page at a time: when has_more is true, pass the cursor before you conclude that "
            "something does not exist."
        ),
    ]
    return "\n".join(lines) + "\n"


def draft_scenarios(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One scenario per resource that can be created and then read, changed or deleted by its key:
    the calls chain on one episode through the new row's key (`${made.<key>}`)."""
    scenarios: list[dict[str, Any]] = []
    for create in spec["tools"]:
        if create["effect"] != "create" or not create.get("examples") or len(scenarios) >= 3:
            continue
        table = create["entity"]
        pk = spec["entities"][table]["primary_key"]
        example = create["examples"][0]
        steps: list[dict[str, Any]] = [{"tool": create["name"], "name": "made", "args": copy.deepcopy(example["args"])}]
        keyed = {
            t["effect"]: t
            for t in spec["tools"]
            if t["entity"] == table and t.get("key") and t["params"][t["key"]].get("column", t["key"]) == pk
        }
        ref = f"${{made.{pk}}}"
        if "get" in keyed:
            step: dict[str, Any] = {"tool": keyed["get"]["name"], "args": {keyed["get"]["key"]: ref}}
            if example["expect"].get("result"):
                step["expect"] = {"result": copy.deepcopy(example["expect"]["result"])}
            steps.append(step)
        if "delete" in keyed:
            steps.append(
                {
                    "tool": keyed["delete"]["name"],
                    "args": {keyed["delete"]["key"]: ref},
                    "expect": {"state": {f"{table}[{ref}]": None}, "rows": {table: {"removed": 1}}},
                }
            )
        if len(steps) > 1:
            scenarios.append(
                {
                    "name": f"{create['name']}_then_use_it"[:60],
                    "description": f"A {singular(table).replace('_', ' ')} just created can be used by its key.",
                    "steps": steps,
                }
            )
    return scenarios
