"""Django settings, twelve-factor: everything comes from the environment.

Defaults are safe for a laptop: the embedded Postgres under `var/` when `DATABASE_URL` is
unset, the in-memory channel layer when `REDIS_URL` is unset, a generated secret key kept
in `var/`, and hosts limited to loopback. Production sets `DEBUG=0`, `BEAMWEAVER_HTTPS=1`,
`SECRET_KEY`, `ALLOWED_HOSTS`, `DATABASE_URL` and `REDIS_URL`, and then passes
`manage.py check --deploy` together with the project's own checks (`beamweaver.E0xx`).
"""

from __future__ import annotations

import copy
import json
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from beamweaver_core.embed.settings import CONTENT_SECURITY_POLICY as _CSP
from beamweaver_core.embed.settings import redis_channel_layer
from beamweaver_core.observability.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("BEAMWEAVER_VAR_DIR") or BASE_DIR / "var")


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def _env_json(name: str, default: Any) -> Any:
    value = os.environ.get(name)
    return json.loads(value) if value else default


def database_from_url(url: str) -> dict[str, Any]:
    """Translate `postgres://user:pass@host:port/name?opt=v` into a DATABASES entry."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ValueError(
            f"DATABASE_URL must be a postgres:// URL, got scheme {parts.scheme!r}; "
            "BeamWeaver runs on PostgreSQL only."
        )
    options: dict[str, Any] = dict(parse_qsl(parts.query))
    host = unquote(parts.hostname or "") or options.pop("host", "")
    return {
        "ENGINE": "beamweaver_core.postgres",
        "NAME": unquote(parts.path.lstrip("/")) or "postgres",
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or ""),
        "OPTIONS": options,
    }


def _secret_key() -> str:
    key = os.environ.get("SECRET_KEY")
    if key:
        return key
    path = VAR_DIR / "secret_key"
    if path.exists():
        return path.read_text().strip()
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key


SECRET_KEY = _secret_key()
DEBUG = _env_bool("DEBUG", False)
HTTPS = _env_bool("BEAMWEAVER_HTTPS", False)
ALLOWED_HOSTS = _env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = _env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "beamweaver_core.apps.BeamWeaverAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "beamweaver_core.apps.BeamWeaverCoreConfig",
    "beamweaver_core.protocol.apps.ProtocolConfig",
    "reviews.apps.ReviewsConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before anything reads the session or the query string (Postgres refuses NUL).
    "beamweaver_core.nul_guard.NulGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "beamweaver_core.ratelimit.RateLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "beamweaver_core.urls"
ASGI_APPLICATION = "beamweaver_core.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "csp.context_processors.nonce",
            ],
        },
    }
]

if os.environ.get("DATABASE_URL"):
    _default_db = database_from_url(os.environ["DATABASE_URL"])
else:
    from beamweaver_core.embedded_postgres import data_dir

    _default_db = {
        "ENGINE": "beamweaver_core.embedded_postgres",
        "NAME": "postgres",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": "",
        "PORT": "",
        "PGDATA": str(data_dir(BASE_DIR)),
        "OPTIONS": {},
    }
# Under ASGI Django advises pooling instead of persistent connections (CONN_MAX_AGE = 0).
_default_db["CONN_MAX_AGE"] = 0
# Pooled connections are checked when taken, so after a Postgres restart dead ones are
# replaced instead of failing the next query (workers reconnect by themselves).
_default_db["CONN_HEALTH_CHECKS"] = True
_default_db["OPTIONS"].setdefault(
    "pool",
    {
        "min_size": 1,
        # A web process's size; a worker process sizes its own pool by its threads
        # (beamweaver_core.postgres.pool_size). The variable fixes every process's size.
        "max_size": int(os.environ.get("BEAMWEAVER_DB_POOL_SIZE", "20")),
        "timeout": float(os.environ.get("BEAMWEAVER_DB_POOL_TIMEOUT", "10")),
        # Connections opened for a burst (or reopened after an outage) are closed again
        # after a minute idle, one at a time, instead of after psycopg_pool's ten.
        "max_idle": float(os.environ.get("BEAMWEAVER_DB_POOL_MAX_IDLE", "60")),
    },
)
_default_db["OPTIONS"].setdefault("application_name", os.environ.get("PGAPPNAME", "beamweaver"))
# The checkpointer prepares its statements explicitly (a super-step is then one bind and
# execute, with no parse or plan); nothing else is prepared automatically. Set
# BEAMWEAVER_DB_PREPARE=0 behind a pooler that cannot keep prepared statements.
if _env_bool("BEAMWEAVER_DB_PREPARE", True):
    _default_db["OPTIONS"].setdefault("prepare_threshold", 2**31 - 1)
_default_db["TEST"] = {"NAME": os.environ.get("BEAMWEAVER_TEST_DB", "test_beamweaver")}
DATABASES = {"default": _default_db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = redis_channel_layer(
        os.environ["REDIS_URL"], prefix=os.environ.get("BEAMWEAVER_CHANNEL_PREFIX", "beamweaver")
    )
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The cache holds rate-limit counters only. Short socket timeouts: a Redis that is down or
# paused makes a limit check fail open within a quarter second, never stall a decision.
if os.environ.get("REDIS_URL"):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["REDIS_URL"],
            "KEY_PREFIX": os.environ.get("BEAMWEAVER_CHANNEL_PREFIX", "beamweaver"),
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "reviews:inbox"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"

# Security headers. The HTTPS-only ones switch on with BEAMWEAVER_HTTPS=1 (production).
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS and _env_bool("BEAMWEAVER_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = 31536000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
# Probes and scrapers ask over plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
if _env_bool("BEAMWEAVER_BEHIND_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_AGE = 60 * 60 * 12
# A refused CSRF check most often means the session changed in another tab; say so.
CSRF_FAILURE_VIEW = "reviews.views.csrf_failure"
# Decisions are small JSON documents; bigger bodies are refused before parsing (413).
DATA_UPLOAD_MAX_MEMORY_SIZE = 512 * 1024

CONTENT_SECURITY_POLICY = copy.deepcopy(_CSP)

# Review notifications by email go through Django's mail framework: SMTP when EMAIL_HOST
# is set, else the console (a laptop has no mail server).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "587"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = _env_bool("EMAIL_USE_TLS", True)
EMAIL_TIMEOUT = 10
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "BeamWeaver <beamweaver@localhost>")

DEFAULT_EXCEPTION_REPORTER_FILTER = (
    "beamweaver_core.exception_reports.RedactingExceptionReporterFilter"
)

# BEAMWEAVER_LOG_FORMAT=json: one JSON object per line, with request, run and thread ids.
LOGGING = logging_config(
    os.environ.get("BEAMWEAVER_LOG_FORMAT", "plain"),
    level=os.environ.get("LOG_LEVEL", "WARNING"),
    beamweaver_level=os.environ.get("BEAMWEAVER_LOG_LEVEL", "INFO"),
)


def _graphs() -> dict[str, str]:
    graphs = {"ops_assistant": "beamweaver_core.demo.agent:OpsAssistant"}
    extra = os.environ.get("BEAMWEAVER_GRAPHS")
    if extra:
        graphs.update(json.loads(extra))
    return graphs


BEAMWEAVER: dict[str, Any] = {
    # name -> "module.path:attribute" (a CompiledGraph, an Agent, an Agent subclass, or a
    # zero-argument factory returning one of those).
    "GRAPHS": _graphs(),
    # name -> {"command", "args", "env", "cwd"} (stdio) or {"url", "headers"} (streamable
    # HTTP), with "prefix", "include", "timeout", "connect_timeout", "at_most_once": MCP
    # servers that registered agents use as mcp_server(name) (runtime/mcp_servers.py).
    "MCP_SERVERS": _env_json("BEAMWEAVER_MCP_SERVERS", {}),
    # "inline": a worker runs inside the web process; "external": only `manage.py
    # beamweaver_worker` processes run graphs. "auto": inline unless REDIS_URL is set.
    "WORKER_MODE": os.environ.get("BEAMWEAVER_WORKER_MODE", "auto"),
    # "count/seconds" (see beamweaver_core.ratelimit): decisions per reviewer, login POSTs
    # per address, failed logins of one username from one address before a lockout,
    # password-reset requests per address and per e-mail address, and live pages
    # (websockets) each user opens.
    "RATE_DECISIONS": os.environ.get("BEAMWEAVER_RATE_DECISIONS", "20/10"),
    "RATE_LOGINS": os.environ.get("BEAMWEAVER_RATE_LOGINS", "30/60"),
    "LOGIN_LOCKOUT": os.environ.get("BEAMWEAVER_LOGIN_LOCKOUT", "5/900"),
    "RATE_RESETS": os.environ.get("BEAMWEAVER_RATE_RESETS", "10/3600"),
    "RATE_RESET_MAILS": os.environ.get("BEAMWEAVER_RATE_RESET_MAILS", "3/3600"),
    "RATE_SOCKETS": os.environ.get("BEAMWEAVER_RATE_SOCKETS", "60/30"),
    "LEASE_SECONDS": float(os.environ.get("BEAMWEAVER_LEASE_SECONDS", "30")),
    "HEARTBEAT_SECONDS": float(os.environ.get("BEAMWEAVER_HEARTBEAT_SECONDS", "5")),
    "POLL_SECONDS": float(os.environ.get("BEAMWEAVER_POLL_SECONDS", "2")),
    "MAX_ATTEMPTS": int(os.environ.get("BEAMWEAVER_MAX_ATTEMPTS", "5")),
    # How often open inbox, item and thread pages re-read their live parts over HTTP, so
    # that a lost websocket hint (Redis down, a dropped message) is caught up.
    "LIVE_POLL_SECONDS": float(os.environ.get("BEAMWEAVER_LIVE_POLL_SECONDS", "20")),
    # How many live pages (websockets) one user may hold open in one web process; the
    # next is refused, and the page says so and tries again later.
    "LIVE_SOCKETS_PER_USER": int(os.environ.get("BEAMWEAVER_LIVE_SOCKETS_PER_USER", "50")),
    # Review operations (docs/review-operations.md). Where deep links in notifications
    # point; policies (defaults; admin rows override them); signed webhook endpoints.
    "BASE_URL": os.environ.get("BEAMWEAVER_BASE_URL", "http://localhost:8000"),
    "REVIEW_POLICIES": _env_json("BEAMWEAVER_REVIEW_POLICIES", []),
    "REVIEW_WEBHOOKS": _env_json("BEAMWEAVER_REVIEW_WEBHOOKS", []),
    # How often each process sweeps deadlines and the notification outbox; retries of a
    # failed notification wait NOTIFY_BACKOFF_SECONDS, then twice as long each time.
    "REVIEW_SWEEP_SECONDS": float(os.environ.get("BEAMWEAVER_REVIEW_SWEEP_SECONDS", "10")),
    "NOTIFY_MAX_ATTEMPTS": int(os.environ.get("BEAMWEAVER_NOTIFY_MAX_ATTEMPTS", "8")),
    "NOTIFY_BACKOFF_SECONDS": float(os.environ.get("BEAMWEAVER_NOTIFY_BACKOFF_SECONDS", "30")),
    # Operations (docs/production.md): who may read /metrics ("private", "token", "off")
    # and its token; whether tool spans carry the (redacted) arguments.
    "METRICS_ACCESS": os.environ.get("BEAMWEAVER_METRICS_ACCESS", "private"),
    "METRICS_TOKEN": os.environ.get("BEAMWEAVER_METRICS_TOKEN", ""),
    "TRACE_TOOL_ARGUMENTS": _env_bool("BEAMWEAVER_TRACE_TOOL_ARGUMENTS", False),
    # A streamed response whose client takes nothing for this long is dropped
    # (beamweaver_core.backpressure).
    "SEND_STALL_SECONDS": float(os.environ.get("BEAMWEAVER_SEND_STALL_SECONDS", "60")),
    # The LangGraph Platform protocol under /lg (docs/protocol.md). Streams and waits read
    # Postgres on every hint and at least every LG_POLL_SECONDS (LG_FALLBACK_POLL_SECONDS
    # when the channel layer is down); a stream of a running run ends after
    # LG_STREAM_MAX_BYTES (clients resume it with Last-Event-ID). Run webhooks are signed
    # with LG_WEBHOOK_SECRET and may only call LG_WEBHOOK_HOSTS ("host" or "*.domain").
    # LG_CORS_ORIGINS: browser origins allowed to call /lg.
    "LG_POLL_SECONDS": float(os.environ.get("BEAMWEAVER_LG_POLL_SECONDS", "2")),
    "LG_FALLBACK_POLL_SECONDS": float(os.environ.get("BEAMWEAVER_LG_FALLBACK_POLL_SECONDS", "0.5")),
    "LG_STREAM_MAX_BYTES": int(
        os.environ.get("BEAMWEAVER_LG_STREAM_MAX_BYTES", str(4 * 1024 * 1024))
    ),
    "LG_WEBHOOK_SECRET": os.environ.get("BEAMWEAVER_LG_WEBHOOK_SECRET", ""),
    "LG_WEBHOOK_HOSTS": _env_list("BEAMWEAVER_LG_WEBHOOK_HOSTS", []),
    # Where any webhook (run or review) may go, beamweaver_core.webhook_urls: these ports,
    # and public addresses only unless WEBHOOK_PRIVATE_ADDRESSES (a receiver on this
    # machine or inside the network); https only with WEBHOOK_HTTPS_ONLY.
    "WEBHOOK_PORTS": [int(p) for p in _env_list("BEAMWEAVER_WEBHOOK_PORTS", ["80", "443"])],
    "WEBHOOK_PRIVATE_ADDRESSES": _env_bool("BEAMWEAVER_WEBHOOK_PRIVATE_ADDRESSES", False),
    "WEBHOOK_HTTPS_ONLY": _env_bool("BEAMWEAVER_WEBHOOK_HTTPS_ONLY", False),
    "LG_CORS_ORIGINS": _env_list("BEAMWEAVER_LG_CORS_ORIGINS", []),
}
