"""Preset rejection reasons (`BEAMWEAVER["REVIEW_REJECTION_REASONS"]`): a code kept with the
decision for the audit and analytics, and the message the model receives when the
reviewer does not write one."""

from __future__ import annotations

from dataclasses import dataclass

from reviews.conf import conf


@dataclass(frozen=True)
class Reason:
    """One preset reason."""

    code: str
    label: str
    message: str


def rejection_reasons() -> list[Reason]:
    """The configured reasons (the defaults of `reviews.conf` when the setting is absent)."""
    raw = conf.rejection_reasons
    return [Reason(str(r["code"]), str(r["label"]), str(r["message"])) for r in raw]


def reason(code: str) -> Reason | None:
    """The reason with `code`, or `None`."""
    return next((r for r in rejection_reasons() if r.code == code), None)


__all__ = ["Reason", "reason", "rejection_reasons"]
