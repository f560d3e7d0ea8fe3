"""Limits of `/lg` that need no running graph (in-process, without a live server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from beamweaver_core.models import Run, Thread
from reviews.models import ReviewItem
from tests.protocol.conftest import api_user, client_of, post, token_for
from tests.reviews.conftest import run_next

pytestmark = pytest.mark.django_db


def test_resumes_count_against_the_users_decision_rate(settings: Any) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "RATE_DECISIONS": "2/60"}
    cache.clear()
    token = token_for(api_user("alice"))
    Thread.objects.create(id="lg-rate-1", graph="approval")
    client = Client(HTTP_X_API_KEY=token)
    body = json.dumps({"assistant_id": "approval", "command": {"resume": True}})
    answers = [
        client.post("/lg/threads/lg-rate-1/runs", body, content_type="application/json")
        for _ in range(3)
    ]
    assert [a.status_code for a in answers] == [409, 409, 429]  # nothing to resume, then limited
    assert "Too many decisions" in answers[2].json()["detail"]


def test_a_stateless_resume_is_refused_without_counting_as_a_decision(settings: Any) -> None:
    """It answers 409 (a new thread has nothing to resume) and used to count first."""
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "RATE_DECISIONS": "1/60"}
    cache.clear()
    client = Client(HTTP_X_API_KEY=token_for(api_user("alice")))
    body = json.dumps({"assistant_id": "approval", "command": {"resume": True}})
    stateless = [client.post("/lg/runs", body, content_type="application/json") for _ in range(2)]
    Thread.objects.create(id="lg-rate-2", graph="approval")

    threaded = client.post("/lg/threads/lg-rate-2/runs", body, content_type="application/json")

    assert [a.status_code for a in stateless] == [409, 409]
    assert threaded.status_code == 409  # nothing to resume yet, and not 429: nothing counted


@pytest.mark.django_db(transaction=True)
def test_a_thread_stream_after_an_event_id_never_given_is_refused() -> None:
    """Stored event ids only grow: a stream resumed after one past them all sent
    heartbeats forever and never an event (found by review)."""
    client = Client(HTTP_X_API_KEY=token_for(api_user("alice")))
    Thread.objects.create(id="lg-events-1", graph="approval")

    past = client.get("/lg/threads/lg-events-1/stream", HTTP_LAST_EVENT_ID="99999999999999-0")
    bogus = client.get("/lg/threads/lg-events-1/stream", HTTP_LAST_EVENT_ID="x-1")

    assert past.status_code == 422 and "past every event" in past.json()["detail"]
    assert bogus.status_code == 422


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("protocol_graphs")
def test_continuing_a_breakpoint_counts_against_the_users_decision_rate(settings: Any) -> None:
    """A run without input on a thread paused at a breakpoint is a decision, so it is
    limited as a resume is: past the rate, 429 and nothing is decided or queued (it used
    to go through the decision service without counting)."""
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "RATE_DECISIONS": "1/60"}
    cache.clear()
    alice, bob = client_of("alice"), client_of("bob")
    threads = [_paused_at_a_breakpoint(alice) for _ in range(2)]
    body = json.dumps({"assistant_id": "linear"})

    answers = [
        bob.post(f"/lg/threads/{thread}/runs", body, content_type="application/json")
        for thread in threads
    ]

    assert [a.status_code for a in answers] == [200, 429]
    assert "Too many decisions" in answers[1].json()["detail"]
    assert ReviewItem.objects.get(thread_id=threads[1]).status == ReviewItem.Status.PENDING
    assert list(
        Run.objects.filter(status=Run.Status.QUEUED).values_list("thread_id", flat=True)
    ) == [threads[0]]


def _paused_at_a_breakpoint(client: Client) -> str:
    thread = post(client, "/threads", {})["thread_id"]
    post(
        client,
        f"/threads/{thread}/runs",
        {"assistant_id": "linear", "input": {"log": []}, "interrupt_before": ["two"]},
    )
    assert run_next().status == Run.Status.INTERRUPTED
    return str(thread)
