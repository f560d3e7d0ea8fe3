"""Review operations pushed live over the websockets (`WebsocketCommunicator`): claims and
approvals on the item page, batch decisions and escalations in the inbox."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group

from beamweaver_core.runtime import publish
from reviews import batch, claims, deadlines
from reviews.models import ReviewItem
from reviews.services import DecisionRequest, decide
from tests.reviews.conftest import make_reviewer, pause, use_policies
from tests.reviews.test_consumers import connect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def serve_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hints sent after commit reach this test's loop, as they reach the server's."""
    monkeypatch.setattr(publish, "_home_loop", asyncio.get_running_loop())


async def receive_until(communicator: WebsocketCommunicator, text: str) -> str:
    """Frames until one contains `text` (each at most 5 s apart)."""
    while True:
        frame = await communicator.receive_from(timeout=5)
        if text in frame:
            return frame


async def test_a_claim_appears_live_on_another_reviewers_item_page(serve_here: None) -> None:
    alice = await sync_to_async(make_reviewer)("alice")
    bob = await sync_to_async(make_reviewer)("bob")
    item = await sync_to_async(pause)()
    page, connected = await connect(f"/ws/items/{item.pk}/?digest={item.digest}", bob)
    assert connected
    await receive_until(page, 'id="item-routing"')

    await sync_to_async(claims.claim)(item.pk, alice)

    frame = await receive_until(page, "only they can decide it now")
    assert '<section id="item-routing"' in frame and 'hx-swap-oob="true"' in frame
    assert "<strong>alice</strong>" in frame
    await page.disconnect()


async def test_an_approval_of_several_is_counted_live(settings: Any, serve_here: None) -> None:
    use_policies(settings, {"name": "two", "approvals": 2})
    ann = await sync_to_async(make_reviewer)("ann")
    ben = await sync_to_async(make_reviewer)("ben")
    item = await sync_to_async(pause)()
    page, _ = await connect(f"/ws/items/{item.pk}/?digest={item.digest}", ben)
    await receive_until(page, 'id="item-routing"')

    await sync_to_async(decide)(
        DecisionRequest(
            item_id=item.pk,
            user=ann,
            client_decision_id=uuid.uuid4().hex,
            digest=item.digest,
            answer={"decisions": [{"type": "approve"}]},
        )
    )

    frame = await receive_until(page, 'id="item-approvals"')
    assert "<strong>1 of 2</strong>: ann" in frame
    await page.disconnect()


async def test_a_batch_removes_the_decided_rows_from_other_inboxes(serve_here: None) -> None:
    alice = await sync_to_async(make_reviewer)("alice")
    bob = await sync_to_async(make_reviewer)("bob")
    first = await sync_to_async(pause)()
    second = await sync_to_async(pause)()
    inbox, _ = await connect("/ws/inbox/", bob)
    snapshot = await inbox.receive_from(timeout=5)
    assert f"item-row-{first.pk}" in snapshot and f"item-row-{second.pk}" in snapshot

    report = await sync_to_async(batch.decide_many)(
        alice,
        [(first.pk, first.digest), (second.pk, second.digest)],
        "approve",
        batch_id="b1",
    )

    assert report.summary == "2 applied."
    seen = ""
    while not all(f'<li id="item-row-{i.pk}" data-remove hidden>' in seen for i in (first, second)):
        seen += await inbox.receive_from(timeout=5)
    await inbox.disconnect()


async def test_an_escalated_item_appears_live_in_the_escalation_groups_inbox(
    settings: Any, serve_here: None
) -> None:
    use_policies(
        settings, {"name": "p", "groups": ["ops"], "deadline_seconds": 60, "escalate_to": "leads"}
    )
    lead = await sync_to_async(make_reviewer)("lead")
    item: ReviewItem = await sync_to_async(pause)()
    await sync_to_async(lambda: lead.groups.add(Group.objects.get(name="leads")))()
    inbox, _ = await connect("/ws/inbox/", lead)
    snapshot = await inbox.receive_from(timeout=5)
    assert f"item-row-{item.pk}" not in snapshot

    await sync_to_async(deadlines.sweep)(item.due_at + timedelta(seconds=1))  # type: ignore[operator]

    frame = await receive_until(inbox, f'id="item-row-{item.pk}"')
    assert 'hx-swap-oob="beforeend:#inbox-rows"' in frame
    await inbox.disconnect()
