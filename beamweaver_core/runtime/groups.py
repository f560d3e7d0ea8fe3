"""Channel-layer group names. Pushes are hints; the truth is always in Postgres."""

from __future__ import annotations

import hashlib

RUNS_CHANNEL = "beamweaver.runs"
"""Workers listen here for "run queued" hints."""


def thread_group(thread_id: str) -> str:
    """The group of one thread's live page (run progress, state).

    Group names allow only ASCII letters, digits, hyphens, underscores and periods (and
    100 characters), while thread ids are free text, so the id is hashed.
    """
    digest = hashlib.blake2b(thread_id.encode(), digest_size=16).hexdigest()
    return f"thread.{digest}"


__all__ = ["RUNS_CHANNEL", "thread_group"]
