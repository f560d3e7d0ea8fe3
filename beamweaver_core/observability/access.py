"""Who may read `/metrics`: `BEAMWEAVER["METRICS_ACCESS"]` says how.

- `"private"` (the default): clients on a loopback or private address (RFC 1918, IPv6
  unique-local), connecting directly: a request that came through a proxy (it carries
  `X-Forwarded-For`, `Forwarded` or `X-Real-IP`) is refused, since behind a proxy on
  the same network every client looks private.
- `"token"`: clients sending `Authorization: Bearer <BEAMWEAVER["METRICS_TOKEN"]>` (at
  least 32 characters), compared in constant time; from anywhere.
- `"off"`: no endpoint (404).

The system check `beamweaver.E050`/`E051` refuses any other value, and a missing or short
token.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from typing import Any

from beamweaver_core.conf import conf

MODES = ("private", "token", "off")
MIN_TOKEN_CHARS = 32
PROXY_HEADERS = ("X-Forwarded-For", "Forwarded", "X-Real-IP")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request may not read the metrics, and the status to answer with."""

    status: int
    message: str


def mode() -> str:
    return conf.metrics_access


def token() -> str:
    return conf.metrics_token


def _private(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private


def refusal(request: Any) -> Refusal | None:
    """`None` when `request` may read the metrics."""
    how = mode()
    if how == "off":
        return Refusal(404, "The metrics endpoint is off (BEAMWEAVER['METRICS_ACCESS']).")
    if how == "token":
        expected = token()
        given = request.headers.get("Authorization", "")
        scheme, _, value = given.partition(" ")
        if (
            expected
            and scheme.lower() == "bearer"
            and hmac.compare_digest(value.strip().encode(), expected.encode())
        ):
            return None
        return Refusal(401, "Send the metrics token: Authorization: Bearer <token>.")
    if any(request.headers.get(h) for h in PROXY_HEADERS):
        return Refusal(
            403,
            "Metrics are served to private addresses connecting directly, and this request "
            "came through a proxy. Scrape the process directly, or set "
            "BEAMWEAVER['METRICS_ACCESS'] = 'token'.",
        )
    if not _private(str(request.META.get("REMOTE_ADDR", ""))):
        return Refusal(
            403,
            "Metrics are served to private addresses only (BEAMWEAVER['METRICS_ACCESS'] = "
            "'private'); scrape from inside the network, or use a token.",
        )
    return None


__all__ = ["MIN_TOKEN_CHARS", "MODES", "Refusal", "mode", "refusal", "token"]
