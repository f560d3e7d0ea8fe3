"""The error views (`handler404`, `handler500`): a database that cannot be reached
answers 503, not 500; a URL under the API that matches nothing answers the API's error
JSON, not an HTML page.

With Postgres restarting, its connections exhausted, or the pool timing out
(`BEAMWEAVER_DB_POOL_TIMEOUT`), a request fails with `OperationalError` or
`InterfaceError`. That is not a bug in the request and it is worth retrying, so the
answer is `503 Service Unavailable` with `Retry-After`, rendered without touching the
database (no template, no session, no user). Everything else is Django's ordinary 500,
`OperationalError`s that Postgres reported about the request's own transaction among
them (a deadlock it broke, a lock or statement timeout): the database was reached, and
such an error is a defect to find (a deadlock is two transactions taking the same locks
in opposite orders), not an outage to wait out.

An API client reads JSON, so a path under the review API (wherever it is mounted) that
resolves to nothing (a typo, a thread id the route cannot hold) gets a JSON 404:
`{"status", "code", "message"}`, or under the LangGraph Platform protocol (`/lg/`) the
protocol's `{"detail": ...}` (an id with a `%2F` matched no route there, and the SDKs read
`detail`). `error_json` is that rule, once; `nul_guard` answers with it too.
"""

from __future__ import annotations

import sys

from django.db.utils import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import NoReverseMatch, reverse
from django.views import defaults

RETRY_AFTER_SECONDS = 5

UNAVAILABLE = (
    "The service cannot reach its database right now. Nothing was changed by this "
    "request unless its page says so; try again in a few seconds."
)


def _mounted(name: str, suffix: str) -> tuple[str, ...]:
    """The path prefix under which URL `name` (whose path ends in `suffix`) is mounted,
    here or in a host that includes `beamweaver_core.embed.urls`; none where it is not."""
    try:
        path = reverse(name)
    except NoReverseMatch:
        return ()
    return (path.removesuffix(suffix),)


def api_roots() -> tuple[str, ...]:
    """Where the review API is mounted: `/api/v1/` here, `/review/api/v1/` in a host that
    includes `beamweaver_core.embed.urls` under `review/`."""
    return _mounted("reviews:api:items", "items/")


def wants_json(request: HttpRequest) -> bool:
    """Whether to answer `request` with the API's error JSON: a path under the API, or a
    client that asks for JSON and not HTML."""
    if request.path.startswith(api_roots()):
        return True
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept


def protocol_roots() -> tuple[str, ...]:
    """Where the LangGraph Platform protocol is mounted: `/lg/` here, `/review/lg/` in a
    host that includes `beamweaver_core.embed.urls` under `review/`."""
    return _mounted("lg:openapi", "openapi.json")


def error_json(request: HttpRequest, status: int, code: str, message: str) -> JsonResponse | None:
    """The error JSON of the API `request` is addressed to: the protocol's `{"detail"}`
    under its root, the review API's `{"status", "code", "message"}` for `wants_json`
    requests; `None` for a page."""
    if request.path.startswith(protocol_roots()):
        return JsonResponse({"detail": message}, status=status)
    if wants_json(request):
        return JsonResponse({"status": status, "code": code, "message": message}, status=status)
    return None


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """`handler404`: an API's error JSON (`error_json`), else Django's page."""
    found = error_json(request, 404, "not_found", "No such API endpoint or object.")
    return found or defaults.page_not_found(request, exception)


UNREACHABLE_STATES = ("08", "53", "57P01", "57P02", "57P03")
"""SQLSTATEs (classes and codes) of a database that cannot be reached or used right now:
connection exceptions, insufficient resources (too many connections), shutdown and
start-up. A connection or pool failure on the client's side has no SQLSTATE at all."""


def database_unavailable() -> bool:
    """Whether the exception being handled is the database being unreachable."""
    exc = sys.exc_info()[1]
    while exc is not None:
        if isinstance(exc, OperationalError | InterfaceError):
            state = getattr(exc.__cause__, "sqlstate", None)
            return state is None or state.startswith(UNREACHABLE_STATES)
        exc = exc.__cause__ or exc.__context__
    return False


def server_error(request: HttpRequest, template_name: str = "500.html") -> HttpResponse:
    """`handler500`: 503 with `Retry-After` when the database is unavailable, else 500."""
    if database_unavailable():
        response = HttpResponse(UNAVAILABLE, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        response["Cache-Control"] = "no-store"
        return response
    return defaults.server_error(request, template_name)


__all__ = [
    "RETRY_AFTER_SECONDS",
    "UNREACHABLE_STATES",
    "api_roots",
    "database_unavailable",
    "error_json",
    "not_found",
    "protocol_roots",
    "server_error",
    "wants_json",
]
