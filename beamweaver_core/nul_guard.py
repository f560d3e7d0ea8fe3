"""Requests with a NUL character in their URL, cookies or form fields are refused (400)
before any view runs.

Postgres can neither store nor compare text containing NUL (U+0000): a `%00` that reaches
a query (a list filter, a lookup by id or username, a session key read from a cookie, a
client decision id) raised `DataError`, a 500. No path, query parameter, cookie or form
field of this project has a use for NUL, so the request is refused at the edge, once,
instead of in every view: as the API's error JSON (`{"status", "code", "message"}`) under
the review API or for a client that asks for JSON (`error_views.wants_json`), as plain text
elsewhere. Like the other edge
refusals (CSRF, 413, 429) it decides nothing and so is not in the review audit log. JSON
bodies are `json_input.parse_json`'s to refuse (a NUL there is an escape, `\u0000`).

Hand-written: Django's form fields refuse NUL only where a form is used, and no maintained
middleware does this; it is a membership test on text Django has already decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, JsonResponse

from beamweaver_core.error_views import wants_json

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
        if wants_json(request):
            body = {"status": 400, "code": "nul_character", "message": message}
            return JsonResponse(body, status=400)
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


__all__ = ["NulGuardMiddleware"]
