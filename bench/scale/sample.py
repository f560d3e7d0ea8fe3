"""Threads written through the product's own code paths, in a Django-configured process.

`real_thread` starts a run of one of the scale graphs (`runtime.service.start_run`, the
start every run takes), claims and executes it to its pause as a worker does
(`queue.claim_run`, `execution.execute`), so the checkpoints, the run, its events, the
review item and its audit event come from the runtime and the `run_paused` receivers;
`decided=True` then approves the item through the decision service
(`reviews.services.decide`, as the inbox's form does) and executes the resume it queued.
These threads are the templates the bulk rows are cloned from, and the sample the bulk
rows are compared with (`tests/test_bench_scale.py`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

REQUESTER = "scale-requester"
DECIDER = "scale-decider"
WORKER = "scale-fixture"


@dataclass(frozen=True, slots=True)
class People:
    """Who starts the fixture's runs and who decides their items."""

    requester: Any
    decider: Any


def people() -> People:
    """The fixture's two users (created once): the requester, and a reviewer who decides
    (nobody may approve a run they started)."""
    from django.contrib.auth.models import Permission, User

    requester, _ = User.objects.get_or_create(username=REQUESTER)
    decider, created = User.objects.get_or_create(username=DECIDER)
    if created:
        decider.user_permissions.add(
            Permission.objects.get(codename="review", content_type__app_label="reviews")
        )
    return People(requester, User.objects.get(pk=decider.pk))


def _execute_queued(thread_id: str) -> None:
    from beamweaver_core.models import Run
    from beamweaver_core.runtime.execution import execute
    from beamweaver_core.runtime.queue import claim_run

    run = Run.objects.get(thread_id=thread_id, status=Run.Status.QUEUED)
    claim = claim_run(run.id, WORKER, 60.0)
    if claim is None:
        raise RuntimeError(f"run {run.id} of thread {thread_id} could not be claimed")
    execute(claim)


def approve(item: Any, decider: Any) -> None:
    """Approve `item` through the decision service and execute the resume it queued."""
    from reviews.services import DecisionRequest, decide

    outcome = decide(
        DecisionRequest(
            item_id=item.pk,
            user=decider,
            client_decision_id=uuid.uuid4().hex,
            digest=item.digest,
            answer={"decisions": [{"type": "approve"}]},
        )
    )
    if not outcome.accepted:
        raise RuntimeError(f"deciding item {item.pk}: {outcome.code} {outcome.message}")
    _execute_queued(item.thread_id)


def real_thread(
    graph: str,
    customer: str,
    order: str,
    *,
    decided: bool,
    who: People | None = None,
    thread_id: str | None = None,
) -> str:
    """A thread of `graph` on `{"customer", "order"}`, paused on its review (or, with
    `decided`, approved and run to its end) through the runtime; its id."""
    from beamweaver_core.runtime import service
    from reviews.models import ReviewItem

    who = who or people()
    run = service.start_run(
        graph, {"customer": customer, "order": order}, user=who.requester, thread_id=thread_id
    )
    _execute_queued(run.thread_id)
    item = ReviewItem.objects.get(thread_id=run.thread_id)
    if item.status != ReviewItem.Status.PENDING:
        raise RuntimeError(f"thread {run.thread_id} did not pause on a review: {item.status}")
    if decided:
        approve(item, who.decider)
    return str(run.thread_id)
