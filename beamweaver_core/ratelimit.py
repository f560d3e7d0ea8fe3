"""Rate limits on decisions and logins, counted in Django's cache.

`RateLimitMiddleware` guards two views without changing them:

- `reviews:decide`: each reviewer may POST `RATE_DECISIONS` decisions per window (default
  20 per 10 seconds); beyond that, 429 with `Retry-After`. Other reviewers are unaffected.
  The JSON API's decisions (`reviews:api:decisions`) get the same limit per API token.
- `login`: a username that failed to log in `LOGIN_LOCKOUT` times from one address (default
  5 within 15 minutes) is locked out from that address until the window ends (429 with
  `Retry-After`, even with the right password); a successful login clears the count.
  Every address may also POST the login form `RATE_LOGINS` times per window (default 30 per
  minute), whatever the usernames.

Counters are fixed windows in the default cache: Redis when `REDIS_URL` is set (shared by
every web process), the local-memory cache otherwise. A cache that fails (Redis down or
slow) never blocks a request: the limit is skipped and a warning logged, so decisions keep
working while Redis is away. The client address is `REMOTE_ADDR`; behind a proxy, pass the
real address through (e.g. daphne's `--proxy-headers`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

DEFAULTS = {"RATE_DECISIONS": "20/10", "RATE_LOGINS": "30/60", "LOGIN_LOCKOUT": "5/900"}
_PREFIX = "bw:rl"


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
    """The limit `name` from `settings.BEAMWEAVER` (read at each request)."""
    return Limit.parse(settings.BEAMWEAVER.get(name) or DEFAULTS[name])


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


def _lockout_key(username: str, address: str) -> str:
    return _key("login-failures", username.casefold(), address)


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


class RateLimitMiddleware:
    """Applies the limits above to the decision and login views (by URL name)."""

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
        elif name == "reviews:api:decisions":
            token = request.headers.get("Authorization", "")[:512]
            wait = hit("api-decide", token, configured("RATE_DECISIONS"))
            if wait is not None:
                return too_many("Too many decisions in a short time.", wait, as_json=True)
        elif name == "login":
            address = client_address(request)
            wait = hit("login", address, configured("RATE_LOGINS"))
            if wait is None:
                wait = locked_out(str(request.POST.get("username", "")), address)
            if wait is not None:
                return too_many("Too many login attempts.", wait)
        return None


__all__ = [
    "DEFAULTS",
    "Limit",
    "RateLimitMiddleware",
    "clear_failures",
    "client_address",
    "configured",
    "hit",
    "locked_out",
    "record_failure",
    "too_many",
]
