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
others. An endpoint whose URL the webhook URL rule (`beamweaver_core.webhook_urls`) refuses
is not notified (the `beamweaver.E024` check names it), and a queued message to it fails
and is retried, until the URL or the rule is changed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from beamweaver_core.signatures import SIGNATURE_TOLERANCE_SECONDS, sign, verify_signature
from beamweaver_core.users import User
from beamweaver_core.webhook_requests import post
from beamweaver_core.webhook_urls import WebhookUrlError, check_url
from reviews.conf import conf
from reviews.models import OutboxMessage, ReviewItem
from reviews.notifications.channels import DeliveryError

logger = logging.getLogger(__name__)


def endpoints() -> dict[str, Mapping[str, Any]]:
    """The configured endpoints, by name."""
    return {e["name"]: e for e in conf.webhooks}


def _allowed(name: str, url: str) -> bool:
    try:
        check_url(url)
    except WebhookUrlError as exc:
        logger.error("Review webhook %r is not notified: %s", name, exc)
        return False
    return True


class WebhookChannel:
    """Signed POSTs to the endpoints subscribed to an event (and whose URL the webhook URL
    rule allows: `manage.py check` reports the others)."""

    def targets(self, event: str, item: ReviewItem, users: Sequence[User]) -> list[str]:
        return [
            name
            for name, endpoint in endpoints().items()
            if (not endpoint.get("events") or event in endpoint["events"])
            and _allowed(name, endpoint["url"])
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
        except WebhookUrlError as exc:
            raise DeliveryError(f"{message.target} refused: {exc}") from exc
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
