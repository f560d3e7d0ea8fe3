"""Model deltas on the durable runtime (issue 18, docs/tools-and-models.md): a worker's run
streams its model's reply as `model.delta` events pushed live to the thread's group, the
feed of the thread page's live tokens, and never stored with the run's events."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import RunEvent
from beamweaver_core.runtime import registry, service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.groups import thread_group
from beamweaver_core.runtime.publish import serve_from
from beamweaver_core.runtime.queue import claim_next_run

REQUEST = "Email the admin that the nightly export failed."


@pytest.mark.django_db(transaction=True)
async def test_a_worker_run_pushes_model_deltas_live_and_does_not_store_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BEAMWEAVER_DEMO_MODEL", "scripted")  # the demo's streaming rules
    layer = get_channel_layer()
    serve_from(asyncio.get_running_loop())
    thread = f"deltas-{uuid.uuid4().hex[:6]}"
    channel = await layer.new_channel()
    await layer.group_add(thread_group(thread), channel)
    await database_sync_to_async(service.start_run)(
        "ops_assistant", {"messages": [{"role": "user", "content": REQUEST}]}, thread_id=thread
    )

    def run_it() -> str:
        from django.db import connections

        try:
            claim = claim_next_run("delta-test", 30)
            assert claim is not None
            return execute(claim)
        finally:
            connections.close_all()

    assert await asyncio.to_thread(run_it) == "interrupted"
    received: list[dict[str, Any]] = []
    while True:
        try:
            received.append(await asyncio.wait_for(layer.receive(channel), 2))
        except TimeoutError:
            break

    pushed = [m["event"] for m in received if m["type"] == "run.event"]
    deltas = [e["data"] for e in pushed if e["event"] == "model.delta"]
    values = await database_sync_to_async(
        lambda: (
            registry.compiled_graph("ops_assistant", PostgresCheckpointer())
            .get_state({"configurable": {"thread_id": thread}})
            .values
        )
    )()
    proposal = values["messages"][-1]
    assert proposal.role == "assistant" and proposal.tool_calls
    assert len({d["message_id"] for d in deltas}) == 1
    assert "".join(d.get("delta", "") for d in deltas) == proposal.content
    chunks = [d["tool_call_chunk"] for d in deltas if "tool_call_chunk" in d]
    assert [c["name"] for c in chunks if c["name"]] == [c.name for c in proposal.tool_calls]
    # Pushed between the model node's start and finish; stored: every event but the deltas.
    order = [(e["event"], e["node"]) for e in pushed]
    assert order[order.index(("model.delta", "model")) - 1] == ("node.started", "model")
    stored = await database_sync_to_async(
        lambda: list(RunEvent.objects.filter(thread_id=thread).values_list("event", flat=True))
    )()
    assert "model.delta" not in stored
    assert sorted(stored) == sorted(e["event"] for e in pushed if e["event"] != "model.delta")
