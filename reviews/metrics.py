"""The review inbox's metrics (docs/production.md, Metrics).

Read when scraped (`pending_metrics`, a state the database holds for every process):
pending items and the age of the oldest by graph, kind and tool, and the items past
their deadline. Counted as they happen (`instruments`, shared across processes): each
accepted decision by type, and the time it took; each live push, from the hint being
sent to the frames it caused being written to the socket.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper
from prometheus_client.core import GaugeMetricFamily, Metric

from beamweaver_core.observability import instruments
from reviews.models import Decision

MAX_SERIES = 200
"""Label sets a pending-items metric reports at most (the rest under tool="other"):
tool names come from registered agents, but nothing should let one scrape grow
without bound."""
ANSWER = "answer"
"""The decision type of an answered question or breakpoint (no tool decisions)."""


def pending_metrics(cursor: CursorWrapper) -> Iterator[Metric]:
    """Pending review items: by graph, kind and tool (an item reviewing several tool
    calls counts under each), the oldest's age, and the items past their deadline."""
    pending = GaugeMetricFamily(
        "beamweaver_review_items_pending",
        "Review items waiting for a decision, by graph, kind and tool (tool is empty for "
        "questions and breakpoints; an item reviewing several tools counts under each).",
        labels=["graph", "kind", "tool"],
    )
    oldest = GaugeMetricFamily(
        "beamweaver_review_item_oldest_age_seconds",
        "Age of the oldest review item waiting, by graph, kind and tool.",
        labels=["graph", "kind", "tool"],
    )
    overdue = GaugeMetricFamily(
        "beamweaver_review_items_overdue",
        "Review items waiting past their deadline (their policy's due time), by graph.",
        labels=["graph"],
    )
    cursor.execute(
        "SELECT graph, kind, coalesce(tool, ''), count(*), "
        "extract(epoch FROM now() - min(created_at)) "
        "FROM bw_review_item LEFT JOIN LATERAL unnest(tool_names) AS tool ON true "
        "WHERE status = 'pending' GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2, 3"
    )
    rows = cursor.fetchall()
    other: dict[tuple[str, str], list[float]] = {}
    for index, (graph, kind, tool, count, age) in enumerate(rows):
        if index >= MAX_SERIES:
            total = other.setdefault((graph, kind), [0, 0.0])
            total[0] += count
            total[1] = max(total[1], float(age or 0))
            continue
        pending.add_metric([graph, kind, tool], count)
        oldest.add_metric([graph, kind, tool], float(age or 0))
    for (graph, kind), (count, age) in sorted(other.items()):
        pending.add_metric([graph, kind, "other"], count)
        oldest.add_metric([graph, kind, "other"], age)
    cursor.execute(
        "SELECT graph, count(*) FROM bw_review_item "
        "WHERE status = 'pending' AND due_at <= now() GROUP BY graph ORDER BY graph"
    )
    for graph, count in cursor.fetchall():
        overdue.add_metric([graph], count)
    yield from (pending, oldest, overdue)


def on_decision_saved(
    sender: type[Decision], instance: Decision, created: bool, **kwargs: object
) -> None:
    """Count an accepted decision once its transaction commits (`post_save`)."""
    if not created:
        return
    item = instance.item
    graph = item.graph
    types = list(instance.decision_types) or [ANSWER]
    waited = max(0.0, (instance.created_at - item.created_at).total_seconds())
    source = instance.source

    def count() -> None:
        for kind in types:
            instruments.DECISIONS.labels(graph, kind, source).inc()
        instruments.DECISION_SECONDS.labels(graph).observe(waited)

    transaction.on_commit(count)


def _page(consumer: object) -> str:
    return type(consumer).__name__.removesuffix("Consumer").lower() or "other"


def hint_noted(consumer: object, message: dict[str, Any]) -> None:
    """A live page noted a hint: remember when the oldest unanswered one was sent."""
    sent = message.get("sent_at")
    if isinstance(sent, int | float):
        earliest = consumer.__dict__.get("_bw_hint_sent")
        consumer.__dict__["_bw_hint_sent"] = sent if earliest is None else min(earliest, sent)


def frames_sent(consumer: object) -> None:
    """A live page wrote the frames of its hints: observe how long the oldest took."""
    sent = consumer.__dict__.pop("_bw_hint_sent", None)
    if sent is not None:
        instruments.PUSH_SECONDS.labels(_page(consumer)).observe(max(0.0, time.time() - sent))


__all__ = ["frames_sent", "hint_noted", "on_decision_saved", "pending_metrics"]
