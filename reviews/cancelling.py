"""Who may cancel a run, and cancelling a thread's active run for a user (the thread page
and the review API ask here; the admin's action needs the permission below).

Cancelling a run also cancels every pending review item of its thread, so it must not let
anyone end what they could not have ended otherwise. A user who may see the thread (else
404, as for one that does not exist) may cancel its active run when they are:

- the run's **requester** (`Run.requester_id`: who started the thread's work, the same
  person the no-self-approval rule names);
- a reviewer who may **reject every pending item** of the thread right now (a decider of
  each, and none claimed by someone else: `rules.decision_refusal`), since a
  cancel then rejects nothing they could not reject; or
- a holder of **`beamweaver_core.cancel_run`** ("Can cancel any run"): operators, and the
  only right the admin's cancel action accepts.

Managers (`reviews.manage`) see every thread but get no right to cancel from that alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import QuerySet

from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.models import Run, Thread
from beamweaver_core.runtime import service as runtime_service
from beamweaver_core.runtime.locks import run_and_thread
from beamweaver_core.users import User
from reviews.models import ReviewItem
from reviews.outcomes import Code, Outcome
from reviews.permissions import can_review, visible_threads
from reviews.rules import decision_refusal

CANCEL_PERMISSION = "beamweaver_core.cancel_run"
ACTIVE = (Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.INTERRUPTED)
NOT_ALLOWED = (
    "You may not cancel this run: its requester, a reviewer who may reject every review it "
    "waits for, or a holder of the permission “Can cancel any run” may cancel it."
)


def active_run(thread: Thread) -> Run | None:
    """The thread's newest queued, running or interrupted run."""
    return Run.objects.filter(thread=thread, status__in=ACTIVE).order_by("-created_at").first()


def _pending(run: Run) -> QuerySet[ReviewItem]:
    return ReviewItem.objects.filter(thread_id=run.thread_id, status=ReviewItem.Status.PENDING)


def cancel_refusal(
    user: User, run: Run, pending: Sequence[ReviewItem] | None = None
) -> Outcome | None:
    """Why `user` may not cancel `run` (`None`: they may); see the module's rule. The
    caller has checked that `user` sees the run's thread; `pending`: the thread's pending
    items, if the caller read (and locked) them already."""
    if not can_review(user):
        return Outcome(Code.NOT_ALLOWED, NOT_ALLOWED, run=run)
    if user.has_perm(CANCEL_PERMISSION):
        return None
    requester = run.requester_id()
    if requester is not None and requester == user.pk:
        return None
    items = list(_pending(run).select_related("claimed_by")) if pending is None else pending
    if items and all(decision_refusal(user, item, executes=False) is None for item in items):
        return None
    return Outcome(Code.NOT_ALLOWED, NOT_ALLOWED, run=run)


def may_cancel(user: User, run: Run | None) -> bool:
    """Whether the thread page offers `user` the cancel button for `run`."""
    return run is not None and cancel_refusal(user, run) is None


def cancel(user: User, thread_id: str) -> Outcome:
    """Cancel the active run of the thread `thread_id` for `user`, if the rule allows."""
    thread = visible_threads(user).filter(id=thread_id).first()
    if thread is None:
        return Outcome(Code.NOT_FOUND, "No such thread.")
    with transaction.atomic():
        # The run's lock, then its thread's (`runtime.locks`, as the decision service
        # takes them), so no decision lands between the check and the cancel.
        found = active_run(thread)
        try:
            run = run_and_thread(found.pk)[0] if found is not None else None
        except Run.DoesNotExist:  # deleted meanwhile
            run = None
        if run is None or run.status not in ACTIVE:
            return Outcome(Code.NO_ACTIVE_RUN, "The thread has no active run to cancel.")
        # Then the pending items' locks (a claim holds its item's lock until it commits), so
        # a claim cannot land between the rule's check and the cancel that rejects the item.
        pending = _pending(run).select_related("claimed_by").select_for_update(of=("self",))
        refusal = cancel_refusal(user, run, list(pending))
        if refusal is not None:
            return refusal
        try:
            cancelled = runtime_service.cancel_run(run.id, user=user)
        except (BeamWeaverError, LookupError) as exc:
            return Outcome(Code.NOT_CANCELLABLE, str(exc), run=run)
    return Outcome(Code.CANCELLED, "The run was cancelled.", run=cancelled)


__all__ = [
    "CANCEL_PERMISSION",
    "active_run",
    "cancel",
    "cancel_refusal",
    "may_cancel",
]
