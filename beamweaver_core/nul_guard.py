"""Requests with a NUL character in their URL, cookies or form fields are refused (400)
before any view runs.

Postgres can neither store nor compare text containing NUL (U+0000): a `%00` that reaches
a query (a list filter, a lookup by id or username, a session key read from a cookie, a
client decision id) raised `DataError`, a 500. No path, query parameter, cookie or form
field of this project has a use for NUL, so the request is refused at the edge, once,
instead of in every view: as an API's error JSON (`error_views.error_json`: the review
API's, or the protocol's `{"detail": ...}` under `/lg/`), as plain text elsewhere. Like the other edge
refusals (CSRF, 413, 429) it decides nothing and so is not in the review audit log. JSON
bodies are `json_input.parse_json`'s to refuse (a NUL there is an escape, `\u0000`).

Websocket handshakes pass no Django middleware: `WebsocketNulGuard` refuses one with a NUL
in its path, query string (raw or `%00`) or cookies (raw, or escaped in a quoted cookie value, as
the session middleware decodes it) before the session is loaded or a consumer runs (the
handshake is denied: daphne answers 403). A `%00` in an inbox filter reached the live
round's query (a `DataError`, logged, the socket closed and reopened by the page), and
one in a quoted session cookie reached the session lookup (daphne's 500).

Hand-written: Django's form fields refuse NUL only where a form is used, and no maintained
middleware does this; it is a membership test on text Django has already decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote_to_bytes

from channels.security.websocket import WebsocketDenier
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse
from django.http.cookie import parse_cookie

from beamweaver_core.error_views import error_json

NUL = "\x00"
MESSAGE = (
    "The request has a NUL character (%00) in its {where}, which nothing here accepts. "
    "Remove it and send the request again."
)


def _where(request: HttpRequest) -> str | None:
    """Which part of the request carries a NUL, or `None`."""
    if NUL in request.path:
        return "path"
    if NUL in request.META.get("QUERY_STRING", "") or _any_nul(request.GET.lists()):
        return "query string"
    if NUL in request.META.get("HTTP_COOKIE", "") or _any_nul(
        (name, [value]) for name, value in request.COOKIES.items()
    ):
        return "cookies"
    if request.method == "POST" and _any_nul(_form_fields(request)):
        return "form fields"
    return None


def _form_fields(request: HttpRequest) -> Iterable[tuple[str, list[str]]]:
    """The posted form's fields; none for other bodies, or one over Django's limits (the
    view answers that with 413)."""
    if request.content_type not in ("application/x-www-form-urlencoded", "multipart/form-data"):
        return ()
    try:
        # The body is read (and kept) first, so that a form over Django's limits is parsed
        # again, and refused, by the view, instead of reaching it consumed and empty.
        request.body  # noqa: B018
        return list(request.POST.lists())
    except (RequestDataTooBig, TooManyFieldsSent):
        return ()


def _any_nul(pairs: Iterable[tuple[str, list[str]]]) -> bool:
    return any(NUL in key or any(NUL in value for value in values) for key, values in pairs)


class NulGuardMiddleware:
    """Answers 400 to a request with NUL in its path, query string, cookies or form."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = _where(request)
        if where is None:
            return self.get_response(request)
        message = MESSAGE.format(where=where)
        found = error_json(request, 400, "nul_character", message)
        return found or HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def websocket_nul(scope: Any) -> str | None:
    """Which part of a websocket handshake carries a NUL, or `None`: its path (as the
    server decoded it), its query string (raw or percent-encoded), its cookies (the
    header, and the values as channels' cookie middleware decodes them)."""
    if NUL in str(scope.get("path", "")):
        return "path"
    if b"\x00" in unquote_to_bytes(bytes(scope.get("query_string") or b"")):
        return "query string"
    for name, value in scope.get("headers") or ():
        if bytes(name).lower() == b"cookie":
            text = bytes(value).decode("latin-1")
            if NUL in text or _any_nul((k, [v]) for k, v in parse_cookie(text).items()):
                return "cookies"
    return None


class WebsocketNulGuard:
    """ASGI middleware denying a websocket handshake with NUL in its path, query string
    or cookies (before the session is read or a consumer runs)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and websocket_nul(scope) is not None:
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)


__all__ = ["NulGuardMiddleware", "WebsocketNulGuard", "websocket_nul"]
