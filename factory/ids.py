"""Opaque ids for a spec's seed rows: the same function the runtime uses for new rows.

A spec with `ids: opaque` keeps writing sequential ids in its seed builder (`pat_0001`, from
`id_format`); loading it maps each to `opaque_id(id_format, spec name, table, number)`, a prefix and a
short hash, so an agent cannot guess a neighbour's id. Row `n` of a table gets the id the runtime
would give the `n`-th row, so seed rows and new rows share one sequence (collisions are resolved the
same way: the next attempt of the hash). Every string of the seed is rewritten, so references in any
column (and ids quoted in text) follow their row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from envfarm.servers.runtime.database import opaque_id

NEW_IDS = 60  # new ids per table a document's examples may expect of creates (one episode's worth)


def _parts(id_format: str) -> tuple[str, str]:
    """(prefix, suffix) around the number of a sequential format like `pat_{:04d}`."""
    prefix, _, rest = id_format.partition("{")
    return prefix, rest.partition("}")[2]


def sequence_number(id_format: str, value: Any) -> int | None:
    """The number of a sequential id written exactly as `id_format` writes it, else None."""
    prefix, suffix = _parts(id_format)
    if not isinstance(value, str) or not value.startswith(prefix) or not value.endswith(suffix):
        return None
    digits = value[len(prefix) : len(value) - len(suffix) if suffix else None]
    if not digits.isdigit() or id_format.format(int(digits)) != value:
        return None
    return int(digits)


def id_mapping(
    namespace: str, formats: Mapping[str, str], keys: Mapping[str, Iterable[Any]], extra: int = 0
) -> dict[str, str]:
    """Sequential id -> opaque id, per table in key order (the runtime's sequence), plus the `extra` ids
    the runtime would give the next rows of each table (what spec examples expect of new rows)."""
    mapping: dict[str, str] = {}
    for table, id_format in formats.items():
        table_keys = list(keys.get(table, []))
        numbers = [n for key in table_keys if (n := sequence_number(id_format, key)) is not None]
        used = {str(key) for key in table_keys if sequence_number(id_format, key) is None}  # already opaque
        count = len(table_keys)
        for number in [*numbers, *range(count + 1, count + 1 + extra)]:
            attempt = 0
            while (new := opaque_id(id_format, namespace, table, number, attempt)) in used:
                attempt += 1
            used.add(new)
            mapping[id_format.format(number)] = new
    return mapping


def id_pattern(formats: Iterable[str]) -> re.Pattern[str]:
    """Matches a sequential id of any of the formats inside text (whole words only)."""
    prefixes = sorted({re.escape(_parts(f)[0]) for f in formats}, key=len, reverse=True)
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{'|'.join(prefixes)})\d+(?![A-Za-z0-9_])")


def rewrite(text: str, mapping: Mapping[str, str], pattern: re.Pattern[str]) -> str:
    """`text` with every sequential id the mapping knows replaced by its opaque id."""
    return pattern.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)


def opaque_seed(
    namespace: str, formats: Mapping[str, str], primary_keys: Mapping[str, str], seed: Mapping[str, list[dict]]
) -> dict[str, list[dict]]:
    """The seed with every sequential id (keys, references, ids quoted in text) made opaque."""
    keys = {table: [row.get(primary_keys[table]) for row in seed.get(table, [])] for table in formats}
    mapping = id_mapping(namespace, formats, keys)
    if not mapping:
        return {table: list(rows) for table, rows in seed.items()}
    pattern = id_pattern(formats.values())

    def convert(value: Any) -> Any:
        return rewrite(value, mapping, pattern) if isinstance(value, str) else value

    return {table: [{c: convert(v) for c, v in row.items()} for row in rows] for table, rows in seed.items()}


def opaque_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """A whole spec document (seed inline) turned to `ids: opaque`: every sequential id it cites (seed keys
    and references, examples, scenarios, descriptions) becomes the id the loader and the runtime give that
    row, and the next NEW_IDS per table the ids creates will get. For a spec made in one piece (an import)."""
    entities = document["entities"]
    formats = {t: str(e["id_format"]) for t, e in entities.items()}
    seed = document.get("seed") or {}
    keys = {t: [row.get(e["primary_key"]) for row in seed.get(t, [])] for t, e in entities.items()}
    namespace = str(document.get("id_namespace") or document["name"])
    mapping = id_mapping(namespace, formats, keys, extra=NEW_IDS)
    text = rewrite(json.dumps(dict(document)), mapping, id_pattern(formats.values()))
    return {**json.loads(text), "ids": "opaque"}
