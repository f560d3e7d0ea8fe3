"""A request that cannot reach the database answers 503 with Retry-After, fast, instead
of a 500 (found by hostile case 21, connection exhaustion: `bench.hostile`)."""

from __future__ import annotations

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


def _raise_bug(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


urlpatterns = [
    path("operational/", _raise_operational),
    path("interface/", _raise_interface),
    path("wrapped/", _raise_wrapped),
    path("bug/", _raise_bug),
]
handler500 = "beamweaver_core.error_views.server_error"


def test_the_project_urlconf_uses_the_handler() -> None:
    assert (
        get_resolver("beamweaver_core.urls").resolve_error_handler(500) is error_views.server_error
    )


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("url", ["/operational/", "/interface/", "/wrapped/"])
def test_an_unreachable_database_answers_503_with_retry_after(url: str) -> None:
    response = Client(raise_request_exception=False).get(url)
    assert response.status_code == 503
    assert response["Retry-After"] == str(error_views.RETRY_AFTER_SECONDS)
    assert "database" in response.content.decode()


@pytest.mark.urls(__name__)
def test_other_errors_stay_500() -> None:
    response = Client(raise_request_exception=False).get("/bug/")
    assert response.status_code == 500
