"""The inbox's channel-layer groups (the runtime's own are in `runtime.groups`). Pushes
are hints; the truth is always in Postgres."""

from __future__ import annotations

INBOX_GROUP = "inbox"
"""Every open inbox: review items created, claimed, decided."""


def review_item_group(item_id: int | str) -> str:
    """Presence on one review item ("who else is looking at this")."""
    return f"review.{item_id}"


__all__ = ["INBOX_GROUP", "review_item_group"]
