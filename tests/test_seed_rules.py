"""Every built-in server's seed obeys the rules its own tools enforce: a row as a create would make it (a booked
appointment, an open cart) is one that create would have accepted next to the other rows. A seed that breaks
its policy (a patient with two appointments on one day where the policy allows one) gives tasks whose persona
data contradicts the rules the agent is told, found by the seed-7373 annotation. Also: the identification a
spec holds tasks to is the one its policy.md tells the agent."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from envfarm.servers.runtime.database import install_functions
from envfarm.servers.runtime.identification import identification_parts, is_identification_rule

SERVERS = Path(__file__).resolve().parent.parent / "servers"
BUILT_IN = sorted(
    p.parent.name for p in (Path(__file__).resolve().parent.parent / "factory" / "specs").glob("*/spec.*")
)
PARAM = re.compile(r"(?<!:):([a-z_][a-z0-9_]*)")
TABLE = re.compile(r"\b(?:FROM|JOIN)\s+([a-z_][a-z0-9_]*)", re.IGNORECASE)


def _spec(name: str) -> dict[str, Any]:
    return json.loads((SERVERS / name / "spec.json").read_text())


def _as_created(row: sqlite3.Row, columns: dict[str, Any]) -> bool:
    """Whether every lifecycle column (an enum with a default) holds the value a create gives it."""
    return all(
        row[name] == column["default"]
        for name, column in columns.items()
        if column.get("enum") and column.get("default")
    )


def broken_rules(name: str) -> list[str]:
    """Seed rows of a created table that the create's own rules would refuse beside the rest of the seed: rules
    over that table whose parameters are all the row's columns (a rule on the clock, or on an argument the row
    does not keep, says nothing of the seed), run on the seed without the row."""
    spec = _spec(name)
    source = sqlite3.connect(SERVERS / name / "seed.sqlite")
    found: list[str] = []
    try:
        for tool in spec["tools"]:
            table = tool.get("entity")
            if tool.get("effect") != "create" or not table or not tool.get("rules"):
                continue
            entity = spec["entities"][table]
            key, columns = entity["primary_key"], entity["columns"]
            for rule in tool["rules"]:
                sql = rule["reject_if"]
                params = set(PARAM.findall(sql))
                if table not in {t.lower() for t in TABLE.findall(sql)} or not params or not params <= set(columns):
                    continue
                db = sqlite3.connect(":memory:")
                source.backup(db)
                install_functions(db)
                db.row_factory = sqlite3.Row
                rows = db.execute(f'SELECT * FROM "{table}"').fetchall()  # a table named by the spec
                for row in rows:
                    if not _as_created(row, columns):
                        continue
                    db.execute("SAVEPOINT one")
                    db.execute(f'DELETE FROM "{table}" WHERE "{key}" = ?', (row[key],))
                    if db.execute(sql, {p: row[p] for p in params}).fetchone() is not None:
                        found.append(f"{name}.{tool['name']}: {table} {row[key]}: {rule['message']}")
                    db.execute("ROLLBACK TO one")
                db.close()
    finally:
        source.close()
    return found


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_seed_obeys_the_rules_its_creates_enforce(name: str) -> None:
    assert broken_rules(name) == []


def test_the_check_finds_a_patient_booked_twice_on_one_day(tmp_path: Path) -> None:
    """The check can fail: a second booked appointment on the day of one the seed has is refused."""
    db = sqlite3.connect(SERVERS / "clinic" / "seed.sqlite")
    try:
        first = db.execute(
            "SELECT a.patient_id, s.starts_at FROM appointments a JOIN slots s USING (slot_id) "
            "WHERE a.status = 'booked'"
        ).fetchone()
        other = db.execute(
            "SELECT slot_id FROM slots WHERE date(starts_at) = date(?) "
            "AND slot_id NOT IN (SELECT slot_id FROM appointments)",
            (first[1],),
        ).fetchone()
    finally:
        db.close()
    sql = next(
        r["reject_if"]
        for t in _spec("clinic")["tools"]
        if t["name"] == "book_appointment"
        for r in t["rules"]
        if "date(" in r["reject_if"]
    )
    seeded = sqlite3.connect(":memory:")
    sqlite3.connect(SERVERS / "clinic" / "seed.sqlite").backup(seeded)
    assert seeded.execute(sql, {"patient_id": first[0], "slot_id": other[0]}).fetchone() is not None


def _words(text: str) -> set[str]:
    return {w.removesuffix("s") for w in re.findall(r"[a-z]+", text.lower().replace("licence", "license"))}


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_identification_a_spec_checks_is_what_its_policy_says(name: str) -> None:
    """Every thing a spec's identification sentence names (tasks hold it back and check it) is named by the
    policy.md the agent reads, parenthesised additions included ('and licence number at pickup')."""
    spec = _spec(name)
    policy = _words(spec.get("policy") or "")
    texts = [r["rule"] for r in spec.get("unenforced_rules") or [] if is_identification_rule(r["rule"])]
    if spec.get("principal") and spec["principal"].get("customers"):
        texts.append(spec["principal"]["customers"])
    for text in texts:
        parts = [p for alternative in identification_parts(text)[1] for p in alternative]
        parts += re.findall(r"\(([^)]*)\)", text)
        for part in parts:
            missing = _words(part) - policy - {"the", "a", "an", "their", "and", "or", "at", "of", "on", "file"}
            assert not missing, f"{name}: identification names {part!r}; policy.md lacks {sorted(missing)}"
