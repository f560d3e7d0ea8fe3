"""Shared fixtures: the test graphs are registered for every test; `fresh_counters` gives
rate-limit tests empty counters and a clock of their own."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from asgiref.sync import SyncToAsync
from django.db import OperationalError, connections
from django.db.backends.postgresql.operations import DatabaseOperations

from tests.support.graphs import TEST_GRAPHS
from tests.support.pool_checkouts import CheckoutLedger, report


@pytest.fixture(autouse=True)
def _test_graphs(request: pytest.FixtureRequest) -> Any:
    if "django_db_setup" not in request.fixturenames and not request.node.get_closest_marker(
        "django_db"
    ):
        yield
        return
    settings = request.getfixturevalue("settings")
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **TEST_GRAPHS},
    }
    yield


@pytest.fixture(autouse=True, scope="session")
def _pool_checkouts() -> Iterator[CheckoutLedger]:
    """Every pooled connection taken during the session, with its thread and stack
    (`tests.support.pool_checkouts`). At the end (after the test database's drop, which a
    connection still checked out makes fail with "being accessed by other users"), no
    thread but the main one may still hold one."""
    with CheckoutLedger().recording() as ledger:
        yield ledger
    left = ledger.orphaned() + ledger.held_outside(threading.main_thread())
    if left:
        pytest.fail(report(left, "Pooled connections still checked out at the end of the session"))


@pytest.fixture(autouse=True)
def _connections_of_ended_threads_given_back(
    _pool_checkouts: CheckoutLedger,
) -> Iterator[None]:
    """After each test, no thread that has ended holds a pooled connection: it can never
    give it back (a slot of the pool lost for good, a backend left on the test database).
    A thread that uses the database closes its connections before it ends
    (`connections.close_all()`)."""
    yield
    orphaned = _pool_checkouts.orphaned()
    if orphaned:
        pytest.fail(report(orphaned, "Threads ended holding pooled connections"))


@pytest.fixture(autouse=True)
def _executor_connections_closed() -> Iterator[None]:
    """After each test, the connections of asgiref's one thread for thread-sensitive
    `sync_to_async` are closed (given back to the pool). channels' test communicators
    turn `database_sync_to_async`'s closing off while they send and receive (a no-op
    patched over `channels.db.close_old_connections`, process-wide), so what the consumer
    or the test itself opened there meanwhile stayed checked out for the rest of the
    session, and the test database's drop at the end found it still connected ("being
    accessed by other users")."""
    yield
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)


@pytest.fixture(autouse=True, scope="session")
def _flush_retried_on_deadlock() -> Iterator[None]:
    """A transactional test's flush is retried when PostgreSQL breaks a deadlock by
    aborting it. Test modules that start live servers (tests/protocol, tests/reliability)
    keep them for the module, so their workers poll the test database while each test's
    teardown TRUNCATEs every table: CI saw the TRUNCATE (taking its locks table by table)
    and a worker's claim (holding one of those tables, waiting for another) deadlock, the
    flush lose, and the next test find the last one's rows. The worker's statement ends at
    once, so the flush's next try succeeds."""
    flush = DatabaseOperations.execute_sql_flush

    def retried(self: DatabaseOperations, sql_list: list[str]) -> None:
        for attempt in range(5):
            try:
                return flush(self, sql_list)
            except OperationalError as exc:
                if attempt == 4 or not isinstance(exc.__cause__, psycopg.errors.DeadlockDetected):
                    raise
                time.sleep(0.1 * (attempt + 1))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "execute_sql_flush", retried)
        yield


@pytest.fixture
def fresh_counters(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """Empty rate-limit counters, and a clock that stands still at the start of a window (a
    test crossing a window boundary would otherwise see its count reset midway); the list
    holds the time, to move it."""
    from django.core.cache import cache

    from beamweaver_core import ratelimit

    now = [1_000_000_020.0]
    monkeypatch.setattr(ratelimit.time, "time", lambda: now[0])
    cache.clear()
    yield now
    cache.clear()
