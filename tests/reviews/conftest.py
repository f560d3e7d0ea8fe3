"""Fixtures of the inbox tests: reviewers, the review test graphs, and running runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import transaction
from django.test import Client

from beamweaver_core.models import Run, Thread
from beamweaver_core.runtime import service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_next_run
from reviews.models import ReviewItem
from tests.reviews.graphs import REVIEW_GRAPHS

PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def _review_graphs(request: pytest.FixtureRequest) -> Any:
    if not request.node.get_closest_marker("django_db"):
        yield
        return
    settings = request.getfixturevalue("settings")
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **REVIEW_GRAPHS},
    }
    yield


def make_reviewer(username: str, *, reviewer: bool = True, **extra: Any) -> User:
    user = User.objects.create_user(username, password=PASSWORD, **extra)
    if reviewer:
        user.user_permissions.add(Permission.objects.get(codename="review"))
    return user


def make_manager(username: str) -> User:
    """A reviewer who may also reassign, release claims and extend deadlines."""
    user = make_reviewer(username)
    user.user_permissions.add(Permission.objects.get(codename="manage"))
    return User.objects.get(pk=user.pk)


def use_policies(settings: Any, *raw: dict[str, Any]) -> None:
    """Set `BEAMWEAVER["REVIEW_POLICIES"]` for the test."""
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "REVIEW_POLICIES": list(raw)}


def client_for(user: User, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def run_next() -> Run:
    """Claim and execute the oldest queued run in this thread."""
    claim = claim_next_run("test-worker", 30.0)
    assert claim is not None, "no queued run"
    execute(claim)
    return Run.objects.get(id=claim.run_id)


def pause(
    graph: str = "tool_review", input: dict[str, Any] | None = None, **kwargs: Any
) -> ReviewItem:
    """Start a run and execute it until it pauses; return its (first) review item."""
    run = service.start_run(graph, input or {}, **kwargs)
    done = run_next()
    assert done.status == "interrupted", done.error
    return ReviewItem.objects.filter(thread_id=run.thread_id).order_by("id").first()  # type: ignore[return-value]


def hiding_pause(thread_id: str) -> Callable[[Callable[[], None]], None]:
    """A pause that hides the paused thread from all but finance, for `held_meanwhile`:
    what `execution._record` does, the thread's row, then the items of the question it
    asks (a second item, like the thread's first, that only finance decides), committed
    once the request raced against it waits for the thread's lock."""
    hiding = ReviewItem.objects.filter(thread_id=thread_id).order_by("id").first()
    assert hiding is not None, "the thread asks no question yet"
    hiding.pk, hiding.interrupt_id = None, "second"
    hiding.reviewer_group_ids = [Group.objects.create(name="finance").pk]

    def pausing(held: Callable[[], None]) -> None:
        with transaction.atomic():
            Thread.objects.filter(id=thread_id).update(status=Thread.Status.INTERRUPTED)
            hiding.save()
            held()

    return pausing


@pytest.fixture
def alice(db: Any) -> User:
    return make_reviewer("alice")


@pytest.fixture
def bob(db: Any) -> User:
    return make_reviewer("bob")


def decide_as(user: User, item: ReviewItem, decisions: list[dict[str, Any]]) -> Any:
    """Decide `item` with `decisions` through the decision service, as `user`, with the
    digest the item shows and a fresh client decision id."""
    from reviews.services import DecisionRequest, decide

    return decide(
        DecisionRequest(
            item_id=item.pk,
            user=user,
            client_decision_id=uuid.uuid4().hex,
            digest=item.digest,
            answer={"decisions": decisions},
        )
    )


def approve_as(user: User, item: ReviewItem) -> Any:
    """Approve every action of `item` through the decision service, as `user`."""
    return decide_as(user, item, [{"type": "approve"}])


def form_post(item: ReviewItem, **fields: str) -> dict[str, str]:
    """The fields the item page's decision form posts, plus `fields`."""
    base = {"client_decision_id": uuid.uuid4().hex, "digest": item.digest}
    return {**base, "interrupt_id": item.interrupt_id, **fields}


SECRET = "sk-live0123456789abcdefXYZ"
"""A secret the redaction withholds (an API key's shape)."""
SECRET_EMAIL = {
    "calls": [
        {
            "name": "send_email",
            "args": {"to": "ops@example.com", "subject": "key", "body": f"use {SECRET} please"},
        }
    ]
}
"""`tool_review` input: an email whose body holds `SECRET` inside text."""
