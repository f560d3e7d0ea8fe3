"""A request `/lg` refuses changes nothing: it is checked whole (its body, its query, every
run it names, every item of a batch, the new run of a multitask strategy) before any run
is started, cancelled or rolled back. Found by a review against a live server, where each
of these acted first and refused after (or answered 500)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from beamweaver_core.models import Run
from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


def _send(client: Client, path: str, body: Any) -> tuple[int, str]:
    response = client.post(f"/lg{path}", body, content_type="application/json")
    return response.status_code, response.json()["detail"]


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
