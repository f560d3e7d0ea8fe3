"""A request that cannot reach the database answers 503 with Retry-After, fast, instead
of a 500 (found by hostile case 21, connection exhaustion: `bench.hostile`); an error
Postgres reported about the request's own transaction (a deadlock) stays a 500."""

from __future__ import annotations

import psycopg
import pytest
from django.db.utils import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import get_resolver, path

from beamweaver_core import error_views


def _raise_operational(request: HttpRequest) -> HttpResponse:
    raise OperationalError("couldn't get a connection after 2.00 sec")


def _raise_interface(request: HttpRequest) -> HttpResponse:
    raise InterfaceError("connection already closed")


def _raise_wrapped(request: HttpRequest) -> HttpResponse:
    try:
        raise OperationalError("server closed the connection unexpectedly")
    except OperationalError as exc:
        raise RuntimeError("while rendering") from exc


def _raised_by_postgres(error: psycopg.Error) -> OperationalError:
    """`error` as Django's database wrapper raises it: its own class, caused by psycopg's."""
    try:
        raise OperationalError(str(error)) from error
    except OperationalError as wrapped:
        return wrapped


def _raise_too_many_connections(request: HttpRequest) -> HttpResponse:
    raise _raised_by_postgres(psycopg.errors.TooManyConnections("too many clients already"))


def _raise_deadlock(request: HttpRequest) -> HttpResponse:
    raise _raised_by_postgres(psycopg.errors.DeadlockDetected("deadlock detected"))


def _raise_lock_timeout(request: HttpRequest) -> HttpResponse:
    raise _raised_by_postgres(psycopg.errors.LockNotAvailable("canceling statement: lock timeout"))


def _raise_bug(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


urlpatterns = [
    path("operational/", _raise_operational),
    path("interface/", _raise_interface),
    path("wrapped/", _raise_wrapped),
    path("too-many-connections/", _raise_too_many_connections),
    path("deadlock/", _raise_deadlock),
    path("lock-timeout/", _raise_lock_timeout),
    path("bug/", _raise_bug),
]
handler500 = "beamweaver_core.error_views.server_error"


def test_the_project_urlconf_uses_the_handler() -> None:
    assert (
        get_resolver("beamweaver_core.urls").resolve_error_handler(500) is error_views.server_error
    )


@pytest.mark.urls(__name__)
@pytest.mark.parametrize(
    "url", ["/operational/", "/interface/", "/wrapped/", "/too-many-connections/"]
)
def test_an_unreachable_database_answers_503_with_retry_after(url: str) -> None:
    response = Client(raise_request_exception=False).get(url)
    assert response.status_code == 503
    assert response["Retry-After"] == str(error_views.RETRY_AFTER_SECONDS)
    assert "database" in response.content.decode()


@pytest.mark.urls(__name__)
def test_other_errors_stay_500() -> None:
    response = Client(raise_request_exception=False).get("/bug/")
    assert response.status_code == 500


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("url", ["/deadlock/", "/lock-timeout/"])
def test_an_error_postgres_reports_about_the_transaction_stays_500(url: str) -> None:
    """The database answered: a deadlock it broke (two transactions locking the same rows
    in opposite orders) is a defect, not an outage. Its 503 "cannot reach its database"
    hid one in `/lg`'s runs.delete (tests/protocol/test_lock_order.py)."""
    response = Client(raise_request_exception=False).get(url)
    assert response.status_code == 500
    assert "Retry-After" not in response
