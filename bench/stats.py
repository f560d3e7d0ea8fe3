"""Percentiles and latency summaries (no numpy: the bench runs in the project's venv)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The `p`-th percentile of `values`, interpolated linearly between ranks."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize_ms(seconds: Sequence[float]) -> dict[str, float | int]:
    """Median, p95, p99, mean, min and max in milliseconds of durations in seconds."""
    if not seconds:
        return {"n": 0}

    def ms(value: float) -> float:
        return round(value * 1000.0, 4)

    return {
        "n": len(seconds),
        "median": ms(percentile(seconds, 50)),
        "p95": ms(percentile(seconds, 95)),
        "p99": ms(percentile(seconds, 99)),
        "mean": ms(sum(seconds) / len(seconds)),
        "min": ms(min(seconds)),
        "max": ms(max(seconds)),
    }


def scaled(summary: dict[str, float | int], divisor: float) -> dict[str, float | int]:
    """A latency summary divided by `divisor` (per-invoke figures to per-step ones)."""
    return {k: (v if k == "n" else round(v / divisor, 4)) for k, v in summary.items()}


def median_of(values: Iterable[float | int | None]) -> float | None:
    """Median of the numbers among `values`; `None` when there are none."""
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return statistics.median(numbers) if numbers else None
