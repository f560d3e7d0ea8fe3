"""Who calls: an API token as `x-api-key` (what the SDKs send) or `Authorization: Bearer`.

Tokens are the project's API tokens; the token's user, with its permissions, is the
caller of everything. Session cookies are never looked at, so a browser logged in to the
inbox cannot be made to call `/lg` by another site (no CSRF token is needed)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.runtime.access import access

HOW = (
    "Send an API token as the x-api-key header (get_client(url=..., api_key=TOKEN)) or as "
    "'Authorization: Bearer <token>'; an administrator creates tokens in the admin or with "
    "manage.py api_token create."
)


def token_of(request: HttpRequest) -> str:
    """The API token the request sends ("" without one)."""
    raw = request.headers.get("x-api-key", "").strip()
    if not raw:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            raw = value.strip()
    return raw


def caller(request: HttpRequest) -> Any:
    """The user the request's token acts as; 401 without a live token."""
    raw = token_of(request)
    if not raw:
        raise ProtocolError(401, f"Authentication required. {HOW}")
    return token_user(raw)


def token_user(raw: str) -> Any:
    """The user the API token `raw` acts as; 401 if it is not (or no longer) live."""
    user = access().authenticate(raw)
    if user is None:
        raise ProtocolError(
            401,
            "This API token is unknown, revoked or expired, or its user may not use the API "
            "(it needs the reviewer permission).",
        )
    return user


__all__ = ["HOW", "caller", "token_of", "token_user"]
