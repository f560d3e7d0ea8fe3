"""A request `/lg` refuses changes nothing: it is checked whole (its body, its query, every
run it names, every item of a batch, the new run of a multitask strategy) before any run
is started, cancelled or rolled back. Found by a review against a live server, where each
of these acted first and refused after (or answered 500)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from beamweaver_core.models import Run, Thread
from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


def _send(client: Client, path: str, body: Any) -> tuple[int, str]:
    """POST `body` to `/lg<path>`: the status and the error's detail (`""` without one)."""
    response = client.post(f"/lg{path}", body, content_type="application/json")
    return response.status_code, response.json()["detail"] if response.content else ""


def _queued(client: Client, graph: str = "linear") -> tuple[str, str]:
    """A thread and its run, left queued (no worker claims it here): the thread is busy."""
    thread = post(client, "/threads", {})["thread_id"]
    run = post(client, f"/threads/{thread}/runs", {"assistant_id": graph, "input": {"log": []}})
    return thread, run["run_id"]


def _statuses() -> dict[str, str]:
    return {str(run.id): run.status for run in Run.objects.all()}


def _paused(client: Client) -> str:
    """A thread paused on `ask`'s question."""
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {"amount": 3}})
    assert run_next().status == Run.Status.INTERRUPTED
    return thread


def test_run_ids_that_are_not_uuids_are_refused() -> None:
    client = client_of("alice")

    status, detail = _send(client, "/runs/cancel", {"run_ids": ["not-a-uuid"]})

    assert (status, detail) == (422, "Invalid request at run_ids/0: 'not-a-uuid' is not a 'uuid'")


def test_a_whole_number_written_as_a_float_is_refused_wherever_a_whole_number_is_asked() -> None:
    client = client_of("alice")
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "linear", "input": {"log": []}})
    run_next()

    answers = [
        _send(client, f"/threads/{thread}/history", {"limit": 2.0}),
        _send(client, "/assistants/search", {"limit": 5.0}),
        _send(client, "/threads/search", {"limit": 5.0, "values": {"log": ["one"]}}),
        _send(client, "/threads/search", {"offset": 1.0}),
    ]

    assert answers == [
        (422, "Invalid request at limit: 2.0 is not of type 'integer'"),
        (422, "Invalid request at limit: 5.0 is not of type 'integer'"),
        (422, "Invalid request at limit: 5.0 is not of type 'integer'"),
        (422, "Invalid request at offset: 1.0 is not of type 'integer'"),
    ]


def test_runs_are_cancelled_all_or_none() -> None:
    """Bob may cancel his run, not Alice's: asked for both, he cancels neither."""
    alice, bob = client_of("alice"), client_of("bob")
    _, bobs = _queued(bob)
    _, alices = _queued(alice)

    status, detail = _send(bob, "/runs/cancel", {"run_ids": [bobs, alices]})

    assert status == 403, detail
    assert _statuses() == {bobs: Run.Status.QUEUED, alices: Run.Status.QUEUED}
    assert _send(bob, "/runs/cancel", {"run_ids": [bobs]})[0] == 204
    assert _statuses() == {bobs: Run.Status.CANCELLED, alices: Run.Status.QUEUED}


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_a_multitask_strategy_stops_all_the_active_runs_or_none(strategy: str) -> None:
    """Bob's run, then Alice's waiting behind it (she may cancel any run, so she may add
    work to his thread): Bob may not stop hers, so not his either (his new run is refused
    by the rule of who may change the thread, the same rule)."""
    alice, bob = client_of("alice"), client_of("bob")
    User.objects.get(username="alice").user_permissions.add(
        Permission.objects.get(codename="cancel_run")
    )
    thread, bobs = _queued(bob)
    alices = post(alice, f"/threads/{thread}/runs", {"assistant_id": "linear", "input": {}})
    new = {"assistant_id": "linear", "input": {"log": [1]}, "multitask_strategy": strategy}

    status, detail = _send(bob, f"/threads/{thread}/runs", new)

    assert status == 403, detail
    assert _statuses() == {bobs: Run.Status.QUEUED, alices["run_id"]: Run.Status.WAITING}


def test_cancelling_runs_needs_a_status_or_the_runs_and_not_both() -> None:
    """As LangGraph's server: `{}` does not mean every run, and a status is not combined
    with a thread or run ids."""
    client = client_of("alice")
    thread, run = _queued(client)

    answers = [
        _send(client, "/runs/cancel", {}),
        _send(client, "/runs/cancel", {"status": "all", "thread_id": thread}),
        _send(client, "/runs/cancel", {"status": "pending", "run_ids": [run]}),
    ]

    assert [status for status, _ in answers] == [422, 422, 422], answers
    assert "thread_id" in answers[0][1] and "status" in answers[1][1]
    assert _statuses() == {run: Run.Status.QUEUED}


def test_a_cancel_with_a_bad_query_parameter_cancels_nothing() -> None:
    client = client_of("alice")
    thread, run = _queued(client)

    status, detail = _send(client, f"/threads/{thread}/runs/{run}/cancel?wait=bogus", {})

    assert (status, detail) == (422, "Query parameter 'wait' must be true or false, got 'bogus'.")
    assert _statuses() == {run: Run.Status.QUEUED}


def test_a_batch_with_a_refused_item_starts_none() -> None:
    client = client_of("alice")
    valid = {"assistant_id": "linear", "input": {"log": []}}

    status, detail = _send(client, "/runs/batch", [valid, {**valid, "assistant_id": "nope"}])

    assert status == 422 and "Invalid assistant" in detail
    assert not Run.objects.exists() and not Thread.objects.exists()


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_a_multitask_strategy_stops_nothing_for_a_run_it_refuses(strategy: str) -> None:
    client = client_of("alice")
    thread, active = _queued(client)
    new = {"input": {"log": [1]}, "multitask_strategy": strategy}

    refused = [
        {"assistant_id": "ask"},
        {"assistant_id": "linear", "interrupt_before": ["nope"]},
        {"assistant_id": "linear", "context": {"__bw__": 1}},
        {"assistant_id": "linear", "command": {"goto": "nope"}},
        {"assistant_id": "linear", "checkpoint_id": "1f0-unknown"},
    ]

    answers = [_send(client, f"/threads/{thread}/runs", {**new, **bad}) for bad in refused]

    assert [status for status, _ in answers] == [422, 422, 422, 422, 404], answers
    assert "linear" in answers[0][1] and "nope" in answers[1][1]
    assert _statuses() == {active: Run.Status.QUEUED}


@pytest.mark.parametrize("command", [{}, {"goto": None, "update": {}}])
def test_a_run_that_neither_answers_nor_changes_a_thread_waiting_for_an_answer_is_refused(
    command: dict[str, Any],
) -> None:
    """It would stop at the same question again (a goto or an update without the answer
    is taken: tests/protocol/test_commands.py)."""
    client = client_of("alice")
    thread = _paused(client)
    runs = _statuses()

    status, detail = _send(
        client, f"/threads/{thread}/runs", {"assistant_id": "ask", "command": command}
    )

    assert status == 409 and "waits for answers" in detail, detail
    assert _statuses() == runs
    assert Thread.objects.get(id=thread).status == Thread.Status.INTERRUPTED


@pytest.mark.parametrize(
    "fork",
    [
        {"checkpoint_id": "1f0-unknown"},
        {"checkpoint": {"checkpoint_id": "1f0-unknown"}},
        {"config": {"configurable": {"checkpoint_id": "1f0-unknown"}}},
    ],
)
def test_a_run_from_an_unknown_checkpoint_is_not_found(fork: dict[str, Any]) -> None:
    client = client_of("alice")
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "linear", "input": {"log": []}})
    run_next()
    runs, state = _statuses(), client.get(f"/lg/threads/{thread}").json()

    status, detail = _send(
        client, f"/threads/{thread}/runs", {"assistant_id": "linear", "input": {"log": []}, **fork}
    )

    assert (status, detail) == (404, "Checkpoint '1f0-unknown' not found.")
    assert _statuses() == runs
    assert client.get(f"/lg/threads/{thread}").json() == state


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_a_multitask_strategy_stops_a_run_and_the_one_waiting_behind_it(strategy: str) -> None:
    """Cancelling the first run promoted the one waiting behind it to queued, and the
    rollback of the first then refused: another run was active (409, found by review)."""
    client = client_of("alice")
    thread, first = _queued(client)
    behind = post(client, f"/threads/{thread}/runs", {"assistant_id": "linear", "input": {}})
    new = {"assistant_id": "linear", "input": {"log": [1]}, "multitask_strategy": strategy}

    started = post(client, f"/threads/{thread}/runs", new)

    assert _statuses() == {
        first: Run.Status.CANCELLED,
        behind["run_id"]: Run.Status.CANCELLED,
        started["run_id"]: Run.Status.QUEUED,
    }
    assert run_next().status == Run.Status.SUCCEEDED


def test_a_replay_is_judged_by_its_checkpoint_not_by_what_the_head_waits_on() -> None:
    """A run from an older checkpoint with nothing pending there was refused with 409
    because the thread's head waited on a question."""
    client = client_of("alice")
    thread = _paused(client)
    post(
        client_of("bob"),
        f"/threads/{thread}/runs",
        {"assistant_id": "ask", "command": {"resume": "yes"}},
    )
    run_next()
    history = client.post(f"/lg/threads/{thread}/history", {}, content_type="application/json")
    answered = next(s for s in history.json() if s["next"] == ["finish"])
    post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {"amount": 4}})
    assert run_next().status == Run.Status.INTERRUPTED  # the head waits on a new question

    replay = {"assistant_id": "ask", "checkpoint_id": answered["checkpoint"]["checkpoint_id"]}
    started = post(client, f"/threads/{thread}/runs", replay)

    assert run_next().status == Run.Status.SUCCEEDED
    assert str(Run.objects.get(id=started["run_id"]).status) == Run.Status.SUCCEEDED
