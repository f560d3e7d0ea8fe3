"""The webhook channel: a signed JSON POST to each endpoint subscribed to the event.

Endpoints are configured in `BEAMWEAVER["REVIEW_WEBHOOKS"]`, a list of
`{"name", "url", "secret", "events"}` (`events` empty or absent: every event). Each
request carries:

- `X-BeamWeaver-Event`: the event, e.g. `review.created`;
- `X-BeamWeaver-Delivery`: the outbox id (the same on every retry: dedupe on it);
- `X-BeamWeaver-Timestamp`: Unix seconds when this attempt was signed;
- `X-BeamWeaver-Signature`: `sha256=` + hex HMAC-SHA256 with the endpoint's secret over
  `"{timestamp}.{body}"`.

The signature is `beamweaver_core.signatures` (shared with the protocol's run webhooks): a
receiver recomputes the HMAC over the raw body (`verify_signature`) and refuses old
timestamps, so a captured request cannot be replayed later. A non-2xx answer or a network
error is retried from the outbox with exponential backoff; a redirect is not followed
(`beamweaver_core.webhook_requests`): it is a non-2xx answer, retried like the others.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from beamweaver_core.signatures import (
    SIGNATURE_TOLERANCE_SECONDS,
    sign,
    signature_headers,
    verify_signature,
)
from beamweaver_core.users import User
from beamweaver_core.webhook_requests import post
from reviews.conf import conf
from reviews.models import OutboxMessage, ReviewItem
from reviews.notifications.channels import DeliveryError

TIMEOUT_SECONDS = 10.0


def endpoints() -> dict[str, Mapping[str, Any]]:
    """The configured endpoints, by name."""
    return {e["name"]: e for e in conf.webhooks}


class WebhookChannel:
    """Signed POSTs to the endpoints subscribed to an event."""

    def targets(self, event: str, item: ReviewItem, users: Sequence[User]) -> list[str]:
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
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "BeamWeaver-Webhooks/1",
            "X-BeamWeaver-Event": message.event,
            "X-BeamWeaver-Delivery": str(message.pk),
            **signature_headers(endpoint["secret"], body),
        }
        try:
            status = post(endpoint["url"], body, headers, timeout=TIMEOUT_SECONDS)
        except OSError as exc:
            raise DeliveryError(f"{message.target} unreachable: {exc}") from exc
        if not 200 <= status < 300:
            raise DeliveryError(f"HTTP {status} from {message.target}")


__all__ = [
    "SIGNATURE_TOLERANCE_SECONDS",
    "WebhookChannel",
    "endpoints",
    "sign",
    "verify_signature",
]
