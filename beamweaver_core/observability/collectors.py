"""Metrics read from the database when scraped: the runtime's queue and runs, and the
workers' heartbeats (apps add their own, `register`: the review inbox's pending items).

These are states, not events: what the database holds is the truth for every process
and machine at once, so any process answers the same, restarts lose nothing, and no
process has to keep a count in step. Each scrape asks a few grouped queries (on indexed
columns) in one read-only transaction with a statement timeout; with the database down
the scrape still answers, with `beamweaver_database_up 0`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from django.db import DatabaseError, connection, transaction
from django.db.backends.utils import CursorWrapper
from prometheus_client.core import GaugeMetricFamily, Metric

from beamweaver_core.conf import conf
from beamweaver_core.models import WorkerHeartbeat

logger = logging.getLogger(__name__)

STATEMENT_TIMEOUT_MS = 2000
ACTIVE_STATUSES = ("queued", "running")
"""The statuses a run leaves. A run that paused stays `interrupted` for good (its resume
is another run), so those are not counted here: what waits for people is what
`beamweaver_review_items_pending` counts."""

Source = Callable[[CursorWrapper], Iterable[Metric]]
"""A function of a database cursor that yields metric families."""

_sources: list[Source] = []


def register(source: Source) -> None:
    """Add `source` to what every scrape reads (once)."""
    if source not in _sources:
        _sources.append(source)


def runtime_metrics(cursor: CursorWrapper) -> Iterator[Metric]:
    """Runs by graph and status, the queue, leases waiting for the sweeper, workers."""
    runs = GaugeMetricFamily(
        "beamweaver_runs",
        "Runs queued or running now, by graph and status; how executions ended is "
        "counted by beamweaver_run_executions_total.",
        labels=["graph", "status"],
    )
    depth = GaugeMetricFamily("beamweaver_queue_depth", "Queued runs, by graph.", labels=["graph"])
    oldest = GaugeMetricFamily(
        "beamweaver_queue_oldest_age_seconds",
        "Age of the oldest queued run, by graph.",
        labels=["graph"],
    )
    expired = GaugeMetricFamily(
        "beamweaver_runs_lease_expired",
        "Running runs whose lease has expired and that no sweeper has re-queued yet.",
    )
    cursor.execute(
        "SELECT graph, status, count(*), "
        "extract(epoch FROM now() - min(created_at)), "
        "count(*) FILTER (WHERE status = 'running' AND lease_expires_at < now()) "
        "FROM bw_run WHERE status = ANY(%s) GROUP BY graph, status ORDER BY graph, status",
        [list(ACTIVE_STATUSES)],
    )
    stuck = 0
    for graph, status, count, age, lapsed in cursor.fetchall():
        runs.add_metric([graph, status], count)
        stuck += lapsed
        if status == "queued":
            depth.add_metric([graph], count)
            oldest.add_metric([graph], float(age or 0))
    expired.add_metric([], stuck)
    yield from (runs, depth, oldest, expired)

    interval = conf.heartbeat_seconds
    beats = GaugeMetricFamily(
        "beamweaver_worker_heartbeat_age_seconds",
        "Seconds since each running worker's last heartbeat (workers stopped cleanly, or "
        "gone for a day, are left out).",
        labels=["worker", "hostname"],
    )
    busy = GaugeMetricFamily(
        "beamweaver_worker_busy_threads",
        "Runs each worker was executing at its last heartbeat.",
        labels=["worker", "hostname"],
    )
    alive = GaugeMetricFamily(
        "beamweaver_workers_alive",
        "Workers whose last heartbeat is recent (three heartbeats missed: gone).",
    )
    cursor.execute(
        "SELECT name, hostname, extract(epoch FROM now() - last_seen_at), busy "
        "FROM bw_worker_heartbeat WHERE stopped_at IS NULL "
        "AND last_seen_at > now() - interval '1 day' ORDER BY name"
    )
    living = 0
    for name, hostname, age, threads_busy in cursor.fetchall():
        beats.add_metric([name, hostname], float(age))
        busy.add_metric([name, hostname], threads_busy)
        living += float(age) <= WorkerHeartbeat.alive_after(interval)
    alive.add_metric([], living)
    yield from (beats, busy, alive)


class DatabaseCollector:
    """The prometheus-client collector of every registered source."""

    def describe(self) -> list[Metric]:
        return []  # names are not known before the query (and need not be checked)

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "beamweaver_database_up", "Whether the scrape could read the database (1) or not (0)."
        )
        families: list[Metric] = []
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL TRANSACTION READ ONLY")
                cursor.execute(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}")
                for source in _sources:
                    families.extend(source(cursor))
        except DatabaseError as exc:
            logger.warning("Metrics: could not read the database (%s)", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families


register(runtime_metrics)

__all__ = ["DatabaseCollector", "register", "runtime_metrics"]
