"""The inbox's view decorator: log in first, then hold the reviewer permission."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from beamweaver_core.requests import AuthedRequest, is_authed
from reviews.live_check import prime_permissions
from reviews.roles import can_review

_P = ParamSpec("_P")


def reviewer_required(
    view: Callable[Concatenate[AuthedRequest, _P], HttpResponseBase],
) -> Callable[Concatenate[HttpRequest, _P], HttpResponseBase]:
    """Log in first (an htmx request is sent to the login page as a whole page, never
    swapped into a fragment), then require the reviewer permission (403 page). The user's
    permissions and groups are read in one statement (`prime_permissions`)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, /, *args: _P.args, **kwargs: _P.kwargs) -> HttpResponseBase:
        if not is_authed(request):
            login = redirect_to_login(request.get_full_path())
            htmx: HtmxDetails | None = getattr(request, "htmx", None)
            if htmx:
                current = htmx.current_url_abs_path or request.get_full_path()
                return HttpResponseClientRedirect(redirect_to_login(current)["Location"])
            return login
        prime_permissions(request.user)
        if not can_review(request.user):
            return render(request, "reviews/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


__all__ = ["reviewer_required"]
