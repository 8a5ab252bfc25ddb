"""What a server's tools module is written with: the page model, the paging parameters and `field()`.

A generated `tools.py` (and a hand-written one) declares only what is its own: the row models, the tools'
parameters and their SQL. What every list shares lives here once: `Page`, the result every list returns
(`count`, `total`, `has_more`, `cursor` after the rows), the `Limit` and `Cursor` parameters, and `field()`,
a pydantic field that also says, in the listed JSON schema, which entity key a value refers to, which
column it reads or sets and whether a user would know it. Those `x-envfarm-*` keywords are what a driver
reads over MCP to chain tools (`envfarm.clients.graph`), so their names and order are part of the contract.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Self

from pydantic import BaseModel, Field

from envfarm.servers.runtime.database import MAX_PAGE

REF_KEY = "x-envfarm-ref"  # the entity key a value is ("members.member_id"): a driver fills it from another result
COLUMN_KEY = "x-envfarm-column"  # the column a parameter filters or sets ("loans.status")
USER_KNOWN_KEY = "x-envfarm-user-known"  # whether a user would know the value and say it
PAGING_KEY = "x-envfarm-paging"  # a paging parameter (`limit`, `cursor`): no fact about the world


def field(
    description: str | None = None,
    *,
    ref: str | None = None,
    column: str | None = None,
    known: bool = True,
    **constraints: Any,
) -> Any:
    """A pydantic `Field` with the data-flow keywords a driver reads: `ref`, the `table.column` key the
    value refers to; `column`, the `table.column` it filters or sets; `known`, whether a user would know
    it. `constraints` are `Field`'s own (`ge`, `le`, `pattern`, `min_length`)."""
    links: dict[str, Any] = {}
    if ref is not None:
        links[REF_KEY] = ref
    if column is not None:
        links[COLUMN_KEY] = column
    links[USER_KNOWN_KEY] = known
    if description:
        return Field(description=description, **constraints, json_schema_extra=links)
    return Field(**constraints, json_schema_extra=links)


_PAGING = {PAGING_KEY: True, USER_KNOWN_KEY: False}
Limit = Annotated[int, Field(description=f"Rows per page, 1-{MAX_PAGE}", ge=1, le=MAX_PAGE, json_schema_extra=_PAGING)]
"""A list's `limit` parameter; each tool gives its own default (`limit: Limit = 25`)."""
Cursor = Annotated[
    str | None, Field(description="The cursor of the previous page, for the next one", json_schema_extra=_PAGING)
]
"""A list's `cursor` parameter (`cursor: Cursor = None`): the `cursor` of the page before."""


class Page(BaseModel):
    """One page of a list. A subclass declares the rows, named after their table, as its only field:

        class FindMemberResult(Page):
            members: list[Member] = Page.rows()

    and lists them first, before `count`, `total`, `has_more` and `cursor` (in its schema and its output),
    as a result written out by hand would. Without a docstring of its own, a `<Tool>Result` is described as
    "What `<tool>` found: one page of the matching rows." (the description its schema shows): the generator
    writes that sentence once, here, not in every list tool of every server."""

    count: int = Field(description="how many rows this page holds")
    total: int = Field(description="how many rows match, over all pages")
    has_more: bool = Field(description="whether more rows follow this page")
    cursor: str | None = Field(description="pass it back as cursor for the next page; null on the last")

    rows_field: ClassVar[str] = ""

    @staticmethod
    def rows() -> Any:
        """The field of a page's rows."""
        return Field(description="the matching rows of this page")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        shared = Page.__pydantic_fields__
        own = [name for name in cls.__pydantic_fields__ if name not in shared]
        if len(own) != 1:
            raise TypeError(f"{cls.__name__} must declare exactly one field, its rows; it declares {own}")
        cls.rows_field = own[0]
        if cls.__doc__ is None and cls.__name__.endswith("Result"):
            tool = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__.removesuffix("Result")).lower()
            cls.__doc__ = f"What `{tool}` found: one page of the matching rows."
        fields = cls.__pydantic_fields__
        cls.__pydantic_fields__ = {name: fields[name] for name in [*own, *shared]}
        cls.model_rebuild(force=True)

    @classmethod
    def of(cls, page: Mapping[str, Any]) -> Self:
        """The result of `Database.page`'s page: its rows validated as the row model."""
        rows = page["rows"]
        return cls.model_validate(
            {
                cls.rows_field: rows,
                "count": len(rows),
                "total": page["total"],
                "has_more": page["has_more"],
                "cursor": page["cursor"],
            }
        )
