"""The webhook channel: a signed JSON POST to each endpoint subscribed to the event.

Endpoints are configured in `BEAMWEAVER["REVIEW_WEBHOOKS"]`, a list of
`{"name", "url", "secret", "events"}` (`events` empty or absent: every event). The request
and its headers are `beamweaver_core.webhook_requests`' (shared with the protocol's run
webhooks), signed with the endpoint's secret; its own are the event
(`X-BeamWeaver-Event`, e.g. `review.created`) and the outbox id as `X-BeamWeaver-Delivery`
(the same on every retry: dedupe on it). A receiver recomputes the signature over the raw
body (`verify_signature`) and refuses old timestamps, so a captured request cannot be
replayed later. A non-2xx answer or a network error is retried from the outbox with
exponential backoff; a redirect is not followed: it is a non-2xx answer, retried like the
others.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from beamweaver_core.signatures import SIGNATURE_TOLERANCE_SECONDS, sign, verify_signature
from beamweaver_core.users import User
from beamweaver_core.webhook_requests import post
from reviews.conf import conf
from reviews.models import OutboxMessage, ReviewItem
from reviews.notifications.channels import DeliveryError


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
        try:
            status = post(
                endpoint["url"],
                body,
                event=message.event,
                delivery=str(message.pk),
                secret=endpoint["secret"],
            )
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
