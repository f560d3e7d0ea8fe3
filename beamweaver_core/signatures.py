"""Signed webhook requests, one scheme for every webhook the project sends (the review
notifications and the protocol's run webhooks).

A request carries `X-BeamWeaver-Timestamp` (Unix seconds when it was signed) and
`X-BeamWeaver-Signature`: `sha256=` + hex HMAC-SHA256 with the endpoint's secret over
`"{timestamp}.{body}"`. A receiver recomputes it over the raw body (`verify_signature`)
and refuses old timestamps, so a captured request cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_TOLERANCE_SECONDS = 300


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `X-BeamWeaver-Signature` value of `body` sent at `timestamp`."""
    signed = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signature_headers(secret: str, body: bytes, *, now: float | None = None) -> dict[str, str]:
    """The timestamp and signature headers of a request with `body`, signed now."""
    timestamp = int(now if now is not None else time.time())
    return {
        "X-BeamWeaver-Timestamp": str(timestamp),
        "X-BeamWeaver-Signature": sign(secret, timestamp, body),
    }


def verify_signature(
    secret: str,
    timestamp: str,
    body: bytes,
    signature: str,
    *,
    now: float | None = None,
    tolerance: int = SIGNATURE_TOLERANCE_SECONDS,
) -> bool:
    """What a receiver checks: the signature matches and the timestamp is recent."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    if abs((now if now is not None else time.time()) - sent) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, sent, body), signature)


__all__ = ["SIGNATURE_TOLERANCE_SECONDS", "sign", "signature_headers", "verify_signature"]
