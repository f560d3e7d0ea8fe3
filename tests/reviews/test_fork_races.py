"""The thread page's replay and fork check who may under the thread's lock, as `/lg`'s
copy and changes do: the pause that asks a question updates the thread's row before it
writes the question's review items, which may hide the thread from the forker (or ask
what they may not reject), so a check made before taking the lock could be stale by the
time the fork is made."""

from __future__ import annotations

import pytest

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run
from beamweaver_core.runtime import registry
from reviews.models import AuditEvent
from tests.reviews.conftest import client_for, hiding_pause, make_reviewer, pause
from tests.support.locks import held_meanwhile

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_question_hiding_the_thread_while_it_is_replayed_is_seen_by_the_replay() -> None:
    """The replay waits for the pause's lock and then sees the thread hidden from its
    requester: 404, nothing queued or audited. It used to check before the pause
    committed and queue a replay of a thread she no longer saw."""
    alice = make_reviewer("alice")
    thread = pause(user=alice).thread_id
    graph = registry.compiled_graph("tool_review", PostgresCheckpointer())
    first = list(graph.get_state_history({"configurable": {"thread_id": thread}}))[-1]
    at = first.config["configurable"]["checkpoint_id"]
    client = client_for(alice)
    runs = Run.objects.filter(thread_id=thread).count()

    with held_meanwhile(hiding_pause(thread), until_waiting="%bw_thread%"):
        response = client.post(f"/fork/{at}/{thread}/", {"checkpoint_id": at, "mode": "replay"})

    assert response.status_code == 404
    assert Run.objects.filter(thread_id=thread).count() == runs
    assert not AuditEvent.objects.filter(action="forked").exists()
    assert client.get(f"/threads/{thread}/").status_code == 404
