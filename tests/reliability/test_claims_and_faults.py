"""Claims racing and writes that commit but report failure (reliability.md cases 17, 18)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections
from django.db.utils import OperationalError

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run
from beamweaver_core.runtime import execution, registry, service
from beamweaver_core.runtime.queue import Claim, claim_next_run, sweep_expired_leases

pytestmark = pytest.mark.django_db(transaction=True)


def broken_claim(worker: str, lease_seconds: float) -> Any:
    """A classic mistake: check, then mark, in two autocommit statements."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM bw_run WHERE status = 'queued' ORDER BY created_at LIMIT 1")
        row = cursor.fetchone()
        if row is None:
            return None
        cursor.execute(
            "UPDATE bw_run SET status = 'running', lease_owner = %s WHERE id = %s", [worker, row[0]]
        )
        return row[0]


def race(claim: Callable[[str, float], Any], rounds: int) -> list[int]:
    """Each round queues one run and lets two workers claim at the same instant; returns
    how many workers got the run, per round."""
    barrier = threading.Barrier(2, timeout=10)
    results: list[list[Any]] = [[None] * rounds, [None] * rounds]
    ready = threading.Barrier(3, timeout=10)

    def racer(index: int) -> None:
        try:
            for i in range(rounds):
                ready.wait()
                barrier.wait()
                got = claim(f"racer-{index}", 30)
                results[index][i] = got.run_id if isinstance(got, Claim) else got
                ready.wait()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for i in range(rounds):
        service.start_run("approval", {}, thread_id=f"round-{i}")
        ready.wait()
        ready.wait()
        Run.objects.filter(thread_id=f"round-{i}").update(status="succeeded")
    for t in threads:
        t.join()
    return [sum(1 for r in (results[0][i], results[1][i]) if r is not None) for i in range(rounds)]


def test_two_workers_racing_for_one_run_never_both_get_it() -> None:
    winners = race(claim_next_run, rounds=300)
    assert Counter(winners) == {1: 300}


def test_the_race_harness_catches_a_claim_that_is_not_atomic() -> None:
    """Mutation check: the same harness against a two-statement claim finds double claims."""
    winners = race(broken_claim, rounds=200)
    assert winners.count(2) > 0


class CommitThenFail(PostgresCheckpointer):
    """Temporal's ExecuteAndTimeout: the write commits, then the caller sees an error."""

    fail_on: set[int] = set()
    writes = 0

    def _write(self, *args: Any, **kwargs: Any) -> None:
        super()._write(*args, **kwargs)
        CommitThenFail.writes += 1
        if CommitThenFail.writes in CommitThenFail.fail_on:
            raise OperationalError(
                "server closed the connection unexpectedly (injected after commit)"
            )


@pytest.mark.parametrize("failing_write", range(1, 7))
def test_a_write_that_committed_but_reported_failure_is_retried_without_duplicates(
    failing_write: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "ledger"
    monkeypatch.setenv("BEAMWEAVER_TEST_LEDGER", str(ledger))
    monkeypatch.setattr(execution, "PostgresCheckpointer", CommitThenFail)
    CommitThenFail.writes = 0
    CommitThenFail.fail_on = {failing_write}
    run = service.start_run("steps", {"log": []}, thread_id="flaky-write")

    attempts = 0
    while Run.objects.get(id=run.id).status not in ("succeeded", "failed"):
        attempts += 1
        assert attempts <= 3
        claim = claim_next_run("w", 30)
        assert claim is not None
        try:
            execution.execute(claim)
        except OperationalError:
            Run.objects.filter(id=run.id).update(lease_expires_at="2000-01-01T00:00:00Z")
            sweep_expired_leases(max_attempts=5)

    graph = registry.compiled_graph("steps", PostgresCheckpointer())
    state = graph.get_state({"configurable": {"thread_id": "flaky-write"}})
    steps_run = Counter(ledger.read_text().splitlines())
    assert Run.objects.get(id=run.id).status == "succeeded"
    assert state.values["log"] == [0, 1, 2, 3, 4, 5]
    assert all(count == 1 for count in steps_run.values()), (
        steps_run
    )  # the committed step is not redone
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM (SELECT parent_id FROM bw_checkpoint WHERE thread_id = 'flaky-write' "
            "AND parent_id IS NOT NULL GROUP BY parent_id HAVING count(*) > 1) forks"
        )
        assert cursor.fetchone()[0] == 0
