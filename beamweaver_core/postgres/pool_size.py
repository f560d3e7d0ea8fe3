"""How many connections each process's pool may open, by what the process does.

Every pool grows on demand up to its `max_size` and, after an outage, reconnects every
slot it counted while the server was away, so pools end up at their maximum. The sum of
the maxima over all processes must therefore stay below the server's `max_connections`
(hostile case 49: four processes allowed 40 each exhausted a 100-connection server).

A web process (daphne, runserver) gets `WEB_POOL_SIZE`. A worker process needs one
connection per run thread and one per heartbeat, plus a few for tool calls running in
parallel (the ledger gives its connection back after each statement), the review
sweeper and its tick: `worker_pool_size(threads)`. A web process that runs its workers
inline (no Redis) gets both. `BEAMWEAVER_DB_POOL_SIZE`, when set, fixes the size of
every process instead.
"""

from __future__ import annotations

import logging
import os

from django.db import connections
from psycopg_pool import ConnectionPool

logger = logging.getLogger(__name__)

WEB_POOL_SIZE = 20
ENV = "BEAMWEAVER_DB_POOL_SIZE"


def worker_pool_size(threads: int) -> int:
    """Connections a worker running `threads` runs at once may need."""
    return 2 * threads + 4


def pool_size(using: str = "default") -> int | None:
    """This process's pool maximum (`None` when the database is not pooled)."""
    options = connections[using].settings_dict["OPTIONS"].get("pool")
    return int(options["max_size"]) if isinstance(options, dict) else None


def set_pool_size(max_size: int, using: str = "default") -> int | None:
    """Make this process's pool maximum `max_size` (also when the pool is already open),
    unless `BEAMWEAVER_DB_POOL_SIZE` fixes it. Returns the maximum now in force."""
    options = connections[using].settings_dict["OPTIONS"].get("pool")
    if not isinstance(options, dict):
        return None
    if os.environ.get(ENV):
        return int(options["max_size"])
    options["max_size"] = max_size
    options["min_size"] = min(int(options.get("min_size", 1)), max_size)
    # Django's psycopg backend keeps its pools in a private class attribute, which django-stubs
    # leaves out (any pooled backend is that one or a subclass, like ours).
    pools: dict[str, ConnectionPool] = type(connections[using])._connection_pools  # type: ignore[attr-defined]
    pool = pools.get(using)
    if pool is not None:
        pool.resize(options["min_size"], max_size)
    logger.info("Database pool %r: at most %d connections in this process", using, max_size)
    return max_size


__all__ = ["ENV", "WEB_POOL_SIZE", "pool_size", "set_pool_size", "worker_pool_size"]
