"""Who may change a thread they see: its metadata, its state (a state update, a fork or
replay), its runs' records, the thread itself, or its work (a new run on it).

One rule with cancelling (`reviews.cancelling`), asked of the thread's latest run: its
requester (who started the thread's work), a reviewer who may reject every review the
thread waits for, or a holder of "Can cancel any run". A change can end or redo what its
requester started and drop what its reviewers wait on, as a cancel can, so it is theirs
to make. Managers see every thread but get no right to change one from that alone.

A thread nobody has started work on (no run yet) is nobody's: whoever sees it may change
it, as they may start its first run (and so become its requester). A replay or fork is a
change like any other, and its run carries the thread's work on (`Run.carries_on`): the
forker does not become the requester.
"""

from __future__ import annotations

from beamweaver_core.models import Run, Thread
from beamweaver_core.users import User
from reviews.cancelling import cancel_refusal
from reviews.outcomes import Code, Outcome
from reviews.permissions import can_review

NOT_ALLOWED = (
    "You may not change this thread: as for cancelling its run, only the requester of its "
    "runs, a reviewer who may reject every review it waits for, or a holder of the "
    "permission “Can cancel any run” may."
)


def change_refusal(user: User, thread: Thread) -> Outcome | None:
    """Why `user` may not change `thread` (`None`: they may); see the module's rule. The
    caller has checked that `user` sees the thread."""
    if not can_review(user):
        return Outcome(Code.NOT_ALLOWED, NOT_ALLOWED)
    latest = Run.objects.filter(thread_id=thread.id).order_by("-created_at").first()
    if latest is None or cancel_refusal(user, latest) is None:
        return None
    return Outcome(Code.NOT_ALLOWED, NOT_ALLOWED, run=latest)


__all__ = ["NOT_ALLOWED", "change_refusal"]
