"""The project's ASGI handler (`beamweaver_core.asgi_handler`): a request's middleware and
view in one trip to its thread, with the project's real middleware; a coroutine view run
from there, which a client's disconnect still cancels."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.test import override_settings
from django.urls import path

from beamweaver_core.asgi_handler import OneTripASGIHandler

seen: dict[str, Any] = {}


def sync_view(request: HttpRequest) -> HttpResponse:
    seen["view_thread"] = threading.get_ident()
    return JsonResponse({"ok": True})


async def database_view(request: HttpRequest) -> HttpResponse:
    # As the protocol's async views reach the database (`protocol.db.in_thread`).
    await database_sync_to_async(threading.get_ident)()
    return HttpResponse("ok")


async def waiting_view(request: HttpRequest) -> HttpResponse:
    seen["started"].set()
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        seen["cancelled"] = True
        raise
    return HttpResponse("late")


urlpatterns = [
    path("sync/", sync_view),
    path("database/", database_view),
    path("waits/", waiting_view),
]


def scope(route: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": route,
        "raw_path": route.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost")],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


async def served(handler: ASGIHandler, route: str) -> tuple[int, int]:
    """One GET of `route` through `handler`: its status, and how many times a thread woke
    the event loop (`call_soon_threadsafe`: each trip to a thread and back wakes it)."""
    loop = asyncio.get_running_loop()
    wakes = 0
    original = loop.call_soon_threadsafe

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal wakes
        wakes += 1
        return original(*args, **kwargs)

    loop.call_soon_threadsafe = counted  # type: ignore[method-assign,assignment]
    try:
        app = ApplicationCommunicator(handler, scope(route))
        await app.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await app.receive_output(10)
        await app.receive_output(10)
        await app.wait(10)
    finally:
        loop.call_soon_threadsafe = original  # type: ignore[method-assign,assignment]
    return start["status"], wakes


@override_settings(ROOT_URLCONF=__name__)
async def test_a_synchronous_views_request_is_one_trip_to_its_thread() -> None:
    # Django's own handler, the project's middleware: a trip per hook, view hook and view.
    status, django_wakes = await served(ASGIHandler(), "/sync/")
    assert status == 200
    status, ours = await served(OneTripASGIHandler(), "/sync/")
    assert status == 200
    # 11 wakes there; 4 here: Django's `request_started` signal, the request (middleware,
    # view middleware and view) and the response's close (`request_finished`).
    assert ours <= 4 < django_wakes


@override_settings(ROOT_URLCONF=__name__)
async def test_a_coroutine_views_trip_to_the_database_comes_back_to_the_requests_thread() -> None:
    status, django_wakes = await served(ASGIHandler(), "/database/")
    assert status == 200
    status, ours = await served(OneTripASGIHandler(), "/database/")
    assert status == 200
    assert ours <= 6 < django_wakes  # 11 there


@pytest.mark.django_db(transaction=True)
async def test_an_unknown_paths_404_is_one_trip_too() -> None:
    status, wakes = await served(OneTripASGIHandler(), "/nowhere/")
    assert status == 404
    assert wakes <= 5  # and one for Django's log of a response of 400 or more


@override_settings(ROOT_URLCONF=__name__)
async def test_a_disconnect_cancels_a_coroutine_view() -> None:
    seen["started"] = asyncio.Event()
    seen.pop("cancelled", None)
    app = ApplicationCommunicator(OneTripASGIHandler(), scope("/waits/"))
    await app.send_input({"type": "http.request", "body": b"", "more_body": False})
    await asyncio.wait_for(seen["started"].wait(), 10)
    await app.send_input({"type": "http.disconnect"})
    await app.wait(10)
    assert seen.get("cancelled") is True  # not 60 s later: `wait` would have timed out


@pytest.mark.django_db(transaction=True)
async def test_the_project_application_serves_its_pages_through_the_handler() -> None:
    from beamweaver_core import asgi

    assert isinstance(asgi.django_asgi_app, OneTripASGIHandler)
    status, wakes = await served(asgi.django_asgi_app, "/lg/ok")
    assert status == 200
    assert wakes <= 4
