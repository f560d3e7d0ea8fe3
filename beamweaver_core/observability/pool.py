"""The database pools' state for the metrics, sampled in every process.

psycopg_pool keeps the numbers (`get_stats`/`pop_stats`); each process samples its own
pools every few seconds from a daemon thread (`start_sampler`, started by the web
application and by workers) and when it is scraped, into the gauges and counters of
`instruments` (shared across processes in multiprocess mode).
"""

from __future__ import annotations

import logging
import os
import threading

from django.db import connections

from beamweaver_core.observability import instruments

logger = logging.getLogger(__name__)

SAMPLE_SECONDS = 5.0
_lock = threading.Lock()
_started_in: int | None = None


def sample() -> None:
    """Read every open pool of this process into the metrics."""
    for alias in connections:
        wrapper = connections[alias]
        pools = getattr(type(wrapper), "_connection_pools", None)
        pool = pools.get(alias) if isinstance(pools, dict) else None
        if pool is None:
            continue
        with _lock:  # pop_stats resets the counters: one reader at a time
            stats = pool.pop_stats()
        instruments.POOL_SIZE.labels(alias).set(stats.get("pool_size", 0))
        instruments.POOL_AVAILABLE.labels(alias).set(stats.get("pool_available", 0))
        instruments.POOL_MAX.labels(alias).set(stats.get("pool_max", 0))
        instruments.POOL_WAITING.labels(alias).set(stats.get("requests_waiting", 0))
        instruments.POOL_WAITS.labels(alias).inc(stats.get("requests_queued", 0))
        instruments.POOL_WAIT_SECONDS.labels(alias).inc(stats.get("requests_wait_ms", 0) / 1000)
        instruments.POOL_ERRORS.labels(alias).inc(stats.get("requests_errors", 0))


def _sample_forever(interval: float) -> None:
    stop = threading.Event()
    while not stop.wait(interval):
        try:
            sample()
        except Exception:  # never let metrics take a process down
            logger.warning("Could not sample the database pools", exc_info=True)


def start_sampler(interval: float = SAMPLE_SECONDS) -> None:
    """Sample this process's pools every `interval` seconds (once per process)."""
    global _started_in
    with _lock:
        if _started_in == os.getpid():
            return
        _started_in = os.getpid()
    threading.Thread(
        target=_sample_forever, args=(interval,), name="beamweaver-pool-metrics", daemon=True
    ).start()


__all__ = ["sample", "start_sampler"]
