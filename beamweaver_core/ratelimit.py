"""Rate limits on decisions, logins and password resets, counted in Django's cache.

`RateLimitMiddleware` guards these views without changing them:

- `reviews:decide`: each reviewer may POST `RATE_DECISIONS` decisions per window (default
  20 per 10 seconds); beyond that, 429 with `Retry-After`. Other reviewers are unaffected.
  The JSON API's decisions get the same limit per API token, keyed by the token's id once
  it is authenticated (`reviews.api.views.decisions_view` calls `hit` itself), so however
  the `Authorization` header is spelled one token has one count.
- every login view (Django's `LoginView` and its subclasses, and every admin site's
  login): a username that failed to log in `LOGIN_LOCKOUT` times from one address (default
  5 within 15 minutes) is locked out from that address on every login view until the
  window ends (429 with `Retry-After`, even with the right password); a successful login
  clears the count. Every address may also POST login forms `RATE_LOGINS` times per window
  (default 30 per minute), whatever the usernames. The username is keyed by `account_key`,
  as Django's login form and user model see it, for the check and the count alike.
- every password-change view (Django's `PasswordChangeView` and the admin's): a wrong old
  password counts as a failed login of the session's user from that address, and a locked
  out username may not change its password either (429), so a session left open cannot be
  used to guess the password the lockout protects on the login views.
- password-reset requests (`PasswordResetView`): `RATE_RESETS` per address (default 10 per
  hour) and `RATE_RESET_MAILS` per e-mail address (default 3 per hour, from any address),
  so nobody can flood a mailbox with reset mail.
- live pages: each user may open `RATE_SOCKETS` websockets per window (default 60 per 30
  seconds); beyond that the socket is closed with 4430 before its check
  (`reviews.live.handshakes`, which calls `hit` itself).

Counters are fixed windows in the default cache: Redis when `REDIS_URL` is set (shared by
every web process), the local-memory cache otherwise. A cache that fails (Redis down or
slow) never blocks a request: the limit is skipped and a warning logged, so decisions keep
working while Redis is away. The client address is `REMOTE_ADDR`; behind a proxy, pass the
real address through (e.g. daphne's `--proxy-headers`).
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import math
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.admin.sites import AdminSite
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.contrib.auth.views import LoginView, PasswordChangeView, PasswordResetView
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse

from beamweaver_core.conf import conf

logger = logging.getLogger(__name__)

_PREFIX = "bw:rl"

SETTINGS = (
    "RATE_DECISIONS",
    "RATE_LOGINS",
    "LOGIN_LOCKOUT",
    "RATE_RESETS",
    "RATE_RESET_MAILS",
    "RATE_SOCKETS",
)
"""The limits of `settings.BEAMWEAVER`, each "count/seconds" (`beamweaver.E070` reports a
malformed one)."""


@dataclass(frozen=True, slots=True)
class Limit:
    """At most `count` events per `seconds`."""

    count: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Limit:
        """`"20/10"`: 20 per 10 seconds."""
        count, _, seconds = str(text).partition("/")
        try:
            limit = cls(int(count), int(seconds))
        except ValueError:
            raise ValueError(
                f"A rate limit looks like '20/10' (20 per 10 seconds), got {text!r}."
            ) from None
        if limit.count < 1 or limit.seconds < 1:
            raise ValueError(f"A rate limit needs a positive count and window, got {text!r}.")
        return limit


def configured(name: str) -> Limit:
    """The limit `name` from `settings.BEAMWEAVER` (read at each request, defaults in
    `beamweaver_core.conf`)."""
    return Limit.parse(conf.rate_limit(name))


def _key(*parts: str) -> str:
    # Usernames are untrusted text: hash them into a fixed-size, safe cache key.
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    return f"{_PREFIX}:{parts[0]}:{digest[:32]}"


def _window(limit: Limit, now: float) -> tuple[int, int]:
    """The current window's number and the seconds left in it (at least 1)."""
    number = int(now // limit.seconds)
    return number, max(1, math.ceil((number + 1) * limit.seconds - now))


def hit(scope: str, ident: str, limit: Limit) -> int | None:
    """Count one event; `None` if it is within the limit, else the seconds to wait."""
    number, left = _window(limit, time.time())
    key = _key(scope, ident, str(number))
    try:
        cache.add(key, 0, timeout=limit.seconds + 1)
        count = cache.incr(key)
    except Exception as exc:
        logger.warning("Rate limit %s skipped: the cache failed (%s)", scope, exc)
        return None
    return left if count > limit.count else None


def account_key(text: str) -> str:
    """A username or e-mail address as Django's auth compares it: stripped (the login
    form's field), NFKC-normalised (`UsernameField`, `AbstractBaseUser.normalize_username`,
    the reset form's e-mail match) and casefolded (the reset form's match; usernames
    differing only in case share one count)."""
    return unicodedata.normalize("NFKC", str(text).strip()).casefold()


def _lockout_key(username: str, address: str) -> str:
    return _key("login-failures", account_key(username), address)


def locked_out(username: str, address: str) -> int | None:
    """Seconds left in the lockout of `username` from `address`, or `None`."""
    limit = configured("LOGIN_LOCKOUT")
    try:
        record = cache.get(_lockout_key(username, address))
    except Exception as exc:
        logger.warning("Login lockout check skipped: the cache failed (%s)", exc)
        return None
    if not record or record["failures"] < limit.count:
        return None
    left = math.ceil(record["until"] - time.time())
    return left if left > 0 else None


def record_failure(username: str, address: str) -> None:
    """Count a failed login; the window starts at the first failure."""
    limit = configured("LOGIN_LOCKOUT")
    key = _lockout_key(username, address)
    try:
        record = cache.get(key) or {"failures": 0, "until": time.time() + limit.seconds}
        record["failures"] += 1
        cache.set(key, record, timeout=max(1, math.ceil(record["until"] - time.time())))
    except Exception as exc:
        logger.warning("Login failure not counted: the cache failed (%s)", exc)
        return
    if record["failures"] == limit.count:
        logger.warning(
            "Login locked out for a username from %s after %d failures", address, limit.count
        )


def clear_failures(username: str, address: str) -> None:
    try:
        cache.delete(_lockout_key(username, address))
    except Exception as exc:
        logger.warning("Login failures not cleared: the cache failed (%s)", exc)


def client_address(request: HttpRequest | None) -> str:
    return str(getattr(request, "META", {}).get("REMOTE_ADDR") or "unknown")


@receiver(user_login_failed, dispatch_uid="beamweaver_ratelimit_login_failed")
def _on_login_failed(
    sender: Any, credentials: dict[str, Any], request: Any = None, **kw: Any
) -> None:
    record_failure(str(credentials.get("username") or ""), client_address(request))


@receiver(user_logged_in, dispatch_uid="beamweaver_ratelimit_logged_in")
def _on_logged_in(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    clear_failures(user.get_username(), client_address(request))


def too_many(message: str, retry_after: int, *, as_json: bool = False) -> HttpResponse:
    """429 with `Retry-After` and a message that says when to try again (as the API's
    error JSON when `as_json`)."""
    text = f"{message} Try again in {retry_after} second{'s' if retry_after != 1 else ''}."
    response: HttpResponse
    if as_json:
        body = {"status": 429, "code": "rate_limited", "message": text}
        response = JsonResponse(body, status=429)
    else:
        response = HttpResponse(text, status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(retry_after)
    return response


def is_login_view(view: Any) -> bool:
    """Whether `view` checks a username and password: a `LoginView` (or subclass), or the
    login of an admin site (a bound `AdminSite.login`)."""
    view_class = getattr(view, "view_class", None)
    if isinstance(view_class, type) and issubclass(view_class, LoginView):
        return True
    return isinstance(getattr(view, "__self__", None), AdminSite) and (
        getattr(view, "__name__", "") == "login"
    )


def is_password_change_view(view: Any) -> bool:
    """Whether `view` changes the session user's password after checking the old one: a
    `PasswordChangeView` (or subclass), or an admin site's `password_change` (which the
    site wraps in `admin_view`)."""
    view_class = getattr(view, "view_class", None)
    if isinstance(view_class, type) and issubclass(view_class, PasswordChangeView):
        return True
    site_view = inspect.unwrap(view)
    return isinstance(getattr(site_view, "__self__", None), AdminSite) and (
        getattr(site_view, "__name__", "") == "password_change"
    )


def is_reset_view(view: Any) -> bool:
    view_class = getattr(view, "view_class", None)
    return isinstance(view_class, type) and issubclass(view_class, PasswordResetView)


class RateLimitMiddleware:
    """Applies the limits above to the decision, login, password-change and password-reset
    views."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Any, args: Any, kwargs: Any
    ) -> HttpResponse | None:
        if request.method != "POST" or request.resolver_match is None:
            return None
        name = request.resolver_match.view_name
        if name == "reviews:decide" and request.user.is_authenticated:
            wait = hit("decide", str(request.user.pk), configured("RATE_DECISIONS"))
            if wait is not None:
                return too_many("Too many decisions in a short time.", wait)
        elif is_login_view(view):
            address = client_address(request)
            wait = hit("login", address, configured("RATE_LOGINS"))
            if wait is None:
                wait = locked_out(str(request.POST.get("username", "")), address)
            if wait is not None:
                return too_many("Too many login attempts.", wait)
        elif is_password_change_view(view) and request.user.is_authenticated:
            wait = locked_out(request.user.get_username(), client_address(request))
            if wait is not None:
                return too_many("Too many wrong passwords.", wait)
            request.META[_CHANGING] = True
        elif is_reset_view(view):
            wait = hit("reset", client_address(request), configured("RATE_RESETS"))
            if wait is None:
                mailbox = account_key(str(request.POST.get("email", "")))
                wait = hit("reset-mail", mailbox, configured("RATE_RESET_MAILS"))
            if wait is not None:
                return too_many("Too many password-reset requests.", wait)
        return None

    def process_template_response(
        self, request: HttpRequest, response: TemplateResponse
    ) -> TemplateResponse:
        """Count a password change refused for its old password (the view answers with its
        form again; Django's form check sends no `user_login_failed`)."""
        form = (response.context_data or {}).get("form") if request.META.get(_CHANGING) else None
        if form is not None and "old_password" in getattr(form, "errors", {}):
            record_failure(request.user.get_username(), client_address(request))
        return response


_CHANGING = "beamweaver.password_change"

__all__ = [
    "SETTINGS",
    "Limit",
    "RateLimitMiddleware",
    "account_key",
    "clear_failures",
    "client_address",
    "configured",
    "hit",
    "is_login_view",
    "is_password_change_view",
    "is_reset_view",
    "locked_out",
    "record_failure",
    "too_many",
]
