"""System checks for what BeamWeaver's pages need of the project's settings
(`beamweaver.E040`/`E041`): a host that added BeamWeaver by hand, or removed a piece
`configure` added, learns it from `manage.py check` instead of from a broken page."""

from __future__ import annotations

from collections.abc import Sequence

from django.apps import AppConfig
from django.conf import settings
from django.core import checks

REQUIRED_MIDDLEWARE = (
    "beamweaver_core.nul_guard.NulGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "csp.middleware.CSPMiddleware",
    "beamweaver_core.ratelimit.RateLimitMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
)


@checks.register()
def check_middleware(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    """Every middleware the inbox relies on is installed."""
    installed = list(getattr(settings, "MIDDLEWARE", []))
    return [
        checks.Error(
            f"MIDDLEWARE lacks {name!r}, which BeamWeaver's pages need.",
            hint="Call beamweaver_core.embed.settings.configure(globals()) at the end of "
            "settings.py, or add it (docs/production.md, Embedding).",
            id="beamweaver.E040",
        )
        for name in REQUIRED_MIDDLEWARE
        if name not in installed
    ]


@checks.register()
def check_request_context(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    """The pages read `request` (the CSP nonce) in their templates."""
    for template in getattr(settings, "TEMPLATES", []):
        if template.get("BACKEND") == "django.template.backends.django.DjangoTemplates":
            processors = template.get("OPTIONS", {}).get("context_processors", [])
            if "django.template.context_processors.request" in processors:
                return []
    return [
        checks.Error(
            "No Django template engine has the 'django.template.context_processors.request' "
            "context processor; BeamWeaver's pages need `request` in their templates.",
            hint="Add it to TEMPLATES[...]['OPTIONS']['context_processors'].",
            id="beamweaver.E041",
        )
    ]
