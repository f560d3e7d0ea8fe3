"""The inbox list: filters read from a query string, the page of items they select, and the
counts. The HTTP view and the websocket consumer both use it, so a live page and a reload
always show the same rows."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.core.paginator import Page, Paginator
from django.db import connections
from django.db.models import Model, Q, QuerySet

from beamweaver_core import statements
from reviews.models import ReviewItem

_M = TypeVar("_M", bound=Model)

PAGE_SIZE = 25
STATUSES = ("pending", "decided", "expired", "cancelled", "all")


@dataclass(frozen=True)
class InboxQuery:
    """What an inbox page asked for."""

    graph: str = ""
    tool: str = ""
    status: str = "pending"
    q: str = ""
    page: int = 1

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> InboxQuery:
        status = str(params.get("status") or "pending")
        try:
            page = max(1, int(params.get("page") or 1))
        except (TypeError, ValueError):
            page = 1
        return cls(
            graph=str(params.get("graph") or "")[:200],
            tool=str(params.get("tool") or "")[:200],
            status=status if status in STATUSES else "pending",
            q=str(params.get("q") or "").strip()[:200],
            page=min(page, 10_000),
        )

    def params(self, **changes: str | int) -> str:
        """The query string of this query with `changes` (empty values left out)."""
        values: dict[str, str | int] = {
            "graph": self.graph,
            "tool": self.tool,
            "status": self.status if self.status != "pending" else "",
            "q": self.q,
            "page": self.page if self.page != 1 else "",
        }
        values.update(changes)
        return urlencode({k: v for k, v in values.items() if v not in ("", None, 1)})

    @property
    def is_filtered(self) -> bool:
        return bool(self.graph or self.tool or self.q or self.status != "pending")

    def apply(self, items: QuerySet[ReviewItem]) -> QuerySet[ReviewItem]:
        if self.status != "all":
            items = items.filter(status=self.status)
        if self.graph:
            items = items.filter(graph=self.graph)
        if self.tool:
            items = items.filter(tool_names__contains=[self.tool])
        if self.q:
            # The redacted text, never `payload_json`: a match on a withheld secret would
            # confirm a guess of it to anyone who may see the item, unaudited.
            items = items.filter(Q(thread__id__icontains=self.q) | Q(search_text__icontains=self.q))
        return items.order_by("created_at", "id")


class CappedPaginator(Paginator[_M]):
    """Counts the matching rows only as far as the asked page needs: `COUNT_CAP`, or
    through the page after the asked one (deep pages and "Later" keep working).
    `capped`: there are more rows than `count` says (the page shows "+")."""

    object_list: QuerySet[_M]

    def __init__(self, matching: QuerySet[_M], per_page: int, number: str | int | None) -> None:
        super().__init__(matching, per_page)
        try:
            asked = max(1, int(number or 1))
        except (TypeError, ValueError):
            asked = 1
        self.limit = max(COUNT_CAP, (min(asked, 10_000) + 1) * per_page)
        self.capped = False

    def counted(self) -> tuple[QuerySet[Any], int]:
        """What `count` counts, and how far (for `count_all`)."""
        return self.object_list, self.limit + 1

    def found(self, found: int) -> None:
        """Take `found` (rows counted by `counted()`) as the count, without asking."""
        self.capped = found > self.limit
        self.__dict__["count"] = min(found, self.limit)

    @cached_property
    def count(self) -> int:
        matching, limit = self.counted()
        self.found(matching.order_by()[:limit].count())
        return int(self.__dict__["count"])


ROW_RELATED = ("claimed_by", "assignee")
"""What an inbox row shows besides the item's own columns (its thread only by id)."""


class PageRows(Sequence[ReviewItem]):
    """A page's rows, in the order of `ids`, read (in one statement) when first used: a
    live push reads only the page's ids (which rows it lists) and the counts."""

    def __init__(self, matching: QuerySet[ReviewItem], ids: list[int]) -> None:
        self.matching = matching
        self.ids = ids
        self._rows: list[ReviewItem] | None = None

    def _read(self) -> list[ReviewItem]:
        if self._rows is None:
            found = self.matching.select_related(*ROW_RELATED).in_bulk(self.ids)
            self._rows = [found[pk] for pk in self.ids if pk in found]
        return self._rows

    def __len__(self) -> int:
        return len(self._read())

    def __getitem__(self, index: Any) -> Any:
        return self._read()[index]


class BoundedPaginator(CappedPaginator[ReviewItem]):
    """The inbox's: counted as `CappedPaginator`, and a page's ids read from the listing
    index before its rows (a deep page's OFFSET then skips index entries, not rows)."""

    def __init__(
        self, matching: QuerySet[ReviewItem], number: int, key: Hashable | None = None
    ) -> None:
        """`key`: everything `matching` depends on, for its page's ids to be read with a
        statement compiled once per page (`beamweaver_core.statements`)."""
        super().__init__(matching, PAGE_SIZE, number)
        self.key = key

    def page(self, number: int | str) -> Page[ReviewItem]:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        ids_of = self.object_list.values_list("pk", flat=True)[bottom : bottom + self.per_page]
        key = None if self.key is None else ("page ids", self.key, bottom)
        try:
            statement = statements.compiled(key, ids_of.query.sql_with_params)
        except EmptyResultSet:  # the user may see no item at all
            ids = []
        else:
            ids = [pk for (pk,) in statements.fetch(ids_of.db, statement)]
        return Page(PageRows(self.object_list, ids), number, self)


def listing(
    items: QuerySet[ReviewItem], query: InboxQuery, key: Hashable | None = None
) -> tuple[Page[ReviewItem], dict[str, int]]:
    """The page of matching items (the last page if the asked one is past the end; its
    rows, `PageRows`, read when used) and the `counts` of `items`, counted together in
    one statement. `key`: what `items` depends on (`roles.visibility`), for the two
    statements to be compiled once (`beamweaver_core.statements`)."""
    named = None if key is None else (key, query)
    paginator = BoundedPaginator(query.apply(items), query.page, named)
    counted = {"page": paginator.counted(), **_status_counts(items)}
    found = count_all(counted, None if named is None else ("listing", named))
    paginator.found(found.pop("page"))
    return paginator.get_page(query.page), found


def page_ids(page: Page[ReviewItem]) -> list[int]:
    """The ids of the items a page of `page()` or `listing()` lists, without its rows."""
    rows = page.object_list
    return list(rows.ids) if isinstance(rows, PageRows) else [item.pk for item in rows]


def count_all(
    counted: Mapping[str, tuple[QuerySet[Any], int]], key: Hashable | None = None
) -> dict[str, int]:
    """Each queryset's rows counted up to its limit, all in one statement (a queryset
    that can match nothing, e.g. `none()`, counts 0 without being asked); compiled once
    for `key` (`beamweaver_core.statements`)."""
    if not counted:
        return {}
    database = next(iter(counted.values()))[0].db
    (row,) = statements.fetch(database, statements.compiled(key, lambda: _counting(counted)))
    return {name: int(n) for name, n in zip(counted, row, strict=True)}


def _counting(counted: Mapping[str, tuple[QuerySet[Any], int]]) -> tuple[str, tuple[Any, ...]]:
    selects: list[str] = []
    params: list[Any] = []
    for index, (matching, limit) in enumerate(counted.values()):
        try:
            sql, found = matching.order_by().values("pk")[:limit].query.sql_with_params()
        except EmptyResultSet:
            selects.append("0")
            continue
        selects.append(f"(SELECT count(*) FROM ({sql}) AS bw_counted_{index})")
        params.extend(found)
    return "SELECT " + ", ".join(selects), tuple(params)


COUNT_CAP = 10_000
"""Items are counted up to this many (then shown as "10,000+"): an exact count reads
every matching entry of the index, 0.2 s for 100,000 pending items on two loaded
cores, on every page and every push."""


def counts(items: QuerySet[ReviewItem]) -> dict[str, int]:
    """Items per status, each counted up to `COUNT_CAP` + 1 (see `over_cap`) from the
    listing index alone, in one statement."""
    return count_all(_status_counts(items))


def _status_counts(items: QuerySet[ReviewItem]) -> dict[str, tuple[QuerySet[Any], int]]:
    return {
        status: (items.filter(status=status), COUNT_CAP + 1)
        for status in STATUSES
        if status != "all"
    }


def over_cap(counts: Mapping[str, int]) -> dict[str, bool]:
    """Which of `counts` stopped at the cap (the page shows "10,000+")."""
    return {status: n > COUNT_CAP for status, n in counts.items()}


# The menus' distinct (graph, tools) pairs, one index probe each: a loose index scan over
# bw_review_item_menu_idx (status, graph, tool_names), for every status, in one
# statement. Written by hand because neither Django nor PostgreSQL before 18 skips
# through an index by itself; a DISTINCT read every item (1.4-1.9 s at a million).
_MENU = """
WITH RECURSIVE pairs(status, graph, tool_names) AS (
    SELECT s.status, f.graph, f.tool_names
      FROM unnest(%s::varchar[]) AS s(status)
     CROSS JOIN LATERAL (
           SELECT "bw_review_item"."graph", "bw_review_item"."tool_names"
             FROM "bw_review_item"
            WHERE "bw_review_item"."status" = s.status AND ({visible})
            ORDER BY 1, 2 LIMIT 1) AS f
    UNION ALL
    SELECT p.status, n.graph, n.tool_names
      FROM pairs AS p
     CROSS JOIN LATERAL (
           SELECT "bw_review_item"."graph", "bw_review_item"."tool_names"
             FROM "bw_review_item"
            WHERE "bw_review_item"."status" = p.status AND ({visible})
              AND ("bw_review_item"."graph", "bw_review_item"."tool_names")
                  > (p.graph, p.tool_names)
            ORDER BY 1, 2 LIMIT 1) AS n
)
SELECT DISTINCT graph, tool_names FROM pairs LIMIT %s
"""
MENU_PAIRS = 500
"""Distinct (graph, tools) pairs read for the menus at most."""


def choices(items: QuerySet[ReviewItem]) -> dict[str, list[str]]:
    """The graphs and tools that occur among `items` (every status), for the filter menus.

    `items` is the user's visible items (`ReviewItem.objects.visible_to`): a filter on the
    item's own columns, compiled into each probe."""
    query = items.order_by().query
    joined = [
        alias for alias, refs in query.alias_refcount.items() if refs and alias != query.base_table
    ]
    if joined:
        raise ValueError(f"choices() takes items filtered on their own columns, not {joined}")
    try:
        visible, params = query.get_compiler(using=items.db).compile(query.where)
    except EmptyResultSet:  # the user may see no item at all
        return {"graphs": [], "tools": []}
    except FullResultSet:  # a manager sees every item
        visible, params = "TRUE", []
    sql = _MENU.format(visible=visible or "TRUE")
    statuses = [s for s in STATUSES if s != "all"]
    with connections[items.db].cursor() as cursor:
        cursor.execute(sql, [statuses, *params, *params, MENU_PAIRS])
        rows = cursor.fetchall()
    graphs = sorted({graph for graph, _ in rows})
    tools = sorted({tool for _, names in rows for tool in names or ()})
    return {"graphs": graphs, "tools": tools}


__all__ = [
    "COUNT_CAP",
    "PAGE_SIZE",
    "ROW_RELATED",
    "STATUSES",
    "BoundedPaginator",
    "CappedPaginator",
    "InboxQuery",
    "PageRows",
    "choices",
    "count_all",
    "counts",
    "listing",
    "over_cap",
    "page_ids",
]
