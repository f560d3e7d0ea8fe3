"""The requests views are given, typed as the middleware leaves them.

django-stubs types `HttpRequest.user` as a user or the anonymous user, and knows nothing of
django-htmx's `request.htmx`; a view behind a login check is given an `AuthedRequest`.
"""

from __future__ import annotations

from typing import TypeGuard

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from beamweaver_core.users import User


class Request(HttpRequest):
    """Any request past `HtmxMiddleware` (every one in this project): `htmx` says whether
    htmx sent it and for which element."""

    htmx: HtmxDetails


class AuthedRequest(Request):
    """A request of a logged-in user: past `login_required` or `reviewer_required`."""

    user: User


def is_authed(request: HttpRequest) -> TypeGuard[AuthedRequest]:
    """Whether a user is logged in on `request` (`request.user` is then that user)."""
    return request.user.is_authenticated


def authed_user(request: HttpRequest) -> User:
    """The logged-in user of a request only logged-in users reach (the admin's pages, views
    behind a login check); anyone else is refused (403), as a check would have."""
    if not is_authed(request):
        raise PermissionDenied
    return request.user


__all__ = ["AuthedRequest", "Request", "authed_user", "is_authed"]
