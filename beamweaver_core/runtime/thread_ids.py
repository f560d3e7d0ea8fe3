"""What a thread id may be, checked where thread ids enter: `start_run` (and so the
inbox, the API and `manage.py run_graph --thread`).

A thread id is 1 to 128 characters of ASCII letters, digits, `-`, `_`, `.` and `:`,
starting with a letter or a digit: `uuid4().hex` (the default), a uuid with hyphens,
`approval-1`, `hitl-review-1` and `tenant:42.order-7` are valid. A slash, a space, a
percent sign, a leading dot, control, bidi and other non-ASCII characters are not, so a
thread id is always a single URL path segment and reads the same to every reviewer.

Threads written by the engine's checkpointer directly (a graph invoked with a
`PostgresCheckpointer` outside the runtime) are not checked; the inbox shows every thread
id escaped with its invisible characters marked, and builds its links so that no id can
leave its path segment (`reviews.converters`).
"""

from __future__ import annotations

import re

from beamweaver_core.exceptions import BeamWeaverError

MAX_THREAD_ID_CHARS = 128
THREAD_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}"
_RULE = re.compile(THREAD_ID_PATTERN)


class InvalidThreadIdError(BeamWeaverError, ValueError):
    """A thread id outside the rule of `beamweaver_core.runtime.thread_ids`."""


def is_valid(thread_id: object) -> bool:
    """Whether `thread_id` follows the rule."""
    return isinstance(thread_id, str) and _RULE.fullmatch(thread_id) is not None


def check(thread_id: object) -> str:
    """`thread_id` if it follows the rule; `InvalidThreadIdError` saying why not."""
    if is_valid(thread_id):
        return thread_id  # type: ignore[return-value]
    shown = ascii(thread_id)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    raise InvalidThreadIdError(
        f"Thread id {shown} is not valid: use 1 to {MAX_THREAD_ID_CHARS} ASCII letters, "
        "digits, '-', '_', '.' or ':', starting with a letter or digit (e.g. 'refund-1234' "
        "or a uuid)."
    )


__all__ = ["MAX_THREAD_ID_CHARS", "THREAD_ID_PATTERN", "InvalidThreadIdError", "check", "is_valid"]
