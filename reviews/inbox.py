"""The inbox list: filters read from a query string, the page of items they select, and the
counts. The HTTP view and the websocket consumer both use it, so a live page and a reload
always show the same rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, Func, Q, QuerySet

from reviews.models import ReviewItem

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

    def params(self, **changes: Any) -> str:
        """The query string of this query with `changes` (empty values left out)."""
        values = {
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
            items = items.filter(
                Q(thread__id__icontains=self.q) | Q(payload_json__icontains=self.q)
            )
        return items.order_by("created_at", "id")


def page(items: QuerySet[ReviewItem], query: InboxQuery) -> Page[ReviewItem]:
    """The page of matching items (the last page if the asked one is past the end)."""
    paginator = Paginator(
        query.apply(items).select_related("thread", "claimed_by", "assignee"), PAGE_SIZE
    )
    return paginator.get_page(query.page)


def page_number_of(items: QuerySet[ReviewItem], query: InboxQuery, item: ReviewItem) -> int | None:
    """The page the item is listed on under `query`, or `None` if it does not match."""
    matching = query.apply(items)
    if not matching.filter(pk=item.pk).exists():
        return None
    before = matching.filter(
        Q(created_at__lt=item.created_at) | Q(created_at=item.created_at, id__lt=item.pk)
    ).count()
    return before // PAGE_SIZE + 1


def counts(items: QuerySet[ReviewItem]) -> dict[str, int]:
    """Items per status."""
    rows = items.order_by().values("status").annotate(n=Count("id"))
    found = {row["status"]: row["n"] for row in rows}
    return {status: found.get(status, 0) for status in STATUSES if status != "all"}


def choices(items: QuerySet[ReviewItem]) -> dict[str, list[str]]:
    """The graphs and tools that occur, for the filter menus."""
    graphs = sorted(set(items.order_by().values_list("graph", flat=True).distinct()))
    tools = sorted(
        set(
            items.order_by()
            .annotate(tool=Func(F("tool_names"), function="unnest"))
            .values_list("tool", flat=True)
            .distinct()
        )
    )
    return {"graphs": graphs, "tools": tools}


__all__ = ["PAGE_SIZE", "STATUSES", "InboxQuery", "choices", "counts", "page", "page_number_of"]
