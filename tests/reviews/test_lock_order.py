"""A decision and what races it take their locks in the one order
(`beamweaver_core.runtime.locks`): the second waits for the first, then answers; neither
deadlocks.

- A state written as `__end__` (which drops the thread's questions and cancels their
  review items): the decision used to lock the paused run, then its item, then the thread
  (to queue the resume), while the state write locks the thread, then the items.
- A cancel of the thread's queued resume: a decision joining that resume locked the
  thread, then the queued run (`resume_thread`), while the cancel locks the run, then
  its thread."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import transaction

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run, Thread
from beamweaver_core.runtime import forks, registry, service
from beamweaver_core.types import END
from reviews.models import ReviewItem
from reviews.outcomes import Code
from tests.reviews.conftest import approve_as, make_reviewer, pause
from tests.support.locks import held_meanwhile

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_decision_waits_for_a_state_written_as_end_and_finds_its_item_gone() -> None:
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    item = pause(user=alice)
    graph = registry.compiled_graph("tool_review", PostgresCheckpointer())

    def ending(held: Callable[[], None]) -> None:
        """`update_state(..., as_node=END)` held between its two locks: the thread's row
        (its first statement), then, once the decision waits, the rest of it."""
        with transaction.atomic():
            Thread.objects.select_for_update().get(id=item.thread_id)
            held()
            forks.update_state(graph, item.thread_id, None, as_node=END, user=alice)

    with held_meanwhile(ending, until_waiting="%bw_thread%FOR UPDATE%"):
        outcome = approve_as(bob, item)

    assert outcome.code == Code.GONE, outcome.message
    assert ReviewItem.objects.get(pk=item.pk).status == ReviewItem.Status.CANCELLED
    assert Run.objects.filter(thread_id=item.thread_id, kind=Run.Kind.RESUME).count() == 0
    assert Thread.objects.get(id=item.thread_id).status == Thread.Status.IDLE


def test_a_decision_joining_a_queued_resume_and_a_cancel_of_that_resume_do_not_deadlock() -> None:
    """Two questions of one pause: the first one's answer queued the resume. A cancel of
    that resume, held between its two locks (the run, then its thread), and the second
    answer, which joins the resume: the decision waits for the cancel, which is refused
    (an accepted decision is always applied), then joins the resume with its answer."""
    alice, bob, carol = make_reviewer("alice"), make_reviewer("bob"), make_reviewer("carol")
    first = pause(user=alice)
    second = ReviewItem.objects.get(pk=first.pk)
    second.pk, second.interrupt_id = None, "second"
    second.save()
    assert approve_as(bob, first).code == Code.ACCEPTED
    resume = Run.objects.get(thread_id=first.thread_id, status=Run.Status.QUEUED)
    refusals: list[str] = []

    def cancelling(held: Callable[[], None]) -> None:
        """`cancel_run` of the queued resume, held after its first lock (the run's)."""
        with transaction.atomic():
            Run.objects.select_for_update().get(pk=resume.pk)
            held()
            try:
                service.cancel_run(resume.pk, user=alice)
            except service.RunStateError as refused:
                refusals.append(str(refused))

    with held_meanwhile(cancelling, until_waiting="%bw_run%FOR UPDATE%"):
        outcome = approve_as(carol, second)

    assert outcome.code == Code.ACCEPTED, outcome.message
    assert refusals == [
        f"A decision for thread {first.thread_id!r} was accepted and its resume is queued, so "
        "the run continues with it; cancel the resumed run once it is running."
    ]
    joined = Run.objects.get(pk=resume.pk)
    assert (joined.status, sorted(joined.input)) == (
        Run.Status.QUEUED,
        sorted([first.interrupt_id, "second"]),
    )
