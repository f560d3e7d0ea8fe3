"""Notifications about review items through pluggable channels (email, signed webhooks),
queued in a Postgres outbox with the change they announce and delivered by the sweeper.

`notify(event, item)` is the one entry point; see `dispatch` for who hears about what,
`channels` for the channel contract, `outbox` for delivery and retries.
"""

from __future__ import annotations

from reviews.notifications.dispatch import notify

__all__ = ["notify"]
