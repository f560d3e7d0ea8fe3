"""`threads.copy` never shows a thread to reviewers it is hidden from.

What a reviewer sees of a thread comes from its review items (`visible_threads`); a copy
has none (its questions are answered on the original), so a copy of a thread that some
reviewers may not see would show them everything the original hides. Copying such a
thread is refused (409) and changes nothing, whoever asks; a thread whose items every
reviewer decides is copied as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from beamweaver_core.models import Checkpoint, Thread
from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next, use_policies

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
