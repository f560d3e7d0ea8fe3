"""The thread page's replay and fork check who may under the thread's lock, as `/lg`'s
copy and changes do: the pause that asks a question updates the thread's row before it
writes the question's review items, which may hide the thread from the forker (or ask
what they may not reject), so a check made before taking the lock could be stale by the
time the fork is made."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import Group
from django.db import transaction

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run, Thread
from beamweaver_core.runtime import registry
from reviews.models import AuditEvent, ReviewItem
from tests.reviews.conftest import client_for, make_reviewer, pause
from tests.support.locks import held_meanwhile

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_question_hiding_the_thread_while_it_is_replayed_is_seen_by_the_replay() -> None:
    """The replay waits for the pause's lock and then sees the thread hidden from its
    requester: 404, nothing queued or audited. It used to check before the pause
    committed and queue a replay of a thread she no longer saw."""
    alice = make_reviewer("alice")
    asked = pause(user=alice)
    thread = asked.thread_id
    graph = registry.compiled_graph("tool_review", PostgresCheckpointer())
    first = list(graph.get_state_history({"configurable": {"thread_id": thread}}))[-1]
    at = first.config["configurable"]["checkpoint_id"]
    hiding = ReviewItem.objects.get(pk=asked.pk)
    hiding.pk, hiding.interrupt_id = None, "second"
    hiding.reviewer_group_ids = [Group.objects.create(name="finance").pk]
    client = client_for(alice)
    runs = Run.objects.filter(thread_id=thread).count()

    def pausing(held: Callable[[], None]) -> None:
        """What `execution._record` does for a pause: the thread's row, then the items of
        the question it asks (one only finance decides); committed once the replay waits."""
        with transaction.atomic():
            Thread.objects.filter(id=thread).update(status=Thread.Status.INTERRUPTED)
            hiding.save()
            held()

    with held_meanwhile(pausing, until_waiting="%bw_thread%"):
        response = client.post(f"/fork/{at}/{thread}/", {"checkpoint_id": at, "mode": "replay"})

    assert response.status_code == 404
    assert Run.objects.filter(thread_id=thread).count() == runs
    assert not AuditEvent.objects.filter(action="forked").exists()
    assert client.get(f"/threads/{thread}/").status_code == 404
