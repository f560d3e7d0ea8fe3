"""The websocket Origin check: only pages of this very site may open a socket.

Browsers send cookies with a cross-site websocket handshake, so the Origin header is the
only guard against cross-site websocket hijacking (daphne itself allows a `null` Origin).
Channels' `AllowedHostsOriginValidator` matches the Origin's host against `ALLOWED_HOSTS`
only, ignoring scheme and port: a page on another port of the same host (another app,
SameSite cookies still sent) passed it. `SameOriginValidator` requires the exact origin:

- the Origin is `scheme://host[:port]` of the request itself: the same host and port as
  the `Host` header, which must be in `ALLOWED_HOSTS` (so a DNS-rebound name fails), and
  the scheme `https` when the site runs behind HTTPS (`BEAMWEAVER_HTTPS=1`), else `http`;
- or it equals one entry of `CSRF_TRUSTED_ORIGINS` exactly (no wildcards);
- a missing Origin, `null`, or anything else is refused before the consumer runs.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host


def allowed_origin(origin: str, host: str) -> bool:
    """Whether a handshake with this `Origin` and `Host` comes from the site itself."""
    if not origin or origin == "null":
        return False
    if origin in getattr(settings, "CSRF_TRUSTED_ORIGINS", ()):
        return "*" not in origin
    parts = urlsplit(origin)
    scheme = "https" if getattr(settings, "HTTPS", False) else "http"
    if parts.scheme != scheme or parts.path or parts.query or not parts.netloc:
        return False
    domain, _ = split_domain_port(host.lower())
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    return parts.netloc.lower() == host.lower()


class SameOriginValidator:
    """ASGI middleware refusing websocket handshakes whose Origin is not the site's own."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket":
            headers = dict(scope.get("headers") or ())
            origin = headers.get(b"origin", b"").decode("latin-1")
            host = headers.get(b"host", b"").decode("latin-1")
            if not allowed_origin(origin, host):
                return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)


__all__ = ["SameOriginValidator", "allowed_origin"]
