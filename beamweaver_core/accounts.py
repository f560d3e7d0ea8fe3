"""The account pages under `/accounts/`: Django's auth views, with the password-reset
ones withdrawn while mail is not delivered.

A reset link is as good as the password. With no `EMAIL_HOST` the settings choose the
console backend, which prints every mail, reset links included, to the server's output,
where whoever reads the logs could take over any account. So while `EMAIL_BACKEND` is
one that does not deliver (console, file, dummy) the four reset pages answer 404 with a
page saying why, and nothing is sent or printed; `manage.py check --deploy` warns about
it (`beamweaver.W040`), and an administrator sets passwords with `manage.py
changepassword` meanwhile. With SMTP configured they work as Django ships them (and
`beamweaver_core.ratelimit` limits reset requests per address and per mailbox).

The check is made at each request (not when the URLconf is built), so the page follows the
settings the process runs with.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import urls as auth_urls
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, URLResolver, path

UNDELIVERED_BACKENDS = frozenset(
    {
        "django.core.mail.backends.console.EmailBackend",
        "django.core.mail.backends.filebased.EmailBackend",
        "django.core.mail.backends.dummy.EmailBackend",
    }
)
"""Mail backends that print, write or drop mail instead of delivering it."""

RESET_VIEWS = frozenset(
    {"password_reset", "password_reset_done", "password_reset_confirm", "password_reset_complete"}
)


def mail_is_delivered() -> bool:
    """Whether `EMAIL_BACKEND` delivers mail (anything but console, file or dummy)."""
    return settings.EMAIL_BACKEND not in UNDELIVERED_BACKENDS


def delivered_mail_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """`view`, answering 404 (with the reason) while mail is not delivered."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not mail_is_delivered():
            return render(request, "registration/password_reset_off.html", status=404)
        return view(request, *args, **kwargs)

    return wrapper


def _account_url(pattern: URLPattern | URLResolver) -> URLPattern | URLResolver:
    if not isinstance(pattern, URLPattern) or pattern.name not in RESET_VIEWS:
        return pattern
    return path(str(pattern.pattern), delivered_mail_only(pattern.callback), name=pattern.name)


urlpatterns = [_account_url(p) for p in auth_urls.urlpatterns]

__all__ = ["UNDELIVERED_BACKENDS", "delivered_mail_only", "mail_is_delivered", "urlpatterns"]
