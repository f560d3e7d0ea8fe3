"""Channels as the transport: run hints wake workers across processes (real Redis), a
worker that missed hints still polls, and run events reach the thread's group live."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from beamweaver_core.models import Run, WorkerHeartbeat
from beamweaver_core.runtime import service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.groups import thread_group
from beamweaver_core.runtime.publish import serve_from
from beamweaver_core.runtime.queue import claim_next_run
from tests.support.processes import REDIS_URL, ROOT, child_env, start_worker


def wait_status(run_id: Any, status: str, timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if Run.objects.get(id=run_id).status == status:
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} not {status} after {timeout}s")


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        output, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
    return output


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_hint_over_redis_wakes_a_worker_in_another_process(redis_layer: str) -> None:
    """The worker polls once an hour: the run is taken at all only because a hint woke it
    (no time is measured, so a loaded machine cannot fail this)."""
    env = child_env(
        REDIS_URL=REDIS_URL, BEAMWEAVER_CHANNEL_PREFIX=redis_layer, BEAMWEAVER_POLL_SECONDS="3600"
    )
    worker = start_worker(env, "--threads", "1")
    try:
        deadline = time.monotonic() + 120
        while not WorkerHeartbeat.objects.exists():  # it has started, and polled once
            assert time.monotonic() < deadline, "the worker never started"
            time.sleep(0.1)
        time.sleep(2)  # its first poll (at start) is over; the next one is an hour away
        run = service.start_run("approval", {}, thread_id=f"hint-{uuid.uuid4().hex[:6]}")
        wait_status(run.id, "interrupted", 120)
    finally:
        stop(worker)


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_runworker_on_the_runs_channel_executes_runs(redis_layer: str) -> None:
    env = child_env(
        REDIS_URL=REDIS_URL, BEAMWEAVER_CHANNEL_PREFIX=redis_layer, BEAMWEAVER_POLL_SECONDS="60"
    )
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", "beamweaver.runs"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(3)
        run = service.start_run("approval", {}, thread_id=f"runworker-{uuid.uuid4().hex[:6]}")
        wait_status(run.id, "interrupted", 30)
    except AssertionError:
        print(stop(proc)[-4000:])
        raise
    finally:
        if proc.poll() is None:
            stop(proc)


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_worker_that_missed_every_hint_still_finds_queued_runs() -> None:
    run = service.start_run("approval", {}, thread_id=f"poll-{uuid.uuid4().hex[:6]}")
    worker = start_worker(child_env(BEAMWEAVER_POLL_SECONDS="0.3"), "--threads", "1")
    try:
        wait_status(run.id, "interrupted", 20)
    finally:
        stop(worker)


@pytest.mark.django_db(transaction=True)
async def test_run_events_are_pushed_live_to_the_thread_group() -> None:
    layer = get_channel_layer()
    serve_from(asyncio.get_running_loop())
    thread = f"live-{uuid.uuid4().hex[:6]}"
    channel = await layer.new_channel()
    await layer.group_add(thread_group(thread), channel)
    await database_sync_to_async(service.start_run)("approval", {}, thread_id=thread)

    def run_it() -> None:
        from django.db import connections

        try:
            claim = claim_next_run("live-test", 30)
            assert claim is not None
            execute(claim)
        finally:
            connections.close_all()

    await asyncio.to_thread(run_it)
    received = []
    while True:
        try:
            message = await asyncio.wait_for(layer.receive(channel), 2)
        except TimeoutError:
            break
        received.append(message)
    events = [m["event"]["event"] for m in received if m["type"] == "run.event"]
    statuses = [m["status"] for m in received if m["type"] == "run.status"]
    assert events == ["run.started", "node.started", "node.finished", "run.interrupted"]
    assert statuses == ["running", "interrupted"]
