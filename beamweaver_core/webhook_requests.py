"""The HTTP request of every webhook the project sends (review notifications, run
webhooks): one signed JSON POST, whose answer is its status.

Every request carries:

- `Content-Type: application/json` and `User-Agent: BeamWeaver-Webhooks/1`;
- `X-BeamWeaver-Event`: what happened (`review.created`, `run.success`, ...);
- `X-BeamWeaver-Delivery`: the same on every retry of one delivery (receivers dedupe on it);
- `X-BeamWeaver-Timestamp` and `X-BeamWeaver-Signature` (`beamweaver_core.signatures`).

The URL is checked against the webhook URL rule (`beamweaver_core.webhook_urls`) before
each request, the addresses its host resolves to included, and the request connects to
one of those checked addresses: the name is not resolved again, since a second answer
could lead inside the network (DNS rebinding: a public address for the check, 127.0.0.1
for the connection). The URL's host is still the `Host` header and, for https, the name
sent in SNI and verified against the certificate. No proxy is used, whatever
`http_proxy`/`https_proxy` say: the proxy would resolve the name itself, after our check.

Redirects are never followed: a 301, 302 or 303 would be followed with a GET, without the
body, to wherever the `Location` says (an address inside the network included), and that
GET's 2xx counted as the webhook delivered; a redirect is an answer like any non-2xx one,
and the delivery is retried.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Sequence
from urllib.parse import urlsplit

from beamweaver_core import webhook_urls
from beamweaver_core.signatures import signature_headers

TIMEOUT_SECONDS = 10.0
"""How long one request may take."""

USER_AGENT = "BeamWeaver-Webhooks/1"


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
    network failure, a timeout or an answer that is not HTTP raises `OSError`."""
    webhook_urls.check_url(url, hosts=hosts)
    addresses = webhook_urls.check_destination(url)
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not addresses:
        raise OSError(f"Webhook host {host!r} does not resolve.")
    connection = _connection(parts.scheme, host, parts.port, addresses)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-BeamWeaver-Event": event,
        "X-BeamWeaver-Delivery": delivery,
        "Connection": "close",
        **signature_headers(secret, body),
    }
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("POST", target, body=body, headers=headers)
        with connection.getresponse() as response:
            return int(response.status)
    except http.client.HTTPException as exc:
        raise OSError(f"Webhook host {host!r} did not answer in HTTP: {exc!r}") from exc
    finally:
        connection.close()


def _connection(
    scheme: str, host: str, port: int | None, addresses: list[str]
) -> http.client.HTTPConnection:
    if scheme == "https":
        return _PinnedHTTPSConnection(host, port, addresses)
    return _PinnedHTTPConnection(host, port, addresses)


def _connect(addresses: list[str], port: int) -> socket.socket:
    """A connection to the first of `addresses` that accepts one (the last one's failure
    otherwise), as `socket.create_connection` tries every address of a name; each is an
    address already, so nothing is resolved."""
    for address in addresses[:-1]:
        try:
            return _open(address, port)
        except OSError:
            continue
    return _open(addresses[-1], port)


def _open(address: str, port: int) -> socket.socket:
    sock = socket.create_connection((address, port), TIMEOUT_SECONDS)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """HTTP to `host` (its `Host` header) over a connection to one of `addresses`."""

    def __init__(self, host: str, port: int | None, addresses: list[str]) -> None:
        super().__init__(host, port, timeout=TIMEOUT_SECONDS)
        self.addresses = addresses

    def connect(self) -> None:
        self.sock = _connect(self.addresses, self.port)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to `host` (its `Host` header, the name sent in SNI and verified against the
    certificate) over a connection to one of `addresses`."""

    def __init__(self, host: str, port: int | None, addresses: list[str]) -> None:
        # Made per connection, as urllib does, so the system's certificates are read as
        # they are now (SSL_CERT_FILE included).
        self.tls = ssl.create_default_context()
        super().__init__(host, port, timeout=TIMEOUT_SECONDS, context=self.tls)
        self.addresses = addresses

    def connect(self) -> None:
        sock = _connect(self.addresses, self.port)
        try:
            self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


__all__ = ["TIMEOUT_SECONDS", "USER_AGENT", "post"]
