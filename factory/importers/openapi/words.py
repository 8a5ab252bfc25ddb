"""The importer's vocabulary: HTTP methods, pagination and credential parameters, the verbs that say what an
operation does, and the word helpers (snake_case, plurals, participles) every other module names things with.
"""

from __future__ import annotations

import html
import keyword
import re
import zlib

from pydantic import BaseModel

from envfarm.factory.spec import RESERVED_PARAMS, SQL_KEYWORDS

FARM_NOW = "2026-04-13T09:00:00Z"


METHODS = ("get", "post", "put", "patch", "delete")


SEED_ROWS = 6


PAGINATION = {
    "limit",
    "offset",
    "page",
    "page_size",
    "pagesize",
    "per_page",
    "cursor",
    "start",
    "size",
    "skip",
    "top",
    "page_token",
    "next_token",
    "count",
    "starting_after",
    "ending_before",
    "marker",
    "next_marker",
    "max_records",
    "max_results",
    "max_items",
}


# Query parameters that carry credentials or shape the response, never an input of the operation itself
# (Google's global parameters among them): a computed read's lookup table does not key on them.
NOT_INPUTS = {
    "access_token",
    "api_key",
    "apikey",
    "key",
    "oauth_token",
    "token",
    "auth_token",
    "authorization",
    "client_secret",
    "signature",
    "quota_user",
    "user_ip",
    "pretty_print",
    "fields",
    "alt",
    "callback",
    "output_format",
    "response_format",
    "format",
}


AUTH_WORDS = ("login", "logout", "signin", "signout", "sign_in", "sign_out", "token", "oauth", "auth")
# Words before `session` that keep it the signed-in user's (`createSession`, `currentSession`); any other word
# qualifies it as a record of its own (`upload_sessions`, `GameSession`).
SESSION_VERBS = frozenset(
    ("create", "get", "new", "start", "end", "close", "open", "refresh", "delete", "destroy", "list", "describe")
    + ("current", "my", "user", "validate", "revoke", "invalidate", "check", "api", "v1", "v2", "v3")
)


# RPC-style APIs name the operation, not the resource, in the request: a header (`X-Amz-Target: Svc.Op`), a
# query parameter (`?Action=Op`) or a path fragment (`/#Op`, how Swagger 2.0 restates the AWS protocols).
# Springfox names every operation `<method>Using<HTTP method>[_<n>]` (`predictUsingGET_3`): the tail is no word.
SPRINGFOX_SUFFIX = re.compile(r"Using(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)(_\d+)?$")


RPC_SELECTORS = {"action", "x_amz_target"}


# An RPC operation's first word -> the record effect it has on the table its other words name.
RPC_VERBS = {
    **dict.fromkeys(("create", "add", "register", "allocate", "import", "launch", "put", "meter"), "create"),
    **dict.fromkeys(("get", "describe", "read", "fetch", "lookup", "retrieve"), "get"),
    **dict.fromkeys(("list", "search", "query", "scan", "find"), "search"),
    **dict.fromkeys(("delete", "remove", "deregister", "destroy"), "delete"),
    **dict.fromkeys(("update", "modify", "set", "change", "edit", "replace"), "update"),
    **dict.fromkeys(("tag", "untag"), "tag"),
}


# Nested objects that hold the record's own fields (Azure's `properties`, YouTube's `snippet`, Kubernetes'
# `metadata`): a column flattened from one is the record's own (`snippet_title` is the video's title).
WRAPPERS = frozenset({"properties", "snippet", "attributes", "fields", "data", "details", "info", "metadata", "spec"})
# Words before `name` that say which name, not what it names (`display_name`, `friendly_name`).
NAME_KINDS = frozenset("display full friendly short long nick common unique official legal public canonical".split())


# Verbs of an operation that answers its input with something computed, no stored record (`DetectSentiment`).
COMPUTE_VERBS = {
    "calculate",
    "compute",
    "estimate",
    "detect",
    "validate",
    "analyze",
    "analyse",
    "translate",
    "convert",
    "predict",
    "recognize",
    "classify",
    "extract",
    "summarize",
    "preview",
    "simulate",
    "evaluate",
    "decode",
    "check",
    "resolve",
}


# First words of an operation that reads, whatever its method (`POST /charitysearch`: "Get summary data").
READ_VERBS = {
    "get",
    "search",
    "find",
    "list",
    "lookup",
    "retrieve",
    "fetch",
    "query",
    "show",
    "describe",
} | COMPUTE_VERBS


# Verbs whose RPC operation, given no key of its record, starts a new one (`StartQueryExecution`, `RunJob`).
STARTS = {"start", "run", "submit", "request", "initiate", "launch"}


# Verbs of an action on one record (`POST /orders/{id}:cancel`, `StopInstance`): an update of its state.
ACTION_VERBS = {
    "cancel",
    "stop",
    "start",
    "enable",
    "disable",
    "reboot",
    "restart",
    "reset",
    "approve",
    "reject",
    "accept",
    "decline",
    "activate",
    "deactivate",
    "archive",
    "unarchive",
    "restore",
    "suspend",
    "resume",
    "pause",
    "unpause",
    "close",
    "reopen",
    "open",
    "lock",
    "unlock",
    "complete",
    "confirm",
    "verify",
    "publish",
    "unpublish",
    "terminate",
    "retry",
    "acknowledge",
    "abort",
    "favorite",
    "unfavorite",
    "star",
    "unstar",
    "pin",
    "unpin",
    "block",
    "unblock",
    "mute",
    "unmute",
    "follow",
    "unfollow",
    "like",
    "unlike",
    "submit",
    "void",
    "finalize",
    "refund",
    "capture",
    "resolve",
    "ship",
    "deliver",
    "expire",
    "revoke",
    "hide",
    "unhide",
    "flag",
    "unflag",
    "mark",
    "read",
    "unread",
}


# Names the generated code uses for itself: a column or param with one of these names gets a suffix.
# Pydantic's own attribute names too (`schema`, `json`, `copy`): a row model field of that name shadows one and
# the server warns on stderr at import.
# And the functions a generated module calls in its class bodies (`field(...)`, `comma_joined`): a row model's
# property `field` would make every later `field(...)` of that class call the property's value.
RESERVED = (
    {"now", "db", "args", "row", "rows", "current", "new_id", "result", "self", "cls", *RESERVED_PARAMS}
    | {name for name in dir(BaseModel) if not name.startswith("_")}
    | {"field", "comma_joined", "json_array", "handlers"}
)


ID_FORMAT_UUID = "{table:08x}-0000-4000-8000-{{:012d}}"


def uuid_format(table: str) -> str:
    """UUID keys whose first group is the table's (a CRC of its name): the third row of projects and of users are
    different ids, as in the API, so a project's key is never taken for a person's (whose records it would be)."""
    return ID_FORMAT_UUID.format(table=zlib.crc32(table.encode()))


# Fields of a page of records rather than of a record: `{items: [X], total, has_more, cursor}` is a page of X.
PAGE_FIELDS = frozenset(
    {
        "count",
        "total",
        "total_count",
        "has_more",
        "cursor",
        "next_cursor",
        "next",
        "previous",
        "next_page_token",
        "page",
        "page_size",
        "per_page",
        "limit",
        "offset",
        # AWS (`Marker`, `NextToken`, `IsTruncated`), Azure (`nextLink`) and Google (`pageToken`) paging
        "marker",
        "next_marker",
        "max_items",
        "max_results",
        "max_records",
        "is_truncated",
        "next_token",
        "next_link",
        "page_token",
        "continuation_token",
        "next_continuation_token",
        "total_results",
        "total_items",
    }
)


def snake(name: str) -> str:
    """`petId` -> `pet_id`, `Time-Entries` -> `time_entries`; a valid lower_snake_case identifier."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    text = re.sub(r"_+", "_", text)
    if not text:
        text = "field"
    if text[0].isdigit():
        text = f"n_{text}"
    return text


def safe_name(name: str) -> str:
    """A snake name that is not a Python or SQL keyword or a name the generated code uses itself."""
    text = snake(name)
    return f"{text}_value" if keyword.iskeyword(text) or text in SQL_KEYWORDS or text in RESERVED else text


# What API generators add to a record's schema name and no person says: a namespace (`BigOven.Model.API.Recipe`),
# a leading HTTP method (Zuora's `GETAccountingPeriodWithoutSuccessType`), a `withSuccess` variant, and a
# suffix the document gives many of its schemas (`UserType`, `ApiContract`, `PaymentResponse`).
DECORATIONS = (
    "Type",
    "Contract",
    "Dto",
    "DTO",
    "Model",
    "Out",
    "In",
    "Wrapper",
    "Payload",
    "View",
    "Response",
    "Summary",
    "Information",
)
VERB_PREFIX = re.compile(r"^(GET|POST|PUT|PATCH|DELETE)(?=[A-Z])")
SUCCESS_VARIANT = re.compile(r"(?i)_?with(out)?_?success$")
OPERATION_ENDS = ("Response", "Out", "In")  # an operation's output or input: `AnalyzeSentimentResponse`
CALL_WORDS = frozenset(
    ("get", "list", "create", "update", "delete", "put", "post", "patch", "search", "query", "batch")
)


def decoration_habits(schema_names: frozenset[str]) -> frozenset[str]:
    """The suffixes of `DECORATIONS` at least three of a document's schemas carry: its generator's habits."""
    return frozenset(d for d in DECORATIONS if sum(n.endswith(d) for n in schema_names) >= 3)


def record_nouns(
    schema_name: str, habits: frozenset[str], records: frozenset[str], operation_verbs: frozenset[str]
) -> list[str]:
    """The snake names the record a schema describes may go by, barest first, without what its API's generator
    decorated it with: `GETAccountingPeriodWithoutSuccessType` -> `accounting_period`, Cognito's `UserType` ->
    `user`, Azure's `ApiContract` -> `api`, `BigOven.Model.API.RecipeInfo` -> `recipe_info`; then the names with
    less taken off (`GETARPaymentType` beside `GETARPaymentTypewithSuccess`: `ar_payment`, `ar_payment_type`),
    and last the schema's own. A suffix counts as decoration only where at least three of the document's schemas
    carry it (`habits`: a generator's habit, not a word of one name), and an operation's `Response`, `Out` or `In` only
    where the rest says no call (`PaymentResponse`, not `ActivityListResponse` or `AchievementIncrementResponse`
    of a document with an operation `increment`: that is an operation's answer, not a record). No name whose
    table another record schema's would be (`EventType` beside `Event`, `templateSummary` beside `Templates`) is
    offered; a list wrapper's name (`PreviousPurchases`) takes nothing."""
    name = schema_name.rsplit(".", 1)[-1] or schema_name
    stages = [name]
    for _ in range(3):
        for strip in (VERB_PREFIX, SUCCESS_VARIANT):
            if (bare := strip.sub("", stages[-1])) != stages[-1]:
                stages.append(bare)
        for suffix in habits:
            bare = stages[-1]
            if bare.endswith(suffix) and len(bare) > len(suffix):
                rest = bare[: -len(suffix)]
                if suffix not in OPERATION_ENDS or not set(snake(rest).split("_")) & (operation_verbs | CALL_WORDS):
                    stages.append(rest)
                break
    others = {plural(snake(n.rsplit(".", 1)[-1])) for n in records if n != schema_name}
    nouns = [snake(stage) for stage in reversed(stages) if plural(snake(stage)) not in others]
    return list(dict.fromkeys([*nouns, snake(schema_name)]))


def plural(word: str) -> str:
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word if word.endswith("ss") is False and word.endswith("s") else word + "es"
    return word + "s"


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 3:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def first_paragraph(text: str | None, limit: int = 300) -> str:
    """The first paragraph of a markdown description, as plain text on one line."""
    if not text or not isinstance(text, str):
        return ""
    para = re.split(r"\n\s*\n", text.strip())[0]
    para = html.unescape(re.sub(r"<[^<>]*>", " ", para))  # HTML in a description (`<BR />`, links): its text
    para = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", para)  # [text](url) -> text
    para = re.sub(r"[`*#>]", "", para)
    para = re.sub(r"\S{100,}", "", para)  # a word no line can hold (a long URL): a docstring cannot wrap it
    para = re.sub(r"\s+([.,;:!?])", r"\1", " ".join(para.split()))  # no space left before punctuation
    return para if len(para) <= limit else para[: limit - 3].rsplit(" ", 1)[0] + "..."


# An action that undoes another: its flag is the other's, set false (`disable` -> `enabled`: false).
OPPOSITES = {"disable": "enable", "deactivate": "activate", "reopen": "close"}


IRREGULAR_PAST = {"read": "read", "hide": "hidden", "cancel": "cancelled", "submit": "submitted"}


# Actions that leave no lasting state of their own (a reset record is as it was before): no flag to add.
EVENT_VERBS = {"reset", "retry", "restart", "reboot", "mark"}


def past_participle(verb: str) -> str:
    """`cancel` -> cancelled, `stop` -> stopped, `archive` -> archived, `verify` -> verified, `open` -> opened."""
    if verb in IRREGULAR_PAST:
        return IRREGULAR_PAST[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2:-1] not in ("a", "e", "i", "o", "u"):
        return verb[:-1] + "ied"
    if re.fullmatch(r"[^aeiou]*[aeiou][bdgklmnprt]", verb):  # one short syllable: the consonant doubles
        return verb + verb[-1] + "ed"
    return verb + "ed"


def participles(verb: str) -> list[str]:
    """The states a verb leaves a record in, most likely first: `cancel` -> cancelled, canceled, ...;
    `favorite` -> favorited; `reboot` -> rebooted, then rebooting (a state it is in meanwhile)."""
    stem = verb.removesuffix("e")
    forms = [verb + verb[-1] + "ed", verb + "ed", verb + "d", stem + "ed"]
    if verb.endswith("y") and verb[-2:-1] not in ("a", "e", "i", "o", "u"):
        forms.insert(0, verb[:-1] + "ied")
    forms += [verb + verb[-1] + "ing", stem + "ing", verb]
    return list(dict.fromkeys(forms))


def camel(snake_name: str) -> str:
    return snake_name.title().replace("_", "")


def indefinite(word: str) -> str:
    """The indefinite article a word takes: 'an order', 'an update', but 'a user', 'a unit' (a `u` said 'you')."""
    low = word.lower()
    if low[:1] == "u" and low[2:3] in tuple("aeiou") or low[:1] not in tuple("aeiou"):
        return "a"
    return "an"


def article_for(noun: str) -> str:
    return f"{indefinite(noun).capitalize()} {noun}"


def spaced_words(name: str) -> str:
    return name.replace("_", " ")


def verb_phrase(text: str) -> str:
    """An operation's summary as what a person asks for: 'Adds templates to an envelope.' -> 'add templates to
    an envelope' (its first sentence, the verb in the imperative, no braces a phrasing would read as a slot)."""
    sentence = re.split(r"(?<=[.!?])\s|\n", first_paragraph(text, 200), maxsplit=1)[0]
    # a tag or an aside ("[BETA] Delete a board", "Create (or replace) a rule") is no word of the request
    sentence = re.sub(r"\[[^\]]*\]|\([^)]*\)", "", sentence)
    sentence = re.sub(r"[{}\[\]()]", "", sentence).strip().rstrip(".!?:;, ")
    words = sentence.split()[:14]
    if not words or not re.fullmatch(r"[A-Za-z][A-Za-z-]*", words[0]):
        return ""
    verb = words[0].lower()
    if verb.endswith("ies") and len(verb) > 4:
        verb = verb[:-3] + "y"
    elif verb.endswith(("ses", "xes", "ches", "shes")):
        verb = verb[:-2]
    elif verb.endswith("s") and not verb.endswith(("ss", "us", "is")):
        verb = verb[:-1]
    return " ".join([verb, *words[1:]])
