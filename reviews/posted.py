"""The body of a posted inbox form, read with care: Django's size and field limits answer
413 rather than a server error, and a field that is not valid UTF-8 is named, not decided
on (Django would have turned its bytes into U+FFFD)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_to_bytes

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, QueryDict


def posted(request: HttpRequest) -> QueryDict | None:
    """The POST data, or `None` if the body is over Django's size or field limits."""
    try:
        return request.POST
    except (RequestDataTooBig, TooManyFieldsSent):
        return None


def undecodable(request: HttpRequest) -> list[str]:
    """The names of posted fields that are not valid UTF-8 (Django turns such bytes into
    U+FFFD, so the answer would not be what the reviewer sent). A multipart body is
    parsed as a stream (by the CSRF check, before the view), so its bytes are gone: there
    a U+FFFD in a field is refused, as it cannot be told apart from an undecodable byte."""
    if request.content_type == "multipart/form-data":
        return [key for key, values in request.POST.lists() if any("\ufffd" in v for v in values)]
    if request.content_type != "application/x-www-form-urlencoded":
        return []
    body, encoding = request.body, request.encoding or "utf-8"
    bad = []
    for part in body.split(b"&"):
        name, _, value = (unquote_to_bytes(p.replace(b"+", b" ")) for p in part.partition(b"="))
        try:
            name.decode(encoding)
            value.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            bad.append(name.decode("utf-8", "replace"))
    return bad


def encoding_problems(request: HttpRequest) -> list[dict[str, Any]]:
    bad = undecodable(request)
    if not bad:
        return []
    message = (
        f"The form field(s) {', '.join(bad)[:200]} are not valid UTF-8; nothing was decided. "
        "Send the form again from the page (or with UTF-8 text)."
    )
    return [{"index": None, "field": "body", "message": message}]


def too_large() -> HttpResponse:
    return HttpResponse(
        "The request is too large.", status=413, content_type="text/plain; charset=utf-8"
    )


__all__ = ["encoding_problems", "posted", "too_large", "undecodable"]
