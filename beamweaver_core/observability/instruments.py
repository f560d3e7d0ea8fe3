"""The metrics BeamWeaver counts as things happen, with prometheus-client.

Every process (web, worker) counts its own; with `PROMETHEUS_MULTIPROC_DIR` set (the
same empty directory for every process of a machine, before they start) the endpoint of
any of them adds up all of them. What is better read from the database when scraped
(queue depth, pending review items, worker heartbeats) is not here: see `collectors`
and `reviews.metrics`. docs/production.md lists each metric and why it is counted here
or read at scrape time.

This module imports nothing of the project.
"""

from __future__ import annotations

import atexit
import os

from prometheus_client import Counter, Gauge, Histogram

MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))

_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
_PUSH = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_DECISION = (10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400, 259200)

RUN_EXECUTIONS = Counter(
    "beamweaver_run_executions",
    "Runs a worker executed to a pause or an end, by graph and the status recorded "
    "(interrupted, succeeded, failed; lost when another owner took the run over).",
    ["graph", "status"],
)
RUN_SECONDS = Histogram(
    "beamweaver_run_duration_seconds",
    "Time a worker spent executing a run, from its claim to its pause or end.",
    ["graph", "status"],
    buckets=_SECONDS,
)
LEASE_EXPIRIES = Counter(
    "beamweaver_lease_expiries",
    "Running runs whose lease expired (their worker died or stalled), by what the "
    "sweeper did: requeued, or failed (out of attempts).",
    ["outcome"],
)
RUN_CLAIMS = Counter(
    "beamweaver_run_claims",
    "A worker thread's attempts to claim the next queued run, by outcome: claimed, or "
    "empty (nothing to take: a poll, or the queue drained after a run).",
    ["outcome"],
)
RUN_REQUEUES = Counter(
    "beamweaver_run_requeues",
    "Runs put back in the queue, by reason: lease_expired, shutdown (a stopping worker "
    "gave it back), operator (a failed run re-queued from the admin).",
    ["reason"],
)
DECISIONS = Counter(
    "beamweaver_review_decisions",
    "Accepted review decisions, one per decision type in them, by graph and source "
    "(web, api, command).",
    ["graph", "type", "source"],
)
DECISION_SECONDS = Histogram(
    "beamweaver_review_decision_seconds",
    "Time from a review item's creation to its accepted decision.",
    ["graph"],
    buckets=_DECISION,
)
PUSH_SECONDS = Histogram(
    "beamweaver_push_latency_seconds",
    "Time from a live hint being sent (a run paused, an item decided) to the frames it "
    "caused being written to a websocket, by page (inbox, item, thread).",
    ["page"],
    buckets=_PUSH,
)
WEBSOCKETS = Gauge(
    "beamweaver_websocket_connections",
    "Open websocket connections of the live pages, by page.",
    ["page"],
    multiprocess_mode="livesum",
)
POOL_SIZE = Gauge(
    "beamweaver_db_pool_connections",
    "Connections the database pools hold, open and idle alike.",
    ["alias"],
    multiprocess_mode="livesum",
)
POOL_AVAILABLE = Gauge(
    "beamweaver_db_pool_available",
    "Idle connections ready in the database pools.",
    ["alias"],
    multiprocess_mode="livesum",
)
POOL_MAX = Gauge(
    "beamweaver_db_pool_max",
    "The most connections the database pools may open.",
    ["alias"],
    multiprocess_mode="livesum",
)
POOL_WAITING = Gauge(
    "beamweaver_db_pool_waiting",
    "Requests waiting for a pooled connection right now.",
    ["alias"],
    multiprocess_mode="livesum",
)
POOL_WAITS = Counter(
    "beamweaver_db_pool_waits",
    "Requests that had to wait for a pooled connection (none was idle).",
    ["alias"],
)
POOL_WAIT_SECONDS = Counter(
    "beamweaver_db_pool_wait_seconds",
    "Time requests spent waiting for a pooled connection.",
    ["alias"],
)
POOL_ERRORS = Counter(
    "beamweaver_db_pool_errors",
    "Requests for a pooled connection that failed (timed out, or the pool was closed).",
    ["alias"],
)

if MULTIPROCESS:
    from prometheus_client import multiprocess

    # The live gauges of an exited process must not count any more; its counters must.
    atexit.register(multiprocess.mark_process_dead, os.getpid())


__all__ = [
    "DECISIONS",
    "DECISION_SECONDS",
    "LEASE_EXPIRIES",
    "MULTIPROCESS",
    "POOL_AVAILABLE",
    "POOL_ERRORS",
    "POOL_MAX",
    "POOL_SIZE",
    "POOL_WAITING",
    "POOL_WAITS",
    "POOL_WAIT_SECONDS",
    "PUSH_SECONDS",
    "RUN_CLAIMS",
    "RUN_EXECUTIONS",
    "RUN_REQUEUES",
    "RUN_SECONDS",
    "WEBSOCKETS",
]
