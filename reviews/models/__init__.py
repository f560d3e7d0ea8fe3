"""The review app's models, one module per concern: items with their approvals, decisions
and presence (`items`), the audit log (`audit`), review policies (`policies`), API tokens
(`tokens`), and notifications (`notifications`)."""

from __future__ import annotations

from reviews.models.audit import AuditEvent
from reviews.models.items import Approval, Decision, ReviewItem, ReviewPresence
from reviews.models.notifications import (
    NotificationEvent,
    NotificationPreference,
    OutboxMessage,
)
from reviews.models.policies import ReviewPolicy
from reviews.models.tokens import ApiToken

__all__ = [
    "ApiToken",
    "Approval",
    "AuditEvent",
    "Decision",
    "NotificationEvent",
    "NotificationPreference",
    "OutboxMessage",
    "ReviewItem",
    "ReviewPolicy",
    "ReviewPresence",
]
