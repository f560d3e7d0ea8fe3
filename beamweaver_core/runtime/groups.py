"""Channel-layer group names. Pushes are hints; the truth is always in Postgres."""

from __future__ import annotations

import hashlib

RUNS_CHANNEL = "beamweaver.runs"
"""Workers listen here for "run queued" hints."""

INBOX_GROUP = "inbox"
"""Every open inbox: review items created, claimed, decided."""


def thread_group(thread_id: str) -> str:
    """The group of one thread's live page (run progress, state).

    Group names allow only ASCII letters, digits, hyphens, underscores and periods (and
    100 characters), while thread ids are free text, so the id is hashed.
    """
    digest = hashlib.blake2b(thread_id.encode(), digest_size=16).hexdigest()
    return f"thread.{digest}"


def review_item_group(item_id: int | str) -> str:
    """Presence on one review item ("who else is looking at this")."""
    return f"review.{item_id}"


__all__ = ["INBOX_GROUP", "RUNS_CHANNEL", "review_item_group", "thread_group"]
