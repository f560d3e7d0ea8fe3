"""The connection pool keeps serving while backends are being killed (hostile case 20).

psycopg_pool's own checkout check backs off 1 s, 2 s, 4 s... after a dead connection; a
storm killing idle backends every few hundred milliseconds then starves every caller
until `PoolTimeout`. `CheckedPool` takes the replacement at once. Runs against a
throwaway cluster this test owns (never the shared server).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.db import connections
from psycopg_pool import PoolTimeout

from beamweaver_core.postgres.base import CheckedPool
from bench.hostile.postgres import Cluster, unavailable_reason

pytestmark = pytest.mark.processes


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    if (reason := unavailable_reason()) is not None:
        pytest.skip(reason)
    with Cluster.start() as pg:
        yield pg


def test_queries_keep_succeeding_while_idle_backends_are_killed(cluster: Cluster) -> None:
    pool = CheckedPool(
        kwargs={
            "host": "127.0.0.1",
            "port": cluster.port,
            "user": "postgres",
            "dbname": "postgres",
            "application_name": "storm-victim",
            "autocommit": True,
        },
        min_size=1,
        max_size=4,
        timeout=5,
        open=True,
    )
    stop = threading.Event()

    def storm() -> None:
        while not stop.is_set():
            cluster.terminate("storm-victim")
            stop.wait(0.3)

    killer = threading.Thread(target=storm, daemon=True)
    killer.start()
    latencies, timeouts = [], 0
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            started = time.monotonic()
            try:
                with pool.connection() as conn:
                    conn.execute("SELECT 1")
            except PoolTimeout:
                timeouts += 1
            except Exception:
                pass  # a backend killed between the check and the query: the caller retries
            latencies.append(time.monotonic() - started)
            time.sleep(0.05)
    finally:
        stop.set()
        killer.join(5)
        pool.close()
    assert timeouts == 0
    assert max(latencies) < 2.0
    assert len(latencies) > 20


def test_the_project_database_uses_the_checked_pool() -> None:
    connection = connections["default"]
    assert connection.settings_dict["ENGINE"] in (
        "beamweaver_core.postgres",
        "beamweaver_core.embedded_postgres",
    )
    assert isinstance(connection.pool, CheckedPool)
