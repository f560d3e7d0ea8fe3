"""Token authentication for the review API: `Authorization: Bearer <token>`, nothing else.

Session cookies are never looked at, so a browser that is logged in to the inbox cannot be
made to call the API by another site (which is why the API needs no CSRF token). A token
acts as its user, with that user's reviewer permission and review policies.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, cast

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from beamweaver_core.users import User
from reviews.models import ApiToken
from reviews.permissions import can_review
from reviews.token_check import live_token

_P = ParamSpec("_P")


class TokenRequest(HttpRequest):
    """A request an API token authenticated (`token_required`)."""

    api_token: ApiToken


def error(status: int, code: str, message: str, **extra: Any) -> JsonResponse:
    """The API's error body: `{"status", "code", "message"}` (and any `extra`)."""
    return JsonResponse(
        {"status": status, "code": code, "message": message, **extra}, status=status
    )


def _unauthenticated(message: str) -> JsonResponse:
    response = error(401, "unauthenticated", message)
    response["WWW-Authenticate"] = 'Bearer realm="beamweaver"'
    return response


def authenticate(request: HttpRequest) -> ApiToken | JsonResponse:
    """The live token of the request, or the 401/403 answer to send instead."""
    header = request.headers.get("Authorization", "")
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        return _unauthenticated(
            "Send an API token as 'Authorization: Bearer <token>' (session cookies are not "
            "accepted here); an administrator creates tokens in the admin."
        )
    token = live_token(raw.strip())  # one statement, the user's permissions and groups primed
    if token is None:
        return _unauthenticated("This token is unknown, revoked or expired.")
    if not can_review(token.user):
        return error(403, "forbidden", "The token's user does not have the reviewer permission.")
    token.touch()
    return token


def token_required(
    view: Callable[Concatenate[TokenRequest, User, _P], HttpResponse],
) -> Callable[Concatenate[HttpRequest, _P], HttpResponse]:
    """Run `view(request, user, ...)` as the token's user (the token itself is
    `request.api_token`); answer 401/403 otherwise."""

    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request: HttpRequest, /, *args: _P.args, **kwargs: _P.kwargs) -> HttpResponse:
        found = authenticate(request)
        if isinstance(found, JsonResponse):
            return found
        # The request becomes a `TokenRequest` by carrying its token.
        authed = cast("TokenRequest", request)
        authed.api_token = found
        return view(authed, found.user, *args, **kwargs)

    return wrapper


__all__ = ["TokenRequest", "authenticate", "error", "token_required"]
