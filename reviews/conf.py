"""The review inbox's `BEAMWEAVER` settings, typed, with their defaults in one place.

The inbox's half of `beamweaver_core.conf` (which it reads through, and which never
imports `reviews`): read when asked, never cached, so `override_settings` and a host
project's settings are seen. Each property is the setting as configured, or its default
when the key is missing or None; what is malformed inside it is reported by the system
checks (`reviews/checks.py`, which read `as_written`), or skipped with an error logged by
the module that parses it (`reviews/policies.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from beamweaver_core.conf import as_written

DEFAULTS: dict[str, Any] = {
    # Review policies in settings (docs/review-operations.md), a list of dicts.
    "REVIEW_POLICIES": (),
    # Webhook endpoints: dicts of {'name', 'url', 'secret', 'events'}.
    "REVIEW_WEBHOOKS": (),
    # Notification channels, name -> dotted path of a class taking no arguments.
    "REVIEW_NOTIFICATION_CHANNELS": {
        "email": "reviews.notifications.email.EmailChannel",
        "webhook": "reviews.notifications.webhooks.WebhookChannel",
    },
    # Preset rejection reasons: a code kept with the decision, the message the model gets.
    "REVIEW_REJECTION_REASONS": (
        {
            "code": "wrong_target",
            "label": "Wrong recipient or target",
            "message": "The target of this action is wrong; check who or what it applies to.",
        },
        {
            "code": "policy",
            "label": "Against policy",
            "message": "This action is against our policy; do not do it.",
        },
        {
            "code": "needs_info",
            "label": "Needs more information",
            "message": "There is not enough information to approve this; ask the user first.",
        },
        {
            "code": "duplicate",
            "label": "Already done",
            "message": "This was already done; do not repeat it.",
        },
    ),
    # Live sockets (inbox, item and thread pages) one user may hold open in one web
    # process (`reviews.live.slots`); one more is refused with close code 4429.
    "LIVE_SOCKETS_PER_USER": 50,
}


def value(key: str) -> Any:
    """`settings.BEAMWEAVER[key]`, or its default (`DEFAULTS`) when missing or None."""
    found = as_written(key)
    return DEFAULTS[key] if found is None else found


class ReviewConf:
    """Typed accessors of the review settings; each property reads the setting again."""

    @property
    def policies(self) -> Sequence[Any]:
        """The review policies of settings, as configured (each parsed by `policies`)."""
        return value("REVIEW_POLICIES") or ()

    @property
    def webhooks(self) -> Sequence[Mapping[str, Any]]:
        """The webhook endpoints, as configured."""
        return value("REVIEW_WEBHOOKS") or ()

    @property
    def notification_channels(self) -> Mapping[str, str]:
        """The channels in force, name -> dotted path; an empty mapping is the default."""
        found: Mapping[str, str] = value("REVIEW_NOTIFICATION_CHANNELS")
        return found or DEFAULTS["REVIEW_NOTIFICATION_CHANNELS"]

    @property
    def rejection_reasons(self) -> Sequence[Mapping[str, str]]:
        """The preset rejection reasons (an empty list: none offered)."""
        found: Sequence[Mapping[str, str]] = value("REVIEW_REJECTION_REASONS")
        return found

    @property
    def live_sockets_per_user(self) -> int:
        """How many live sockets one user may hold open in one web process."""
        return int(value("LIVE_SOCKETS_PER_USER"))


conf = ReviewConf()

__all__ = ["DEFAULTS", "ReviewConf", "conf", "value"]
