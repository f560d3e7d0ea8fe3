"""Who may change a thread over `/lg`: its metadata (`threads.update`), its state
(`threads.update_state`), its existence (`threads.delete`), its runs' records
(`runs.delete`) and its work (a new run on it). The rule is the inbox's rule for
cancelling its run (`reviews.cancelling`), asked of the thread's latest run: its
requester, a reviewer who may reject every review it waits for, or a holder of "Can
cancel any run". Anyone else who sees the thread gets 403 and changes nothing; a thread
they may not see stays 404. Found by a review: any reviewer who saw a thread could delete
it, rewrite its metadata or write its state."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from beamweaver_core.models import Checkpoint, Run, Thread
from reviews.models import ReviewItem
from tests.protocol.conftest import api_user, client_of, post, token_for
from tests.reviews.conftest import run_next, use_policies

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]

REFUSED = (
    "You may not change this thread: as for cancelling its run, only the requester of its "
    "runs, a reviewer who may reject every review it waits for, or a holder of the "
    "permission “Can cancel any run” may."
)


def _finished(client: Client) -> str:
    """A thread whose `linear` run `client` started and that ran to its end."""
    thread = post(client, "/threads", {"metadata": {"owner": "alice"}})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "linear", "input": {"log": []}})
    assert run_next().status == Run.Status.SUCCEEDED
    return str(thread)


def _writes(client: Client, thread: str, run: str) -> dict[str, Any]:
    """Every thread-level write, each answered: its status and its body."""
    answers = {
        "update": client.patch(
            f"/lg/threads/{thread}", {"metadata": {"owner": "bob"}}, content_type="application/json"
        ),
        "update_state": client.post(
            f"/lg/threads/{thread}/state",
            {"values": {"log": ["bob"]}, "as_node": "three"},
            content_type="application/json",
        ),
        "run": client.post(
            f"/lg/threads/{thread}/runs",
            {"assistant_id": "linear", "input": {"log": ["bob"]}},
            content_type="application/json",
        ),
        "delete_run": client.delete(f"/lg/threads/{thread}/runs/{run}"),
        "delete": client.delete(f"/lg/threads/{thread}"),
    }
    return {name: (r.status_code, r.json() if r.content else None) for name, r in answers.items()}


def _as_it_was(thread: str) -> tuple[Any, ...]:
    found = Thread.objects.filter(id=thread).first()
    return (
        found and found.metadata,
        Checkpoint.objects.filter(thread_id=thread).count(),
        sorted(str(r.id) for r in Run.objects.filter(thread_id=thread)),
    )


def test_a_reviewer_who_did_not_start_the_threads_work_may_not_change_it() -> None:
    alice, bob = client_of("alice"), client_of("bob")
    thread = _finished(alice)
    run = str(Run.objects.get(thread_id=thread).id)
    before = _as_it_was(thread)
    assert bob.get(f"/lg/threads/{thread}").status_code == 200  # bob sees it

    answers = _writes(bob, thread, run)

    assert answers == dict.fromkeys(answers, (403, {"detail": REFUSED}))
    assert _as_it_was(thread) == before
    # Its requester may.
    mine = _writes(alice, thread, run)
    assert [status for status, _ in mine.values()] == [200, 200, 200, 204, 409], mine
    assert mine["delete"][1] == {
        "detail": f"Thread {thread!r} has an active run; cancel it before deleting the thread."
    }


def test_managers_are_refused_too_and_holders_of_cancel_any_run_may() -> None:
    alice = client_of("alice")
    thread = _finished(alice)
    run = str(Run.objects.get(thread_id=thread).id)
    manager = api_user("mona")
    manager.user_permissions.add(Permission.objects.get(codename="manage"))
    operator = api_user("otto")
    operator.user_permissions.add(Permission.objects.get(codename="cancel_run"))

    refused = _writes(Client(HTTP_X_API_KEY=token_for(manager)), thread, run)
    assert refused == dict.fromkeys(refused, (403, {"detail": REFUSED}))

    allowed = _writes(Client(HTTP_X_API_KEY=token_for(operator)), thread, run)
    assert [status for status, _ in allowed.values()] == [200, 200, 200, 204, 409], allowed


def test_a_fork_or_a_replay_from_a_past_checkpoint_is_a_change() -> None:
    """Forking follows the rule of changing, whoever asks (the thread page asks it too):
    a state update at a past checkpoint and a run from one are 403 for bob and change
    nothing; its requester needs no other right."""
    alice, bob = client_of("alice"), client_of("bob")
    thread = _finished(alice)
    first = Checkpoint.objects.filter(thread_id=thread, ns="").order_by("seq").first()
    assert first is not None
    fork = {"values": {"log": ["edited"]}, "as_node": "one", "checkpoint_id": first.checkpoint_id}
    replay = {"assistant_id": "linear", "checkpoint_id": first.checkpoint_id}
    before = _as_it_was(thread)

    refused = [
        bob.post(f"/lg/threads/{thread}/state", fork, content_type="application/json"),
        bob.post(f"/lg/threads/{thread}/runs", replay, content_type="application/json"),
    ]

    assert [(r.status_code, r.json()) for r in refused] == [(403, {"detail": REFUSED})] * 2
    assert _as_it_was(thread) == before
    post(alice, f"/threads/{thread}/state", fork)
    post(alice, f"/threads/{thread}/runs", replay)


def test_a_replay_by_a_reviewer_carries_on_the_requesters_work() -> None:
    """A run without input (here a replay from a checkpoint) continues the thread's work,
    as a resume does: it runs for the thread's requester, in the context of the run it
    continues, and its questions name her. Bob, who may change the thread while he may
    reject what it waits for, gains no lasting right by replaying it, and alice keeps
    hers (he used to become the requester: she could then approve her own request's
    questions, and no longer change her thread)."""
    alice, bob, carol = client_of("alice"), client_of("bob"), client_of("carol")
    alice_id = User.objects.get(username="alice").pk
    thread = post(alice, "/threads", {})["thread_id"]
    mail = {"messages": [{"type": "human", "content": "mail a"}]}
    start = {"assistant_id": "mailer", "input": mail, "context": {"tenant": "acme"}}
    post(alice, f"/threads/{thread}/runs", start)
    assert run_next().status == Run.Status.INTERRUPTED
    first = Checkpoint.objects.filter(thread_id=thread, ns="").order_by("seq").first()
    assert first is not None

    post(
        bob,
        f"/threads/{thread}/runs",
        {"assistant_id": "mailer", "checkpoint_id": first.checkpoint_id},
    )
    replayed = run_next()

    assert (replayed.status, replayed.created_by, replayed.requester_id()) == (
        Run.Status.INTERRUPTED,
        User.objects.get(username="bob"),
        alice_id,
    )
    assert replayed.context == {"tenant": "acme", "user_id": alice_id, "username": "alice"}
    asked = ReviewItem.objects.get(thread_id=thread, status=ReviewItem.Status.PENDING)
    assert asked.requested_by_id == alice_id
    approve = {"decisions": [{"type": "approve"}]}
    post(
        carol, f"/threads/{thread}/runs", {"assistant_id": "mailer", "command": {"resume": approve}}
    )
    assert run_next().status == Run.Status.SUCCEEDED
    answers = {
        name: client.patch(
            f"/lg/threads/{thread}", {"metadata": {"by": name}}, content_type="application/json"
        ).status_code
        for name, client in (("bob", bob), ("alice", alice))
    }
    assert answers == {"bob": 403, "alice": 200}


def test_a_reviewer_who_may_reject_every_review_the_thread_waits_for_may_end_it() -> None:
    """As they may cancel its run: writing `__end__` drops the question, rejecting nothing
    they could not reject."""
    alice, bob = client_of("alice"), client_of("bob")
    thread = post(alice, "/threads", {})["thread_id"]
    post(alice, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {"amount": 3}})
    assert run_next().status == Run.Status.INTERRUPTED

    ended = bob.post(
        f"/lg/threads/{thread}/state",
        {"values": None, "as_node": "__end__"},
        content_type="application/json",
    )

    assert ended.status_code == 200, ended.content
    assert ReviewItem.objects.get(thread_id=thread).status == ReviewItem.Status.CANCELLED


def test_a_thread_hidden_from_the_caller_stays_not_found(settings: Any) -> None:
    use_policies(settings, {"name": "finance-only", "graph": "ask", "groups": ["finance"]})
    dave, erin = client_of("dave"), client_of("erin")
    User.objects.get(username="dave").groups.add(Group.objects.create(name="finance"))
    thread = post(dave, "/threads", {})["thread_id"]
    post(dave, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {"amount": 3}})
    assert run_next().status == Run.Status.INTERRUPTED
    run = str(Run.objects.get(thread_id=thread).id)
    before = _as_it_was(thread)

    answers = _writes(erin, thread, run)

    assert {name: status for name, (status, _) in answers.items()} == dict.fromkeys(answers, 404)
    assert _as_it_was(thread) == before


def test_a_thread_nobody_started_work_on_is_changed_by_whoever_sees_it() -> None:
    """No run, no requester: like its first run, which any reviewer who sees it may start
    (and so become its requester)."""
    alice, bob = client_of("alice"), client_of("bob")
    thread = post(alice, "/threads", {"metadata": {"owner": "alice"}})["thread_id"]

    updated = _patched(bob, thread, {"metadata": {"owner": "bob"}})

    assert updated["metadata"] == {"owner": "bob"}
    assert bob.delete(f"/lg/threads/{thread}").status_code == 204


def _patched(client: Client, thread: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.patch(f"/lg/threads/{thread}", body, content_type="application/json")
    assert response.status_code == 200, response.content
    return dict(response.json())


def test_creating_a_thread_id_taken_by_a_hidden_thread_tells_only_that_it_exists(
    settings: Any,
) -> None:
    """Thread ids are global, so a taken id answers 409 whoever holds it; `do_nothing`
    returns a thread only to those who see it, and the refusal reads the same for a hidden
    thread as for a visible one."""
    use_policies(settings, {"name": "finance-only", "graph": "ask", "groups": ["finance"]})
    dave, erin = client_of("dave"), client_of("erin")
    User.objects.get(username="dave").groups.add(Group.objects.create(name="finance"))
    post(dave, "/threads", {"thread_id": "taken-hidden"})
    post(dave, "/threads/taken-hidden/runs", {"assistant_id": "ask", "input": {"amount": 3}})
    assert run_next().status == Run.Status.INTERRUPTED
    post(erin, "/threads", {"thread_id": "taken-seen"})
    before = _as_it_was("taken-hidden")

    answers = {
        (thread, if_exists): erin.post(
            "/lg/threads",
            {"thread_id": thread, "if_exists": if_exists, "metadata": {"graph_id": "ask"}},
            content_type="application/json",
        )
        for thread in ("taken-hidden", "taken-seen")
        for if_exists in ("raise", "do_nothing")
    }

    hidden = {"detail": "Thread 'taken-hidden' already exists."}
    assert answers["taken-hidden", "raise"].json() == hidden
    assert answers["taken-hidden", "do_nothing"].json() == hidden
    assert answers["taken-seen", "raise"].json() == {
        "detail": "Thread 'taken-seen' already exists."
    }
    assert answers["taken-seen", "do_nothing"].status_code == 200
    assert [r.status_code for r in answers.values()] == [409, 409, 409, 200]
    assert _as_it_was("taken-hidden") == before
