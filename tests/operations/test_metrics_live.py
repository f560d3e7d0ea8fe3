"""/metrics scraped from a live server with two worker processes, in multiprocess mode,
and parsed with prometheus_client's own text parser.

One daphne and two `manage.py beamweaver_worker` processes share a Redis channel layer
and one `PROMETHEUS_MULTIPROC_DIR`. What the workers count (executions, durations,
lease expiries) and what the web process counts (decisions, websockets, pushes) come
out of one scrape of the web process, next to what is read from the database (queue,
runs, pending items, worker heartbeats).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from websockets.sync.client import connect

from beamweaver_core.models import Run
from beamweaver_core.runtime import service
from bench.hostile.agents import GRAPHS, agent_input
from reviews.models import ApiToken, ReviewItem
from tests.browser.conftest import _free_port, _wait_until_up
from tests.reviews.conftest import client_for, make_reviewer
from tests.support.processes import REDIS_URL, ROOT, child_env, start_worker, stop
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

EMAIL = {"name": "send_email", "args": {"to": "ops@example.com", "subject": "Hi", "body": "Hello"}}


def _scrape(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/metrics", timeout=20) as response:
        text = response.read().decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def _value(families: dict[str, Any], sample: str, **labels: str) -> float:
    """The sum of `sample`'s values whose labels include `labels` (0 when none)."""
    name = sample.removesuffix("_total").removesuffix("_count").removesuffix("_sum")
    family = families.get(name) or families.get(name.removesuffix("_seconds")) or {}
    samples = getattr(family, "samples", [])
    return sum(
        s.value
        for s in samples
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
    )


@pytest.fixture
def environment(tmp_path: Path) -> dict[str, str]:
    multiproc = tmp_path / "prometheus"
    multiproc.mkdir()
    return child_env(
        REDIS_URL=REDIS_URL,
        BEAMWEAVER_CHANNEL_PREFIX=f"bw-metrics-{uuid.uuid4().hex[:8]}",
        BEAMWEAVER_WORKER_MODE="external",
        BEAMWEAVER_GRAPHS=json.dumps(GRAPHS),
        BEAMWEAVER_POLL_SECONDS="0.2",
        BEAMWEAVER_HEARTBEAT_SECONDS="1",
        BEAMWEAVER_LOG_LEVEL="WARNING",
        PROMETHEUS_MULTIPROC_DIR=str(multiproc),
        DEBUG="0",
    )


@pytest.fixture
def server(environment: dict[str, str], tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    log = tmp_path / "daphne.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(port)],
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    try:
        _wait_until_up(f"http://127.0.0.1:{port}/healthz", proc, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def test_one_scrape_adds_up_the_web_process_and_the_workers(
    settings: Any, environment: dict[str, str], server: str
) -> None:
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **GRAPHS},
    }
    alice = make_reviewer("alice")
    _, token = ApiToken.objects.issue(alice, "metrics-test")
    # A run whose worker "died": running, its lease long expired. A worker's sweeper
    # re-queues it, and then a worker runs it to its review.
    lost = service.start_run("ledger_agent", agent_input([EMAIL]))
    Run.objects.filter(id=lost.id).update(
        status="running", attempts=1, lease_expires_at=timezone.now() - timedelta(minutes=5)
    )
    queued = service.start_run("ledger_agent", agent_input([EMAIL]))

    before = _scrape(server)  # no worker yet: the queue is what the database says
    assert _value(before, "beamweaver_queue_depth", graph="ledger_agent") == 1
    assert _value(before, "beamweaver_queue_oldest_age_seconds", graph="ledger_agent") > 0
    assert _value(before, "beamweaver_runs", graph="ledger_agent", status="running") == 1
    assert _value(before, "beamweaver_runs_lease_expired") == 1
    assert _value(before, "beamweaver_workers_alive") == 0

    cookie = client_for(alice).cookies["sessionid"].value
    headers = {"Cookie": f"sessionid={cookie}", "Origin": server}
    workers = [start_worker(environment, "--threads", "1") for _ in range(2)]
    try:
        with connect(
            server.replace("http", "ws") + "/ws/inbox/", additional_headers=headers
        ) as socket:
            socket.recv(timeout=15)  # the snapshot
            opened = time.monotonic()
            wait_for(
                lambda: ReviewItem.objects.filter(status="pending").count() == 2,
                60,
                "both runs to pause for review",
                every=0.2,
            )
            item = ReviewItem.objects.get(thread_id=queued.thread_id)
            body = {
                "client_decision_id": uuid.uuid4().hex,
                "digest": item.digest,
                "interrupt_id": item.interrupt_id,
                "answer": [{"type": "approve"}],
            }
            request = urllib.request.Request(
                f"{server}/api/v1/items/{item.pk}/decisions/",
                data=json.dumps(body).encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=20) as response:
                assert response.status == 200
            wait_for(
                lambda: Run.objects.filter(thread_id=queued.thread_id, status="succeeded").exists(),
                60,
                "the approved run to finish",
                every=0.2,
            )
            wait_for(
                lambda: _value(_scrape(server), "beamweaver_workers_alive") == 2,
                60,
                "two workers",
                every=0.2,
            )
            # Open longer than redis-py 8's default read timeout, which once closed every
            # socket of the Redis layer after 5 s (embed.settings.redis_channel_layer).
            time.sleep(max(0.0, 6.5 - (time.monotonic() - opened)))
            assert socket.ping().wait(5)
            families = _scrape(server)
    finally:
        for worker in workers:
            stop(worker)

    # Counted by the worker processes.
    assert _value(families, "beamweaver_lease_expiries_total", outcome="requeued") == 1
    assert _value(families, "beamweaver_run_requeues_total", reason="lease_expired") == 1
    assert (
        _value(
            families, "beamweaver_run_executions_total", graph="ledger_agent", status="interrupted"
        )
        == 2
    )
    assert (
        _value(
            families, "beamweaver_run_executions_total", graph="ledger_agent", status="succeeded"
        )
        == 1
    )
    assert _value(families, "beamweaver_run_duration_seconds_count", graph="ledger_agent") == 3
    assert _value(families, "beamweaver_run_duration_seconds_sum", graph="ledger_agent") > 0
    # Counted by the web process.
    assert (
        _value(
            families,
            "beamweaver_review_decisions_total",
            graph="ledger_agent",
            type="approve",
            source="api",
        )
        == 1
    )
    assert _value(families, "beamweaver_review_decision_seconds_count", graph="ledger_agent") == 1
    assert _value(families, "beamweaver_websocket_connections", page="inbox") == 1
    assert _value(families, "beamweaver_push_latency_seconds_count", page="inbox") >= 1
    assert _value(families, "beamweaver_db_pool_max", alias="default") > 0
    # Read from the database.
    assert _value(families, "beamweaver_database_up") == 1
    assert _value(families, "beamweaver_queue_depth") == 0
    assert _value(families, "beamweaver_runs", graph="ledger_agent", status="running") == 0
    pending = {"graph": "ledger_agent", "kind": "tool_review", "tool": "send_email"}
    assert _value(families, "beamweaver_review_items_pending", **pending) == 1
    assert _value(families, "beamweaver_review_item_oldest_age_seconds", **pending) > 0
    assert _value(families, "beamweaver_review_items_overdue") == 0
    ages = [s.value for s in families["beamweaver_worker_heartbeat_age_seconds"].samples]
    assert len(ages) == 2 and all(age < 15 for age in ages)

    # A worker that stopped cleanly leaves the heartbeats; its counts stay.
    after = _scrape(server)
    assert _value(after, "beamweaver_workers_alive") == 0
    assert not after["beamweaver_worker_heartbeat_age_seconds"].samples
    assert _value(after, "beamweaver_run_duration_seconds_count", graph="ledger_agent") == 3
