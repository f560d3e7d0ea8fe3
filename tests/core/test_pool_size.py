"""Pool sizes per process kind: a worker process's pool is sized by its threads, so
that many processes fit in the server's max_connections (hostile case 49)."""

from __future__ import annotations

import pytest
from django.db import connections

from beamweaver_core.postgres.pool_size import (
    ENV,
    WEB_POOL_SIZE,
    pool_size,
    set_pool_size,
    worker_pool_size,
)

pytestmark = pytest.mark.django_db


def open_pool() -> object:
    connections["default"].ensure_connection()
    return type(connections["default"])._connection_pools["default"]


def test_a_worker_needs_a_run_and_a_heartbeat_connection_per_thread_and_a_few_more() -> None:
    assert [worker_pool_size(n) for n in (1, 2, 4)] == [6, 8, 12]
    assert WEB_POOL_SIZE == 20


def test_setting_the_size_resizes_the_open_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    pool = open_pool()
    before = pool_size()
    assert before is not None
    try:
        assert set_pool_size(7) == 7
        assert (pool.max_size, pool_size()) == (7, 7)  # type: ignore[attr-defined]
    finally:
        set_pool_size(before)
    assert pool.max_size == before  # type: ignore[attr-defined]


def test_the_environment_variable_fixes_every_process_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV, "13")
    pool = open_pool()
    before = pool_size()
    assert set_pool_size(5) == before
    assert pool.max_size == before  # type: ignore[attr-defined]
