"""The webhook channel: a signed JSON POST to each endpoint subscribed to the event.

Endpoints are configured in `BEAMWEAVER["REVIEW_WEBHOOKS"]`, a list of
`{"name", "url", "secret", "events"}` (`events` empty or absent: every event). Each
request carries:

- `X-BeamWeaver-Event`: the event, e.g. `review.created`;
- `X-BeamWeaver-Delivery`: the outbox id (the same on every retry: dedupe on it);
- `X-BeamWeaver-Timestamp`: Unix seconds when this attempt was signed;
- `X-BeamWeaver-Signature`: `sha256=` + hex HMAC-SHA256 with the endpoint's secret over
  `"{timestamp}.{body}"`.

A receiver recomputes the HMAC over the raw body (`verify_signature`) and refuses old
timestamps, so a captured request cannot be replayed later. A non-2xx answer or a network
error is retried from the outbox with exponential backoff.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings

from reviews.models import OutboxMessage, ReviewItem
from reviews.notifications.channels import DeliveryError

TIMEOUT_SECONDS = 10.0
SIGNATURE_TOLERANCE_SECONDS = 300


def endpoints() -> dict[str, Mapping[str, Any]]:
    """The configured endpoints, by name."""
    return {e["name"]: e for e in settings.BEAMWEAVER.get("REVIEW_WEBHOOKS") or ()}


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `X-BeamWeaver-Signature` value of `body` sent at `timestamp`."""
    signed = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


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


class WebhookChannel:
    """Signed POSTs to the endpoints subscribed to an event."""

    def targets(self, event: str, item: ReviewItem, users: Sequence[Any]) -> list[str]:
        return [
            name
            for name, endpoint in endpoints().items()
            if not endpoint.get("events") or event in endpoint["events"]
        ]

    def send(self, message: OutboxMessage) -> None:
        endpoint = endpoints().get(message.target)
        if endpoint is None:
            raise DeliveryError(f"no webhook named {message.target!r} is configured any more")
        body = json.dumps(
            {"delivery": message.pk, **message.payload}, sort_keys=True, ensure_ascii=False
        ).encode()
        timestamp = int(time.time())
        request = urllib.request.Request(
            endpoint["url"],
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "User-Agent": "BeamWeaver-Webhooks/1",
                "X-BeamWeaver-Event": message.event,
                "X-BeamWeaver-Delivery": str(message.pk),
                "X-BeamWeaver-Timestamp": str(timestamp),
                "X-BeamWeaver-Signature": sign(endpoint["secret"], timestamp, body),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            raise DeliveryError(f"HTTP {exc.code} from {message.target}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise DeliveryError(f"{message.target} unreachable: {exc}") from exc
        if not 200 <= status < 300:
            raise DeliveryError(f"HTTP {status} from {message.target}")


__all__ = ["WebhookChannel", "endpoints", "sign", "verify_signature"]
