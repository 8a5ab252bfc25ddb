"""Opaque ids: one function for seeded and new rows, deterministic, and no id tells its neighbour's."""

from __future__ import annotations

import re

from conftest import CLINIC_SPEC, FREE_SLOT
from mcp import Client

from envfarm.factory.ids import id_mapping, id_pattern, opaque_seed, rewrite, sequence_number
from envfarm.factory.source import load_environment
from envfarm.servers.runtime.database import opaque_id

OLD_FORM = re.compile(r"^[a-z]+_\d{2,5}$")


def test_an_opaque_id_is_deterministic_short_and_never_of_the_old_form() -> None:
    ids = [opaque_id("pat_{:04d}", "clinic", "patients", n) for n in range(1, 2001)]
    assert ids == [opaque_id("pat_{:04d}", "clinic", "patients", n) for n in range(1, 2001)]
    assert all(re.fullmatch(r"pat_[a-z][a-z0-9]{4}[0-9]", i) and not OLD_FORM.match(i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert opaque_id("pat_{:04d}", "clinic_annex", "patients", 1) != ids[0]  # another server, other ids
    assert opaque_id("pat_{:04d}", "clinic", "patients", 1, attempt=1) != ids[0]  # a collision's next try


def test_the_mapping_resolves_collisions_in_sequence_order_and_rewrites_whole_ids_only() -> None:
    mapping = id_mapping("s", {"items": "itm_{:03d}"}, {"items": ["itm_001", "itm_002", "itm_xyz"]}, extra=2)
    assert set(mapping) == {"itm_001", "itm_002", "itm_004", "itm_005"}  # three rows: new ids start at 4
    assert len(set(mapping.values())) == 4 and sequence_number("itm_{:03d}", "itm_0001") is None
    pattern = id_pattern(["itm_{:03d}"])
    text = "itm_001, xitm_002, itm_0021 and itm_002."
    once = rewrite(text, mapping, pattern)
    assert once == f"{mapping['itm_001']}, xitm_002, itm_0021 and {mapping['itm_002']}."
    assert rewrite(once, mapping, pattern) == once  # idempotent: an opaque id never reads as an old one


def test_opaque_seed_rewrites_keys_references_and_quoted_ids_together() -> None:
    seed = {
        "orders": [{"order_id": "ord_01", "note": "see ord_02"}, {"order_id": "ord_02", "note": ""}],
        "lines": [{"line_id": "ln_1", "order_id": "ord_02"}],
    }
    out = opaque_seed(
        "shop", {"orders": "ord_{:02d}", "lines": "ln_{}"}, {"orders": "order_id", "lines": "line_id"}, seed
    )
    second = out["orders"][1]["order_id"]
    assert out["lines"][0]["order_id"] == second and out["orders"][0]["note"] == f"see {second}"
    assert second == opaque_id("ord_{:02d}", "shop", "orders", 2)


async def test_a_new_row_continues_the_seeded_sequence_with_the_same_function() -> None:
    from envfarm.servers.clinic.server import build

    spec = load_environment(CLINIC_SPEC).spec
    assert spec.ids == "opaque"
    patients = spec.seed["patients"]
    assert patients[0]["patient_id"] == opaque_id("pat_{:04d}", "clinic", "patients", 1)
    async with Client(build()) as client:
        booked = await client.call_tool(
            "book_appointment", {"patient_id": patients[0]["patient_id"], "slot_id": FREE_SLOT, "reason": "checkup"}
        )
    count = len(spec.seed["appointments"])
    assert (booked.structured_content or {})["appointment_id"] == opaque_id(
        "apt_{:04d}", "clinic", "appointments", count + 1
    )


def test_the_sequence_of_an_opaque_table_starts_past_its_row_count_whatever_its_keys_end_with() -> None:
    from envfarm.servers.runtime.episodes import next_number

    rows = [{"item_id": "itm_a23456"}, {"item_id": "itm_7"}]  # an opaque id that ends in digits, a hand-numbered key
    assert next_number(rows, opaque=True) == 3  # opaque ids carry no number: the count is it
    assert next_number(rows) == 23457  # sequential ids continue past the highest number a key ends with


def test_a_tables_key_column_is_read_once_per_server_and_new_opaque_ids_skip_taken_ones() -> None:
    from envfarm.servers.runtime.database import Database
    from envfarm.servers.runtime.episodes import build_seed

    schema = "CREATE TABLE _envfarm_sequences (table_name TEXT PRIMARY KEY, next INTEGER);\n"
    schema += "CREATE TABLE items (label TEXT, item_id TEXT PRIMARY KEY);"
    rows = [{"item_id": "itm_x", "label": "a"}, {"item_id": "itm_y", "label": "b"}]
    connection = build_seed(schema, {"items": rows}, None, "shop")
    memo: dict[str, str] = {}
    statements: list[str] = []
    connection.set_trace_callback(statements.append)
    first = Database(connection, "2026-01-01T00:00:00Z", {"items": "itm_{:02d}"}, id_namespace="shop", key_columns=memo)
    assert first.peek_id("items") == opaque_id("itm_{:02d}", "shop", "items", 3) == first.next_id("items")
    assert memo == {"items": "item_id"}  # the key column (not the first column) comes from the schema
    second = Database(
        connection, "2026-01-01T00:00:00Z", {"items": "itm_{:02d}"}, id_namespace="shop", key_columns=memo
    )
    assert second.next_id("items") == opaque_id("itm_{:02d}", "shop", "items", 4) and second.id_number("items") == 4
    assert sum("pragma_table_info" in s for s in statements) == 1
    connection.execute("INSERT INTO items (item_id) VALUES (?)", (opaque_id("itm_{:02d}", "shop", "items", 5),))
    assert second.next_id("items") == opaque_id("itm_{:02d}", "shop", "items", 5, attempt=1)  # taken: next attempt
