"""The `BEAMWEAVER` settings, typed, with their defaults in one place.

Read when asked, never cached, so `override_settings` and a host project's own settings
(`beamweaver_core.embed`) are seen: `conf.lease_seconds` is
`settings.BEAMWEAVER["LEASE_SECONDS"]`, or its default when the key is missing or None.
The project's `settings.py` fills the dict from the environment; a host project may set
only the keys it needs.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    "GRAPHS": {},
    "MCP_SERVERS": {},
    "WORKER_MODE": "auto",
    "WORKER_THREADS": 2,
    "LEASE_SECONDS": 30.0,
    "HEARTBEAT_SECONDS": 5.0,
    "POLL_SECONDS": 2.0,
    "MAX_ATTEMPTS": 5,
    "LIVE_POLL_SECONDS": 20.0,
    # The largest websocket message a client may send (daphne's limit; the live pages
    # split what they push into frames of half of it). Client frames are small presence
    # pings, so it is far below daphne's 1 MiB default.
    "WEBSOCKET_MAX_MESSAGE": 64 * 1024,
    "BASE_URL": "http://localhost:8000",
    "REVIEW_SWEEP_SECONDS": 10.0,
    "NOTIFY_MAX_ATTEMPTS": 8,
    "NOTIFY_BACKOFF_SECONDS": 30.0,
    "METRICS_ACCESS": "private",
    "METRICS_TOKEN": "",
    "TRACE_TOOL_ARGUMENTS": False,
    "LG_POLL_SECONDS": 2.0,
    "LG_FALLBACK_POLL_SECONDS": 0.5,
    "LG_CORS_ORIGINS": (),
    "LG_STREAM_MAX_BYTES": 4 * 1024 * 1024,
    "LG_WEBHOOK_SECRET": "",
    "LG_WEBHOOK_HOSTS": (),
    # Where any webhook may go (`beamweaver_core.webhook_urls`): these ports, public
    # addresses only unless WEBHOOK_PRIVATE_ADDRESSES, http or https unless WEBHOOK_HTTPS_ONLY.
    "WEBHOOK_PORTS": (80, 443),
    "WEBHOOK_PRIVATE_ADDRESSES": False,
    "WEBHOOK_HTTPS_ONLY": False,
    # Rate limits (`beamweaver_core.ratelimit`): "count/seconds".
    "RATE_DECISIONS": "20/10",
    "RATE_LOGINS": "30/60",
    "LOGIN_LOCKOUT": "5/900",
    "RATE_RESETS": "10/3600",
    "RATE_RESET_MAILS": "3/3600",
    "RATE_SOCKETS": "60/30",
    # How long a streamed HTTP response may wait for a client that takes nothing before
    # the server drops it (`beamweaver_core.backpressure`).
    "SEND_STALL_SECONDS": 60.0,
}


def as_written(key: str) -> Any:
    """`settings.BEAMWEAVER[key]` as written, `None` when missing: what system checks
    validate. Everything else reads `value` or a `Conf` property."""
    return (getattr(settings, "BEAMWEAVER", None) or {}).get(key)


def value(key: str) -> Any:
    """`settings.BEAMWEAVER[key]`, or its default (`DEFAULTS`) when missing or None."""
    found = as_written(key)
    return DEFAULTS.get(key) if found is None else found


class Conf:
    """Typed accessors of the project's settings; each property reads the setting again.
    (The review inbox's own settings, `REVIEW_POLICIES` and kin, are `reviews.conf`'s,
    read through `as_written`: this module never imports `reviews`.)"""

    @property
    def worker_mode(self) -> str:
        return str(value("WORKER_MODE"))

    @property
    def worker_threads(self) -> int:
        return int(value("WORKER_THREADS"))

    @property
    def lease_seconds(self) -> float:
        return float(value("LEASE_SECONDS"))

    @property
    def heartbeat_seconds(self) -> float:
        return float(value("HEARTBEAT_SECONDS"))

    @property
    def poll_seconds(self) -> float:
        return float(value("POLL_SECONDS"))

    @property
    def max_attempts(self) -> int:
        return int(value("MAX_ATTEMPTS"))

    @property
    def live_poll_seconds(self) -> float:
        return float(value("LIVE_POLL_SECONDS"))

    @property
    def websocket_max_message(self) -> int:
        return int(value("WEBSOCKET_MAX_MESSAGE"))

    @property
    def base_url(self) -> str:
        return str(value("BASE_URL") or DEFAULTS["BASE_URL"])

    @property
    def review_sweep_seconds(self) -> float:
        return float(value("REVIEW_SWEEP_SECONDS"))

    @property
    def notify_max_attempts(self) -> int:
        return int(value("NOTIFY_MAX_ATTEMPTS"))

    @property
    def notify_backoff_seconds(self) -> float:
        return float(value("NOTIFY_BACKOFF_SECONDS"))

    @property
    def metrics_access(self) -> str:
        return str(value("METRICS_ACCESS"))

    @property
    def metrics_token(self) -> str:
        return str(value("METRICS_TOKEN") or "")

    @property
    def trace_tool_arguments(self) -> Any:
        """As configured (system checks refuse anything but True or False)."""
        return value("TRACE_TOOL_ARGUMENTS")

    def lg_poll_seconds(self, *, live: bool) -> float:
        """How long a protocol stream or wait sleeps between reads: `LG_POLL_SECONDS`
        while the channel layer hints, `LG_FALLBACK_POLL_SECONDS` when it is down."""
        return float(value("LG_POLL_SECONDS" if live else "LG_FALLBACK_POLL_SECONDS"))

    @property
    def lg_stream_max_bytes(self) -> int:
        return int(value("LG_STREAM_MAX_BYTES"))

    @property
    def send_stall_seconds(self) -> float:
        return float(value("SEND_STALL_SECONDS"))

    @property
    def graphs(self) -> Any:
        """The registered graphs, name -> "module.path:attribute" (as configured: system
        checks report a malformed one)."""
        return value("GRAPHS")

    @property
    def mcp_servers(self) -> Any:
        """The declared MCP servers, name -> options (as configured)."""
        return value("MCP_SERVERS")

    @property
    def lg_cors_origins(self) -> tuple[str, ...]:
        return tuple(value("LG_CORS_ORIGINS") or ())

    @property
    def lg_webhook_secret(self) -> str:
        """The secret that signs run webhooks ("": run webhooks are off)."""
        return str(value("LG_WEBHOOK_SECRET") or "")

    @property
    def lg_webhook_hosts(self) -> list[str]:
        """The hosts run webhooks may call."""
        return list(value("LG_WEBHOOK_HOSTS") or ())

    @property
    def webhook_ports(self) -> tuple[int, ...]:
        """The ports any webhook may go to."""
        return tuple(value("WEBHOOK_PORTS") or ())

    @property
    def webhook_private_addresses(self) -> bool:
        """Whether webhooks may go to loopback, private and other non-public addresses."""
        return value("WEBHOOK_PRIVATE_ADDRESSES") is True

    @property
    def webhook_https_only(self) -> bool:
        """Whether webhooks must use https."""
        return value("WEBHOOK_HTTPS_ONLY") is True

    def rate_limit(self, name: str) -> str:
        """The rate limit `name` ("RATE_DECISIONS", "LOGIN_LOCKOUT", ...) as "count/seconds";
        an empty one is its default."""
        return str(value(name) or DEFAULTS[name])


conf = Conf()

__all__ = ["DEFAULTS", "Conf", "as_written", "conf", "value"]
