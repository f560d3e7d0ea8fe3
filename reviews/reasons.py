"""Preset rejection reasons (`BEAMWEAVER["REVIEW_REJECTION_REASONS"]`): a code kept with the
decision for the audit and analytics, and the message the model receives when the
reviewer does not write one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

DEFAULT_REASONS: tuple[dict[str, str], ...] = (
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
)


@dataclass(frozen=True)
class Reason:
    """One preset reason."""

    code: str
    label: str
    message: str


def rejection_reasons() -> list[Reason]:
    """The configured reasons (the defaults when the setting is absent)."""
    raw: Any = settings.BEAMWEAVER.get("REVIEW_REJECTION_REASONS", DEFAULT_REASONS)
    return [Reason(str(r["code"]), str(r["label"]), str(r["message"])) for r in raw]


def reason(code: str) -> Reason | None:
    """The reason with `code`, or `None`."""
    return next((r for r in rejection_reasons() if r.code == code), None)


__all__ = ["DEFAULT_REASONS", "Reason", "reason", "rejection_reasons"]
