"""A new run on an existing thread checks who may under the thread's lock, in the
transaction that starts it, as the thread page's fork does (tests/reviews/test_fork_races):
the pause that asks a question updates the thread's row before it writes the question's
review items, which may hide the thread from the caller (or ask what they may not reject),
so a check made before taking the lock could be stale by the time the run is queued."""

from __future__ import annotations

import pytest

from beamweaver_core.models import Run
from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import hiding_pause, run_next
from tests.support.locks import held_meanwhile

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


def test_a_question_hiding_the_thread_while_a_run_is_started_on_it_is_seen_by_the_start() -> None:
    """The start waits for the pause's lock and then sees the thread hidden from its
    requester: 404, nothing queued. It used to check before the pause committed and
    queue a run on a thread she no longer saw."""
    alice = client_of("alice")
    thread = post(alice, "/threads", {})["thread_id"]
    post(alice, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {"amount": 3}})
    assert run_next().status == Run.Status.INTERRUPTED
    runs = Run.objects.filter(thread_id=thread).count()

    with held_meanwhile(hiding_pause(thread), until_waiting="%bw_thread%"):
        response = alice.post(
            f"/lg/threads/{thread}/runs",
            {"assistant_id": "ask", "input": {"amount": 4}},
            content_type="application/json",
        )

    assert response.status_code == 404, response.content
    assert response.json() == {"detail": f"Thread {thread!r} not found."}
    assert Run.objects.filter(thread_id=thread).count() == runs
    assert alice.get(f"/lg/threads/{thread}").status_code == 404
