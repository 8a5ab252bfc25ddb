"""The runtime's public face, what a tools module is written with: `Page`, `Limit`, `Cursor`, `field()`, the
`Database` binding `:now` and `:principal`, `require(table, id)` and the SQL function `contains()`."""

from __future__ import annotations

import random
import sqlite3
import string
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from envfarm.servers import runtime
from envfarm.servers.runtime import Cursor, Database, Limit, Page, Rejected, field
from envfarm.servers.runtime.database import EpisodeConnection, install_functions
from envfarm.servers.runtime.listing import argument_metadata
from envfarm.servers.runtime.toolkit import COLUMN_KEY, PAGING_KEY, REF_KEY, USER_KNOWN_KEY

NOW = "2026-04-13T09:00:00Z"


def test_the_public_names_are_importable_and_documented() -> None:
    assert runtime.__doc__ and "Page" in runtime.__doc__
    for name in runtime.__all__:
        value = getattr(runtime, name)
        assert value is not None, name
        if callable(value) and not hasattr(value, "__origin__"):
            assert value.__doc__, f"{name} has no docstring"


class Member(BaseModel):
    """A member. A row of `members`."""

    member_id: str = field("Internal member id", ref="members.member_id", known=False)
    full_name: str = field("First and last name")


class FindMemberResult(Page):
    """What `find_member` found: one page of the matching rows."""

    members: list[Member] = Page.rows()


class HandWritten(BaseModel):
    """What `find_member` found: one page of the matching rows."""

    members: list[Member] = Field(description="the matching rows of this page")
    count: int = Field(description="how many rows this page holds")
    total: int = Field(description="how many rows match, over all pages")
    has_more: bool = Field(description="whether more rows follow this page")
    cursor: str | None = Field(description="pass it back as cursor for the next page; null on the last")


def test_a_page_lists_its_rows_first_exactly_as_a_hand_written_result() -> None:
    page = FindMemberResult.model_json_schema(by_alias=True)
    by_hand = HandWritten.model_json_schema(by_alias=True)
    assert page == by_hand | {"title": "FindMemberResult"}
    assert list(page["properties"]) == ["members", "count", "total", "has_more", "cursor"]
    result = FindMemberResult.of(
        {"rows": [{"member_id": "mem_1", "full_name": "Ann"}], "total": 3, "has_more": True, "cursor": "c"}
    )
    assert result.model_dump() == {
        "members": [{"member_id": "mem_1", "full_name": "Ann"}],
        "count": 1,
        "total": 3,
        "has_more": True,
        "cursor": "c",
    }


def test_a_result_page_without_a_docstring_is_described_by_its_tool() -> None:
    """The sentence the generator no longer writes in every list tool: the schema's description is the same."""

    class ListFreeSlotsResult(Page):
        members: list[Member] = Page.rows()

    class Explained(Page):
        """What `get_v2_item` found: one page of the matching rows."""

        members: list[Member] = Page.rows()

    described = ListFreeSlotsResult.model_json_schema()["description"]
    assert described == "What `list_free_slots` found: one page of the matching rows."
    assert Explained.model_json_schema()["description"] == "What `get_v2_item` found: one page of the matching rows."


def test_a_page_with_no_rows_field_or_two_is_refused() -> None:
    with pytest.raises(TypeError, match="exactly one field"):

        class Bare(Page):
            """No rows."""

    with pytest.raises(TypeError, match="exactly one field"):

        class Two(Page):
            """Two row lists."""

            members: list[Member] = Page.rows()
            others: list[Member] = Page.rows()


def test_field_writes_the_data_flow_keywords_in_order() -> None:
    schema = Member.model_json_schema()["properties"]
    assert schema["member_id"] == {
        "description": "Internal member id",
        "title": "Member Id",
        "type": "string",
        REF_KEY: "members.member_id",
        USER_KNOWN_KEY: False,
    }
    assert schema["full_name"][USER_KNOWN_KEY] is True and REF_KEY not in schema["full_name"]
    constrained = field("Amount", column="payments.amount", ge=1, le=5)
    assert constrained.metadata and constrained.json_schema_extra == {
        COLUMN_KEY: "payments.amount",
        USER_KNOWN_KEY: True,
    }


def list_members(
    db: Database,
    full_name: Annotated[str | None, field("Part of the name", column="members.full_name")] = None,
    limit: Limit = 25,
    cursor: Cursor = None,
) -> FindMemberResult:
    """Find members."""
    return FindMemberResult.of(db.page("SELECT * FROM members ORDER BY rowid", {"full_name": full_name}, limit, cursor))


def test_limit_and_cursor_are_the_paging_parameters() -> None:
    schema = argument_metadata(list_members).arg_model.model_json_schema(by_alias=True)["properties"]
    assert schema["limit"] == {
        "default": 25,
        "description": "Rows per page, 1-200",
        "maximum": 200,
        "minimum": 1,
        "title": "Limit",
        "type": "integer",
        PAGING_KEY: True,
        USER_KNOWN_KEY: False,
    }
    assert schema["cursor"][PAGING_KEY] is True and schema["cursor"]["default"] is None


def members_db(principal: str | None = "ann@example.com") -> Database:
    connection = sqlite3.connect(":memory:", isolation_level=None, factory=EpisodeConnection)
    connection.execute("CREATE TABLE members (member_id TEXT PRIMARY KEY, full_name TEXT, email TEXT UNIQUE)")
    rows = [("mem_1", "Ann Lee", "ann@example.com"), ("mem_2", "Bo 50%_off!", "bo@example.com")]
    connection.executemany("INSERT INTO members VALUES (?, ?, ?)", rows)
    return Database(connection, NOW, {"members": "mem_{}"}, principal, {"members": "email = :principal"})


def test_the_database_binds_now_and_principal_to_named_parameters() -> None:
    db = members_db()
    assert db.one("SELECT :now AS now, :principal AS who, :x AS x", {"x": 1}) == {
        "now": NOW,
        "who": "ann@example.com",
        "x": 1,
    }
    assert db.scalar("SELECT :now", {"now": "mine"}) == "mine"  # the call's own value wins
    assert db.scalar("SELECT ?", ("positional",)) == "positional"
    with pytest.raises(Rejected, match="Member mem_1 is busy since 2026"):
        db.reject("Member {member_id} is busy since {now}.", {"member_id": "mem_1"})


def test_require_finds_the_key_column_and_hides_other_principals_rows() -> None:
    db = members_db()
    assert db.require("members", "mem_1")["full_name"] == "Ann Lee"
    assert db.require("members", "ann@example.com", column="email")["member_id"] == "mem_1"
    with pytest.raises(Rejected, match="Unknown member_id 'mem_2'"):
        db.require("members", "mem_2")  # Bo's row: not this principal's
    with pytest.raises(Rejected, match="Unknown member 'mem_9'"):
        db.require("members", "mem_9", "member")


def like_contains(connection: sqlite3.Connection, text: str | None, part: str | None) -> bool | None:
    """What generated searches ran before `contains()`: LIKE with the value's wildcards escaped."""
    escaped = "replace(replace(replace(lower(:part), '!', '!!'), '%', '!%'), '_', '!_')"
    sql = f"SELECT lower(:text) LIKE '%' || {escaped} || '%' ESCAPE '!'"
    found = connection.execute(sql, {"text": text, "part": part}).fetchone()[0]
    return None if found is None else bool(found)


@pytest.mark.parametrize("seed", range(20))
def test_contains_matches_what_the_escaped_like_matched(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = string.ascii_letters[:6] + "AB%_!é É" + string.digits[:2]
    connection = sqlite3.connect(":memory:")
    install_functions(connection)
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        part = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3)))
        if rng.random() < 0.3:
            start = rng.randint(0, len(text))
            part = text[start : start + rng.randint(0, 4)].swapcase()
        expected = like_contains(connection, text, part)
        found = connection.execute("SELECT contains(?, ?)", (text, part)).fetchone()[0]
        assert (None if found is None else bool(found)) == expected, (text, part)
    assert connection.execute("SELECT contains(NULL, 'a'), contains('a', NULL)").fetchone() == (None, None)


def test_contains_works_on_a_plain_connection_too() -> None:
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (name TEXT PRIMARY KEY)")
    connection.execute("INSERT INTO t VALUES ('50% off')")
    db = Database(connection, NOW, {})
    assert db.all("SELECT name FROM t WHERE contains(name, :q)", {"q": "0% O"}) == [{"name": "50% off"}]
    assert db.all("SELECT name FROM t WHERE contains(name, :q)", {"q": "5_"}) == []


def test_a_list_tool_written_with_the_toolkit_pages() -> None:
    db = members_db(principal=None)
    first = list_members(db, limit=1)
    assert first.count == 1 and first.total == 2 and first.has_more and first.cursor
    second = list_members(db, limit=1, cursor=first.cursor)
    assert second.members[0].member_id == "mem_2" and not second.has_more and second.cursor is None
