"""The HTTP request of every webhook the project sends (review notifications, run
webhooks): one signed JSON POST, whose answer is its status.

Every request carries:

- `Content-Type: application/json` and `User-Agent: BeamWeaver-Webhooks/1`;
- `X-BeamWeaver-Event`: what happened (`review.created`, `run.success`, ...);
- `X-BeamWeaver-Delivery`: the same on every retry of one delivery (receivers dedupe on it);
- `X-BeamWeaver-Timestamp` and `X-BeamWeaver-Signature` (`beamweaver_core.signatures`).

The URL is checked against the webhook URL rule (`beamweaver_core.webhook_urls`) before
each request, the addresses its host resolves to included. Redirects are never followed: urllib
would follow a 301, 302 or 303 with a GET, without the body, to wherever the `Location`
says (an address inside the network included), and count that GET's 2xx as the webhook
delivered; a redirect is an answer like any non-2xx one, and the delivery is retried.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from beamweaver_core import webhook_urls
from beamweaver_core.signatures import signature_headers

TIMEOUT_SECONDS = 10.0
"""How long one request may take."""

USER_AGENT = "BeamWeaver-Webhooks/1"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def post(
    url: str,
    body: bytes,
    *,
    event: str,
    delivery: str,
    secret: str,
    hosts: Sequence[str] | None = None,
) -> int:
    """POST the JSON `body` to `url`, signed with `secret`, as `event`; the answer's status
    (3xx included). `hosts`: the hosts a URL from an API client must name
    (`webhook_urls.check_url`). A URL the rule refuses now raises `WebhookUrlError`; a
    network failure or a timeout raises `OSError` (`urllib.error.URLError` is one)."""
    webhook_urls.check_url(url, hosts=hosts)
    webhook_urls.check_destination(url)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-BeamWeaver-Event": event,
        "X-BeamWeaver-Delivery": delivery,
        **signature_headers(secret, body),
    }
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with _opener.open(request, timeout=TIMEOUT_SECONDS) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


__all__ = ["TIMEOUT_SECONDS", "USER_AGENT", "post"]
