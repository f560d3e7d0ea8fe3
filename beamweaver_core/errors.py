"""The server-error handler: a database that cannot be reached answers 503, not 500.

With Postgres restarting, its connections exhausted, or the pool timing out
(`BEAMWEAVER_DB_POOL_TIMEOUT`), a request fails with `OperationalError` or
`InterfaceError`. That is not a bug in the request and it is worth retrying, so the
answer is `503 Service Unavailable` with `Retry-After`, rendered without touching the
database (no template, no session, no user). Everything else is Django's ordinary 500.
"""

from __future__ import annotations

import sys

from django.db.utils import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.views import defaults

RETRY_AFTER_SECONDS = 5

UNAVAILABLE = (
    "The service cannot reach its database right now. Nothing was changed by this "
    "request unless its page says so; try again in a few seconds."
)


def database_unavailable() -> bool:
    """Whether the exception being handled is the database being unreachable."""
    exc = sys.exc_info()[1]
    while exc is not None:
        if isinstance(exc, OperationalError | InterfaceError):
            return True
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


__all__ = ["RETRY_AFTER_SECONDS", "database_unavailable", "server_error"]
