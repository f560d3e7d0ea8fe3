"""A run on a worker commits once per super-step, reads included: its claim reads the
thread's head in the claim's own transaction, so no step reads it again. Counted from the
client (every autocommit statement and every commit), never timed."""

from __future__ import annotations

import pytest
from django.db import connection

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run
from beamweaver_core.runtime import service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_next_run
from tests.support.transactions import counting_transactions

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = 6  # the "steps" graph: s0 -> ... -> s5


def write_transactions(thread: str) -> int:
    """Ground truth from the rows: transactions that wrote the thread's checkpoints."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT xmin::text) FROM bw_checkpoint WHERE thread_id = %s", [thread]
        )
        return int(cursor.fetchone()[0])


def test_a_run_on_a_worker_commits_once_per_step_reads_included() -> None:
    run = service.start_run("steps", {"log": []}, thread_id="commits-new")
    with counting_transactions() as counted:
        claim = claim_next_run("worker-a", 30)
        assert claim is not None and claim.run_id == run.id
        assert execute(claim) == "succeeded"
    # The claim (with the head), one per step, the outcome; nothing that only reads.
    assert counted.reads == []
    assert counted.autocommit == []
    assert counted.committed == 1 + STEPS + 1
    assert write_transactions("commits-new") == STEPS  # the input rides with the first step


def test_a_run_continuing_a_thread_reads_its_head_only_in_the_claim() -> None:
    thread = "commits-continued"
    first = service.start_run("steps", {"log": []}, thread_id=thread)
    claim = claim_next_run("worker-a", 30)
    assert claim is not None and claim.run_id == first.id and execute(claim) == "succeeded"

    second = service.start_run("steps", {"log": [100]}, thread_id=thread)
    with counting_transactions() as counted:
        claim = claim_next_run("worker-b", 30)
        assert claim is not None and claim.run_id == second.id
        assert claim.head is not None and claim.head.checkpoint is not None
        assert claim.head.checkpoint.values["log"] == [0, 1, 2, 3, 4, 5]
        assert execute(claim) == "succeeded"
    assert counted.reads == []
    assert counted.committed == 1 + STEPS + 1
    assert Run.objects.get(id=second.id).status == "succeeded"
    head = PostgresCheckpointer().load(thread)
    assert head is not None
    assert head.values["log"] == [0, 1, 2, 3, 4, 5, 100, 0, 1, 2, 3, 4, 5]
