"""A run request's `command.goto` / `command.update`, with and without `command.resume`.

Without an answer they change a thread that waits for one (the question keeps waiting,
with its id and its review item); with one, they go with the resume run the decision
service queues, all or nothing. The official SDK does the same against a live server in
test_runs.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.models import Run, RunEvent
from beamweaver_core.runtime import registry
from beamweaver_core.types import StateSnapshot
from reviews.models import Decision, ReviewItem
from tests.protocol.conftest import api_user, client_of, post
from tests.reviews.conftest import run_next

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


def _send(client: Client, thread: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post(f"/lg/threads/{thread}/runs", body, content_type="application/json")
    return response.status_code, response.json()


def _paused(client: Client, graph: str = "ask", **body: Any) -> str:
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": graph, **body})
    assert run_next().status == Run.Status.INTERRUPTED
    return str(thread)


def _state(graph: str, thread: str) -> StateSnapshot:
    compiled = registry.compiled_graph(graph, PostgresCheckpointer())
    return compiled.get_state({"configurable": {"thread_id": thread}})


def test_an_update_without_an_answer_changes_the_thread_and_its_question_waits() -> None:
    client = client_of("alice")
    thread = _paused(client, input={"amount": 3})
    (item,) = ReviewItem.objects.filter(thread_id=thread)

    status, run = _send(
        client, thread, {"assistant_id": "ask", "command": {"update": {"amount": 4}}}
    )

    assert status == 200 and run["status"] == "pending", run
    assert run_next().status == Run.Status.INTERRUPTED
    state = _state("ask", thread)
    assert state.values == {"amount": 4}
    assert [i.id for i in state.interrupts] == [item.interrupt_id]
    assert [(i.pk, i.status) for i in ReviewItem.objects.filter(thread_id=thread)] == [
        (item.pk, ReviewItem.Status.PENDING)
    ]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "command": {"resume": "yes"}})
    assert run_next().status == Run.Status.SUCCEEDED
    assert _state("ask", thread).values == {"amount": 4, "answer": "yes", "log": ["finish"]}


def test_a_goto_without_an_answer_runs_its_target_while_the_question_waits() -> None:
    client = client_of("alice")
    thread = _paused(client, input={"amount": 3})

    status, _ = _send(client, thread, {"assistant_id": "ask", "command": {"goto": "finish"}})

    assert status == 200
    assert run_next().status == Run.Status.INTERRUPTED
    state = _state("ask", thread)
    assert (state.values, state.next) == ({"amount": 3, "log": ["finish"]}, ("ask",))


def test_a_goto_send_runs_its_node_once_with_its_input() -> None:
    """A send (`{"node", "input"}`, LangGraph's `Send`) runs its node with the input
    instead of the state, beside a named goto target that runs on the state; the run keeps
    them as JSON in its options."""
    client = client_of("alice")
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "greeter", "input": {"log": []}})
    assert run_next().status == Run.Status.SUCCEEDED
    goto = [{"node": "greet", "input": {"name": "ada"}}, "greet"]

    status, run = _send(client, thread, {"assistant_id": "greeter", "command": {"goto": goto}})

    assert status == 200, run
    assert Run.objects.get(pk=run["run_id"]).options == {"goto": goto}
    assert run_next().status == Run.Status.SUCCEEDED
    assert _state("greeter", thread).values == {"log": ["start", "hello ada", "hello everyone"]}


@pytest.mark.parametrize(
    ("goto", "message"),
    [
        ({"node": "nope", "input": {}}, "'goto' names node(s) ['nope']"),
        ({"input": {}}, "Invalid request at command/goto"),
        ({"node": "greet"}, "Invalid request at command/goto"),
        (["greet", {"node": 5}], "Invalid request at command/goto"),
    ],
)
def test_a_goto_send_to_no_node_or_of_another_shape_is_refused(goto: Any, message: str) -> None:
    client = client_of("alice")
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "greeter", "input": {"log": []}})
    assert run_next().status == Run.Status.SUCCEEDED

    status, detail = _send(client, thread, {"assistant_id": "greeter", "command": {"goto": goto}})

    assert status == 422 and message in detail["detail"], detail
    assert not Run.objects.filter(status=Run.Status.QUEUED).exists()


def test_an_answer_with_an_update_and_a_goto_resumes_with_both() -> None:
    client = client_of("alice")
    thread = _paused(client, input={"amount": 3})
    command = {"resume": "yes", "update": {"amount": 5}, "goto": ["finish"]}

    status, run = _send(client, thread, {"assistant_id": "ask", "command": command})

    assert status == 200, run
    assert Decision.objects.filter(item__thread_id=thread).count() == 1
    assert run_next().status == Run.Status.SUCCEEDED
    # `finish` ran beside the answered `ask` (the goto), then after it (its edge).
    started = RunEvent.objects.filter(run_id=run["run_id"], event="node.started")
    assert sorted(started.values_list("node", flat=True)) == ["ask", "finish", "finish"]


def test_continuing_a_breakpoint_with_an_update_is_a_decision() -> None:
    """Continuing lets the run proceed: not the starter's to do, with an update or
    without; another reviewer's continue applies the update."""
    alice, bob = client_of("alice"), client_of("bob")
    thread = _paused(alice, "linear", input={"log": []}, interrupt_before=["two"])
    body = {"assistant_id": "linear", "command": {"update": {"log": ["jump"]}}}

    own, refused = _send(alice, thread, body)
    assert own == 403, refused
    status, _ = _send(bob, thread, body)

    assert status == 200
    assert ReviewItem.objects.get(thread_id=thread).status == ReviewItem.Status.DECIDED
    assert run_next().status == Run.Status.SUCCEEDED
    assert _state("linear", thread).values == {"log": ["one", "jump", "two", "three"]}


def test_a_refused_answer_takes_back_the_requests_other_answers_and_its_changes() -> None:
    """Without a goto or update, answers decided before a refused one stand; with one,
    the request is one change: nothing of it is kept."""
    client = client_of("alice")
    thread = _paused(client, "parallel", input={})
    ids = {i.value: i.id for i in _state("parallel", thread).interrupts}
    ReviewItem.objects.filter(interrupt_id=ids["left?"]).update(claimed_by=api_user("carol"))
    answers = {ids["right?"]: "R", ids["left?"]: "L"}

    status, detail = _send(
        client,
        thread,
        {"assistant_id": "parallel", "command": {"resume": answers, "update": {"x": 1}}},
    )

    assert status == 409, detail
    assert detail["detail"].startswith(f"Interrupt {ids['left?']}: ")
    assert "same request were answered" not in detail["detail"]
    assert not Decision.objects.exists() and not Run.objects.filter(status="queued").exists()
    status, detail = _send(
        client, thread, {"assistant_id": "parallel", "command": {"resume": answers}}
    )
    assert status == 409 and "same request were answered" in detail["detail"], detail


def test_an_answer_with_a_goto_to_no_node_is_refused_before_it_is_decided() -> None:
    client = client_of("alice")
    thread = _paused(client, input={"amount": 3})

    status, detail = _send(
        client, thread, {"assistant_id": "ask", "command": {"resume": "yes", "goto": "nope"}}
    )

    assert status == 422 and "'goto' names node(s) ['nope']" in detail["detail"], detail
    assert not Decision.objects.exists()
    assert ReviewItem.objects.get(thread_id=thread).status == ReviewItem.Status.PENDING
