"""A decision and a state written as `__end__` (which drops the thread's questions and
cancels their review items) take their locks in the one order
(`beamweaver_core.runtime.locks`): the second waits for the first, then answers; neither
deadlocks. The decision used to lock the paused run, then its item, then the thread (to
queue the resume), while the state write locks the thread, then the items."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import transaction

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run, Thread
from beamweaver_core.runtime import forks, registry
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
