"""System checks of the observability settings (`beamweaver.E050`-`E052`)."""

from __future__ import annotations

from collections.abc import Sequence

from django.apps import AppConfig
from django.core import checks

from beamweaver_core.conf import conf
from beamweaver_core.observability import access


@checks.register()
def check_metrics_access(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    """`METRICS_ACCESS` is a known mode, and token mode has a long enough token."""
    how = conf.metrics_access
    if how not in access.MODES:
        return [
            checks.Error(
                f"BEAMWEAVER['METRICS_ACCESS'] is {how!r}.",
                hint=f"Use one of {', '.join(map(repr, access.MODES))} (docs/production.md, "
                "Metrics).",
                id="beamweaver.E050",
            )
        ]
    if how == "token" and len(access.token()) < access.MIN_TOKEN_CHARS:
        return [
            checks.Error(
                "BEAMWEAVER['METRICS_ACCESS'] is 'token', but METRICS_TOKEN is missing or "
                f"shorter than {access.MIN_TOKEN_CHARS} characters.",
                hint="Set BEAMWEAVER_METRICS_TOKEN to a random value, e.g. the output of "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`.",
                id="beamweaver.E051",
            )
        ]
    return []


@checks.register()
def check_trace_arguments(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    """`TRACE_TOOL_ARGUMENTS` is a boolean (a string "false" would switch it on)."""
    value = conf.trace_tool_arguments
    if not isinstance(value, bool):
        return [
            checks.Error(
                f"BEAMWEAVER['TRACE_TOOL_ARGUMENTS'] is {value!r}, not True or False.",
                id="beamweaver.E052",
            )
        ]
    return []
