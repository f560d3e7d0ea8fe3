"""Who may see and decide what. Every view, the consumer and the decision service ask here,
so a future rule (teams, assignees) changes one module.

Deny by default: without the `reviews.review` permission a user sees nothing, and a
thread-scoped object the user may not see answers exactly like one that does not exist.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect

from beamweaver_core.models import Thread

REVIEW_PERMISSION = "reviews.review"


def can_review(user: Any) -> bool:
    """Whether `user` may use the inbox at all (see and decide review items)."""
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and user.is_active
        and user.has_perm(REVIEW_PERMISSION)
    )


def visible_threads(user: Any) -> Any:
    """The threads `user` may see (a queryset; empty without the permission)."""
    return Thread.objects.all() if can_review(user) else Thread.objects.none()


def can_see_thread(user: Any, thread_id: str) -> bool:
    return visible_threads(user).filter(id=thread_id).exists()


def reviewer_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Log in first (an htmx request is sent to the login page as a whole page, never
    swapped into a fragment), then require the reviewer permission (403 page)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            login = redirect_to_login(request.get_full_path())
            if getattr(request, "htmx", False):
                current = request.htmx.current_url_abs_path or request.get_full_path()
                return HttpResponseClientRedirect(redirect_to_login(current)["Location"])
            return login
        if not can_review(request.user):
            return render(request, "reviews/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


__all__ = [
    "REVIEW_PERMISSION",
    "can_review",
    "can_see_thread",
    "reviewer_required",
    "visible_threads",
]
