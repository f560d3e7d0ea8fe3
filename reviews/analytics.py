"""Review analytics over the items a user may see: what is pending and for how long, how
long decisions take by reviewer and by tool, the mix of decisions, and expiries.

Durations are computed in Postgres (seconds from an item's creation to its decision); the
latest `MAX_DECISIONS` decisions of the window are summarized in Python.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, F, FloatField, Func
from django.db.models.functions import TruncDate
from django.utils import timezone

from beamweaver_core.users import username_path
from reviews.models import Decision, ReviewItem
from reviews.models.items import ReviewItemQuerySet

WINDOWS = (7, 30, 90)
MAX_DECISIONS = 20_000
AGE_BUCKETS: tuple[tuple[str, float], ...] = (
    ("under 1 hour", 3600),
    ("1 to 4 hours", 4 * 3600),
    ("4 to 24 hours", 24 * 3600),
    ("1 to 3 days", 3 * 86400),
    ("over 3 days", math.inf),
)
MIX = ("approve", "edit", "reject", "respond", "answer", "continue", "expired")


class _Seconds(Func):
    template = "EXTRACT(EPOCH FROM %(expressions)s)"
    output_field = FloatField()


@dataclass(frozen=True)
class Timing:
    """How long one reviewer (or tool) took to decide."""

    name: str
    count: int
    median: float
    p90: float


@dataclass
class Report:
    """Everything the analytics page shows."""

    days: int
    since: datetime
    pending: int = 0
    oldest_pending: float | None = None
    median_pending_age: float | None = None
    overdue: int = 0
    age_buckets: list[tuple[str, int]] = field(default_factory=list)
    by_reviewer: list[Timing] = field(default_factory=list)
    by_tool: list[Timing] = field(default_factory=list)
    mix: list[tuple[str, int]] = field(default_factory=list)
    decided: int = 0
    expired: int = 0
    per_day: list[tuple[str, int, int]] = field(default_factory=list)
    truncated: bool = False


def percentile(values: Sequence[float], fraction: float) -> float:
    """The `fraction` percentile of `values` (linear interpolation; 0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _timings(groups: dict[str, list[float]]) -> list[Timing]:
    rows = [
        Timing(name, len(v), statistics.median(v), percentile(v, 0.9)) for name, v in groups.items()
    ]
    return sorted(rows, key=lambda t: (-t.count, t.name))


def _tool_label(kind: str, tools: Sequence[str]) -> list[str]:
    if tools:
        return list(tools)
    return ["(question)" if kind == ReviewItem.Kind.INTERRUPT else "(breakpoint)"]


def report(items: ReviewItemQuerySet, days: int, now: datetime | None = None) -> Report:
    """The analytics of `items` (already limited to what the user may see)."""
    now = now or timezone.now()
    since = now - timedelta(days=days)
    result = Report(days=days, since=since)

    pending = list(items.pending().values_list("created_at", "due_at"))
    ages = [(now - created).total_seconds() for created, _ in pending]
    result.pending = len(ages)
    result.overdue = sum(1 for _, due in pending if due is not None and due <= now)
    if ages:
        result.oldest_pending = max(ages)
        result.median_pending_age = statistics.median(ages)
    lower = 0.0
    for label, upper in AGE_BUCKETS:
        result.age_buckets.append((label, sum(1 for a in ages if lower <= a < upper)))
        lower = upper

    decisions = (
        Decision.objects.filter(item__in=items, created_at__gte=since)
        .annotate(seconds=_Seconds(F("created_at") - F("item__created_at")))
        .order_by("-created_at")
        .values_list(
            username_path("user"), "item__kind", "item__tool_names", "decision_types", "seconds"
        )[: MAX_DECISIONS + 1]
    )
    rows = list(decisions)
    result.truncated = len(rows) > MAX_DECISIONS
    rows = rows[:MAX_DECISIONS]
    by_reviewer: dict[str, list[float]] = defaultdict(list)
    by_tool: dict[str, list[float]] = defaultdict(list)
    mix: Counter[str] = Counter()
    for username, kind, tools, types, seconds in rows:
        by_reviewer[username].append(max(0.0, seconds))
        for tool in _tool_label(kind, tools):
            by_tool[tool].append(max(0.0, seconds))
        if types:
            mix.update(types)
        else:
            mix["answer" if kind == ReviewItem.Kind.INTERRUPT else "continue"] += 1
    result.by_reviewer = _timings(by_reviewer)
    result.by_tool = _timings(by_tool)
    result.decided = len(rows)

    expired = items.filter(status=ReviewItem.Status.EXPIRED, expired_at__gte=since)
    result.expired = expired.count()
    mix["expired"] = result.expired
    result.mix = [(name, mix[name]) for name in MIX if mix[name]]

    decided_days = dict(
        Decision.objects.filter(item__in=items, created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("id"))
        .values_list("day", "n")
    )
    expired_days = dict(
        expired.annotate(day=TruncDate("expired_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("id"))
        .values_list("day", "n")
    )
    start = since.date()
    result.per_day = [
        (
            (start + timedelta(days=offset)).isoformat(),
            decided_days.get(start + timedelta(days=offset), 0),
            expired_days.get(start + timedelta(days=offset), 0),
        )
        for offset in range(days + 1)
    ]
    return result


def duration(seconds: float | None) -> str:
    """A compact duration: `45s`, `12m`, `3.5h`, `2.1d`."""
    if seconds is None:
        return "—"
    value = float(seconds)
    if value < 60:
        return f"{value:.0f}s"
    if value < 3600:
        return f"{value / 60:.0f}m"
    if value < 86400:
        return f"{value / 3600:.1f}h"
    return f"{value / 86400:.1f}d"


__all__ = ["AGE_BUCKETS", "MIX", "WINDOWS", "Report", "Timing", "duration", "percentile", "report"]
