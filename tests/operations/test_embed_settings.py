"""`configure(globals())`: what it adds to a host's settings, and what it leaves."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import checks

from beamweaver_core.embed.settings import ADMIN_APP, CONTENT_SECURITY_POLICY, configure


def _host() -> dict[str, Any]:
    return {
        "INSTALLED_APPS": ["django.contrib.admin", "django.contrib.auth", "shop"],
        "MIDDLEWARE": [
            "django.middleware.security.SecurityMiddleware",
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.common.CommonMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
            "shop.middleware.Audit",
        ],
        "TEMPLATES": [
            {"BACKEND": "django.template.backends.django.DjangoTemplates", "OPTIONS": {}}
        ],
        "DATABASES": {
            "default": {"ENGINE": "django.db.backends.postgresql", "NAME": "shop"},
            "legacy": {"ENGINE": "django.db.backends.postgresql", "CONN_MAX_AGE": 600},
        },
        "CHANNEL_LAYERS": {"default": {"BACKEND": "shop.layers.Custom"}},
        "BEAMWEAVER": {"GRAPHS": {"refunds": "shop.agents:Refunds"}},
    }


def test_configure_adds_what_is_missing_and_keeps_the_hosts_settings() -> None:
    host = _host()
    configure(host)
    apps = host["INSTALLED_APPS"]
    assert apps[0] == ADMIN_APP and "django.contrib.admin" not in apps
    assert apps[1:3] == ["django.contrib.auth", "shop"]
    assert apps[-3:] == [
        "beamweaver_core.apps.BeamWeaverCoreConfig",
        "beamweaver_core.protocol.apps.ProtocolConfig",
        "reviews.apps.ReviewsConfig",
    ]
    assert "django.contrib.sessions" in apps and "channels" in apps
    middleware = host["MIDDLEWARE"]
    assert middleware.index("beamweaver_core.nul_guard.NulGuardMiddleware") == 1
    assert middleware.index("csp.middleware.CSPMiddleware") == 3  # right after sessions
    assert middleware.index("beamweaver_core.ratelimit.RateLimitMiddleware") == 6
    assert middleware[-1] == "django_htmx.middleware.HtmxMiddleware"
    assert "shop.middleware.Audit" in middleware
    processors = host["TEMPLATES"][0]["OPTIONS"]["context_processors"]
    assert "django.template.context_processors.request" in processors
    default, legacy = host["DATABASES"]["default"], host["DATABASES"]["legacy"]
    assert default["ENGINE"] == "beamweaver_core.postgres"
    assert default["OPTIONS"]["pool"]["max_size"] == 20 and default["CONN_MAX_AGE"] == 0
    assert "pool" not in legacy["OPTIONS"] and legacy["CONN_MAX_AGE"] == 600  # the host's
    assert host["CHANNEL_LAYERS"] == {"default": {"BACKEND": "shop.layers.Custom"}}
    assert host["BEAMWEAVER"] == {"GRAPHS": {"refunds": "shop.agents:Refunds"}}
    assert host["CONTENT_SECURITY_POLICY"] == CONTENT_SECURITY_POLICY
    assert host["CONTENT_SECURITY_POLICY"] is not CONTENT_SECURITY_POLICY

    again = _host()
    configure(again)
    configure(again)  # twice changes nothing more
    assert again["MIDDLEWARE"] == middleware and again["INSTALLED_APPS"] == apps


def test_configure_keeps_the_hosts_admin_when_asked_and_refuses_other_databases() -> None:
    host = _host()
    configure(host, admin=False)
    assert "django.contrib.admin" in host["INSTALLED_APPS"]
    host = _host()
    host["DATABASES"]["default"]["ENGINE"] = "django.db.backends.mysql"
    with pytest.raises(ValueError, match="PostgreSQL only"):
        configure(host)


def test_missing_middleware_is_a_system_check_error(settings: Any) -> None:
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if "htmx" not in m]
    errors = [m for m in checks.run_checks() if m.id == "beamweaver.E040"]
    assert len(errors) == 1 and "django_htmx.middleware.HtmxMiddleware" in errors[0].msg
