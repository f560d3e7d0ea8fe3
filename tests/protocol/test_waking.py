"""What ends a protocol wait and what wakes a worker, in this process (the test client and
the in-memory channel layer; a poll of an hour, so nothing here ends by polling):

- a worker woken for a protocol resume finds everything the request wrote committed, so no
  write of the request holds the run's row while the worker's claim (`SKIP LOCKED`) looks
  for it (the run would wait for the next poll);
- `runs.wait` / `runs.join` read the run's row again on its status hint, not on each of
  its progress hints; a cancel sends one too.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import connection

from beamweaver_core.models import Run
from beamweaver_core.protocol.waiting import until_stopped
from beamweaver_core.runtime import service
from beamweaver_core.runtime.groups import thread_group
from beamweaver_core.runtime.publish import group_send, serve_from
from beamweaver_core.runtime.wakeup import register_local, unregister_local
from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


class _NotingWaker(threading.Event):
    """A worker's wake-up event that notes, each time it is set, the queued runs a woken
    worker would find, with the id of each one's protocol record (`None`: not there)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[Any, Any]] = []

    def set(self) -> None:
        queued = Run.objects.filter(status=Run.Status.QUEUED)
        self.found.append(dict(queued.values_list("id", "protocol")))
        super().set()


def test_a_worker_woken_for_a_protocol_resume_finds_the_request_committed() -> None:
    client = client_of("alice")
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {}})
    run_next()
    waker = _NotingWaker()
    register_local(waker)
    try:
        resumed = post(
            client, f"/threads/{thread}/runs", {"assistant_id": "ask", "command": {"resume": 1}}
        )
    finally:
        unregister_local(waker)
    run_id = uuid.UUID(resumed["run_id"])
    assert waker.found == [{run_id: run_id}]


def _counting_run_reads() -> tuple[list[str], Any]:
    """The SELECTs of runs that the ORM's thread for async code makes from now on, and
    the wrapper that counts them (to remove)."""
    reads: list[str] = []

    def counting(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.startswith("SELECT") and 'FROM "bw_run"' in sql:
            reads.append(sql)
        return execute(sql, params, many, context)

    connection.execute_wrappers.append(counting)
    return reads, counting


async def _waiting(settings: Any, thread_id: str) -> tuple[Run, asyncio.Future[Any]]:
    """A queued run of `thread_id` and a waiter for it that has subscribed to its hints."""
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "LG_POLL_SECONDS": 3600}
    serve_from(asyncio.get_running_loop())
    run = await database_sync_to_async(service.start_run)("ask", {}, thread_id=thread_id)
    waiter = asyncio.ensure_future(until_stopped(run))
    layer = get_channel_layer()
    while not layer.groups.get(thread_group(thread_id)):  # hints sent from now on reach it
        await asyncio.sleep(0.01)
    return run, waiter


async def test_a_wait_reads_its_run_again_on_the_status_hint_not_on_progress(
    settings: Any,
) -> None:
    reads, counting = await database_sync_to_async(_counting_run_reads)()
    thread_id = f"wait-{uuid.uuid4().hex[:8]}"
    run, waiter = await _waiting(settings, thread_id)
    group = thread_group(thread_id)
    progress = [
        {"type": "run.status", "run_id": str(run.id), "status": "running"},
        *({"type": "run.event", "run_id": str(run.id), "event": {"seq": n}} for n in range(10)),
        {"type": "run.stored", "run_id": str(run.id), "seq": 10},
    ]
    layer = get_channel_layer()
    for hint in progress:  # delivered when the call returns
        await layer.group_send(group, {**hint, "thread_id": thread_id})
    (channel,) = layer.groups[group]
    while not layer.channels.get(channel, asyncio.Queue()).empty():  # the waiter took them all
        await asyncio.sleep(0.01)
    await database_sync_to_async(Run.objects.filter(id=run.id).update)(status=Run.Status.SUCCEEDED)
    group_send(
        group,
        {
            "type": "run.status",
            "thread_id": thread_id,
            "run_id": str(run.id),
            "status": "succeeded",
        },
    )
    stopped = await asyncio.wait_for(waiter, 60)
    assert stopped is not None and stopped.status == Run.Status.SUCCEEDED
    await database_sync_to_async(lambda: connection.execute_wrappers.remove(counting))()
    assert len(reads) == 2  # when it started waiting, and on the status hint


async def test_a_wait_ends_when_its_run_is_cancelled(settings: Any) -> None:
    run, waiter = await _waiting(settings, f"cancel-{uuid.uuid4().hex[:8]}")
    await database_sync_to_async(service.cancel_run)(run.id)
    stopped = await asyncio.wait_for(waiter, 60)
    assert stopped is not None and stopped.status == Run.Status.CANCELLED
