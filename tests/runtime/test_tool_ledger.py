"""The Postgres tool ledger: fenced to the run, results kept across attempts."""

from __future__ import annotations

import pytest
from django.db import connection

from beamweaver_core.exceptions import StaleWriterError
from beamweaver_core.messages import Message
from beamweaver_core.models import ToolExecution
from beamweaver_core.runtime import service
from beamweaver_core.runtime.queue import claim_next_run, sweep_expired_leases
from beamweaver_core.runtime.tool_ledger import PostgresToolLedger

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_call_is_begun_once_and_its_result_is_returned_afterwards() -> None:
    service.start_run("approval", {}, thread_id="ledger-1")
    claim = claim_next_run("w", 30)
    assert claim is not None
    ledger = PostgresToolLedger(claim)

    first = ledger.begin("k" * 64, tool="refund", thread_id="ledger-1", args={"amount": 5})
    again = ledger.begin("k" * 64, tool="refund", thread_id="ledger-1", args={"amount": 5})
    ledger.finish("k" * 64, Message.tool("refunded", tool_call_id="c1", name="refund"))
    done = ledger.begin("k" * 64, tool="refund", thread_id="ledger-1", args={"amount": 5})

    assert (first.status, again.status, done.status) == ("new", "started", "done")
    assert done.message == Message.tool("refunded", tool_call_id="c1", name="refund")
    row = ToolExecution.objects.get(key="k" * 64)
    assert (row.attempts, row.status, row.tool, row.args) == (3, "done", "refund", {"amount": 5})


def test_a_worker_that_lost_its_lease_cannot_start_a_tool() -> None:
    service.start_run("approval", {}, thread_id="ledger-zombie")
    old = claim_next_run("old", 30)
    assert old is not None
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE bw_run SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
            [old.run_id],
        )
    sweep_expired_leases(max_attempts=5)
    assert claim_next_run("new", 30) is not None

    with pytest.raises(StaleWriterError, match="was not started"):
        PostgresToolLedger(old).begin("z" * 64, tool="refund", thread_id="ledger-zombie", args={})
    assert not ToolExecution.objects.filter(key="z" * 64).exists()


def test_a_worker_that_lost_its_lease_cannot_record_a_result() -> None:
    """A zombie woken after its tool ran (hostile case 15) leaves the new owner's record."""
    service.start_run("approval", {}, thread_id="ledger-zombie-finish")
    old = claim_next_run("old", 30)
    assert old is not None
    PostgresToolLedger(old).begin(
        "f" * 64, tool="refund", thread_id="ledger-zombie-finish", args={}
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE bw_run SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
            [old.run_id],
        )
    sweep_expired_leases(max_attempts=5)
    new = claim_next_run("new", 30)
    assert new is not None
    theirs = Message.tool("refunded by the new owner", tool_call_id="c1", name="refund")
    PostgresToolLedger(new).finish("f" * 64, theirs)

    with pytest.raises(StaleWriterError, match="was not recorded"):
        PostgresToolLedger(old).finish("f" * 64, Message.tool("zombie", tool_call_id="c1"))
    row = ToolExecution.objects.get(key="f" * 64)
    assert Message.from_dict(row.message) == theirs


def test_a_tool_call_on_another_thread_gives_its_connection_back_while_the_tool_runs() -> None:
    """Parallel tool calls run on pool threads; the tool may take minutes between begin
    and finish, and a worker's pool has only a few spare connections: the ledger hands
    the thread's connection back after each statement (the run's own thread keeps its)."""
    import threading

    from django.db import connections

    service.start_run("approval", {}, thread_id="ledger-release")
    claim = claim_next_run("w", 30)
    assert claim is not None
    ledger = PostgresToolLedger(claim)
    held: dict[str, bool] = {}

    def tool_thread() -> None:
        ledger.begin("r" * 64, tool="refund", thread_id="ledger-release", args={})
        held["after begin"] = connections["default"].connection is not None
        ledger.finish("r" * 64, Message.tool("ok", tool_call_id="c1", name="refund"))
        held["after finish"] = connections["default"].connection is not None

    worker = threading.Thread(target=tool_thread)
    worker.start()
    worker.join(30)
    ledger.begin("h" * 64, tool="refund", thread_id="ledger-release", args={})

    assert held == {"after begin": False, "after finish": False}
    assert connection.connection is not None  # the run's thread keeps its connection
    assert ToolExecution.objects.get(key="r" * 64).status == "done"
