"""Deleting or cancelling runs while a worker writes a step waits for the step, then
answers; it never deadlocks with the worker.

A worker's step is one transaction: its fenced write locks the run's row (`FOR SHARE`)
and stores the step's events, whose foreign key to the thread is checked when it commits,
locking the thread's row (`FOR KEY SHARE`). A request that held the thread's row (`FOR
UPDATE`) and then waited for that run deadlocked with it: Postgres aborted the request,
and the error page answered 503 "cannot reach its database". The runtime's order is a run,
then its thread (`cancel_run`, a worker's step and its end): requests keep it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.graph.runtime import Envelope
from beamweaver_core.models import Run, RunEvent
from beamweaver_core.runtime import registry
from beamweaver_core.runtime.events import RunRecorder
from beamweaver_core.runtime.queue import Claim, claim_next_run
from tests.protocol.conftest import client_of, post
from tests.support.locks import held_meanwhile

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


def _running(client: Any) -> tuple[str, Claim]:
    """A thread whose `linear` run a worker (this test) has claimed: it is running."""
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "linear", "input": {"log": []}})
    claim = claim_next_run("test-worker", 30.0)
    assert claim is not None
    return str(thread), claim


def _step(claim: Claim) -> Callable[[Callable[[], None]], None]:
    """A step of the claimed run as its worker writes it (`execution._execute`): the fenced
    checkpoint write and the step's events in one transaction, held open by `held`."""

    def write(held: Callable[[], None]) -> None:
        recorder = RunRecorder(str(claim.run_id), claim.thread_id)
        recorder(Envelope("node.end", node="one"))

        def store(cursor: Any) -> None:
            recorder.store(cursor)
            held()

        fenced = PostgresCheckpointer().fenced(claim.run_id, claim.token, on_write=store)
        graph = registry.compiled_graph(claim.graph, fenced)
        graph.update_state({"configurable": {"thread_id": claim.thread_id}}, {"log": ["one"]})

    return write


def test_deleting_a_running_run_waits_for_its_step_and_answers_409() -> None:
    alice = client_of("alice")
    thread, claim = _running(alice)

    with held_meanwhile(_step(claim), until_waiting="%bw_run%FOR UPDATE%"):
        response = alice.delete(f"/lg/threads/{thread}/runs/{claim.run_id}")

    assert response.status_code == 409, response.content
    assert response.json() == {
        "detail": f"Run {claim.run_id} is running; cancel it before deleting it."
    }
    assert RunEvent.objects.filter(run_id=claim.run_id).count() == 1  # the step committed


def test_cancelling_a_threads_runs_waits_for_the_running_ones_step() -> None:
    """`runs.cancel` of a thread with a running and a queued run (as the `interrupt` and
    `rollback` multitask strategies do): cancelling the queued run locked the thread,
    and the request then waited for the running run that the worker's step held."""
    alice = client_of("alice")
    thread, claim = _running(alice)
    queued = post(alice, f"/threads/{thread}/runs", {"assistant_id": "linear", "input": {}})

    with held_meanwhile(_step(claim), until_waiting="%bw_run%FOR UPDATE%"):
        response = alice.post(
            "/lg/runs/cancel", {"thread_id": thread}, content_type="application/json"
        )

    assert response.status_code == 204, response.content
    assert dict(Run.objects.filter(thread_id=thread).values_list("id", "status")) == {
        claim.run_id: Run.Status.CANCELLED,
        uuid.UUID(queued["run_id"]): Run.Status.CANCELLED,
    }
    assert RunEvent.objects.filter(run_id=claim.run_id).count() == 1
