"""The audit log page and its CSV export."""

from __future__ import annotations

import csv
import unicodedata
from typing import Any
from urllib.parse import quote

from django.db.models import Q
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from beamweaver_core.redaction import redact, redact_text
from reviews import inbox, partials
from reviews.decorators import reviewer_required
from reviews.models import AuditEvent
from reviews.payloads import canonical
from reviews.permissions import visible_audit

AUDIT_PAGE_SIZE = 50


def _audit_events(request: HttpRequest) -> tuple[Any, dict[str, str]]:
    filters = {
        key: str(request.GET.get(key, "")).strip()[:200]
        for key in ("actor", "action", "thread", "graph", "item")
    }
    events = visible_audit(request.user, AuditEvent.objects.select_related("actor"))
    if filters["actor"]:
        events = events.filter(actor_name=filters["actor"])
    if filters["action"]:
        events = events.filter(action=filters["action"])
    if filters["thread"]:
        events = events.filter(thread_ref__icontains=filters["thread"])
    if filters["graph"]:
        events = events.filter(graph=filters["graph"])
    if filters["item"]:
        events = events.filter(Q(item_ref=filters["item"]))
    return events, filters


@require_GET
@reviewer_required
def audit_view(request: HttpRequest) -> HttpResponse:
    """The audit log: every decision and refused attempt; filterable; CSV export."""
    events, filters = _audit_events(request)
    if request.GET.get("format") == "csv":
        return _audit_csv(events)
    number = request.GET.get("page")
    page = inbox.CappedPaginator(events, AUDIT_PAGE_SIZE, number).get_page(number)
    query = "&".join(f"{k}={quote(v)}" for k, v in filters.items() if v)
    context = {
        "page": page,
        "filters": filters,
        "query": query,
        "actions": AuditEvent.Action.choices,
    }
    return render(
        request, partials.for_request(request, "reviews/audit.html", "audit-list"), context
    )


class _Echo:
    def write(self, value: str) -> str:
        return value


# Spreadsheets run a cell as a formula when its first visible character is one of these
# (after NFKC, so the fullwidth and small forms count too); they skip leading spaces,
# line breaks, control and format characters to find it.
_FORMULA_TRIGGERS = frozenset("=+-@|")


def _csv_cell(value: Any) -> str:
    text = "" if value is None else redact_text(str(value))
    if text[:1] in ("\t", "\r", "\n"):
        return "'" + text
    for char in text:
        if char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zs", "Zl", "Zp"):
            continue
        if unicodedata.normalize("NFKC", char)[:1] in _FORMULA_TRIGGERS:
            return "'" + text
        break
    return text


_AUDIT_COLUMNS = (
    "at",
    "actor_name",
    "action",
    "item_ref",
    "thread_ref",
    "graph",
    "interrupt_id",
    "summary",
    "outcome",
    "digest_seen",
    "digest_current",
    "client_decision_id",
    "decision",
    "diff",
    "message",
    "note",
    "source",
)


def _audit_csv(events: Any) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())

    def rows() -> Any:
        yield writer.writerow(_AUDIT_COLUMNS)
        for event in events.iterator(chunk_size=500):
            values = []
            for column in _AUDIT_COLUMNS:
                value = getattr(event, column)
                if column in ("decision", "diff") and value is not None:
                    value = canonical(redact(value))
                elif column == "at":
                    value = value.isoformat()
                values.append(_csv_cell(value))
            yield writer.writerow(values)

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="beamweaver-audit.csv"'
    return response


__all__ = ["audit_view"]
