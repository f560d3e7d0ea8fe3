"""`POST /threads/{id}/state` never goes past a question unanswered.

Questions are answered only through the decision service. Writing the state "as" a node
at a step that waits on a question would run what comes after it with no decision at all
(an outside review ran a reviewed refund this way, by the run's own requester): it is
refused with 409 and changes nothing. Without `as_node` the question stays pending; as
`__end__` nothing runs and the inbox's items for the dropped questions are cancelled,
saying who wrote the state.
"""

from __future__ import annotations

import pytest

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.models import Thread
from beamweaver_core.runtime import registry
from reviews.models import AuditEvent, ReviewItem
from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


def _paused(client: object) -> tuple[str, ReviewItem]:
    thread = post(client, "/threads", {})["thread_id"]  # type: ignore[arg-type]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {"amount": 9}})  # type: ignore[arg-type]
    run_next()
    return thread, ReviewItem.objects.get(thread_id=thread)


def _state(thread: str) -> tuple[dict[str, object], tuple[str, ...]]:
    graph = registry.compiled_graph("ask", PostgresCheckpointer())
    snapshot = graph.get_state({"configurable": {"thread_id": thread}})
    return dict(snapshot.values), snapshot.next


def test_writing_as_the_asking_node_is_refused_and_changes_nothing() -> None:
    client = client_of("alice")
    thread, item = _paused(client)
    before = _state(thread)

    response = client.post(
        f"/lg/threads/{thread}/state",
        {"values": {"answer": "yes"}, "as_node": "ask"},
        content_type="application/json",
    )

    assert response.status_code == 409, response.content
    assert "question" in response.json()["detail"]
    assert _state(thread) == before
    item.refresh_from_db()
    assert item.status == ReviewItem.Status.PENDING
    assert Thread.objects.get(id=thread).status == Thread.Status.INTERRUPTED
    # and a run started after the refusal still waits for the answer
    runs = client.post(
        f"/lg/threads/{thread}/runs", {"assistant_id": "ask"}, content_type="application/json"
    )
    assert runs.status_code == 409


def test_writing_at_the_checkpoint_of_a_question_answered_later_is_refused_too() -> None:
    """A fork at the question's checkpoint, written as its node, would skip the answer
    the thread got (a rejection, say)."""
    client = client_of("alice")
    thread, _ = _paused(client)
    asked_at = client.get(f"/lg/threads/{thread}/state").json()["checkpoint"]["checkpoint_id"]
    post(
        client_of("bob"),
        f"/threads/{thread}/runs",
        {"assistant_id": "ask", "command": {"resume": "no"}},
    )
    run_next()

    response = client.post(
        f"/lg/threads/{thread}/state",
        {"values": {"answer": "yes"}, "as_node": "ask", "checkpoint_id": asked_at},
        content_type="application/json",
    )

    assert response.status_code == 409, response.content
    assert _state(thread)[0]["answer"] == "no"


def test_values_alone_keep_the_question_and_end_drops_it_with_its_item() -> None:
    client = client_of("alice")
    thread, item = _paused(client)

    post(client, f"/threads/{thread}/state", {"values": {"amount": 10}})
    item.refresh_from_db()
    assert item.status == ReviewItem.Status.PENDING
    assert _state(thread) == ({"amount": 10}, ("ask",))

    post(client, f"/threads/{thread}/state", {"values": None, "as_node": "__end__"})

    item.refresh_from_db()
    assert item.status == ReviewItem.Status.CANCELLED
    assert item.status_reason == "the thread's state was written past this question by alice"
    assert AuditEvent.objects.filter(item=item, action=AuditEvent.Action.CANCELLED).exists()
    assert Thread.objects.get(id=thread).status == Thread.Status.IDLE
    assert _state(thread)[1] == ()
