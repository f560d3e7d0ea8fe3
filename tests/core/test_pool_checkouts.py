"""The tests' own check that pooled connections are given back (`tests/conftest.py`,
`tests.support.pool_checkouts`): a thread that ends holding one is named, with the stack
that took it; a thread that closes its connections is not."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections

from tests.support.pool_checkouts import CheckoutLedger, report

pytestmark = pytest.mark.django_db(transaction=True)


def on_a_thread(name: str, target: Callable[[], None]) -> None:
    thread = threading.Thread(target=target, name=name)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()


def test_a_thread_that_ends_holding_a_connection_is_named_with_where_it_took_it() -> None:
    taken: dict[str, Any] = {}

    def keep_a_connection() -> None:
        connections["default"].ensure_connection()
        taken["connection"] = connections["default"].connection

    with CheckoutLedger().recording() as ledger:
        on_a_thread("keeps-its-connection", keep_a_connection)
        orphaned = ledger.orphaned()
        # Given back here, so the session's own ledger finds nothing left behind.
        pool = connections["default"].pool
        assert pool is not None
        pool.putconn(taken["connection"])

    assert [checkout.connection() for checkout in orphaned] == [taken["connection"]]
    message = report(orphaned, "Threads ended holding pooled connections")
    assert "taken by thread 'keeps-its-connection' (ended; the connection is open)" in message
    assert "in keep_a_connection" in message
    assert ledger.orphaned() == []  # reported once


def test_a_thread_that_closes_its_connections_leaves_nothing_behind() -> None:
    def close_after_use() -> None:
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT 1")
        finally:
            connections.close_all()

    with CheckoutLedger().recording() as ledger:
        on_a_thread("gives-it-back", close_after_use)

        assert ledger.orphaned() == []
        assert ledger.held_outside(threading.main_thread()) == []
