"""System checks of the review settings (ids `beamweaver.E02x`), run at startup and by
`manage.py check`: a mistake in a policy or a webhook is reported with the fix instead of
surfacing later in a sweep."""

from __future__ import annotations

from collections.abc import Sequence

from django.apps import AppConfig
from django.core import checks
from django.utils.module_loading import import_string

from beamweaver_core.conf import as_written
from beamweaver_core.webhook_urls import WebhookUrlError, check_url
from reviews.models import NotificationEvent
from reviews.policies import parse_settings_policy

_FIELDS = "{'name', 'url', 'secret', 'events'}"


@checks.register()
def check_review_policies(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    raw = as_written("REVIEW_POLICIES") or []
    if not isinstance(raw, list):
        return [checks.Error("BEAMWEAVER['REVIEW_POLICIES'] must be a list.", id="beamweaver.E020")]
    errors: list[checks.CheckMessage] = []
    seen: dict[tuple[str, str], str] = {}
    for index, policy in enumerate(raw):
        try:
            parsed = parse_settings_policy(policy)
        except ValueError as exc:
            errors.append(
                checks.Error(
                    f"BEAMWEAVER['REVIEW_POLICIES'][{index}]: {exc}.",
                    hint="See docs/review-operations.md for the keys of a policy.",
                    id="beamweaver.E021",
                )
            )
            continue
        scope = (parsed.graph, parsed.tool)
        if scope in seen:
            errors.append(
                checks.Error(
                    f"Review policies {seen[scope]!r} and {parsed.name!r} have the same graph "
                    "and tool.",
                    hint="Merge them: only one policy can apply to a scope.",
                    id="beamweaver.E022",
                )
            )
        seen[scope] = parsed.name
    return errors


@checks.register()
def check_rejection_reasons(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    raw = as_written("REVIEW_REJECTION_REASONS")
    if raw is None:
        return []
    fine = isinstance(raw, list | tuple) and all(
        isinstance(r, dict)
        and all(isinstance(r.get(k), str) and r.get(k) for k in ("code", "label", "message"))
        for r in raw
    )
    if fine and len({r["code"] for r in raw}) == len(raw):
        return []
    return [
        checks.Error(
            "BEAMWEAVER['REVIEW_REJECTION_REASONS'] must be a list of "
            "{'code', 'label', 'message'} with distinct codes.",
            id="beamweaver.E023",
        )
    ]


@checks.register()
def check_webhooks(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    raw = as_written("REVIEW_WEBHOOKS") or []
    errors: list[checks.CheckMessage] = []
    if not isinstance(raw, list):
        raw = [raw]
    names = set()
    for index, hook in enumerate(raw):
        where = f"BEAMWEAVER['REVIEW_WEBHOOKS'][{index}]"
        problem = ""
        if not isinstance(hook, dict):
            problem = f"must be a dict {_FIELDS}"
        elif not isinstance(hook.get("name"), str) or not hook["name"] or hook["name"] in names:
            problem = "needs a distinct non-empty 'name'"
        elif not isinstance(hook.get("url"), str):
            problem = "needs an http(s) 'url'"
        elif (refused := _url_problem(hook["url"])) is not None:
            problem = f"has a 'url' webhooks may not go to: {refused}"
        elif not isinstance(hook.get("secret"), str) or len(hook["secret"]) < 16:
            problem = "needs a 'secret' of at least 16 characters (it signs every request)"
        elif not set(hook.get("events") or ()) <= set(NotificationEvent.values):
            problem = f"'events' must be drawn from {sorted(NotificationEvent.values)}"
        if problem:
            errors.append(checks.Error(f"{where} {problem}.", id="beamweaver.E024"))
        else:
            names.add(hook["name"])
    return errors


def _url_problem(url: str) -> str | None:
    try:
        check_url(url)
    except WebhookUrlError as exc:
        return str(exc).rstrip(".")
    return None


@checks.register()
def check_notification_channels(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    raw = as_written("REVIEW_NOTIFICATION_CHANNELS")
    if raw is None:
        return []
    errors: list[checks.CheckMessage] = []
    for name, path in dict(raw).items():
        try:
            import_string(path)
        except ImportError as exc:
            errors.append(
                checks.Error(
                    f"Notification channel {name!r}: cannot import {path!r} ({exc}).",
                    id="beamweaver.E025",
                )
            )
    return errors


@checks.register()
def check_live_sockets_per_user(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    raw = as_written("LIVE_SOCKETS_PER_USER")
    if raw is None or (isinstance(raw, int) and not isinstance(raw, bool) and raw > 0):
        return []
    return [
        checks.Error(
            f"BEAMWEAVER['LIVE_SOCKETS_PER_USER'] must be a whole number above 0, not {raw!r}.",
            hint="It bounds the live pages one user holds open in one web process; "
            "the default is 50.",
            id="beamweaver.E026",
        )
    ]


__all__ = [
    "check_live_sockets_per_user",
    "check_notification_channels",
    "check_rejection_reasons",
    "check_review_policies",
    "check_webhooks",
]
