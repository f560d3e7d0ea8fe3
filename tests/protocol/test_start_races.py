"""A new run on an existing thread checks who may under the thread's lock, in the
transaction that starts it, as the thread page's fork does (tests/reviews/test_fork_races):
the pause that asks a question updates the thread's row before it writes the question's
review items, which may hide the thread from the caller (or ask what they may not reject),
so a check made before taking the lock could be stale by the time the run is queued."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import transaction

from beamweaver_core.models import Run
from beamweaver_core.runtime import service
from tests.protocol.conftest import api_user, client_of, post
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


def test_a_thread_created_meanwhile_by_someone_else_is_not_taken_over_by_a_creating_run() -> None:
    """`if_not_exists: "create"` on a thread id nobody has yet, while another reviewer's
    start creates that thread: the creating run waits for the other insert and then asks,
    as for any existing thread, whether its caller may change the thread (403; the other
    start made it hers). It used to queue bob's run on alice's new thread."""
    alice, bob = api_user("alice"), client_of("bob")
    thread = "created-meanwhile"

    def alices_start(held: Callable[[], None]) -> None:
        with transaction.atomic():
            service.start_run("ask", {"amount": 3}, thread_id=thread, user=alice)
            held()

    with held_meanwhile(alices_start, until_waiting="%bw_thread%"):
        response = bob.post(
            f"/lg/threads/{thread}/runs",
            {"assistant_id": "ask", "input": {"amount": 4}, "if_not_exists": "create"},
            content_type="application/json",
        )

    assert response.status_code == 403, response.content
    assert [run.created_by_id for run in Run.objects.filter(thread_id=thread)] == [alice.pk]
