"""The protocol's views as functions of `(request, user, **path)`: method dispatch,
token authentication, CORS for configured origins, and errors in the protocol's shape.

A handler returns JSON data (answered 200), an `HttpResponse`, or raises `ProtocolError`;
the runtime's own errors are answered with the status LangGraph's server gives the same
situation (`STATUSES`). Async handlers (streams and long waits) have their own wrapper.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from beamweaver_core.conf import conf
from beamweaver_core.exceptions import (
    CheckpointNotFoundError,
    InvalidUpdateError,
    ThreadBusyError,
)
from beamweaver_core.protocol.auth import caller
from beamweaver_core.protocol.db import in_thread
from beamweaver_core.protocol.errors import ProtocolError, respond
from beamweaver_core.runtime.access import AccessNotConfiguredError
from beamweaver_core.runtime.answers import AnswersNotConfiguredError
from beamweaver_core.runtime.registry import UnknownGraphError
from beamweaver_core.runtime.service import RunStateError
from beamweaver_core.runtime.thread_ids import InvalidThreadIdError

logger = logging.getLogger(__name__)

Handler = Callable[..., Any]

STATUSES: tuple[tuple[type[Exception], int], ...] = (
    (ThreadBusyError, 409),
    (RunStateError, 409),
    (CheckpointNotFoundError, 404),
    (InvalidThreadIdError, 422),
    (InvalidUpdateError, 422),
    (AccessNotConfiguredError, 503),
    (AnswersNotConfiguredError, 503),
    (UnknownGraphError, 409),  # a thread's graph no longer registered
)
"""The runtime's errors as protocol statuses."""

CORS_HEADERS = "x-api-key, authorization, content-type, last-event-id, x-request-id"


def answer(result: Any) -> HttpResponse:
    if isinstance(result, HttpResponse):
        return result
    if result is None:
        return HttpResponse(status=204)
    return JsonResponse(result, safe=False)


def failure(exc: Exception) -> HttpResponse | None:
    """The protocol's answer to `exc`, or `None` if it is not one it knows."""
    if isinstance(exc, ProtocolError):
        response = respond(exc.status, exc.detail)
        if exc.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="beamweaver"'
        return response
    for kind, status in STATUSES:
        if isinstance(exc, kind):
            return respond(status, str(exc))
    return None


def _cors(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    origin = request.headers.get("Origin")
    allowed = conf.lg_cors_origins
    if origin and (origin in allowed or "*" in allowed):
        response["Access-Control-Allow-Origin"] = origin
        response["Access-Control-Allow-Headers"] = CORS_HEADERS
        response["Access-Control-Allow-Methods"] = "GET, POST, PATCH, DELETE, OPTIONS"
        response["Access-Control-Expose-Headers"] = "Location, Content-Location, X-Pagination-Next"
        response["Vary"] = "Origin"
    return response


def _preflight(request: HttpRequest, allowed: list[str]) -> HttpResponse:
    response = HttpResponse(status=204)
    response["Allow"] = ", ".join([*allowed, "OPTIONS"])
    return _cors(request, response)


def _not_allowed(allowed: list[str]) -> HttpResponse:
    response = respond(405, f"Method not allowed here; use {', '.join(allowed)}.")
    response["Allow"] = ", ".join(allowed)
    return response


def _early(request: HttpRequest, allowed: list[str]) -> HttpResponse | None:
    """The answer to a CORS preflight or a method the route does not take, if it is one."""
    if request.method == "OPTIONS":
        return _preflight(request, allowed)
    if request.method not in allowed:
        return _cors(request, _not_allowed(allowed))
    return None


def _known(exc: Exception) -> HttpResponse:
    """The protocol's answer to `exc`; anything else is raised again (a server error)."""
    known = failure(exc)
    if known is None:
        raise exc
    return known


def endpoint(*, public: bool = False, **methods: Handler) -> Callable[..., HttpResponse]:
    """A view answering each HTTP method with its handler `(request, user, **path)`."""
    allowed = sorted(methods)

    @csrf_exempt
    def view(request: HttpRequest, **path: Any) -> HttpResponse:
        early = _early(request, allowed)
        if early is not None:
            return early
        try:
            user = None if public else caller(request)
            response = answer(methods[str(request.method)](request, user, **path))
        except Exception as exc:
            response = _known(exc)
        return _cors(request, response)

    return view


def aendpoint(method: str, handler: Callable[..., Awaitable[HttpResponse]]) -> Callable[..., Any]:
    """An async view (streams and waits) answering `method` with `handler`."""

    @csrf_exempt
    @functools.wraps(handler)
    async def view(request: HttpRequest, **path: Any) -> HttpResponse:
        early = _early(request, [method])
        if early is not None:
            return early
        try:
            user = await in_thread(caller)(request)
            response = await handler(request, user, **path)
        except Exception as exc:
            response = _known(exc)
        return _cors(request, response)

    return view


__all__ = ["STATUSES", "aendpoint", "answer", "endpoint", "failure"]
