"""Hints to open pages after a review item changes, sent only once the change commits.

A hint names the item and what happened; each consumer reloads the item from Postgres and
renders it for its own user (see `reviews.live`), so a hint never carries content.
"""

from __future__ import annotations

from django.db import transaction

from beamweaver_core.runtime.groups import thread_group
from beamweaver_core.runtime.publish import group_send
from reviews.groups import INBOX_GROUP, review_item_group

CREATED = "review.created"
UPDATED = "review.updated"
DECIDED = "review.decided"
CANCELLED = "review.cancelled"
EXPIRED = "review.expired"
PRESENCE = "review.presence"


def announce(event: str, item_id: int, thread_id: str) -> None:
    """After commit, tell every open inbox, the thread's page and the item's page."""
    message = {"type": event, "item_id": item_id, "thread_id": thread_id}

    def send() -> None:
        for group in (INBOX_GROUP, thread_group(thread_id), review_item_group(item_id)):
            group_send(group, message)

    transaction.on_commit(send)


def announce_presence(item_id: int) -> None:
    """Who is looking at the item changed (sent at once: presence rows are autocommitted)."""
    group_send(review_item_group(item_id), {"type": PRESENCE, "item_id": item_id})


__all__ = [
    "CANCELLED",
    "CREATED",
    "DECIDED",
    "EXPIRED",
    "PRESENCE",
    "UPDATED",
    "announce",
    "announce_presence",
]
