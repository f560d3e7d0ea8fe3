"""The thread page's socket carries the studio's live parts: a stored-events hint does not
close it (it did at every step), a model delta arrives as its text for the reply being
written, and a node event names its node and namespace for the graph's highlight."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async

from beamweaver_core.runtime.groups import thread_group
from tests.reviews.conftest import pause
from tests.reviews.test_consumers import connect, hint, reviewer

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_stored_events_hint_leaves_the_thread_socket_open() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect(f"/ws/threads/{item.thread_id}/", alice)
    await communicator.receive_from(timeout=5)
    group = thread_group(item.thread_id)

    await hint(group, {"type": "run.stored", "thread_id": item.thread_id, "run_id": "r", "seq": 3})
    event = {"seq": 7, "event": "node.started", "node": "act", "ns": "", "data": {}, "at": "now"}
    await hint(
        group,
        {
            "type": "run.event",
            "thread_id": item.thread_id,
            "run_id": str(item.run_id),
            "event": event,
        },
    )

    fragment = await communicator.receive_from(timeout=5)
    assert 'data-event="node.started" data-node="act" data-ns=""' in fragment
    await communicator.disconnect()


async def test_a_model_delta_is_pushed_as_its_escaped_text() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect(f"/ws/threads/{item.thread_id}/", alice)
    await communicator.receive_from(timeout=5)
    delta = {"message_id": 'run-1"><b>', "delta": "<b>Hel</b>lo"}
    event = {"seq": 8, "event": "model.delta", "node": "model", "data": delta, "at": "now"}

    await hint(
        thread_group(item.thread_id),
        {
            "type": "run.event",
            "thread_id": item.thread_id,
            "run_id": str(item.run_id),
            "event": event,
        },
    )

    fragment = await communicator.receive_from(timeout=5)
    assert re.search(
        r'class="event event-model-delta" data-event="model.delta" data-message="run-1b"', fragment
    )
    assert '<span class="delta-text">&lt;b&gt;Hel&lt;/b&gt;lo</span>' in fragment
    assert "<b>" not in fragment
    await communicator.disconnect()
