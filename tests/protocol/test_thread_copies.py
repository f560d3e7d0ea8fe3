"""`threads.copy` never shows a thread to reviewers it is hidden from.

What a reviewer sees of a thread comes from its review items (`visible_threads`); a copy
has none (its questions are answered on the original), so a copy of a thread that some
reviewers may not see would show them everything the original hides. Copying such a
thread is refused (409) and changes nothing, whoever asks; a thread whose items every
reviewer decides is copied as before. The check and the copy hold the thread's lock, which
the pause that asks a question holds while it writes the question's items, and a thread
whose run is running (writing checkpoints ahead of its items) is not copied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import transaction

from beamweaver_core.models import Checkpoint, Run, Thread
from beamweaver_core.runtime.queue import claim_next_run
from reviews.models import ReviewItem
from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next, use_policies
from tests.support.locks import held_meanwhile

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


def _paused(client: Any) -> str:
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {"amount": 7}})
    run_next()
    return str(thread)


def test_a_thread_hidden_from_some_reviewers_is_not_copied(settings: Any) -> None:
    use_policies(settings, {"name": "finance-only", "graph": "ask", "groups": ["finance"]})
    dave = client_of("dave")
    User.objects.get(username="dave").groups.add(Group.objects.create(name="finance"))
    thread = _paused(dave)
    threads, checkpoints = Thread.objects.count(), Checkpoint.objects.count()

    response = dave.post(f"/lg/threads/{thread}/copy")

    assert response.status_code == 409, response.content
    assert response.json() == {
        "detail": f"Thread {thread!r} is hidden from some reviewers by its review items, "
        "and a copy has none: it would show them the thread, so it is not copied."
    }
    assert (Thread.objects.count(), Checkpoint.objects.count()) == (threads, checkpoints)
    assert client_of("erin").get(f"/lg/threads/{thread}").status_code == 404


def test_a_thread_every_reviewer_sees_is_copied() -> None:
    alice = client_of("alice")
    thread = _paused(alice)

    copied = post(alice, f"/threads/{thread}/copy", {})

    assert copied["thread_id"] != thread
    assert copied["values"] == {"amount": 7}
    assert client_of("bob").get(f"/lg/threads/{copied['thread_id']}").status_code == 200


def test_a_question_hiding_the_thread_while_it_is_copied_is_seen_by_the_copy() -> None:
    """The pause that asks a question writes its review items under the thread's lock (its
    transaction updates the thread's row first). A copy asked meanwhile waits for that
    lock and then sees the items: it refuses, where it used to check before the pause
    committed and copy a thread that was hidden from some reviewers by then."""
    alice = client_of("alice")
    thread = _paused(alice)
    hiding = ReviewItem.objects.get(thread_id=thread)
    hiding.pk, hiding.interrupt_id = None, "second"
    finance = Group.objects.create(name="finance")
    User.objects.get(username="alice").groups.add(finance)  # she still sees it
    hiding.reviewer_group_ids = [finance.pk]
    threads = Thread.objects.count()

    def pause(held: Callable[[], None]) -> None:
        """What `execution._record` does for a pause: the thread's row, then the items of
        the question it asks (here one only finance decides, hiding the thread); committed
        once the copy waits."""
        with transaction.atomic():
            Thread.objects.filter(id=thread).update(status=Thread.Status.INTERRUPTED)
            hiding.save()
            held()

    with held_meanwhile(pause, until_waiting="%bw_thread%FOR UPDATE%"):
        response = alice.post(f"/lg/threads/{thread}/copy")

    assert response.status_code == 409, response.content
    assert "is hidden from some reviewers" in response.json()["detail"]
    assert Thread.objects.count() == threads
    assert client_of("erin").get(f"/lg/threads/{thread}").status_code == 404


def test_a_thread_whose_run_is_running_is_not_copied() -> None:
    """A running run writes its checkpoints as it goes, a question's before the items that
    may hide the thread: a copy then would keep what they hide, with no items of its own."""
    alice = client_of("alice")
    thread = post(alice, "/threads", {})["thread_id"]
    post(alice, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {"amount": 7}})
    assert claim_next_run("test-worker", 30.0) is not None  # running, on no worker here
    threads, checkpoints = Thread.objects.count(), Checkpoint.objects.count()

    response = alice.post(f"/lg/threads/{thread}/copy")

    assert response.status_code == 409, response.content
    assert response.json() == {
        "detail": f"Thread {thread!r} has a running run; copy it once the run stops."
    }
    assert (Thread.objects.count(), Checkpoint.objects.count()) == (threads, checkpoints)
    assert Run.objects.get(thread_id=thread).status == Run.Status.RUNNING
