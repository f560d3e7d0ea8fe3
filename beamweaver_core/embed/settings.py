"""The settings BeamWeaver needs, added to a host project's settings by `configure`.

In the host's settings.py, after its own settings::

    from beamweaver_core.embed.settings import configure

    configure(globals())

`configure` adds what is missing and keeps what the host set: the apps, four
middlewares, a content security policy, pooled PostgreSQL connections, a channel layer and
`BEAMWEAVER` (an empty registry of graphs). A setting the host assigns after the call
overrides ours. The host's user model, login URL and admin are used as they are; only
`django.contrib.admin` is swapped for `BeamWeaverAdminConfig` (the same admin whose object
pages check the model permission before any lookup; `admin=False` keeps the host's).

This module reads no environment variable and imports nothing of Django's setup, so the
product's own settings take their shared parts (the policy, the apps) from here too.
"""

from __future__ import annotations

import copy
from collections.abc import MutableMapping, MutableSequence
from typing import Any

from csp.constants import NONCE

APPS = [
    "channels",
    "django_htmx",
    "template_partials",
    "beamweaver_core.apps.BeamWeaverCoreConfig",
    "beamweaver_core.protocol.apps.ProtocolConfig",
    "reviews.apps.ReviewsConfig",
]
"""BeamWeaver's apps and the third-party apps they use."""

CONTRIB_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
]
"""Django's apps the inbox relies on (users and permissions, sessions, flash messages)."""

ADMIN_APP = "beamweaver_core.apps.BeamWeaverAdminConfig"

# (middleware, the one it must come after): the NUL guard refuses what Postgres cannot
# compare before a session or a query reads it, django-csp sets the page's nonce, the rate
# limit needs the user, django-htmx marks htmx requests.
MIDDLEWARE = [
    (
        "beamweaver_core.nul_guard.NulGuardMiddleware",
        "django.middleware.security.SecurityMiddleware",
    ),
    ("csp.middleware.CSPMiddleware", "django.contrib.sessions.middleware.SessionMiddleware"),
    (
        "beamweaver_core.ratelimit.RateLimitMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
    ),
    ("django_htmx.middleware.HtmxMiddleware", None),
]

CONTENT_SECURITY_POLICY: dict[str, Any] = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        # csp.constants.NONCE (not the string "'nonce'") is what django-csp replaces
        # with the request's nonce.
        "script-src": ["'self'", NONCE],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
        "base-uri": ["'none'"],
        "object-src": ["'none'"],
    }
}
"""No inline script or style anywhere; scripts carry the request's nonce."""

POSTGRES_ENGINES = frozenset({"django.db.backends.postgresql", "beamweaver_core.postgres"})


def pool_options(
    max_size: int = 20, timeout: float = 10.0, max_idle: float = 60.0
) -> dict[str, Any]:
    """psycopg_pool options for `DATABASES[...]["OPTIONS"]["pool"]`: a web process's size
    (a worker process sizes its own by its threads, `beamweaver_core.postgres.pool_size`);
    connections opened for a burst are closed after a minute idle."""
    return {"min_size": 1, "max_size": max_size, "timeout": timeout, "max_idle": max_idle}


def database(entry: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A PostgreSQL `DATABASES` entry made fit for BeamWeaver (in place; returned): the
    backend whose pool replaces a dead connection at once, pooled connections checked
    when taken. The host's own `CONN_MAX_AGE` or `OPTIONS["pool"]` are kept."""
    if entry.get("ENGINE") not in POSTGRES_ENGINES:
        raise ValueError(
            f"BeamWeaver runs on PostgreSQL only; this database's ENGINE is "
            f"{entry.get('ENGINE')!r}. Use 'django.db.backends.postgresql'."
        )
    entry["ENGINE"] = "beamweaver_core.postgres"
    options = entry.setdefault("OPTIONS", {})
    if "pool" not in options and not entry.get("CONN_MAX_AGE"):
        # Under ASGI Django advises pooling instead of persistent connections.
        options["pool"] = pool_options()
    entry.setdefault("CONN_MAX_AGE", 0)
    entry.setdefault("CONN_HEALTH_CHECKS", True)
    return entry


def redis_channel_layer(url: str, *, prefix: str = "beamweaver") -> dict[str, Any]:
    """`CHANNEL_LAYERS` on Redis: what several processes or machines share.

    No client-side read timeout: a consumer waits on a blocking pop (`BZPOPMIN`, 5 s on
    the server), and redis-py 8's default `socket_timeout` of 5 s cut those waits short,
    tearing every open websocket down every few seconds (django/channels_redis#422)."""
    host = {"address": url, "socket_timeout": None}
    return {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [host], "prefix": prefix, "capacity": 1000, "expiry": 30},
        }
    }


def _add_after(items: MutableSequence[str], item: str, after: str | None) -> None:
    if item in items:
        return
    if after is not None and after in items:
        items.insert(list(items).index(after) + 1, item)
    else:
        # Without the one it follows (a host without sessions): the system check
        # beamweaver.E040 says what is missing.
        items.append(item)


def configure(namespace: MutableMapping[str, Any], *, admin: bool = True) -> None:
    """Add BeamWeaver's settings to the settings module `namespace` (its `globals()`),
    keeping every setting the host gave (what is still missing, `manage.py check`
    reports: `beamweaver.E040`)."""
    apps = list(namespace.get("INSTALLED_APPS", []))
    if admin and "django.contrib.admin" in apps:
        apps[apps.index("django.contrib.admin")] = ADMIN_APP
    for app in [*CONTRIB_APPS, *APPS]:
        if app not in apps:
            apps.append(app)
    namespace["INSTALLED_APPS"] = apps

    middleware = list(namespace.get("MIDDLEWARE", []))
    for item, after in MIDDLEWARE:
        _add_after(middleware, item, after)
    namespace["MIDDLEWARE"] = middleware

    for template in namespace.get("TEMPLATES", []):
        if template.get("BACKEND") == "django.template.backends.django.DjangoTemplates":
            processors = template.setdefault("OPTIONS", {}).setdefault("context_processors", [])
            for processor in (
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ):
                if processor not in processors:
                    processors.append(processor)
            break

    # BeamWeaver's tables live in the default database; other PostgreSQL ones get the
    # same pool, others are the host's business.
    for alias, entry in namespace.get("DATABASES", {}).items():
        if alias == "default" or entry.get("ENGINE") in POSTGRES_ENGINES:
            database(entry)
    namespace.setdefault("CONTENT_SECURITY_POLICY", copy.deepcopy(CONTENT_SECURITY_POLICY))
    # One process (inline workers) until the host sets a shared layer (redis_channel_layer).
    namespace.setdefault(
        "CHANNEL_LAYERS", {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    )
    conf = namespace.setdefault("BEAMWEAVER", {})
    conf.setdefault("GRAPHS", {})


__all__ = [
    "APPS",
    "CONTENT_SECURITY_POLICY",
    "CONTRIB_APPS",
    "MIDDLEWARE",
    "configure",
    "database",
    "pool_options",
    "redis_channel_layer",
]
