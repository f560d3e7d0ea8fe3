"""PostgreSQL whose connection pool replaces a dead pooled connection at once.

Django's pool (`OPTIONS["pool"]`, with `CONN_HEALTH_CHECKS`) has psycopg_pool check each
connection as it is taken. When the check fails, psycopg_pool backs off 1 s, 2 s, 4 s...
before trying the next one, to avoid a busy loop while the server is down. But while
backends are being killed (`pg_terminate_backend`, a failover, a proxy dropping idle
links), the replacement it opened meanwhile is killed before that retry takes it, so
the caller waits for the whole pool timeout and gets `PoolTimeout`, with the server up
all along (hostile case 20: progress fell to 0 runs/s under a kill every 0.5 s).

`CheckedPool` checks the connection itself and, when it is dead, hands it back (the pool
discards and replaces it) and takes the next one at once (as many times as the pool has
connections), before falling back to the pool's own wait. A server that is really down still ends in `PoolTimeout`
after the pool timeout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import ClassVar

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base
from psycopg import Connection
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool

logger = logging.getLogger(__name__)


class CheckedPool(ConnectionPool):
    """A pool whose `getconn` checks what it hands out, retrying a dead one at once:
    every idle connection may have been killed together, so up to the pool's size (+ 2)
    tries, each a failed no-op on a closed socket, before the pool's own wait."""

    def getconn(self, timeout: float | None = None) -> Connection[TupleRow]:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        for _ in range(self.max_size + 2):
            conn = super().getconn(max(0.001, deadline - time.monotonic()))
            try:
                self.check_connection(conn)
            except Exception as exc:
                logger.info("pooled connection dead (%s); taking another", exc)
                self.putconn(conn)
                continue
            return conn
        return super().getconn(max(0.001, deadline - time.monotonic()))


class DatabaseWrapper(base.DatabaseWrapper):
    # Django's psycopg backend defines these two; django-stubs leaves its private names out.
    _connection_pools: ClassVar[dict[str, ConnectionPool]]
    _configure_connection: Callable[[Connection[TupleRow]], None]

    @property
    def pool(self) -> ConnectionPool | None:
        options = self.settings_dict["OPTIONS"].get("pool")
        if self.alias == NO_DB_ALIAS or not options:
            return None
        if self.alias not in self._connection_pools:
            if self.settings_dict.get("CONN_MAX_AGE", 0) != 0:
                raise ImproperlyConfigured("Pooling doesn't support persistent connections.")
            params = self.get_connection_params()
            params["autocommit"] = True  # Django sets the real mode later, as it does
            checked = bool(self.settings_dict["CONN_HEALTH_CHECKS"])
            pool = (CheckedPool if checked else ConnectionPool)(
                kwargs=params,
                open=False,
                configure=self._configure_connection,
                check=None,  # CheckedPool checks in getconn, without the backoff
                **({} if options is True else options),
            )
            self._connection_pools.setdefault(self.alias, pool)
        return self._connection_pools[self.alias]


__all__ = ["CheckedPool", "DatabaseWrapper"]
