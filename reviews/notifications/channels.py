"""Notification channels: the contract every channel implements, and the configured ones.

A channel is named in `BEAMWEAVER["REVIEW_NOTIFICATION_CHANNELS"]` (name -> dotted path of
a class taking no arguments); the defaults are `email` and `webhook`. A third one (chat,
SMS) is a class with the two methods below.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

from django.utils.module_loading import import_string

from beamweaver_core.users import User
from reviews.conf import conf
from reviews.models import OutboxMessage, ReviewItem


class DeliveryError(Exception):
    """A message could not be delivered now; the outbox retries it later."""


class Channel(Protocol):
    # Methods that channels must implement.

    def targets(self, event: str, item: ReviewItem, users: Sequence[User]) -> list[str]:
        """Where `event` about `item` goes through this channel (`users`: who it concerns,
        already filtered to those who may see the item; read when a channel first looks
        at it, so one that addresses no user costs no read)."""

    def send(self, message: OutboxMessage) -> None:
        """Deliver one outbox message; raise `DeliveryError` to have it retried."""


@functools.cache
def _load(path: str) -> Channel:
    return import_string(path)()  # type: ignore[no-any-return]


def configured() -> dict[str, Channel]:
    """The channels in force, by name."""
    return {name: _load(path) for name, path in conf.notification_channels.items()}


__all__ = ["Channel", "DeliveryError", "configured"]
