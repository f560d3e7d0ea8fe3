"""Where a webhook may be sent: the one rule for every webhook the project sends, the run
webhooks of the protocol (whose URLs come from API clients) and the review webhooks
(whose URLs the operator writes in `BEAMWEAVER["REVIEW_WEBHOOKS"]`).

A webhook URL is allowed when it is at most `MAX_URL_CHARS` characters, `http` or `https`
(only `https` with `WEBHOOK_HTTPS_ONLY`), with a host and no user name or password; its
port (80 or 443 when it names none) is one of `WEBHOOK_PORTS` (default 80 and 443); and its
host is a public address: loopback, private, link-local (cloud metadata services at
169.254.169.254), shared, reserved, multicast and unspecified addresses are refused, unless
`WEBHOOK_PRIVATE_ADDRESSES` is set. A URL from an API client must also name a host the
operator listed (the protocol's `LG_WEBHOOK_HOSTS`: exact, or `*.example.com` for its
subdomains): operators write the review webhooks' URLs themselves.

Only the operator loosens the rule, in settings; an API client can only choose a URL inside
it. What the URL says is checked where it is accepted (`check_url`: the protocol's 422,
the system checks, before each request); where its host name leads, when it is accepted
from an API client and again before each request (`check_destination`), so a name that
resolves to an internal address is refused too. A request then connects to the addresses
that check returned, and never through a proxy (`beamweaver_core.webhook_requests`).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from urllib.parse import urlsplit

from beamweaver_core.conf import conf
from beamweaver_core.exceptions import BeamWeaverError

MAX_URL_CHARS = 4096
"""The longest webhook URL (LangGraph's server allows as many)."""

_DEFAULT_PORTS = {"http": 80, "https": 443}

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class WebhookUrlError(BeamWeaverError, ValueError):
    """A URL no webhook may be sent to; the message says what to change."""


def check_url(url: str, *, hosts: Sequence[str] | None = None) -> str:
    """`url` if what it says is allowed, else `WebhookUrlError`; `hosts` are the hosts a URL
    from an API client must name (`None` for a URL the operator wrote)."""
    if len(url) > MAX_URL_CHARS:
        raise WebhookUrlError(
            f"A webhook URL may be at most {MAX_URL_CHARS} characters; this one has {len(url)}."
        )
    if not url.isascii() or any(c <= " " or c == "\x7f" for c in url):
        raise WebhookUrlError(
            "A webhook URL must be ASCII with no spaces or control characters: "
            "percent-encode its path and write an international host name in its xn-- form."
        )
    parts = urlsplit(url)
    schemes = ("https",) if conf.webhook_https_only else ("http", "https")
    if parts.scheme not in schemes:
        raise WebhookUrlError(
            "A webhook URL must start with https:// on this server (BEAMWEAVER_WEBHOOK_HTTPS_ONLY)."
            if conf.webhook_https_only
            else "A webhook URL must start with http:// or https://."
        )
    host = parts.hostname or ""
    if not host or parts.username is not None or parts.password is not None:
        raise WebhookUrlError("A webhook URL needs a host, and no user name or password.")
    port = _port(url)
    if port not in conf.webhook_ports:
        allowed = ", ".join(str(p) for p in conf.webhook_ports)
        raise WebhookUrlError(
            f"Webhook port {port} is not allowed; allowed: {allowed} (BEAMWEAVER_WEBHOOK_PORTS)."
        )
    if hosts is not None and not any(_names(host, listed.lower()) for listed in hosts):
        raise WebhookUrlError(
            f"Webhook host {host!r} is not allowed; allowed: {', '.join(hosts) or 'none'} "
            "(BEAMWEAVER_LG_WEBHOOK_HOSTS)."
        )
    address = _literal_address(host)
    if address is not None:
        _check_address(host, address)
    return url


def check_destination(url: str) -> list[str]:
    """The addresses the host of `url` (allowed by `check_url`) resolves to, in the
    resolver's order, if the rule allows every one; `WebhookUrlError` if it refuses any. A
    request connects to these rather than resolving the name again, whose answer could have
    changed since (DNS rebinding). A name that does not resolve has none and passes here: a
    request to it fails anyway."""
    host = urlsplit(url).hostname or ""
    try:
        found = socket.getaddrinfo(host, _port(url), type=socket.SOCK_STREAM)
    except OSError:
        return []
    addresses = list(dict.fromkeys(str(sockaddr[0]) for *_, sockaddr in found))
    for address in addresses:
        _check_address(host, ipaddress.ip_address(address.split("%")[0]))
    return addresses


def _port(url: str) -> int:
    parts = urlsplit(url)
    try:
        return parts.port or _DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise WebhookUrlError("A webhook URL's port must be a number from 1 to 65535.") from None


def _names(host: str, listed: str) -> bool:
    return host == listed or (listed.startswith("*.") and host.endswith(listed[1:]))


def _literal_address(host: str) -> _Address | None:
    """The address `host` spells, if it is one: also the short and numeric forms the
    resolver takes for IPv4 (`127.1`, `2130706433`, `0x7f.0.0.1`)."""
    try:
        return ipaddress.ip_address(host.split("%", maxsplit=1)[0])
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
"""The well-known NAT64 prefix (RFC 6052): a gateway maps `64:ff9b::a00:1` to 10.0.0.1."""
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
"""The local-use NAT64 prefix (RFC 8215): a network's own translation, never public."""


def _embedded_ipv4(address: _Address) -> _Address:
    """The IPv4 address an IPv6 one leads to where it spells one (IPv4-mapped, NAT64's
    well-known prefix, 6to4), else `address`: Python calls `64:ff9b::a00:1` and
    `2002:7f00:1::` global, though they reach 10.0.0.1 and 127.0.0.1."""
    if not isinstance(address, ipaddress.IPv6Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    return address


def _check_address(host: str, address: _Address) -> None:
    if conf.webhook_private_addresses:
        return
    address = _embedded_ipv4(address)
    if address.is_global and not address.is_multicast and address not in _LOCAL_NAT64:
        return
    kind = next(
        (
            name
            for name, flag in (
                ("loopback", address.is_loopback),
                ("unspecified", address.is_unspecified),
                ("link-local", address.is_link_local),
                ("multicast", address.is_multicast),
                ("private", address.is_private),
            )
            if flag
        ),
        "non-public",
    )
    shown = repr(host) if host == str(address) else f"{host!r} ({address})"
    raise WebhookUrlError(
        f"Webhook host {shown} is not a public address ({kind}): webhooks go to public "
        "addresses only unless BEAMWEAVER_WEBHOOK_PRIVATE_ADDRESSES is set."
    )


__all__ = ["MAX_URL_CHARS", "WebhookUrlError", "check_destination", "check_url"]
