"""Workers as real processes under faults: killed mid-run, paused past the lease.
Short leases keep each test to seconds. Each runs twice: workers that only poll Postgres
(one machine), and workers on real Redis as on several machines (hints and events over
Redis, polling as the fallback)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run
from beamweaver_core.runtime import registry, service
from tests.support.processes import REDIS_URL, child_env, start_worker
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]

FAST = {
    "BEAMWEAVER_LEASE_SECONDS": "2",
    "BEAMWEAVER_HEARTBEAT_SECONDS": "0.4",
    "BEAMWEAVER_POLL_SECONDS": "0.2",
}


def ledger_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def run_status(run_id: Any) -> str:
    return Run.objects.get(id=run_id).status


def forks(thread: str) -> list[Any]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parent_id, count(*) FROM bw_checkpoint WHERE thread_id = %s AND ns = '' "
            "AND parent_id IS NOT NULL GROUP BY parent_id HAVING count(*) > 1",
            [thread],
        )
        return cursor.fetchall()


@pytest.fixture(params=["postgres-only", "redis"])
def transport(request: pytest.FixtureRequest) -> dict[str, str]:
    """The workers' extra environment for the transport under test."""
    if request.param == "postgres-only":
        return {}
    prefix = request.getfixturevalue("redis_layer")
    return {"REDIS_URL": REDIS_URL, "BEAMWEAVER_CHANNEL_PREFIX": prefix}


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        proc.wait(10)


def final_log(thread: str) -> list[int]:
    graph = registry.compiled_graph("steps", PostgresCheckpointer())
    return graph.get_state({"configurable": {"thread_id": thread}}).values["log"]


def test_a_worker_killed_mid_run_is_replaced_and_the_run_finishes_from_its_last_checkpoint(
    tmp_path: Path, workers: list[subprocess.Popen[str]], transport: dict[str, str]
) -> None:
    ledger = tmp_path / "ledger"
    env = child_env(
        **FAST,
        **transport,
        BEAMWEAVER_TEST_LEDGER=str(ledger),
        BEAMWEAVER_TEST_STEP_SECONDS="0.3",
    )
    run = service.start_run("steps", {"log": []}, thread_id="killed")
    workers.append(start_worker(env, "--threads", "1"))
    wait_for(lambda: "step:2" in ledger_lines(ledger), 30, "the first worker to reach step 2")

    os.kill(workers[0].pid, signal.SIGKILL)
    killed_at = time.monotonic()
    workers.append(start_worker(env, "--threads", "1"))
    wait_for(lambda: run_status(run.id) == "succeeded", 45, "the second worker to finish the run")
    recovery = time.monotonic() - killed_at

    counts = Counter(ledger_lines(ledger))
    assert final_log("killed") == [0, 1, 2, 3, 4, 5]
    assert counts["step:0"] == counts["step:1"] == 1  # checkpointed steps never run again
    assert all(counts[f"step:{i}"] >= 1 for i in range(6))
    assert sum(counts.values()) <= 7  # at most the step in flight ran twice
    assert forks("killed") == []
    assert recovery < 30


def test_a_zombie_worker_paused_past_its_lease_cannot_write(
    tmp_path: Path, workers: list[subprocess.Popen[str]], transport: dict[str, str]
) -> None:
    ledger = tmp_path / "ledger"
    env = child_env(
        **FAST,
        **transport,
        BEAMWEAVER_TEST_LEDGER=str(ledger),
        BEAMWEAVER_TEST_STEP_SECONDS="0.5",
    )
    run = service.start_run("steps", {"log": []}, thread_id="zombie")
    zombie = start_worker(env, "--threads", "1")
    workers.append(zombie)
    wait_for(lambda: "step:1" in ledger_lines(ledger), 30, "the first worker to reach step 1")
    os.kill(zombie.pid, signal.SIGSTOP)

    workers.append(start_worker(env, "--threads", "1"))
    wait_for(
        lambda: run_status(run.id) == "succeeded", 45, "the second worker to take over and finish"
    )
    os.kill(zombie.pid, signal.SIGCONT)
    time.sleep(2)  # the zombie wakes, finishes its step, and tries to write
    zombie.send_signal(signal.SIGTERM)
    output, _ = zombie.communicate(timeout=30)

    assert "Refused a stale write" in output or "lost its lease" in output
    assert final_log("zombie") == [0, 1, 2, 3, 4, 5]
    assert forks("zombie") == []
    assert run_status(run.id) == "succeeded"


def finished_records(thread: str) -> int:
    """Finished tasks' writes committed for the thread's open step."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM bw_checkpoint_write WHERE thread_id = %s AND ns = '' "
            "AND record LIKE %s",
            [thread, '%"s":"done"%'],
        )
        return int(cursor.fetchone()[0])


def test_a_worker_killed_mid_step_does_not_run_the_finished_siblings_again(
    tmp_path: Path, workers: list[subprocess.Popen[str]]
) -> None:
    """Two of a step's three tasks finish, the worker is killed while the third runs: the
    next worker runs only the third (each execution leaves a line in the ledger file)."""
    ledger = tmp_path / "ledger"
    release = tmp_path / "release"
    env = child_env(
        **FAST, BEAMWEAVER_TEST_LEDGER=str(ledger), BEAMWEAVER_TEST_RELEASE=str(release)
    )
    run = service.start_run("siblings", {"done": []}, thread_id="siblings")
    workers.append(start_worker(env, "--threads", "1"))
    wait_for(
        lambda: {"fast_a", "fast_b", "slow"} <= set(ledger_lines(ledger)),
        30,
        "the first worker to start the step's three tasks",
    )
    # The finished siblings' writes are committed as they finish (give them 5 s).
    deadline = time.monotonic() + 5
    while finished_records("siblings") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(workers[0].pid, signal.SIGKILL)
    release.touch()
    workers.append(start_worker(env, "--threads", "1"))
    wait_for(lambda: run_status(run.id) == "succeeded", 45, "the second worker to finish the run")

    counts = Counter(ledger_lines(ledger))
    assert counts["fast_a"] == counts["fast_b"] == 1, counts  # finished: never run again
    assert counts["slow"] == 2 and counts["join"] == 1, counts  # the one in flight ran twice
    graph = registry.compiled_graph("siblings", PostgresCheckpointer())
    state = graph.get_state({"configurable": {"thread_id": "siblings"}}).values
    assert state["joined"] == ["fast_a", "fast_b", "slow"]
    assert forks("siblings") == []
