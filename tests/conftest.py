"""Shared fixtures: the test graphs are registered for every test."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from asgiref.sync import SyncToAsync
from django.db import OperationalError, connections
from django.db.backends.postgresql.operations import DatabaseOperations

from tests.support.graphs import TEST_GRAPHS


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
