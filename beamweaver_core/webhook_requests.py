"""The HTTP request of every webhook the project sends (review notifications, run
webhooks): one POST, whose answer is its status. Redirects are never followed: urllib
would follow a 301, 302 or 303 with a GET, without the body, to wherever the `Location`
says (an address inside the network included), and count that GET's 2xx as the webhook
delivered; a redirect is an answer like any non-2xx one, and the delivery is retried.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def post(url: str, body: bytes, headers: Mapping[str, str], *, timeout: float) -> int:
    """POST `body` to `url`; the answer's status (3xx included). A network failure or a
    timeout raises `OSError` (`urllib.error.URLError` is one)."""
    request = urllib.request.Request(url, data=body, method="POST", headers=dict(headers))
    try:
        with _opener.open(request, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


__all__ = ["post"]
