"""The email channel: Django's mail framework (`EMAIL_BACKEND`), to each concerned reviewer
who has an address and wants the event (see `NotificationPreference`)."""

from __future__ import annotations

from collections.abc import Sequence

from django.core.mail import send_mail
from django.template.loader import render_to_string

from beamweaver_core.users import User
from reviews.models import NotificationPreference, OutboxMessage, ReviewItem
from reviews.models.notifications import default_email_events
from reviews.notifications.channels import DeliveryError


def wants_email(user: User, event: str, preference: NotificationPreference | None) -> bool:
    """Whether `user` asked for email about `event` (the defaults when they never chose)."""
    if not user.email:
        return False
    if preference is None:
        return event in default_email_events()
    return preference.email_enabled and event in preference.email_events


class EmailChannel:
    """Plain-text email with the deep link to the item."""

    def targets(self, event: str, item: ReviewItem, users: Sequence[User]) -> list[str]:
        with_email = [u for u in users if u.email]
        chosen = {p.user_id: p for p in NotificationPreference.objects.filter(user__in=with_email)}
        return sorted({u.email for u in with_email if wants_email(u, event, chosen.get(u.pk))})

    def send(self, message: OutboxMessage) -> None:
        body = render_to_string("reviews/notification_email.txt", {"message": message.payload})
        try:
            send_mail(
                # Tool names come from a model: never let one break the header.
                subject=" ".join(f"[BeamWeaver] {message.payload['summary']}".split()),
                message=body,
                from_email=None,
                recipient_list=[message.target],
            )
        except (OSError, ValueError) as exc:
            raise DeliveryError(f"{type(exc).__name__}: {exc}") from exc


__all__ = ["EmailChannel", "wants_email"]
