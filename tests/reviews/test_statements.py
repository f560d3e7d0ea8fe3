"""Statements compiled once per process (`beamweaver_core.statements`)."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext

from beamweaver_core import statements
from reviews import roles, token_check
from reviews.models import ApiToken
from tests.reviews.conftest import make_manager, make_reviewer


def test_a_key_compiles_once_and_no_key_every_time() -> None:
    built: list[int] = []

    def build() -> tuple[str, tuple[Any, ...]]:
        built.append(1)
        return "SELECT %s", (len(built),)

    first = statements.compiled(("test", "once"), build)
    again = statements.compiled(("test", "once"), build)
    assert first == again == ("SELECT %s", (1,))
    assert len(built) == 1
    assert statements.compiled(None, build) == ("SELECT %s", (2,))
    assert statements.compiled(None, build) == ("SELECT %s", (3,))


def test_the_least_recently_used_statement_goes_first(monkeypatch: Any) -> None:
    monkeypatch.setattr(statements, "CACHED", 2)
    monkeypatch.setattr(statements, "_COMPILED", type(statements._COMPILED)())
    calls: list[str] = []

    def build(name: str) -> Any:
        return lambda: calls.append(name) or (name, ())

    statements.compiled("a", build("a"))
    statements.compiled("b", build("b"))
    statements.compiled("a", build("a"))  # used again: "b" is now the oldest
    statements.compiled("c", build("c"))
    statements.compiled("a", build("a"))
    statements.compiled("b", build("b"))
    assert calls == ["a", "b", "c", "b"]


def _prepared_on_this_connection(marker: str) -> list[str]:
    """The statements prepared on the test's connection whose text contains `marker`."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [text for (text,) in cursor.fetchall() if marker in text]


@pytest.mark.django_db
def test_the_reviewers_and_the_token_check_are_planned_once_per_connection() -> None:
    """Planning these statements cost Postgres several times what running them does (the
    reviewers of a notification's audience 1.4 ms of planning to 0.2 ms of execution, a
    token's check 0.8 ms a request): they are prepared, and give the same answers."""
    group = Group.objects.create(name="night shift")
    alice = make_reviewer("alice")
    alice.groups.add(group)
    make_manager("bob")
    make_reviewer("carol", reviewer=False)  # holds no review permission: not a reviewer
    raw = ApiToken.objects.issue(alice, "test")[1]

    for _ in range(2):
        found = [(u.username, u.bw_groups, u.bw_manager) for u in roles.reviewer_list()]
        assert found == [("alice", [group.pk], False), ("bob", [], True)]
        token = token_check.live_token(str(raw))
        assert token is not None and token.user.username == "alice"
        assert token_check.live_token(str(raw) + "x") is None

    assert len(_prepared_on_this_connection('"bw_manager"')) == 1
    assert len(_prepared_on_this_connection(f'FROM "{ApiToken._meta.db_table}"')) == 1


@pytest.mark.django_db
def test_without_prepared_statements_a_prepared_fetch_is_only_bound_on_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`BEAMWEAVER_DB_PREPARE=0` (behind a pooler that cannot keep prepared statements)
    leaves `prepare_threshold` out of the options: nothing is prepared, and the statement
    is still counted in Django's query log."""
    options = dict(connection.settings_dict["OPTIONS"])
    options.pop("prepare_threshold", None)
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    statement = ("SELECT %s::int + 1 AS bw_unprepared", (41,))
    with CaptureQueriesContext(connection) as queries:
        assert statements.fetch(connection.alias, statement, prepared=True) == [(42,)]
        assert statements.fetch(connection.alias, statement, prepared=True) == [(42,)]
    assert len(queries) == 2
    assert _prepared_on_this_connection("bw_unprepared") == []


@pytest.mark.django_db
def test_a_prepared_fetch_runs_through_the_connections_execute_wrappers() -> None:
    """Instrumentation installed as an execute wrapper (a tracer, a test's counter) sees
    prepared statements as it sees the ORM's."""
    seen: list[tuple[str, Any]] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        rows = statements.fetch(connection.alias, ("SELECT %s::int * 2", (21,)), prepared=True)
    assert rows == [(42,)]
    assert seen == [("SELECT %s::int * 2", (21,))]


def test_a_statement_read_while_another_thread_evicts_it_is_still_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Request threads share the cache: one thread's eviction between another's read and
    its `move_to_end` raised `KeyError` there (within a few thousand reads here)."""
    monkeypatch.setattr(statements, "CACHED", 1)
    monkeypatch.setattr(statements, "_COMPILED", type(statements._COMPILED)())
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            for _ in range(100_000):
                assert statements.compiled("read", lambda: ("SELECT 1", ())) == ("SELECT 1", ())
        except BaseException as error:  # reported below
            errors.append(error)

    def evict() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            statements.compiled(("evict", n), lambda: ("SELECT 2", ()))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        evicting = threading.Thread(target=evict)
        evicting.start()
        read()
    finally:
        stop.set()
        evicting.join()
        sys.setswitchinterval(interval)
    assert errors == []
