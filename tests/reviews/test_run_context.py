"""Run context through the inbox and the API: a run started from the inbox names its
requester in the context; decisions resume it in that same context (the decider is on
the decision, not in the context), so the demo's deletion review says who asked."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.demo import store as store_module
from beamweaver_core.demo.store import OpsStore
from beamweaver_core.models import Run
from beamweaver_core.runtime import registry
from reviews.models import ReviewItem
from tests.reviews.conftest import client_for, form_post, make_reviewer, run_next
from tests.reviews.test_api import api_for, decide_url, decision

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo agent on its offline rules, with a fresh back office."""
    monkeypatch.setenv("BEAMWEAVER_DEMO_MODEL", "scripted")
    monkeypatch.setattr(store_module, "STORE", OpsStore.with_fixtures())


def test_a_run_started_from_the_inbox_carries_its_requester(alice: User) -> None:
    response = client_for(alice).post("/runs/new/", {"graph": "contextual", "input_json": "{}"})

    assert response.status_code == 302
    run = Run.objects.get()
    assert run.context == {"user_id": alice.pk, "username": "alice"}
    assert run_next().status == "interrupted"
    item = ReviewItem.objects.get(thread_id=run.thread_id)
    assert item.payload == {
        "question": "Go on?",
        "context": {"user_id": alice.pk, "username": "alice"},
    }


def test_the_demo_deletion_review_names_who_requested_it_and_keeps_it_after_decisions(
    alice: User, demo_offline: None
) -> None:
    bob = make_reviewer("bob")
    client_for(alice).post(
        "/runs/new/",
        {"graph": "ops_assistant", "message": "Delete closed records older than 30 days"},
    )
    started = run_next()
    assert started.status == "interrupted", started.error
    item = ReviewItem.objects.get(thread_id=started.thread_id)
    description = item.payload["action_requests"][0]["description"]
    assert description.endswith("Requested by: alice")

    response = client_for(bob).post(
        f"/items/{item.pk}/decide/", form_post(item, **{"d0-type": "approve"})
    )

    assert response.status_code in (200, 302)
    resume = Run.objects.get(kind="resume")
    assert resume.created_by == bob
    assert resume.context == {"user_id": alice.pk, "username": "alice"}
    assert run_next().status == "succeeded"


def test_an_api_decision_resumes_the_run_in_its_requester_s_context(alice: User) -> None:
    bob = make_reviewer("bob")
    client_for(alice).post("/runs/new/", {"graph": "contextual", "input_json": "{}"})
    run_next()
    item = ReviewItem.objects.get()

    response = api_for(bob).post(decide_url(item), decision(item, "yes"))

    assert response.status_code == 200
    assert Run.objects.get(kind="resume").context == {"user_id": alice.pk, "username": "alice"}
    assert run_next().status == "succeeded"
    graph = registry.compiled_graph("contextual", PostgresCheckpointer())
    values = graph.get_state({"configurable": {"thread_id": item.thread_id}}).values
    assert values["finished_in"] == {"user_id": alice.pk, "username": "alice"}
